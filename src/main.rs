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

    /// Transparent huge pages off for this process, before the runtime's threads touch their
    /// memory: mimalloc asks the kernel for them on its arenas, and where the kernel grants them
    /// on request (`madvise`, a common default) each first touch of 2 MiB of an arena zeroes a
    /// whole huge page. Measured without them (docs/performance.md): a local start about
    /// 0.3 ms of CPU sooner, a seventh less memory under load, the same throughput.
    pub(super) fn no_huge_pages() {
        // A kernel without the setting (before Linux 3.15) refuses it, which changes nothing.
        #[cfg(target_os = "linux")]
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}

/// The system's allocator: nothing to set.
#[cfg(not(feature = "mimalloc"))]
mod allocator {
    pub(super) fn no_huge_pages() {}
}

/// Serves the example tools ([`oxp_lambda::run`]).
pub fn main() -> ExitCode {
    allocator::no_huge_pages();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the Tokio runtime starts");
    runtime.block_on(async {
        match tools::registry() {
            Ok(registry) => oxp_lambda::run(registry).await,
            Err(e) => {
                eprintln!("invalid tools: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
