//! What the call path works out before and after the run: the one deadline, the credentials
//! that make a repeat another call, and whether a failure may be retried (the input's validity
//! is the tool's own check, [`RegisteredTool::check_input`](crate::registry::RegisteredTool::check_input)).

use crate::content::ToolOutput;
use crate::tool::{Secret, ToolError};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The call's deadline: the first of the transport's and `arrived` plus each time limit.
pub(super) fn deadline_of(
    arrived: Instant,
    transport: Option<Instant>,
    server: Option<Duration>,
    tool: Option<Duration>,
) -> Option<Instant> {
    [server, tool]
        .into_iter()
        .flatten()
        .filter_map(|limit| arrived.checked_add(limit))
        .chain(transport)
        .min()
}

pub(super) fn retryable(result: &Result<ToolOutput<Value>, ToolError>) -> bool {
    result.as_ref().is_err_and(|e| e.can_retry)
}

/// The client's tokens and secrets, tagged so a token and a secret of one id differ.
pub(super) fn credentials_of(
    authorization: &[(String, Secret)],
    secrets: &[(String, Secret)],
) -> Vec<(String, Secret)> {
    let tagged = |tag: &str, list: &[(String, Secret)]| {
        list.iter()
            .map(|(id, value)| (format!("{tag}:{id}"), value.clone()))
            .collect::<Vec<_>>()
    };
    let mut all = tagged("token", authorization);
    all.extend(tagged("secret", secrets));
    all
}
