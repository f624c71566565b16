//! Each tool's metric handles (a [`ToolMetrics`] in every registered tool), registered with the
//! `metrics` recorder by its first call over each protocol (and its first error of each class),
//! as `metrics` has a program keep a metric it records often: a call then increments a handle.
//! Registering at every call built the metric's key (its labels in a new vector, the tool's id
//! copied) and, with a recorder, searched its index under its lock: about 1,050 instructions of
//! every call with no recorder at all. So a program installs its recorder before its first call
//! (the server does at start): a handle is the recorder's of its registration. What is recorded
//! and when is the invoker's ([`crate::invoke::metrics`]); this is below both it and the
//! registry, which holds the handles.
//!
//! A recorder that holds a bounded number of a histogram's values between two of its flushes
//! (CloudWatch EMF's collector: 100, an EMF document's bound per metric, with an error line for
//! each value past it) says so with [`bound_unflushed`] and calls [`flushed`] as it writes: each
//! tool and protocol's `duration` then takes at most that many values between two flushes, a
//! later call counted (`calls`, `errors`) but not timed, never an error line per call.

use crate::refusal::ErrorClass;
use metrics::{Counter, Histogram, SharedString};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// Calls that ended, whatever the outcome (a counter).
pub const CALLS: &str = "calls";
/// Calls that did not succeed, by `class` (a counter).
pub const ERRORS: &str = "errors";
/// Time in the tool, in milliseconds, of calls whose tool ran (a histogram).
pub const DURATION: &str = "duration";
/// The `tool` dimension of a call that named no registered tool.
pub const UNRESOLVED: &str = "unresolved";
/// Cold starts of Lambda execution environments (a counter, dimension `service` only): counted
/// by the transport that starts invocations, described here with the call metrics.
pub const COLD_STARTS: &str = "cold_starts";

/// How many `duration` values a tool and protocol may record between two flushes
/// ([`bound_unflushed`]; unbounded unless a recorder says).
static UNFLUSHED: AtomicU32 = AtomicU32::new(u32::MAX);
/// The recorder's flushes so far ([`flushed`]).
static FLUSHES: AtomicU64 = AtomicU64::new(0);

/// For a recorder that holds at most `max` values of a histogram between two of its flushes:
/// each tool and protocol's `duration` records at most `max` calls until the next [`flushed`].
pub fn bound_unflushed(max: u32) {
    UNFLUSHED.store(max, Relaxed);
}

/// The recorder wrote what it held: each tool and protocol's `duration` may record again.
pub fn flushed() {
    FLUSHES.fetch_add(1, Relaxed);
}

/// One tool's metric handles, for each protocol it was called over (a handful).
#[derive(Default)]
pub(crate) struct ToolMetrics(Mutex<Vec<Handles>>);

impl std::fmt::Debug for ToolMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolMetrics")
    }
}

/// The handles of one tool's calls over one protocol, each registered when first needed.
pub(crate) struct Handles {
    protocol: &'static str,
    tool: SharedString,
    calls: Counter,
    duration: Option<Histogram>,
    /// The flush its durations were last recorded after, and how many since.
    timed: (u64, u32),
    errors: Vec<(ErrorClass, Counter)>,
}

impl Handles {
    fn new(tool: &str, protocol: &'static str) -> Self {
        let tool = SharedString::from(tool.to_owned());
        let calls = metrics::counter!(CALLS, "tool" => tool.clone(), "protocol" => protocol);
        Self {
            protocol,
            tool,
            calls,
            duration: None,
            timed: (0, 0),
            errors: Vec::new(),
        }
    }

    /// A call ended, with its error's `class` if it did not succeed (a run that waits for an
    /// answer did not fail).
    pub(crate) fn count(&mut self, class: Option<ErrorClass>) {
        self.calls.increment(1);
        let Some(class) = class.filter(|c| *c != ErrorClass::Waiting) else {
            return;
        };
        if let Some((_, errors)) = self.errors.iter().find(|(c, _)| *c == class) {
            errors.increment(1);
            return;
        }
        let (tool, protocol) = (self.tool.clone(), self.protocol);
        let errors = metrics::counter!(ERRORS, "tool" => tool, "protocol" => protocol, "class" => class.as_str());
        errors.increment(1);
        self.errors.push((class, errors));
    }

    /// A call's time in its tool, unless as many as the recorder holds were recorded since its
    /// last flush.
    pub(crate) fn ran(&mut self, millis: f64) {
        let flushes = FLUSHES.load(Relaxed);
        if self.timed.0 != flushes {
            self.timed = (flushes, 0);
        }
        if self.timed.1 >= UNFLUSHED.load(Relaxed) {
            return;
        }
        self.timed.1 += 1;
        let (tool, protocol) = (&self.tool, self.protocol);
        self.duration
            .get_or_insert_with(
                || metrics::histogram!(DURATION, "tool" => tool.clone(), "protocol" => protocol),
            )
            .record(millis);
    }
}

impl ToolMetrics {
    /// The handles of `tool`'s calls over `protocol`, registered by the first.
    pub(crate) fn with(&self, tool: &str, protocol: &'static str, f: impl FnOnce(&mut Handles)) {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match all.iter_mut().find(|h| h.protocol == protocol) {
            Some(handles) => f(handles),
            None => {
                let mut handles = Handles::new(tool, protocol);
                f(&mut handles);
                all.push(handles);
            }
        }
    }
}
