//! A caller's share of work (`OXP_WORK_MAX_PER_CALLER`): slots of the one share mechanism
//! (`crate::state::share`), each held by one piece of work (its id the slot's value, the
//! slot's number in the work's record), given back by its end, or kept as long as what the
//! work left (an MCP task's record) lives. And its room for its kept results' parts
//! (`OXP_WORK_MAX_BYTES_PER_CALLER`, `crate::state::large`), slots of the same mechanism.

use super::*;
use crate::state::large::Room;

impl Runner {
    /// Where the parts of `caller`'s kept results count (`OXP_WORK_MAX_BYTES_PER_CALLER`);
    /// `None` for nobody's work.
    pub(crate) fn room<'a>(&'a self, caller: Option<&'a str>) -> Option<Room<'a>> {
        let share = &self.rooms;
        caller.map(|caller| Room { share, caller })
    }

    /// Takes a slot of `caller`'s share for work `id`, slot `first` first: the slot now held.
    pub(super) async fn take_slot(
        &self,
        caller: &str,
        id: &str,
        first: &str,
    ) -> Result<String, Refused> {
        Ok(self
            .share
            .take(&*self.store, caller, id, first, self.expires())
            .await?)
    }

    /// Gives back `slot` of `caller`'s share where work `id` still holds it, logging what the
    /// store did not do: an unreturned slot counts until it expires.
    pub(super) async fn give_back(&self, caller: Option<&str>, id: &str, slot: Option<&str>) {
        let (Some(caller), Some(slot)) = (caller, slot) else {
            return;
        };
        if let Err(e) = self.share.give_back(&*self.store, caller, slot, id).await {
            tracing::warn!(target: "oxp::work", error = %e, "a share's slot not given back: it counts until it expires");
        }
    }

    /// Keeps work `id`'s slot in its caller's share (if it counts in one) until `until`
    /// (`None`: gives it back now).
    pub(super) async fn uncounted(
        &self,
        id: &str,
        work: &Work,
        until: Option<SystemTime>,
    ) -> Result<(), StateError> {
        let (Some(caller), Some(slot)) = (&work.caller, &work.slot) else {
            return Ok(());
        };
        let until = until.unwrap_or_else(SystemTime::now);
        self.share
            .keep(&*self.store, caller, slot, id, Some(until))
            .await
            .map(drop)
    }
}
