//! Fuzzes the whole request path of the HTTP protocols: raw body bytes in, HTTP answer out
//! (parse, resolve, validate, requirements, run, serialize). The first byte picks the route: an
//! OXP call (every answer JSON with an expected status and `$schema`), an async invocation (JSON
//! with an expected status; callbacks can go nowhere: the allow-list holds only an unresolvable
//! host) or an MCP message (JSON-RPC with an expected status, or a bodiless 202).
#![no_main]

use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use oxp_lambda::{App, Config};
use std::sync::OnceLock;
use tower::ServiceExt;

#[path = "../../examples/spec_tools/tools.rs"]
mod tools;

fn app() -> &'static App {
    static APP: OnceLock<App> = OnceLock::new();
    APP.get_or_init(|| {
        let registry = tools::registry().expect("valid tools");
        // RAP's settings are its protocol's, read from the variables like the binary's.
        let config = Config::from_vars(
            false,
            [
                ("OXP_MAX_BODY_BYTES", "65536"),
                // State in memory: no database file written beside the corpus.
                ("OXP_STATE", "off"),
                ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "false"),
                ("OXP_RAP_CALLBACK_HOSTS", "callback.invalid"),
                ("OXP_RAP_DELIVERY_ATTEMPTS", "1"),
                ("OXP_RAP_DEAD_LETTER_FILE", "/dev/null"),
            ],
        )
        .expect("a valid configuration");
        runtime()
            .block_on(App::builder(registry).config(config).build())
            .expect("the app builds")
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&route, body)) = data.split_first() else {
        return;
    };
    let path = ["/tools/call", "/invoke", "/mcp"][usize::from(route % 3)];
    let request = axum::http::Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(axum::body::Body::from(body.to_vec()))
        .expect("a request");
    // Built outside the runtime's `block_on`, which building uses itself.
    let app = app().clone();
    let (status, body) = runtime().block_on(async move {
        let response = app.oneshot(request).await.expect("infallible");
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, body)
    });
    if path == "/mcp" && status == 202 {
        assert!(body.is_empty(), "a notification's 202 has no body");
        return;
    }
    let json: serde_json::Value = serde_json::from_slice(&body).expect("every answer is JSON");
    if path == "/mcp" {
        assert!([200, 400, 413].contains(&status), "status {status}");
        assert_eq!(json["jsonrpc"], "2.0");
    } else if path == "/invoke" {
        assert!([200, 400, 409, 413, 429, 503].contains(&status), "status {status}");
        assert!(json["status"] == "accepted" || json["error"]["kind"].is_string(), "{json}");
    } else {
        assert!([200, 400, 422].contains(&status), "status {status}");
        assert_eq!(json["$schema"], "urn:oxp:1.0");
    }
});
