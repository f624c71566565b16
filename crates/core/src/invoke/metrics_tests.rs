//! Each call's metrics as a recorder sees them: a tool's metrics are registered with the
//! recorder by its first call over each protocol (and its first error of each class), and every
//! later call only increments what that registration handed back.

use crate::invoke::{Call, Invoker, Target};
use crate::secrets::{ClientSecrets, Secrets};
use crate::tool::ToolError;
use crate::{Registry, Tool};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A recorder that counts its registrations and what each handle it gave recorded, by metric
/// (`name{label=value,...}`).
#[derive(Default)]
struct Counting {
    registered: Mutex<BTreeMap<String, usize>>,
    recorded: Mutex<BTreeMap<String, Arc<Records>>>,
}

/// What one metric's handles recorded: increments for a counter, values for a histogram.
#[derive(Default)]
struct Records(AtomicU64);

impl metrics::CounterFn for Records {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::SeqCst);
    }
    fn absolute(&self, _value: u64) {}
}

impl metrics::HistogramFn for Records {
    fn record(&self, _value: f64) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Counting {
    fn records(&self, key: &Key) -> Arc<Records> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        *self
            .registered
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_default() += 1;
        let mut recorded = self.recorded.lock().unwrap();
        recorded.entry(name).or_default().clone()
    }

    fn registered(&self) -> BTreeMap<String, usize> {
        self.registered.lock().unwrap().clone()
    }

    fn recorded(&self, name: &str) -> u64 {
        let recorded = self.recorded.lock().unwrap();
        recorded.get(name).map_or(0, |r| r.0.load(Ordering::SeqCst))
    }
}

impl Recorder for Counting {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.records(key))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.records(key))
    }
}

fn invoker() -> Invoker {
    let registry = Registry::builder()
        .tool(Tool::builder("Test.Ok", "1.0.0").raw_handler(
            json!({"type": "object"}),
            None,
            |_, _| async { Ok(json!(1)) },
        ))
        .tool(Tool::builder("Test.Fails", "1.0.0").raw_handler(
            json!({"type": "object"}),
            None,
            |_, _| async { Err(ToolError::new("no")) },
        ))
        .tool(Tool::builder("Test.Waits", "1.0.0").raw_handler(
            json!({"type": "object"}),
            None,
            |_, _| async { Err(crate::talk::TalkError::Parked.into()) },
        ))
        .build()
        .unwrap();
    let secrets = Secrets::new(None, Duration::ZERO, ClientSecrets::Unheld);
    Invoker::new(Arc::new(registry), secrets, None, 4, None)
}

async fn call(invoker: &Invoker, protocol: &'static str, tool: &str) {
    let call = Call::new(protocol, Target::Id(tool.into()), json!({}));
    let _ = invoker.invoke(call).await;
}

#[tokio::test]
async fn a_tools_metrics_are_registered_once_per_protocol_and_class_and_every_call_counted() {
    let recorder = Counting::default();
    let _installed = metrics::set_default_local_recorder(&recorder);
    let invoker = invoker();
    for _ in 0..3 {
        call(&invoker, "oxp", "Test.Ok@1.0.0").await;
        call(&invoker, "oxp", "Test.Fails@1.0.0").await;
        // The handles of calls naming no tool are the process's: a protocol no other test uses.
        call(&invoker, "metrics-test", "Test.None@1.0.0").await;
    }
    call(&invoker, "mcp", "Test.Ok@1.0.0").await;

    let once: BTreeMap<String, usize> = [
        "calls{tool=Test.Ok@1.0.0,protocol=oxp}",
        "duration{tool=Test.Ok@1.0.0,protocol=oxp}",
        "calls{tool=Test.Fails@1.0.0,protocol=oxp}",
        "duration{tool=Test.Fails@1.0.0,protocol=oxp}",
        "errors{tool=Test.Fails@1.0.0,protocol=oxp,class=tool_error}",
        "calls{tool=unresolved,protocol=metrics-test}",
        "errors{tool=unresolved,protocol=metrics-test,class=not_found}",
        "calls{tool=Test.Ok@1.0.0,protocol=mcp}",
        "duration{tool=Test.Ok@1.0.0,protocol=mcp}",
    ]
    .into_iter()
    .map(|name| (name.to_owned(), 1))
    .collect();
    assert_eq!(recorder.registered(), once, "each metric registered once");
    for (name, count) in [
        ("calls{tool=Test.Ok@1.0.0,protocol=oxp}", 3),
        ("duration{tool=Test.Ok@1.0.0,protocol=oxp}", 3),
        (
            "errors{tool=Test.Fails@1.0.0,protocol=oxp,class=tool_error}",
            3,
        ),
        ("calls{tool=unresolved,protocol=metrics-test}", 3),
        (
            "errors{tool=unresolved,protocol=metrics-test,class=not_found}",
            3,
        ),
        ("calls{tool=Test.Ok@1.0.0,protocol=mcp}", 1),
    ] {
        assert_eq!(recorder.recorded(name), count, "{name}");
    }
}

#[tokio::test]
async fn a_run_that_ends_waiting_for_an_answer_is_a_call_never_an_error() {
    let recorder = Counting::default();
    let _installed = metrics::set_default_local_recorder(&recorder);
    let invoker = invoker();
    let call = Call::new("mcp", Target::Id("Test.Waits@1.0.0".into()), json!({}));
    let outcome = invoker.invoke(call).await.unwrap();
    assert_eq!(
        outcome.error_class(),
        Some(crate::refusal::ErrorClass::Waiting)
    );
    assert_eq!(
        recorder.recorded("calls{tool=Test.Waits@1.0.0,protocol=mcp}"),
        1
    );
    let errors: Vec<String> = recorder
        .registered()
        .into_keys()
        .filter(|name| name.starts_with("errors"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[tokio::test]
async fn a_recorder_holding_few_values_between_flushes_is_given_no_more_durations_than_that() {
    // 3, as many as the test above times any one metric: the bound is the process's, and no
    // other test of this crate reads what is recorded.
    super::bound_unflushed(3);
    let recorder = Counting::default();
    let _installed = metrics::set_default_local_recorder(&recorder);
    let invoker = invoker();
    for _ in 0..5 {
        call(&invoker, "rap", "Test.Ok@1.0.0").await;
    }
    let (calls, duration) = (
        "calls{tool=Test.Ok@1.0.0,protocol=rap}",
        "duration{tool=Test.Ok@1.0.0,protocol=rap}",
    );
    assert_eq!(
        (recorder.recorded(calls), recorder.recorded(duration)),
        (5, 3)
    );
    super::flushed();
    for _ in 0..4 {
        call(&invoker, "rap", "Test.Ok@1.0.0").await;
    }
    assert_eq!(
        (recorder.recorded(calls), recorder.recorded(duration)),
        (9, 6),
        "every call counted, as many timed after the flush as the recorder holds"
    );
}
