//! The command line: `--port N` over `OXP_PORT` for the local server, `--help`, `--version`, and
//! `schema --<protocol>` to print a protocol's export of the tools (the AgentCore Gateway
//! target's tool schema with `--agentcore`, the Bedrock Agents action group's function schema
//! with `--bedrock-agent`, its API schema with `--bedrock-agent-api`).

use crate::config::Config;

/// What `--help` prints.
pub(crate) const USAGE: &str = "usage: oxp-lambda [--port N]\n       oxp-lambda schema --agentcore | --bedrock-agent | --bedrock-agent-api | --<protocol>\n       oxp-lambda --help | --version\n\nServes the tools in AWS Lambda (when AWS_LAMBDA_RUNTIME_API is set) or on a local port.\nConfiguration is read from OXP_* environment variables (docs/configuration.md).";

/// What the binary was asked to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// Serve (Lambda or the local server).
    Serve,
    /// Print protocol `.0`'s export of the tools and exit.
    Schema(String),
    /// Print the usage and exit successfully.
    Help,
    /// Print the version of oxp-lambda this program is built with and exit successfully.
    Version,
}

/// Reads the command line: applies `--port N`, `--port=N` to `config`, or picks a command.
pub(crate) fn apply(
    config: &mut Config,
    args: impl Iterator<Item = String>,
) -> Result<Command, String> {
    let mut args = args.peekable();
    if args.peek().map(String::as_str) == Some("schema") {
        args.next();
        return match (
            args.next().as_deref().and_then(|a| a.strip_prefix("--")),
            args.next(),
        ) {
            (Some(protocol), None) if !protocol.is_empty() => Ok(Command::Schema(protocol.into())),
            _ => Err(format!(
                "schema takes one protocol: --agentcore, --bedrock-agent, ...\n{USAGE}"
            )),
        };
    }
    while let Some(arg) = args.next() {
        let port = match arg.as_str() {
            "--port" | "-p" => args
                .next()
                .ok_or_else(|| format!("--port needs a value\n{USAGE}"))?,
            "--help" | "-h" => return Ok(Command::Help),
            "--version" | "-V" => return Ok(Command::Version),
            other => match other.strip_prefix("--port=") {
                Some(port) => port.to_owned(),
                None => return Err(format!("unknown argument '{other}'\n{USAGE}")),
            },
        };
        config.port = port
            .parse()
            .map_err(|_| format!("--port: '{port}' is not a port number"))?;
    }
    Ok(Command::Serve)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Config, String> {
        let mut c = Config::default();
        apply(&mut c, list.iter().map(|s| s.to_string())).map(|_| c)
    }

    #[test]
    fn port_flag_overrides_the_environment() {
        assert_eq!(args(&["--port", "9001"]).unwrap().port, 9001);
        assert_eq!(args(&["--port=9002"]).unwrap().port, 9002);
        assert!(args(&["--port"]).is_err());
        assert!(args(&["--port", "x"]).is_err());
        assert!(args(&["--bogus"]).is_err());
    }

    #[test]
    fn schema_takes_one_protocol_and_help_is_a_command() {
        let mut c = Config::default();
        let command = |list: &[&str], c: &mut Config| apply(c, list.iter().map(|s| s.to_string()));
        assert_eq!(
            command(&["schema", "--agentcore"], &mut c),
            Ok(Command::Schema("agentcore".into()))
        );
        assert_eq!(
            command(&["schema", "--bedrock-agent"], &mut c),
            Ok(Command::Schema("bedrock-agent".into()))
        );
        assert!(command(&["schema"], &mut c).is_err());
        assert!(command(&["schema", "--"], &mut c).is_err());
        assert!(command(&["schema", "--agentcore", "x"], &mut c).is_err());
        assert_eq!(command(&["--help"], &mut c), Ok(Command::Help));
        assert_eq!(command(&["--version"], &mut c), Ok(Command::Version));
        assert_eq!(command(&["-V"], &mut c), Ok(Command::Version));
        assert_eq!(command(&[], &mut c), Ok(Command::Serve));
    }
}
