//! The local server's stop: Ctrl-C or SIGTERM starts the drain, a second one ends the process.

/// Completes on Ctrl-C or SIGTERM; a second one stops the process at once (exit code 1), as
/// an operator who presses Ctrl-C again expects: what was running is taken over as after a
/// crash.
pub(crate) async fn shutdown_signal() {
    signalled().await;
    tracing::info!("shutting down: finishing in-flight requests (Ctrl-C again stops at once)");
    tokio::spawn(async {
        signalled().await;
        // Written whatever became of standard error (eprintln! panics on a closed pipe).
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"a second signal: stopping at once\n",
        );
        std::process::exit(1);
    });
}

/// Completes on the next Ctrl-C or SIGTERM.
async fn signalled() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
