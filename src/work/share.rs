//! A caller's share of work (`OXP_WORK_MAX_PER_CALLER`): that many numbered slots in a
//! partition of the caller's own, each taken by one piece of work with a conditional write
//! (the work's id its value, the slot's number in the work's record), given back by its end.
//! The bound holds across every process sharing the store without anyone counting: two
//! processes can never take one slot. Taking one is a single conditional write on a slot
//! picked at random; only when that slot is taken is the share listed (to find a free one,
//! or to see it full), so accepting work reads no listing while the share has room (a
//! listing is what costs on a store that walks a table to answer a query, as moto does).

use super::*;

/// Rounds of looking for a free slot (each one listing and one write) before the caller is
/// told to try again: only callers taking their last slots all at once need more than one.
const ROUNDS: usize = 8;

impl Runner {
    /// A slot of the share to try first: any, at random (all are alike, and work accepted at
    /// once by one caller rarely tries the same).
    pub(super) fn guess_slot(&self) -> String {
        let most = self.settings.per_caller.max(1) as u128;
        (uuid::Uuid::new_v4().as_u128() % most).to_string()
    }

    /// Takes a slot of `caller`'s share for work `id`, slot `first` first: the slot now held,
    /// or [`Refused::CallerFull`] when every slot is held.
    pub(super) async fn take_slot(
        &self,
        caller: &str,
        id: &str,
        first: &str,
    ) -> Result<String, Refused> {
        let partition = of_caller(caller);
        let unavailable = |e: StateError| Refused::Unavailable(e.0);
        let mark = || Item::new(id.as_bytes().to_vec(), self.expires());
        let mut slot = first.to_owned();
        let most = self.settings.per_caller;
        for _ in 0..ROUNDS {
            if self
                .store
                .put_if(&partition, &slot, mark(), None)
                .await
                .map_err(unavailable)?
            {
                return Ok(slot);
            }
            let held = self
                .store
                .list(&partition, None, most + 1)
                .await
                .map_err(unavailable)?;
            if held.len() >= most {
                return Err(Refused::CallerFull);
            }
            // Of slots 0 to n, n held, one at least is free (any key listed counts as held).
            let taken: std::collections::HashSet<&str> =
                held.iter().map(|(key, _)| key.as_str()).collect();
            let free: Vec<usize> = (0..=held.len())
                .filter(|n| !taken.contains(n.to_string().as_str()))
                .collect();
            let pick = uuid::Uuid::new_v4().as_u128() % free.len().max(1) as u128;
            slot = free.get(pick as usize).copied().unwrap_or(0).to_string();
        }
        Err(Refused::Unavailable(
            "a caller's share is being taken by many at once".into(),
        ))
    }

    /// Gives back `slot` of `caller`'s share where work `id` still holds it (a slot another
    /// work took since is left alone), logging what the store did not do: an unreturned slot
    /// counts until it expires.
    pub(super) async fn give_back(&self, caller: Option<&str>, id: &str, slot: Option<&str>) {
        let (Some(caller), Some(slot)) = (caller, slot) else {
            return;
        };
        if let Err(e) = self.returned(caller, id, slot).await {
            tracing::warn!(target: "oxp::work", error = %e, "a share's slot not given back: it counts until it expires");
        }
    }

    /// Gives back work `id`'s slot in its caller's share (if it counts in one).
    pub(super) async fn uncounted(&self, id: &str, work: &Work) -> Result<(), StateError> {
        match (&work.share, &work.slot) {
            (Some(caller), Some(slot)) => self.returned(caller, id, slot).await,
            _ => Ok(()),
        }
    }

    /// Slot `slot` of `caller`'s share, written already expired (removed) if it still holds
    /// work `id`.
    async fn returned(&self, caller: &str, id: &str, slot: &str) -> Result<(), StateError> {
        let gone = Item::new(id.as_bytes().to_vec(), Some(SystemTime::now()));
        self.store
            .put_if(&of_caller(caller), slot, gone, Some(id.as_bytes()))
            .await
            .map(drop)
    }
}
