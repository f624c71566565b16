//! template.yaml's Bedrock AgentCore Gateway target (OxpAgentCoreFunction). The `oxp-lambda`
//! binary built with feature `role-agentcore` alone: only what that role serves (docs/deploy.md).

#[path = "../main.rs"]
mod example_server;

fn main() -> std::process::ExitCode {
    example_server::main()
}
