//! The `oxp-lambda` binary: serves the example tools of the OXP specification, in Lambda or
//! locally. The role binaries of template.yaml (`src/bin/`) are this one built with their
//! role's features.

#[path = "../examples/spec_tools/tools.rs"]
mod tools;

use std::process::ExitCode;

// mimalloc (Cargo feature `mimalloc`, on by default) is faster than the system allocator on the
// call path's many small allocations; see docs/performance.md.
#[cfg(feature = "mimalloc")]
mod allocator {
    #[global_allocator]
    static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
}

/// Serves the example tools ([`oxp_lambda::run`]).
#[tokio::main]
pub async fn main() -> ExitCode {
    match tools::registry() {
        Ok(registry) => oxp_lambda::run(registry).await,
        Err(e) => {
            eprintln!("invalid tools: {e}");
            ExitCode::FAILURE
        }
    }
}
