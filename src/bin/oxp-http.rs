//! template.yaml's HTTP functions (OxpFunction, and OxpStreamFunction with response streaming).
//! The `oxp-lambda` binary built with feature `role-http` alone: only what that role serves
//! (docs/deploy.md).

#[path = "../main.rs"]
mod example_server;

fn main() -> std::process::ExitCode {
    example_server::main()
}
