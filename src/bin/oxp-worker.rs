//! template.yaml's SQS worker (OxpWorkerFunction): RAP's jobs and MCP tasks' runs. The
//! `oxp-lambda` binary built with feature `role-worker` alone: only what that role serves
//! (docs/deploy.md).

#[path = "../main.rs"]
mod example_server;

fn main() -> std::process::ExitCode {
    example_server::main()
}
