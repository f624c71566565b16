//! Fuzzes the whole request path: raw body bytes in, HTTP answer out (parse, resolve, validate,
//! requirements, run, serialize). Every answer must be JSON with an expected status and `$schema`.
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
        let config = Config {
            max_body_bytes: 64 * 1024,
            ..Config::default()
        };
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
    let request = axum::http::Request::post("/tools/call")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(data.to_vec()))
        .expect("a request");
    let (status, body) = runtime().block_on(async {
        let response = app().clone().oneshot(request).await.expect("infallible");
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, body)
    });
    assert!(
        [200, 400, 413, 415, 422].contains(&status),
        "status {status}"
    );
    let json: serde_json::Value = serde_json::from_slice(&body).expect("every answer is JSON");
    assert_eq!(json["$schema"], "urn:oxp:1.0");
});
