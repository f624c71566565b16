//! A call's idempotency claim: made for as long as the call may take, answered from what was
//! claimed before (the stored outcome, "still running", or the key reused), released when the
//! call is refused, and completed with the outcome a repeat replays.

use super::watch::{Held, Watch};
use super::{Disposition, HOLD_MARGIN, Outcome, Rejection, UNBOUNDED_HOLD, prepare::retryable};
use crate::idempotency::{Claim, Idempotency, StoredOutcome};
use crate::refusal::RETRY_AFTER;
use crate::registry::RegisteredTool;
use crate::tool::{Cancellation, ToolError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The answer to a call whose key was claimed before: the stored outcome, "still running", or
/// the key reused for another call.
pub(super) fn claimed_before(
    claim: Claim,
    call_id: String,
    tool: Arc<RegisteredTool>,
) -> Result<Outcome, Rejection> {
    match claim {
        Claim::Completed(stored) => Ok(Outcome {
            call_id,
            result: stored.result(),
            duration: Duration::from_secs_f64(stored.duration_ms.max(0.0) / 1e3),
            tool,
            disposition: Disposition::Replayed,
        }),
        Claim::InProgress => {
            let error =
                ToolError::new("This call is still running; retry shortly to get its result")
                    .developer_message(format!(
                        "a call with call_id '{}' is in progress",
                        crate::naming::shown(&call_id)
                    ))
                    .retry_after(RETRY_AFTER);
            Ok(Outcome {
                call_id,
                result: Err(error),
                duration: Duration::ZERO,
                tool,
                disposition: Disposition::InProgress,
            })
        }
        Claim::Conflict => Err(Rejection::KeyReused(call_id)),
        Claim::Acquired => unreachable!("an acquired claim runs the call"),
    }
}

/// The call's key claimed (when it has one: `held`) for as long as the call may take.
pub(super) async fn claimed(
    held: Option<&Held>,
    deadline: Option<Instant>,
) -> Option<Result<Claim, crate::idempotency::StoreError>> {
    let held = held?;
    let hold = deadline.map_or(UNBOUNDED_HOLD, |d| {
        d.saturating_duration_since(Instant::now()) + HOLD_MARGIN
    });
    Some(held.store.claim(&held.key, &held.print, hold).await)
}

/// Frees the claim `watch` holds (the call was refused after it was made), then refuses it.
pub(super) async fn release(watch: &mut Watch, refused: Rejection) -> Result<Outcome, Rejection> {
    if let Some(held) = watch.claim.take()
        && let Err(e) = held.store.release(&held.key, &held.print).await
    {
        tracing::warn!(target: "oxp::call", error = %e, "claim of a refused call not released");
    }
    Err(refused)
}

/// Stores `executed`, the outcome of a call that claimed its key as `held`, for repeats. A
/// cancelled call, a retryable failure and a rejection leave nothing to replay: the same call
/// id may run again at once.
pub(super) async fn keep(
    idem: &Idempotency,
    held: &Held,
    executed: Result<Outcome, Rejection>,
    cancelled: &Cancellation,
) -> Result<Outcome, Rejection> {
    let stored = match &executed {
        Ok(outcome) if !cancelled.is_cancelled() && !retryable(&outcome.result) => {
            let record = StoredOutcome::new(&outcome.result, outcome.duration);
            match idem
                .store
                .complete(&held.key, &held.print, &record, idem.keep)
                .await
            {
                Ok(()) => Ok(()),
                // Not stored (say, over the store's item size): freed rather than left "in
                // progress" until the hold runs out.
                Err(e) => {
                    let _ = held.store.release(&held.key, &held.print).await;
                    Err(e)
                }
            }
        }
        _ => held.store.release(&held.key, &held.print).await,
    };
    if let (Err(e), Ok(outcome)) = (stored, &executed) {
        // The caller still gets the answer; only a later repeat may run the tool again. The
        // call id is the caller's: a string field, escaped as on every call line.
        tracing::warn!(target: "oxp::call", call_id = outcome.call_id.as_str(), error = e.0.as_str(), "outcome not stored");
    }
    executed
}
