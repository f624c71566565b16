//! The command line of the local server: `--port N` over `OXP_PORT`.

use crate::config::Config;

const USAGE: &str = "usage: oxp-lambda [--port N]\n\nConfiguration is read from OXP_* environment variables (docs/configuration.md).";

/// Applies command-line arguments (`--port N`, `--port=N`, `--help`) to `config`.
pub(crate) fn apply(config: &mut Config, args: impl Iterator<Item = String>) -> Result<(), String> {
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let port = match arg.as_str() {
            "--port" | "-p" => args
                .next()
                .ok_or_else(|| format!("--port needs a value\n{USAGE}"))?,
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => match other.strip_prefix("--port=") {
                Some(port) => port.to_owned(),
                None => return Err(format!("unknown argument '{other}'\n{USAGE}")),
            },
        };
        config.port = port
            .parse()
            .map_err(|_| format!("--port: '{port}' is not a port number"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Config, String> {
        let mut c = Config::default();
        apply(&mut c, list.iter().map(|s| s.to_string())).map(|()| c)
    }

    #[test]
    fn port_flag_overrides_the_environment() {
        assert_eq!(args(&["--port", "9001"]).unwrap().port, 9001);
        assert_eq!(args(&["--port=9002"]).unwrap().port, 9002);
        assert!(args(&["--port"]).is_err());
        assert!(args(&["--port", "x"]).is_err());
        assert!(args(&["--bogus"]).is_err());
    }
}
