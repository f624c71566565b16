//! A subscription's index entries, by which its call, its thread and its topic find it, and
//! its slot of its caller's share: written when it opens, renewed with it, deleted when it ends.

use super::Subscriptions;
use super::records::{Keys, Owner, Sub, SubState};
use futures_util::future::try_join_all;
use oxp_lambda_core::durable::{Item, StateError};

impl Subscriptions {
    /// Writes (or renews) the index entries of subscription `id`: its call's, its thread's and
    /// its topic's, and (`renew`) its slot of its caller's share.
    pub(super) async fn index(&self, id: &str, sub: &Sub, renew: bool) -> Result<(), StateError> {
        let index = Item::new(Vec::new(), self.expires());
        // Side by side: one round trip's wait (and one group commit in the embedded store).
        let partitions = [
            Keys::of_call(&sub.owner.call_key()),
            Keys::of_thread(&sub.owner.thread_key()),
            Keys::of_topic(&sub.source, &sub.topic),
        ];
        let renewed = async {
            match sub.slot.as_ref().filter(|_| renew) {
                Some(slot) => self
                    .share
                    .keep(
                        &*self.store,
                        &sub.owner.caller_key(),
                        slot,
                        id,
                        self.expires(),
                    )
                    .await
                    .map(drop),
                None => Ok(()),
            }
        };
        let indexed = try_join_all(
            partitions
                .iter()
                .map(|partition| self.store.put(partition, id, index.clone())),
        );
        tokio::try_join!(indexed, renewed)?;
        Ok(())
    }

    /// Deletes the index entries of subscription `id`, once it ended: out of its topic's
    /// fan-out, its slot given back, and nothing of it left for its call or thread to find.
    pub(super) async fn unindex(&self, id: &str, sub: &Sub) -> Result<(), StateError> {
        let partitions = [
            Keys::of_topic(&sub.source, &sub.topic),
            Keys::of_call(&sub.owner.call_key()),
            Keys::of_thread(&sub.owner.thread_key()),
        ];
        let slot = async {
            match &sub.slot {
                Some(slot) => {
                    self.share
                        .give_back(&*self.store, &sub.owner.caller_key(), slot, id)
                        .await
                }
                None => Ok(()),
            }
        };
        let unindexed = try_join_all(
            partitions
                .iter()
                .map(|partition| self.store.delete(partition, id)),
        );
        tokio::try_join!(unindexed, slot)?;
        Ok(())
    }

    /// The ids of the subscriptions `owner`'s call opened.
    pub(crate) async fn of_call(&self, owner: &Owner) -> Result<Vec<String>, StateError> {
        let listed = self
            .store
            .list(&Keys::of_call(&owner.call_key()), None, 64)
            .await?;
        Ok(listed.into_iter().map(|(id, _)| id).collect())
    }

    /// Whether `owner`'s call opened a subscription that is pending or active.
    pub(crate) async fn live_of_call(&self, owner: &Owner) -> Result<bool, StateError> {
        for id in self.of_call(owner).await? {
            if let Some((sub, _)) = self.read(&id).await?
                && matches!(sub.state, SubState::Pending | SubState::Active)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
