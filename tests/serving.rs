//! Serving, by this crate or by a program embedding the app: the local server's connections
//! are bounded (a connection that sends no request head in time is closed, no more than
//! `OXP_MAX_CONNECTIONS` are served at once, nor more than `OXP_MAX_CONNECTIONS_PER_PEER` from
//! one address, a body that trickles in is cut off with a 408), and an embedded app keeps the
//! browser guard.
//! Rows of docs/security.md.

use crate::common;

use common::*;
use oxp_lambda::Config;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads until the server closes the connection or `within` passes; `None` if it stayed open.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .ok()
    .map(|()| got)
}

/// Sends `request` on a new connection and reads the reply until the server closes it.
async fn exchange(addr: &str, request: &str) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    closed_within(&mut stream, Duration::from_secs(5))
        .await
        .unwrap()
}

fn health(addr: &str) -> String {
    format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

#[tokio::test]
async fn a_connection_that_sends_no_complete_request_head_in_time_is_closed() {
    let config = Config {
        header_read_timeout: Duration::from_millis(300),
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;

    // Slow-loris: half a request head, then nothing.
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").as_bytes())
        .await
        .unwrap();
    assert!(
        closed_within(&mut slow, Duration::from_secs(5))
            .await
            .is_some(),
        "a connection whose head never completes is closed"
    );

    // A connection opened and left silent, and one kept alive and idle after its answer.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    assert!(
        closed_within(&mut silent, Duration::from_secs(5))
            .await
            .is_some()
    );
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    kept.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let answered = closed_within(&mut kept, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        answered.starts_with(b"HTTP/1.1 200"),
        "answered, then closed once idle"
    );

    // A request sent in time is answered.
    let reply = exchange(&addr, &health(&addr)).await;
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
}

#[tokio::test]
async fn no_more_connections_than_oxp_max_connections_are_served_at_once() {
    let config = Config {
        max_connections: 2,
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let first = TcpStream::connect(&addr).await.unwrap();
    let mut second = TcpStream::connect(&addr).await.unwrap();
    // Both held: the third is left in the backlog, unanswered while they stay open.
    second
        .write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let n = second.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let mut third = TcpStream::connect(&addr).await.unwrap();
    third.write_all(health(&addr).as_bytes()).await.unwrap();
    assert!(
        closed_within(&mut third, Duration::from_millis(500))
            .await
            .is_none(),
        "a third connection is not served while two are open"
    );
    // One closes: the third is served.
    drop(first);
    let reply = closed_within(&mut third, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
}

#[tokio::test]
async fn an_app_served_by_another_program_keeps_the_host_rule_and_the_browser_guard_while_auth_is_off()
 {
    // Embedded the way axum serves any service, without `App::serve`, on loopback.
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        axum::serve(
            listener,
            axum::ServiceExt::<axum::extract::Request>::into_make_service(app),
        )
        .await
    });
    let call = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
    let status = |extra: String| {
        let addr = addr.clone();
        async move {
            let request = format!(
                "POST /tools/call HTTP/1.1\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{call}",
                call.len()
            );
            let reply = exchange(&addr, &request).await;
            String::from_utf8_lossy(&reply[9..12]).into_owned()
        }
    };
    assert_eq!(status(format!("Host: {addr}\r\n")).await, "200");
    // DNS rebinding: the page's own name, resolved to 127.0.0.1.
    assert_eq!(status("Host: attacker.example\r\n".into()).await, "403");
    assert_eq!(
        status(format!(
            "Host: {addr}\r\nOrigin: https://attacker.example\r\n"
        ))
        .await,
        "403"
    );
    // HTTP/1.1's one Host: a second one the program's readers might read apart is a 400.
    let two = format!("Host: {addr}\r\nHost: attacker.example\r\n");
    assert_eq!(status(two).await, "400");
    assert_eq!(status("Host: a b\r\n".into()).await, "400");
}

#[tokio::test]
async fn lambda_events_through_an_embedded_app_are_not_held_to_loopback_names() {
    // An API Gateway event names the API's domain in Host: it comes from API Gateway, not from
    // a browser on this machine.
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let event: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("events/apigw-http-list-tools.json").unwrap(),
    )
    .unwrap();
    assert!(
        event["headers"]["host"]
            .as_str()
            .unwrap()
            .contains("amazonaws.com")
    );
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let response = Adapter::from(app)
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(response).unwrap()["statusCode"], 200);
}

/// Opens a connection and sends the head of a POST announcing a 100,000-byte body (the caller
/// then sends the body a byte at a time).
async fn trickle(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /tools/call HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

#[tokio::test]
async fn a_body_that_trickles_in_is_answered_408_and_frees_its_connection() {
    let config = Config {
        max_connections: 3,
        body_read_timeout: Duration::from_millis(500),
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    // Every slot taken by a body that arrives a byte at a time.
    let mut slow = Vec::new();
    for _ in 0..3 {
        slow.push(trickle(&addr).await);
    }
    let feeding: Vec<_> = slow
        .iter_mut()
        .map(|s| async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            for _ in 0..100 {
                let _ = s.write_all(b"{").await;
                match tokio::time::timeout(Duration::from_millis(100), s.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => break,
                    Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                    Err(_) => {}
                }
            }
            got
        })
        .collect();
    // `/health` still answers: the trickling requests are cut off at their deadline.
    let started = std::time::Instant::now();
    let health_reply = tokio::spawn({
        let addr = addr.clone();
        async move { exchange(&addr, &health(&addr)).await }
    });
    let replies = futures_util::future::join_all(feeding).await;
    for reply in &replies {
        let text = String::from_utf8_lossy(reply);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(
            text.to_ascii_lowercase().contains("connection: close"),
            "{text}"
        );
    }
    let reply = health_reply.await.unwrap();
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn one_peer_address_cannot_hold_every_connection() {
    let config = Config {
        max_connections: 4,
        max_connections_per_peer: 2,
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    // 127.0.0.1 holds its two connections (heads never completed).
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        stream.write_all(b"GET /health HTTP/1.1\r\n").await.unwrap();
        held.push(stream);
    }
    // Its third is closed at once, unanswered.
    let mut third = TcpStream::connect(&addr).await.unwrap();
    let _ = third.write_all(health(&addr).as_bytes()).await;
    let closed = closed_within(&mut third, Duration::from_secs(2)).await;
    assert_eq!(
        closed.as_deref(),
        Some(&b""[..]),
        "closed without an answer"
    );
    // Another address on this machine (127.0.0.2, also loopback) is still served.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(addr.parse().unwrap()).await.unwrap();
    other.write_all(health(&addr).as_bytes()).await.unwrap();
    let reply = closed_within(&mut other, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        reply.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    // Once one of 127.0.0.1's closes, it may open another.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let reply = exchange(&addr, &health(&addr)).await;
    assert!(reply.starts_with(b"HTTP/1.1 200"));
}

#[test]
fn the_binary_answers_help_and_version_on_standard_output_and_exits_0() {
    for (arg, said) in [
        ("--help", "usage: oxp-lambda"),
        (
            "--version",
            concat!("oxp-lambda ", env!("CARGO_PKG_VERSION"), "\n"),
        ),
        (
            "-V",
            concat!("oxp-lambda ", env!("CARGO_PKG_VERSION"), "\n"),
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .arg(arg)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{arg}");
        assert!(text.starts_with(said), "{arg}: {text}");
    }
}

/// [`exchange`]'s answer as its head (lowercased) and body.
async fn head_and_body(addr: &str, request: String) -> (String, String) {
    let answer = String::from_utf8(exchange(addr, &request).await).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_ascii_lowercase(), body.to_owned())
}

#[tokio::test]
async fn a_page_of_an_allowed_origin_gets_its_preflight_and_reads_the_answers_headers() {
    // Its preflight was 405 and no answer carried `Access-Control-Allow-Origin`: a page of an
    // allowed origin (the MCP Inspector's direct connection) could call nothing.
    let page = "http://localhost:6274";
    let (addr, _stop) = serve_on_loopback(test_config_with(&[("OXP_ALLOWED_ORIGINS", page)])).await;
    let preflight = format!(
        "OPTIONS /mcp HTTP/1.1\r\nHost: {addr}\r\nOrigin: {page}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type, mcp-protocol-version\r\nConnection: close\r\n\r\n"
    );
    let (head, _) = head_and_body(&addr, preflight).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains(&format!("access-control-allow-origin: {page}")),
        "{head}"
    );
    assert!(
        head.contains("access-control-allow-methods: post"),
        "{head}"
    );
    assert!(
        head.contains("access-control-allow-headers: content-type, mcp-protocol-version"),
        "{head}"
    );
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"page","version":"1"}}}"#;
    let call = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nOrigin: {page}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (head, answer) = head_and_body(&addr, call).await;
    assert!(head.starts_with("http/1.1 200"), "{head}{answer}");
    assert!(
        head.contains(&format!("access-control-allow-origin: {page}")),
        "{head}"
    );
    assert!(head.contains("access-control-expose-headers: *"), "{head}");
    assert!(
        head.contains("mcp-session-id: "),
        "the header it exposes: {head}"
    );
    // Another origin is still refused, preflight and all.
    let other = format!(
        "OPTIONS /mcp HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n"
    );
    let (head, _) = head_and_body(&addr, other).await;
    assert!(head.starts_with("http/1.1 403"), "{head}");
    assert!(!head.contains("access-control-allow-origin"), "{head}");
}
