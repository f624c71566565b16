//! An HTTP event's parts that `lambda_http` builds the request's URI from, made such that it can.
//! It builds the URI from the event's `Host` and `X-Forwarded-Proto` headers, its path and its
//! query, and panics where they make none (`Url::parse(..).unwrap()`, `.expect("failed to
//! build request")`): the Lambda runtime turns the panic into the invocation's error, a 502
//! for the client with a panic in the log. Those parts are the client's: an HTTP API or a
//! Function URL passes the query string as it was sent (`?q={"a":1}`, a space), a load
//! balancer the `Host`. So, before the conversion, a query's bytes that a URI does not take are
//! percent-encoded (a reader that decodes the query reads the same), a `Host` or
//! `X-Forwarded-Proto` that names no host or scheme is dropped (the URI is then the API's domain
//! name and the path, or the path alone), and a path is made to start with `/`; and a body
//! flagged base64 that is not (its decoding panics too) is taken as it came.

use super::event::HttpEvent;
use http::HeaderMap;
use http::header::HOST;
use lambda_http::request::LambdaRequest;
use lambda_http::{LambdaEvent, Service};
use std::task::{Context, Poll};

/// `S`, each event read whichever `http` is linked ([`HttpEvent`]) and its URI parts made
/// buildable ([`make_buildable`]) before it converts them.
#[derive(Clone)]
pub(crate) struct Buildable<S>(pub(crate) S);

impl<S: Service<LambdaEvent<LambdaRequest>>> Service<LambdaEvent<HttpEvent>> for Buildable<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, event: LambdaEvent<HttpEvent>) -> Self::Future {
        let HttpEvent(mut request) = event.payload;
        make_buildable(&mut request);
        self.0.call(LambdaEvent::new(request, event.context))
    }
}

/// The parts of `request` its URI is built from, made such that it builds.
pub(crate) fn make_buildable(request: &mut LambdaRequest) {
    match request {
        LambdaRequest::ApiGatewayV1(event) => {
            headers(&mut event.headers);
            domain(&mut event.request_context.domain_name);
            path(&mut event.path);
            body(&mut event.is_base64_encoded, event.body.as_deref());
        }
        LambdaRequest::ApiGatewayV2(event) => {
            headers(&mut event.headers);
            domain(&mut event.request_context.domain_name);
            path(&mut event.raw_path);
            if let Some(query) = &mut event.raw_query_string {
                encode_query(query);
            }
            body(&mut event.is_base64_encoded, event.body.as_deref());
        }
        LambdaRequest::Alb(event) => {
            headers(&mut event.headers);
            path(&mut event.path);
            body(&mut event.is_base64_encoded, event.body.as_deref());
        }
        _ => {}
    }
}

fn headers(headers: &mut HeaderMap) {
    const PROTO: &str = "x-forwarded-proto";
    let scheme = headers.get(PROTO).map(|v| v.as_bytes());
    if scheme.is_some_and(|s| !s.eq_ignore_ascii_case(b"https") && !s.eq_ignore_ascii_case(b"http"))
    {
        headers.remove(PROTO);
    }
    let host = headers.get(HOST).map(|v| v.to_str());
    if host.is_some_and(|h| !h.is_ok_and(is_host)) {
        headers.remove(HOST);
    }
}

/// Whether `host` is a host (and port) both readers of it take: `http`'s authority, and the
/// `url` crate's URL (an IP address that is not one, as `1.2.3.999`, only the second refuses).
fn is_host(host: &str) -> bool {
    !host.contains(['@', '/', '?', '#', '\\'])
        && host.parse::<http::uri::Authority>().is_ok()
        && url::Url::parse(&format!("https://{host}/")).is_ok_and(|u| u.has_host())
}

/// The API's domain name (the host when the event has no `Host`): API Gateway's, but a direct
/// invocation's event is anyone's.
fn domain(name: &mut Option<String>) {
    if name.as_deref().is_some_and(|n| !is_host(n)) {
        *name = None;
    }
}

fn path(path: &mut Option<String>) {
    if let Some(path) = path
        && !path.starts_with('/')
    {
        path.insert(0, '/');
    }
}

/// A body said to be base64 that is not is taken as it came (the app then refuses what it
/// reads): `aws_lambda_events` panics decoding it. AWS sets the flag itself; a direct
/// invocation's event is anyone's.
fn body(base64: &mut bool, body: Option<&str>) {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    if *base64 && body.is_some_and(|b| engine.decode(b).is_err()) {
        *base64 = false;
    }
}

/// Percent-encodes each byte of `query` outside RFC 3986's query characters (`%` kept, so what
/// was encoded stays as it was).
fn encode_query(query: &mut String) {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b);
    if query.bytes().all(allowed) {
        return;
    }
    let mut encoded = String::with_capacity(query.len() + 16);
    for b in query.bytes() {
        match allowed(b) {
            true => encoded.push(char::from(b)),
            false => encoded.push_str(&format!("%{b:02X}")),
        }
    }
    *query = encoded;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_keeps_what_a_uri_takes_and_encodes_the_rest() {
        let mut plain = "a=1&b=%20x&c=~".to_owned();
        encode_query(&mut plain);
        assert_eq!(plain, "a=1&b=%20x&c=~");
        let mut sent = "q={\"a\":1} é<>".to_owned();
        encode_query(&mut sent);
        assert_eq!(sent, "q=%7B%22a%22:1%7D%20%C3%A9%3C%3E");
    }

    #[test]
    fn every_recorded_http_event_converts_whatever_it_holds_as_query_host_scheme_or_body() {
        let hostile = [
            "q={\"a\":1}",
            "a b",
            "<x>",
            "%%%",
            "1.2.3.999",
            "no_scheme",
            "é",
            "",
        ];
        for (path, recorded) in super::super::event::tests::recorded() {
            for sent in hostile {
                for (part, key) in [
                    ("body", ""),
                    ("rawQueryString", ""),
                    ("headers", "host"),
                    ("headers", "x-forwarded-proto"),
                    ("path", ""),
                    ("rawPath", ""),
                ] {
                    let mut event = recorded.clone();
                    match key {
                        "" if event.get(part).is_some() => {
                            event[part] = sent.into();
                            // A body said to be base64 (its decoding panicked too).
                            if part == "body" {
                                event["isBase64Encoded"] = true.into();
                            }
                        }
                        "" => continue,
                        key => event[part][key] = sent.into(),
                    }
                    // Read as the runtime reads it: a header "é" too, whichever `http`.
                    let HttpEvent(mut request) = serde_json::from_value(event)
                        .unwrap_or_else(|e| panic!("{path:?} with {part}.{key} = {sent:?}: {e}"));
                    make_buildable(&mut request);
                    let converted =
                        std::panic::catch_unwind(|| lambda_http::Request::from(request));
                    assert!(converted.is_ok(), "{path:?} with {part}.{key} = {sent:?}");
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// Any text, in a part of a recorded event that its request is built from or that the
        /// app reads, as the hostile values above are.
        #[test]
        fn every_recorded_http_event_converts_whatever_text_its_parts_hold(
            which in 0usize..64,
            part in 0usize..12,
            sent in proptest::prelude::any::<String>(),
        ) {
            let recorded = super::super::event::tests::recorded();
            let (path, mut event) = recorded[which % recorded.len()].clone();
            let parts = [
                ("body", ""), ("rawQueryString", ""), ("headers", "host"),
                ("headers", "x-forwarded-proto"), ("path", ""), ("rawPath", ""),
                ("headers", "content-type"), ("headers", "origin"),
                ("queryStringParameters", "q"), ("multiValueQueryStringParameters", "q"),
                ("requestContext", "domainName"), ("requestContext", "stage"),
            ];
            let (part, key) = parts[part];
            // A part the event has: a client sends the values, AWS makes the event's shape.
            if event.get(part).is_none_or(|v| v.is_null() || !key.is_empty() && !v.is_object()) {
                return Ok(());
            }
            let value = match part {
                "multiValueQueryStringParameters" => serde_json::json!([sent]),
                _ => serde_json::json!(sent),
            };
            match key {
                "" => event[part] = value,
                key => event[part][key] = value,
            }
            let read = serde_json::from_value::<HttpEvent>(event);
            proptest::prop_assert!(read.is_ok(), "{path:?} with {part}.{key} = {sent:?}");
            let Ok(HttpEvent(mut request)) = read else { unreachable!() };
            make_buildable(&mut request);
            let converted = std::panic::catch_unwind(|| lambda_http::Request::from(request));
            proptest::prop_assert!(converted.is_ok(), "{path:?} with {part}.{key} = {sent:?}");
        }
    }

    #[test]
    fn only_a_host_both_readers_take_is_kept() {
        for host in [
            "example.com",
            "api.example.com:8443",
            "127.0.0.1",
            "[::1]:9000",
            "a_b.internal",
        ] {
            assert!(is_host(host), "{host}");
        }
        for host in [
            "",
            "a b",
            "%%%",
            "1.2.3.999",
            "user@example.com",
            "example.com/x",
            ":80",
            "ex\"ample",
        ] {
            assert!(!is_host(host), "{host}");
        }
    }
}
