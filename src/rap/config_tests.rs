//! Reading RAP's settings from the variables: defaults, values, Lambda's requirements, and an
//! error naming each invalid variable.

use super::*;
use crate::config::Vars;

/// RAP's settings from `vars`, locally (`lambda` false) or in Lambda, with the server's
/// default tool timeout, for callers who authenticate.
fn read(lambda: bool, vars: &[(&str, &str)]) -> Result<RapConfig, ConfigError> {
    read_as(false, lambda, vars)
}

/// The same, for callers who do (`anonymous` false) or do not authenticate.
fn read_as(anonymous: bool, lambda: bool, vars: &[(&str, &str)]) -> Result<RapConfig, ConfigError> {
    let vars: Vars = vars.iter().copied().collect();
    let env = Env::new(lambda, &vars);
    RapConfig::from_env(
        &env,
        Some(Duration::from_secs(30)),
        std::net::IpAddr::from([127, 0, 0, 1]),
        anonymous,
    )
}

#[test]
fn a_callers_share_of_the_dead_letter_file_is_a_quarter_unless_every_call_is_anonymous() {
    let file = ("OXP_RAP_DEAD_LETTER_MAX_BYTES", "4000");
    assert_eq!(
        read(false, &[file])
            .unwrap()
            .dead_letter_max_bytes_per_caller,
        1000
    );
    let anonymous = read_as(true, false, &[file]).unwrap();
    assert_eq!(
        anonymous.dead_letter_max_bytes_per_caller, 4000,
        "one caller: the whole file"
    );
    let set = ("OXP_RAP_DEAD_LETTER_MAX_BYTES_PER_CALLER", "9000");
    let c = read(false, &[file, set]).unwrap();
    assert_eq!(
        c.dead_letter_max_bytes_per_caller, 4000,
        "never more than the file"
    );
    let zero = ("OXP_RAP_DEAD_LETTER_MAX_BYTES_PER_CALLER", "0");
    assert!(read(false, &[zero]).is_err());
}

#[test]
fn rap_settings_are_read() {
    let c = read(false, &[]).unwrap();
    assert_eq!(
        c.tool_timeout,
        Some(Duration::from_secs(30)),
        "the server's by default"
    );
    let c = read(false, &[("OXP_RAP_TOOL_TIMEOUT_MS", "0")]).unwrap();
    assert_eq!(c.tool_timeout, None);
    let c = read(
        false,
        &[
            ("OXP_RAP_RATE_LIMIT", "30/min"),
            (
                "OXP_RAP_CALLBACK_HOSTS",
                "agent.example.com, *.runtime.example",
            ),
            ("OXP_RAP_ALLOW_HTTP", "true"),
            ("OXP_RAP_DELIVERY_ATTEMPTS", "3"),
            ("OXP_RAP_DELIVERY_TIMEOUT_SECS", "20"),
            ("OXP_RAP_TOOLS", "Calculator.Add@1.0.0"),
        ],
    )
    .unwrap();
    assert!(c.enabled);
    assert_eq!(
        c.rate_limit,
        Some(RateLimit {
            invocations: 30,
            per: Duration::from_secs(60)
        })
    );
    assert_eq!(
        c.callbacks.allowed_hosts,
        ["agent.example.com", "*.runtime.example"]
    );
    assert!(c.callbacks.allow_http && !c.callbacks.lambda);
    assert_eq!(c.retry.max_attempts, 3);
    assert_eq!(c.retry.total, Duration::from_secs(20));
    assert_eq!(c.pins, ["Calculator.Add@1.0.0"]);
}

#[test]
fn rap_in_lambda_needs_its_queues() {
    // Without a queue RAP is off in Lambda, unless asked for.
    assert!(!read(true, &[]).unwrap().enabled);
    assert_eq!(
        read(true, &[("OXP_RAP", "on")]).unwrap_err().variable,
        "OXP_RAP_QUEUE_URL"
    );
    assert_eq!(
        read(true, &[("OXP_RAP_QUEUE_URL", "https://sqs/q")])
            .unwrap_err()
            .variable,
        "OXP_RAP_DEAD_LETTER_QUEUE_URL"
    );
    let c = read(
        true,
        &[
            ("OXP_RAP_QUEUE_URL", "https://sqs/q"),
            ("OXP_RAP_DEAD_LETTER_QUEUE_URL", "https://sqs/dlq"),
        ],
    )
    .unwrap();
    assert!(c.enabled && c.callbacks.lambda);
}

#[test]
fn an_invalid_value_names_its_variable() {
    for (var, value) in [
        ("OXP_RAP", "maybe"),
        ("OXP_RAP_RATE_LIMIT", "10"),
        ("OXP_RAP_RATE_LIMIT", "0/s"),
        ("OXP_RAP_RATE_LIMIT", "5/week"),
        ("OXP_RAP_ALLOW_HTTP", "yes"),
        ("OXP_RAP_DELIVERY_ATTEMPTS", "0"),
        ("OXP_RAP_RETRY_BASE_MS", "0"),
        ("OXP_RAP_ENDPOINT", "tool.example.com/invoke"),
    ] {
        let err = read(false, &[(var, value)]).unwrap_err();
        assert!(err.variable.starts_with(var), "{var}: {err}");
    }
}
