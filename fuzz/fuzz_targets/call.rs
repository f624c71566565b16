//! Fuzzes the whole request path of the HTTP protocols: raw body bytes in, HTTP answer out
//! (parse, resolve, validate, requirements, run, serialize). The first byte picks the route: an
//! OXP call (every answer JSON with an expected status and `$schema`), an async invocation (JSON
//! with an expected status; callbacks can go nowhere: the allow-list holds only an unresolvable
//! host) or an MCP message (JSON-RPC with an expected status, or a bodiless 202); a request
//! with an `Authorization` header line goes to a server that authenticates its callers by JWT.
#![no_main]

use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use oxp_lambda::App;
use std::sync::OnceLock;
use tower::ServiceExt;

#[path = "../../examples/spec_tools/tools.rs"]
mod tools;

/// What the bytes ask and what every answer must be, shared with the test that replays the
/// seeds (`fuzz_seeds::tests::every_seed_of_the_fuzz_target_is_answered_in_its_protocols_shape`).
#[path = "../../tests/fuzz_seeds.rs"]
mod seeds;

/// The server a request is for: the one that authenticates its callers (a request with an
/// `Authorization` header line) or the open one.
fn app(authenticated: bool) -> &'static App {
    static APPS: [OnceLock<App>; 2] = [OnceLock::new(), OnceLock::new()];
    APPS[usize::from(authenticated)].get_or_init(|| {
        let registry = tools::registry().expect("valid tools");
        // RAP's settings are its protocol's, read from the variables like the binary's.
        let builder = App::builder(registry).config(seeds::config(authenticated));
        runtime()
            .block_on(builder.secret(seeds::KEY_ID, seeds::KEY).build())
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
    let Some((sent, request)) = seeds::request(data) else {
        return;
    };
    // Built outside the runtime's `block_on`, which building uses itself.
    let app = app(sent.authenticated).clone();
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
    seeds::check(&sent, status, &body);
});
