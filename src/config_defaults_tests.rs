//! docs/configuration.md says each variable's default; these tests hold it to the code. A
//! variable set to the default the page gives must read exactly as the variable unset, in
//! every settings value that reads `OXP_*` variables (the server's, each protocol's, the
//! runner's, the subscriptions'), locally and in Lambda. A default the page misstates (or a
//! code change that moves one without the page) fails here naming the variable. And no value
//! of any variable the page lists makes one of those readers panic.

use crate::config::Config;
use crate::settings::Env;
use std::collections::BTreeMap;

/// Every setting the variables `vars` come to, written out (`Debug`) in one text: each
/// protocol's as the app reads it (`Protocol::settings`), the runner's and the subscriptions'.
fn read_all(lambda: bool, vars: &BTreeMap<String, String>) -> String {
    use crate::app::protocol::Protocol;
    use crate::protocols::{AgentCore, EventSources, Mcp, Rap};
    let mut config = Config::from_vars(lambda, vars.clone()).expect("a valid configuration");
    let env = Env::new(lambda, &config.vars);
    let readers = format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        Mcp.settings(&env, &config),
        Rap.settings(&env, &config),
        EventSources.settings(&env, &config),
        AgentCore.settings(&env, &config),
        crate::work::Settings::from_env(&env),
        crate::subscriptions::Limits::from_env(&env),
        crate::state::StateConfig::from_env(&env, true),
    );
    // The variables themselves are kept in the configuration: what they come to is compared.
    config.vars = Default::default();
    format!("{config:?}\n{readers}")
}

/// docs/configuration.md.
fn page() -> String {
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
    std::fs::read_to_string(page).expect("docs/configuration.md")
}

/// What a start needs set: in Lambda, `OXP_AUTH` (which has no default there) and the RAP
/// dead-letter queue.
fn base(lambda: bool) -> BTreeMap<String, String> {
    let required = [
        ("OXP_AUTH", "none"),
        (
            "OXP_RAP_DEAD_LETTER_QUEUE_URL",
            "https://sqs.us-east-1.amazonaws.com/1/dl",
        ),
    ];
    match lambda {
        true => required.map(|(k, v)| (k.to_owned(), v.to_owned())).into(),
        false => BTreeMap::new(),
    }
}

/// The page's variables whose default is one plain value (`` `8080` ``, `` `on` ``,
/// `` `67108864` (64 MiB) ``): not one that depends on the place (`json` in Lambda), on
/// another variable, or on the host.
fn plain_defaults() -> Vec<(String, String)> {
    let page = page();
    let mut found = Vec::new();
    for row in page.lines().filter(|l| l.starts_with("| `OXP_")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let (Some(name), Some(default)) = (cells.first(), cells.get(1)) else {
            continue;
        };
        let name = name.trim_start_matches("| ").trim_matches('`');
        let Some(value) = default.strip_prefix('`').and_then(|d| d.split_once('`')) else {
            continue;
        };
        let (value, rest) = value;
        let plain = rest.is_empty() || (rest.starts_with(" (") && rest.ends_with(')'));
        if plain && !value.contains("OXP_") && !value.contains('<') && !name.contains(' ') {
            found.push((name.to_owned(), value.to_owned()));
        }
    }
    found
}

#[test]
fn every_plain_default_the_configuration_page_gives_is_the_one_the_code_takes() {
    let defaults = plain_defaults();
    assert!(
        defaults.len() >= 50,
        "the page's table was not read: {defaults:?}"
    );
    let mut wrong = Vec::new();
    for lambda in [false, true] {
        let base = base(lambda);
        let unset = read_all(lambda, &base);
        assert!(!unset.contains("Err("), "a reader refused: {unset}");
        for (name, value) in &defaults {
            if base.contains_key(name) {
                continue;
            }
            let mut vars = base.clone();
            vars.insert(name.clone(), value.clone());
            if read_all(lambda, &vars) != unset {
                wrong.push(format!("{name}={value} (lambda: {lambda})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "set to the default docs/configuration.md gives, these read otherwise than unset: {wrong:?}"
    );
}

#[test]
fn a_value_other_than_the_default_is_seen_by_the_comparison() {
    // The comparison above would pass for a variable nothing reads: each reader is reached.
    let unset = read_all(false, &BTreeMap::new());
    for (name, value) in [
        ("OXP_PORT", "9000"),
        ("OXP_MCP_SPENT_MARKS_PER_CALLER", "7"),
        ("OXP_RAP_MAX_PENDING", "7"),
        ("OXP_WORK_LEASE_SECS", "7"),
        ("OXP_SUBSCRIPTION_MAX_BACKLOG", "7"),
        ("OXP_WEBHOOK_MAX_BYTES", "7"),
        ("OXP_STATE_CACHE_BYTES", "7"),
    ] {
        let vars = BTreeMap::from([(name.to_owned(), value.to_owned())]);
        assert_ne!(read_all(false, &vars), unset, "{name} is read by none");
    }
}

/// Every variable the page lists.
fn documented() -> Vec<String> {
    let page = page();
    let rows = page.lines().filter(|l| l.starts_with("| `OXP_"));
    let names = rows.filter_map(|row| row.split('`').nth(1).map(str::to_owned));
    names.filter(|n| !n.contains(' ')).collect()
}

#[test]
fn no_value_of_any_documented_variable_makes_a_reader_panic() {
    // Values that third-party parsers under the readers have stumbled on: spaces of every kind
    // around characters of several bytes (tracing-subscriber's filter panicked on " é=info"),
    // control characters, separators alone, very long and very large values.
    let long = "é".repeat(5000);
    let nasty = [
        "\u{b}A¡=",
        " é=info",
        "\u{a0}é,\u{2003}ü",
        "\u{0}",
        ",,,",
        "=",
        "@",
        "-1",
        "18446744073709551616",
        "1e309",
        "NaN",
        "http://[::1",
        "https://\u{0}/",
        "0/s",
        "1/\u{a0}s",
        long.as_str(),
    ];
    let names = documented();
    assert!(
        names.len() >= 100,
        "the page's variables were not read: {names:?}"
    );
    let mut panicked = Vec::new();
    for lambda in [false, true] {
        for name in &names {
            for value in nasty {
                let mut vars = base(lambda);
                vars.insert(name.clone(), value.to_owned());
                let read = std::panic::catch_unwind(|| {
                    let _ =
                        Config::from_vars(lambda, vars.clone()).map(|_| read_all(lambda, &vars));
                });
                if read.is_err() {
                    panicked.push(format!("{name}={value:?} (lambda: {lambda})"));
                }
            }
        }
    }
    assert!(panicked.is_empty(), "a reader panicked: {panicked:?}");
}
