//! An HTTP event read whichever `http` the build links. From 1.6 `http` refuses a header value
//! with a character outside ASCII where `aws_lambda_events` reads it as text, so an event
//! carrying one (a proxy's `cf-ipcity: Córdoba`) did not read at all and its invocation failed,
//! a 502 for the client. A program that depends on this crate resolves `http` itself, so no
//! lock of this repository's decides which it links. With an `http` that refuses such values
//! (asked once), an event that does not read is read again with each such value given as its
//! bytes, which `aws_lambda_events` takes as `http` 1.5 took the text: the same request. With
//! one that takes them, an event is read as `lambda_http` reads it, at no extra cost.

use http::HeaderValue;
use lambda_http::request::LambdaRequest;
use serde::de::{Deserialize, Deserializer, Error};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::LazyLock;

/// An HTTP event as `lambda_http` reads it, or as read again with its header values outside
/// ASCII given as bytes.
#[derive(Debug)]
pub(crate) struct HttpEvent(pub(crate) LambdaRequest);

/// Whether the linked `http` refuses a header value's text outside ASCII (1.6 and later).
static STRICT_HTTP: LazyLock<bool> = LazyLock::new(|| HeaderValue::from_str("\u{e9}").is_err());

impl<'de> Deserialize<'de> for HttpEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !*STRICT_HTTP {
            return LambdaRequest::deserialize(deserializer).map(Self);
        }
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        match serde_json::from_str(raw.get()) {
            Ok(request) => Ok(Self(request)),
            Err(refused) => read_as_bytes(raw.get()).map(Self).ok_or(refused),
        }
        .map_err(D::Error::custom)
    }
}

/// `event` read with each header value outside ASCII given as bytes (`None`: it had none, or
/// does not read either way).
fn read_as_bytes(event: &str) -> Option<LambdaRequest> {
    let mut event: Value = serde_json::from_str(event).ok()?;
    let mut changed = false;
    for field in ["headers", "multiValueHeaders"] {
        let Some(headers) = event.get_mut(field).and_then(Value::as_object_mut) else {
            continue;
        };
        for value in headers.values_mut() {
            changed |= as_bytes(value);
        }
    }
    if !changed {
        return None;
    }
    serde_json::from_str(&event.to_string()).ok()
}

/// A header's value (a string, or a list of them) written as a list of byte lists, which
/// `aws_lambda_events` reads with `HeaderValue::from_bytes`, if any of its texts is not ASCII.
fn as_bytes(value: &mut Value) -> bool {
    let texts: Vec<&str> = match value {
        Value::String(text) => vec![text],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => return false,
    };
    if texts.iter().all(|text| text.is_ascii()) {
        return false;
    }
    let bytes = texts
        .iter()
        .map(|text| Value::from(text.as_bytes()))
        .collect();
    *value = Value::Array(bytes);
    true
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Each recorded HTTP event of `events/` (its subfolders hold other sources'), by path.
    pub(in crate::transport::lambda) fn recorded() -> Vec<(String, Value)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/events");
        let mut events = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let event = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                events.push((path.display().to_string(), event));
            }
        }
        assert!(events.len() >= 10, "the recorded HTTP events");
        events
    }

    /// Each recorded HTTP event with `header` set to `value`, in `headers` and (where the
    /// event has them) `multiValueHeaders`.
    fn recorded_with(header: &str, value: &str) -> Vec<(String, Value)> {
        let mut events = recorded();
        for (_, event) in &mut events {
            event["headers"][header] = value.into();
            if event.get("multiValueHeaders").is_some_and(Value::is_object) {
                event["multiValueHeaders"][header] = serde_json::json!(["x", value]);
            }
        }
        events
    }

    fn headers(request: LambdaRequest) -> http::HeaderMap {
        lambda_http::Request::from(request).headers().clone()
    }

    #[test]
    fn a_header_value_outside_ascii_reads_as_its_bytes_as_http_1_5_read_its_text() {
        for (path, event) in recorded_with("cf-ipcity", "Córdoba") {
            let read = read_as_bytes(&event.to_string()).unwrap_or_else(|| panic!("{path}"));
            let headers = headers(read);
            let city: Vec<&[u8]> = headers
                .get_all("cf-ipcity")
                .iter()
                .map(HeaderValue::as_bytes)
                .collect();
            assert!(city.contains(&"Córdoba".as_bytes()), "{path}: {city:?}");
            // Everything else as it was recorded.
            let mut plain = event.clone();
            plain["headers"]["cf-ipcity"] = "Cordoba".into();
            if plain.get("multiValueHeaders").is_some_and(Value::is_object) {
                plain["multiValueHeaders"]["cf-ipcity"] = serde_json::json!(["x", "Cordoba"]);
            }
            let plain: HttpEvent = serde_json::from_value(plain).unwrap();
            let mut expected = self::headers(plain.0);
            expected.remove("cf-ipcity");
            let mut got = headers.clone();
            got.remove("cf-ipcity");
            assert_eq!(got, expected, "{path}");
        }
    }

    #[test]
    fn an_event_that_reads_as_sent_or_not_at_all_is_not_read_again() {
        let (_, event) = recorded_with("cf-ipcity", "Cordoba").remove(0);
        assert!(
            read_as_bytes(&event.to_string()).is_none(),
            "nothing to change"
        );
        assert!(
            read_as_bytes(r#"{"headers": {"a": "é"}}"#).is_none(),
            "no HTTP event"
        );
        assert!(read_as_bytes("[").is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256, ..proptest::prelude::ProptestConfig::default()
        })]

        /// Any header: every event reads that `http` 1.5 read (its name a name, its value's
        /// bytes a value), and none that reads panics in the conversion to a request.
        #[test]
        fn any_header_reads_as_http_1_5_read_it_and_never_panics_the_conversion(
            name in "[a-z0-9-]{1,12}|.{0,6}",
            value in ".{0,24}",
        ) {
            let readable = http::HeaderName::from_bytes(name.as_bytes()).is_ok()
                && HeaderValue::from_bytes(value.as_bytes()).is_ok();
            for (path, event) in recorded_with(&name, &value) {
                let read = serde_json::from_str::<HttpEvent>(&event.to_string());
                proptest::prop_assert!(read.is_ok() || !readable, "{path}: {read:?}");
                let Ok(HttpEvent(mut request)) = read else { continue };
                super::super::uri::make_buildable(&mut request);
                let converted = std::panic::catch_unwind(|| lambda_http::Request::from(request));
                proptest::prop_assert!(converted.is_ok(), "{path}");
            }
        }
    }

    #[test]
    fn every_recorded_http_event_reads_with_a_header_outside_ascii() {
        for (path, event) in recorded_with("cf-ipcity", "Córdoba") {
            let read: Result<HttpEvent, _> = serde_json::from_str(&event.to_string());
            assert!(read.is_ok(), "{path}: {read:?}");
        }
    }
}
