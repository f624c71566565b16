//! The bare baseline of the load test (`scripts/bench`): a minimal axum server that answers a
//! fixed JSON body of the same shape as an OXP call response, doing no protocol work at all
//! (`POST /tools/call` ignores the request body; `POST /tools/call/read-body` receives it first).
//! `cargo run --release --example bench_baseline -- PORT`

use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::routing::{get, post};

const CALL: &str = r#"{"$schema":"urn:oxp:1.0","result":{"call_id":"123e4567-e89b-12d3-a456-426614174000","duration":0.004,"success":true,"value":15}}"#;

fn main() {
    // As the `oxp-lambda` binary does with the same allocator (src/main.rs).
    #[cfg(all(feature = "mimalloc", target_os = "linux"))]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the Tokio runtime starts")
        .block_on(serve());
}

async fn serve() {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8081);
    let listing = Bytes::from(oxp_lambda_listing());
    let app = Router::new()
        .route(
            "/tools/call",
            post(|| async { ([(header::CONTENT_TYPE, "application/json")], CALL) }),
        )
        // The same fixed answer after receiving the request body, as any POST endpoint must:
        // separates the cost of reading a body in hyper from the protocol's own work.
        .route(
            "/tools/call/read-body",
            post(|body: Bytes| async move {
                std::hint::black_box(body);
                ([(header::CONTENT_TYPE, "application/json")], CALL)
            }),
        )
        .route(
            "/tools",
            get(move || async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    listing.clone(),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    println!(
        "baseline listening on http://{}",
        listener.local_addr().unwrap()
    );
    axum::serve(listener, app).await.unwrap();
}

/// The same bytes the OXP server lists, so both servers send equal-sized listings.
fn oxp_lambda_listing() -> Vec<u8> {
    std::fs::read("tests/golden/list_tools.json").unwrap_or_else(|_| b"{\"tools\":[]}".to_vec())
}

// The same allocator as the `oxp-lambda` binary (Cargo feature `mimalloc`, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
