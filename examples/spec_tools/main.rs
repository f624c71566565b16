//! A server with the OXP specification's example tools, built from the public API only.
//! Copy this folder to start your own: `cargo run --example spec_tools -- --port 8080`.

mod tools;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let registry = tools::registry().expect("the example tools are valid");
    oxp_lambda::run(registry).await
}
