//! The `oxp-lambda` binary: serves the example tools, in Lambda or locally.

use std::process::ExitCode;

// mimalloc (Cargo feature `mimalloc`, on by default) is faster than the system allocator on the
// call path's many small allocations; see docs/performance.md.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    match oxp_lambda::example_tools::registry() {
        Ok(registry) => oxp_lambda::run(registry).await,
        Err(e) => {
            eprintln!("invalid tools: {e}");
            ExitCode::FAILURE
        }
    }
}
