//! template.yaml's Bedrock Agents action group (OxpBedrockAgentFunction). The `oxp-lambda` binary
//! built with feature `role-bedrock-agent` alone: only what that role serves (docs/deploy.md).

#[path = "../main.rs"]
mod example_server;

fn main() -> std::process::ExitCode {
    example_server::main()
}
