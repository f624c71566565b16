//! Reading the configuration: defaults, values, and an error naming each invalid variable.

use super::*;

fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_vars(false, vars.iter().copied())
}

#[test]
fn defaults_apply_when_nothing_is_set() {
    // Reading never looks at the file system, so an `oxp-secrets.json` in the working directory
    // (looked for only when the server starts) changes nothing here.
    assert_eq!(config(&[]).unwrap(), Config::default());
    let lambda = Config::from_vars(true, [("OXP_AUTH", "none")]).unwrap();
    assert_eq!(lambda.log_format, LogFormat::Json);
    assert_eq!(lambda.secrets.source, SecretSourceKind::Aws);
}

#[test]
fn values_are_read() {
    let c = config(&[
        ("OXP_PORT", "9000"),
        ("OXP_MAX_BODY_BYTES", "2048"),
        ("OXP_TOOL_TIMEOUT_MS", "0"),
        ("OXP_BASE_PATH", "/api/"),
        ("OXP_LOG_FORMAT", "json"),
    ])
    .unwrap();
    assert_eq!(c.port, 9000);
    assert_eq!(c.max_body_bytes, 2048);
    assert_eq!(c.tool_timeout, None);
    assert_eq!(c.base_path.as_deref(), Some("/api"));
    assert_eq!(c.log_format, LogFormat::Json);
}

#[test]
fn secrets_and_auth_settings_are_read() {
    let c = config(&[
        ("OXP_SECRETS_SOURCE", "aws"),
        (
            "OXP_SECRETS_MAP",
            r#"{"TWILIO_API_KEY": "prod/twilio#api_key"}"#,
        ),
        ("OXP_SECRETS_TTL_SECS", "60"),
        ("OXP_CLIENT_SECRETS", "never"),
        ("OXP_AUTH", "jwt"),
        (
            "OXP_JWT_JWKS_URL",
            "https://issuer.example/.well-known/jwks.json",
        ),
        ("OXP_JWT_ISSUER", "https://issuer.example/"),
        ("OXP_BIND_USER_ID", "true"),
    ])
    .unwrap();
    assert_eq!(c.secrets.source, SecretSourceKind::Aws);
    assert_eq!(
        c.secrets.map,
        [(
            "TWILIO_API_KEY".to_string(),
            "prod/twilio#api_key".to_string()
        )]
    );
    assert_eq!(c.secrets.ttl, Duration::from_secs(60));
    assert_eq!(c.secrets.client_secrets, ClientSecrets::Never);
    let AuthConfig::Jwt(jwt) = c.auth else {
        panic!("jwt")
    };
    assert!(jwt.bind_user_id);
    assert_eq!(jwt.issuer.as_deref(), Some("https://issuer.example/"));
    assert!(matches!(jwt.keys, JwtKeys::Jwks { .. }));
}

#[test]
fn with_authentication_on_the_user_is_bound_to_the_caller_unless_opted_out() {
    let jwt = [
        ("OXP_AUTH", "jwt"),
        ("OXP_JWT_JWKS_URL", "https://issuer.example/jwks"),
    ];
    let AuthConfig::Jwt(on) = config(&jwt).unwrap().auth else {
        panic!("jwt")
    };
    assert!(on.bind_user_id, "bound by default");
    let opted_out = [jwt[0], jwt[1], ("OXP_BIND_USER_ID", "false")];
    let AuthConfig::Jwt(off) = config(&opted_out).unwrap().auth else {
        panic!("jwt")
    };
    assert!(!off.bind_user_id);
    assert_eq!(
        config(&[("OXP_AUTH", "apigateway")]).unwrap().auth,
        AuthConfig::ApiGateway { bind_user_id: true }
    );
}

#[test]
fn a_jwt_leeway_past_a_few_minutes_refuses_the_start() {
    let with = |secs: &str| {
        let vars = [
            ("OXP_AUTH", "jwt"),
            ("OXP_JWT_JWKS_URL", "https://issuer.example/jwks"),
            ("OXP_JWT_LEEWAY_SECS", secs),
        ];
        config(&vars).map(|c| match c.auth {
            AuthConfig::Jwt(jwt) => jwt.leeway_secs,
            other => panic!("{other:?}"),
        })
    };
    assert_eq!(with("300").unwrap(), 300);
    // Milliseconds written for seconds: an expired token would pass for 83 minutes.
    assert_eq!(with("5000").unwrap_err().variable, "OXP_JWT_LEEWAY_SECS");
}

#[test]
fn a_jwks_url_must_be_https_or_loopback_http() {
    for url in [
        "http://issuer.example/jwks",
        "ftp://x",
        "http://127.0.0.1@evil.example/",
    ] {
        let err = config(&[("OXP_AUTH", "jwt"), ("OXP_JWT_JWKS_URL", url)]).unwrap_err();
        assert_eq!(err.variable, "OXP_JWT_JWKS_URL", "{url}");
    }
    for url in [
        "https://issuer.example/jwks",
        "http://127.0.0.1:9000/jwks",
        "http://[::1]/j",
        "http://localhost/j",
    ] {
        assert!(
            config(&[("OXP_AUTH", "jwt"), ("OXP_JWT_JWKS_URL", url)]).is_ok(),
            "{url}"
        );
    }
}

#[test]
fn a_caller_gets_a_quarter_of_the_idempotency_store_unless_every_call_is_anonymous() {
    let share = |vars: &[(&str, &str)]| {
        let c = config(vars).unwrap().idempotency;
        (c.max_bytes, c.max_bytes_per_caller)
    };
    let total = 64 * 1024 * 1024;
    assert_eq!(share(&[("OXP_AUTH", "apigateway")]), (total, total / 4));
    assert_eq!(share(&[]), (total, total), "OXP_AUTH=none: one caller");
    let set = [
        ("OXP_AUTH", "apigateway"),
        ("OXP_IDEMPOTENCY_MAX_BYTES", "4000"),
        ("OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER", "3000"),
    ];
    assert_eq!(share(&set), (4000, 3000));
    assert_eq!(share(&set[..2]), (4000, 1000));
    let over = [set[1], ("OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER", "9000")];
    assert_eq!(share(&over), (4000, 4000), "at most the whole");
    let zero = config(&[("OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER", "0")]).unwrap_err();
    assert_eq!(zero.variable, "OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER");
}

#[test]
fn a_caller_gets_a_quarter_of_the_call_slots_unless_every_call_is_anonymous() {
    let share = |vars: &[(&str, &str)]| {
        let c = config(vars).unwrap();
        (c.max_concurrent_calls, c.max_concurrent_calls_per_caller)
    };
    assert_eq!(share(&[("OXP_AUTH", "apigateway")]), (256, 64));
    assert_eq!(share(&[]), (256, 256), "OXP_AUTH=none: one caller");
    let set = [
        ("OXP_AUTH", "apigateway"),
        ("OXP_MAX_CONCURRENT_CALLS", "2"),
    ];
    assert_eq!(share(&set), (2, 1), "at least one");
    let own = [set[0], ("OXP_MAX_CONCURRENT_CALLS_PER_CALLER", "100")];
    assert_eq!(share(&own), (256, 100));
    let zero = config(&[("OXP_MAX_CONCURRENT_CALLS_PER_CALLER", "0")]).unwrap_err();
    assert_eq!(zero.variable, "OXP_MAX_CONCURRENT_CALLS_PER_CALLER");
}

#[test]
fn a_table_selects_the_dynamodb_idempotency_store() {
    let c = config(&[
        ("OXP_IDEMPOTENCY_TABLE", "oxp-calls"),
        ("OXP_IDEMPOTENCY_TTL_SECS", "60"),
    ])
    .unwrap();
    assert_eq!(c.idempotency.mode, IdempotencyMode::DynamoDb);
    assert_eq!(c.idempotency.ttl, Duration::from_secs(60));
    assert_eq!(
        config(&[("OXP_IDEMPOTENCY", "off")])
            .unwrap()
            .idempotency
            .mode,
        IdempotencyMode::Off
    );
    assert_eq!(
        config(&[]).unwrap().idempotency.mode,
        IdempotencyMode::Memory
    );
    assert_eq!(
        config(&[("OXP_IDEMPOTENCY", "state")])
            .unwrap()
            .idempotency
            .mode,
        IdempotencyMode::State
    );
}

#[test]
fn idempotency_on_the_state_store_needs_one_and_says_so_at_start() {
    let mut c = Config::default();
    c.idempotency.mode = IdempotencyMode::State;
    c.state = crate::state::StateConfig::Off;
    let sdk = crate::aws::SharedSdk::default();
    let state = crate::state::build(&c.state, &sdk).unwrap();
    let err = crate::idempotency::build(&c.idempotency, state.as_ref(), &sdk).unwrap_err();
    assert!(
        err.contains("OXP_IDEMPOTENCY=state") && err.contains("OXP_STATE"),
        "{err}"
    );
}

#[test]
fn no_authentication_must_be_explicit_in_lambda_and_beyond_loopback() {
    assert_eq!(
        config(&[]).unwrap().auth,
        AuthConfig::None { explicit: false }
    );
    let err = Config::from_vars(true, [("OXP_PORT", "8080")]).unwrap_err();
    assert_eq!(err.variable, "OXP_AUTH");
    assert_eq!(
        config(&[("OXP_HOST", "0.0.0.0")]).unwrap_err().variable,
        "OXP_AUTH"
    );
    let lambda_none = Config::from_vars(true, [("OXP_AUTH", "none")]);
    assert_eq!(
        lambda_none.unwrap().auth,
        AuthConfig::None { explicit: true }
    );
    // jwt needs exactly one key source
    assert_eq!(
        config(&[("OXP_AUTH", "jwt")]).unwrap_err().variable,
        "OXP_AUTH"
    );
}

#[test]
fn token_settings_without_a_mode_refuse_the_start_rather_than_serve_without_authentication() {
    // A local server on loopback defaults to no authentication: one configured to verify
    // tokens, its OXP_AUTH forgotten, served every caller as anonymous (a warning aside).
    for name in [
        "OXP_JWT_JWKS_URL",
        "OXP_JWT_HS256_SECRET_ID",
        "OXP_JWT_ISSUER",
    ] {
        let err = config(&[(name, "x")]).unwrap_err();
        assert_eq!(err.variable, "OXP_AUTH", "{name}");
        assert!(err.to_string().contains(name), "{err}");
    }
    // Said explicitly, `none` stands.
    let none = config(&[("OXP_AUTH", "none"), ("OXP_JWT_ISSUER", "x")]);
    assert_eq!(none.unwrap().auth, AuthConfig::None { explicit: true });
}

#[test]
fn the_host_is_an_ip_address_bracketed_or_not_or_localhost() {
    // `OXP_HOST=localhost` was refused as "invalid IP address syntax".
    for (value, address) in [
        ("localhost", "127.0.0.1"),
        ("LOCALHOST", "127.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        (" 127.0.0.2 ", "127.0.0.2"),
    ] {
        let host = config(&[("OXP_HOST", value)]).unwrap().host;
        assert_eq!(host.to_string(), address, "{value}");
    }
    for value in ["localhost:1", "example.com", "[::1", "local host"] {
        let e = config(&[("OXP_HOST", value)]).unwrap_err();
        assert_eq!(e.variable, "OXP_HOST", "{value}");
    }
}

#[test]
fn the_allowed_origins_are_web_origins_and_a_wildcard_stops_the_start() {
    // `*` panicked the local server's start (tower-http's CORS list refuses it) and would have
    // let a page of any origin call a server on loopback.
    let c = config(&[(
        "OXP_ALLOWED_ORIGINS",
        "http://localhost:3000, https://app.example/",
    )])
    .unwrap();
    assert_eq!(
        c.allowed_origins,
        ["http://localhost:3000", "https://app.example"]
    );
    for value in [
        "*",
        "null",
        "localhost:3000",
        "http://a.example/path",
        "ftp://a.example",
    ] {
        let e = config(&[("OXP_ALLOWED_ORIGINS", value)]).unwrap_err();
        assert_eq!(e.variable, "OXP_ALLOWED_ORIGINS", "{value}");
    }
}

#[test]
fn an_invalid_value_names_its_variable() {
    for (var, value) in [
        ("OXP_PORT", "eighty"),
        ("OXP_PORT", "70000"),
        ("OXP_MAX_BODY_BYTES", "0"),
        ("OXP_BASE_PATH", "api"),
        ("OXP_LOG_FORMAT", "xml"),
        ("OXP_HOST", "localhost:1"),
        ("OXP_SECRETS_SOURCE", "vault"),
        ("OXP_SECRETS_MAP", "[1]"),
        ("OXP_SECRETS_MAP", r#"{"A": 1}"#),
        ("OXP_SECRETS_TTL_SECS", "-1"),
        ("OXP_CLIENT_SECRETS", "maybe"),
        ("OXP_AUTH", "basic"),
        ("OXP_BIND_USER_ID", "yes"),
        ("OXP_IDEMPOTENCY", "redis"),
        ("OXP_IDEMPOTENCY", "dynamodb"),
        ("OXP_MAX_CONCURRENT_CALLS", "0"),
        ("OXP_LAMBDA_STREAMING", "yes"),
    ] {
        let err = config(&[(var, value)]).unwrap_err();
        assert!(err.variable.starts_with(var), "{var}: {err}");
        assert!(err.to_string().contains(var));
    }
}

#[test]
fn the_lambda_role_is_read_and_the_runtime_once() {
    assert_eq!(config(&[]).unwrap().lambda_role, HTTP_ROLE);
    assert_eq!(
        config(&[("OXP_LAMBDA_ROLE", " worker ")])
            .unwrap()
            .lambda_role,
        "worker"
    );
    let c = in_lambda_with(&[
        ("AWS_LAMBDA_MAX_CONCURRENCY", "8"),
        ("AWS_LAMBDA_FUNCTION_NAME", "tools"),
    ])
    .unwrap();
    assert!(c.runtime.lambda);
    assert_eq!(c.runtime.max_concurrency, 8);
    assert_eq!(c.runtime.function_name.as_deref(), Some("tools"));
    assert_eq!(config(&[]).unwrap().runtime, Runtime::local());
    // Started for a waiting call unless Lambda says it initialized ahead of its calls.
    assert!(c.runtime.on_demand);
    for (kind, on_demand) in [
        ("on-demand", true),
        ("provisioned-concurrency", false),
        ("snap-start", false),
        ("lambda-managed-instances", false),
    ] {
        let c = in_lambda_with(&[("AWS_LAMBDA_INITIALIZATION_TYPE", kind)]).unwrap();
        assert_eq!(c.runtime.on_demand, on_demand, "{kind}");
    }
    // Buffered answers unless the function's invoke mode streams.
    assert!(!c.lambda_streaming);
    assert!(
        in_lambda_with(&[("OXP_LAMBDA_STREAMING", "true")])
            .unwrap()
            .lambda_streaming
    );
    let worker = in_lambda_with(&[
        ("OXP_LAMBDA_STREAMING", "true"),
        ("OXP_LAMBDA_ROLE", "worker"),
    ]);
    assert_eq!(worker.unwrap_err().variable, "OXP_LAMBDA_STREAMING");
}

#[test]
fn the_variables_are_kept_for_the_protocols_and_debug_names_them_only() {
    let c = config(&[("OXP_MCP_TOOLS", "A@1.0.0"), ("OXP_SFN_TOOLS", "hunter2")]).unwrap();
    assert_eq!(c.env().get("OXP_SFN_TOOLS").as_deref(), Some("hunter2"));
    let shown = format!("{:?}", c.vars);
    assert!(
        shown.contains("OXP_SFN_TOOLS") && !shown.contains("hunter2"),
        "{shown}"
    );
}

fn in_lambda_with(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_vars(true, vars.iter().chain(&[("OXP_AUTH", "none")]).copied())
}

#[test]
fn lambdas_log_level_and_json_format_apply_unless_oxp_log_says_otherwise() {
    let c = in_lambda_with(&[
        ("AWS_LAMBDA_LOG_LEVEL", "WARN"),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
    ])
    .unwrap();
    assert_eq!(
        (c.log_filter.as_str(), c.log_format),
        ("warn", LogFormat::Json)
    );
    assert_eq!(
        in_lambda_with(&[("AWS_LAMBDA_LOG_LEVEL", "FATAL")])
            .unwrap()
            .log_filter,
        "error"
    );
    let c = in_lambda_with(&[("AWS_LAMBDA_LOG_LEVEL", "WARN"), ("OXP_LOG", "debug")]).unwrap();
    assert_eq!(c.log_filter, "debug", "OXP_LOG wins");
    // Lambda's default `Text` format keeps the JSON lines Logs Insights reads field by field.
    let c = in_lambda_with(&[("AWS_LAMBDA_LOG_FORMAT", "Text")]).unwrap();
    assert_eq!(c.log_format, LogFormat::Json);
}

#[test]
fn rust_log_sets_the_filter_after_lambdas_level_and_before_oxp_log() {
    // `RUST_LOG=debug cargo run` was silently `info`: the Lambda runtime crates read it after
    // the function's log level, and so does this server.
    assert_eq!(
        config(&[("RUST_LOG", "debug")]).unwrap().log_filter,
        "debug"
    );
    let c = config(&[("RUST_LOG", "debug"), ("OXP_LOG", "warn")]).unwrap();
    assert_eq!(c.log_filter, "warn", "OXP_LOG wins");
    let c = in_lambda_with(&[("AWS_LAMBDA_LOG_LEVEL", "ERROR"), ("RUST_LOG", "debug")]).unwrap();
    assert_eq!(c.log_filter, "error", "the function's level wins");
    let e = config(&[("RUST_LOG", "oxp=notalevel")]).unwrap_err();
    assert_eq!(e.variable, "RUST_LOG");
}

#[test]
fn metrics_are_on_in_lambda_and_off_locally_unless_asked() {
    let lambda = in_lambda_with(&[("AWS_LAMBDA_FUNCTION_NAME", "tools-prod")]).unwrap();
    assert!(lambda.metrics.enabled);
    assert_eq!(lambda.metrics.service, "tools-prod");
    assert_eq!(lambda.metrics.namespace, "oxp-lambda");
    assert!(!config(&[]).unwrap().metrics.enabled);
    let c = config(&[
        ("OXP_METRICS", "emf"),
        ("OXP_METRICS_NAMESPACE", "Tools"),
        ("OXP_METRICS_SERVICE", "crm"),
    ])
    .unwrap();
    assert!(c.metrics.enabled);
    assert_eq!(
        (c.metrics.namespace.as_str(), c.metrics.service.as_str()),
        ("Tools", "crm")
    );
    assert!(
        !in_lambda_with(&[("OXP_METRICS", "off")])
            .unwrap()
            .metrics
            .enabled
    );
    assert_eq!(
        config(&[("OXP_METRICS", "prometheus")])
            .unwrap_err()
            .variable,
        "OXP_METRICS"
    );
}

#[test]
fn spans_are_exported_only_to_an_http_endpoint_named_and_only_with_the_otel_feature() {
    assert_eq!(config(&[]).unwrap().otel_endpoint, None);
    let named = config(&[("OXP_OTEL_ENDPOINT", " http://localhost:4318 ")]);
    if cfg!(feature = "otel") {
        assert_eq!(
            named.unwrap().otel_endpoint.as_deref(),
            Some("http://localhost:4318")
        );
        let bad = config(&[("OXP_OTEL_ENDPOINT", "localhost:4318")]).unwrap_err();
        assert_eq!(bad.variable, "OXP_OTEL_ENDPOINT");
    } else {
        assert_eq!(named.unwrap_err().variable, "OXP_OTEL_ENDPOINT");
    }
}

#[test]
fn the_embedded_stores_page_cache_is_bounded_as_set_and_never_to_nothing() {
    let set = config(&[
        ("OXP_STATE_PATH", "s.redb"),
        ("OXP_STATE_CACHE_BYTES", "1048576"),
    ])
    .unwrap();
    assert_eq!(
        set.state,
        crate::state::StateConfig::Embedded {
            path: Some("s.redb".into()),
            cache_bytes: 1 << 20
        }
    );
    let unset = config(&[("OXP_STATE_PATH", "s.redb")]).unwrap();
    assert!(matches!(
        unset.state,
        crate::state::StateConfig::Embedded { cache_bytes, .. } if cache_bytes == crate::state::DEFAULT_CACHE_BYTES
    ));
    let err = config(&[("OXP_STATE_CACHE_BYTES", "0")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("OXP_STATE_CACHE_BYTES"), "{err}");
}

#[test]
fn a_log_filter_with_spaces_around_its_directives_is_read_trimmed_and_never_panics() {
    // tracing-subscriber panicked on a directive with a space before a character of more
    // than one byte (found by `properties::any_value_of_any_two_documented_variables_*`).
    for value in ["\u{b}A¡=", " é=info", "info, \u{b}é=debug"] {
        match config(&[("OXP_LOG", value)]) {
            Ok(c) => assert!(!c.log_filter.starts_with(char::is_whitespace), "{value:?}"),
            Err(e) => assert!(e.to_string().contains("OXP_LOG"), "{value:?}: {e}"),
        }
    }
    let c = config(&[("OXP_LOG", " info , oxp=debug ")]).unwrap();
    assert_eq!(c.log_filter, "info,oxp=debug");
}

#[test]
fn a_variable_nothing_reads_is_named_beside_the_one_it_misspells_but_not_a_tools_or_an_unused_parts()
 {
    let vars: Vars = [
        ("OXP_TOOL_TIMEOUT", "5"),
        ("OXP_MAX_CONECTIONS", "5"),
        ("OXP_PROT", "9000"),
        ("OXP_RAP_QUEUE_URL", "https://sqs.example.com/q"),
        ("OXP_MY_TOOL_URL", "https://example.com"),
        ("OXP_PORT", "9000"),
        // The setting meant, in another unit or named as another kind of place.
        ("OXP_WORK_LEASE_MS", "5000"),
        ("OXP_RAP_DEAD_LETTER_PATH", "/var/oxp/letters.jsonl"),
        // Another last part of another kind: not the same setting.
        ("OXP_STATE_TABLE_URL", "https://example.com"),
    ]
    .into_iter()
    .collect();
    let env = Env::new(false, &vars);
    // RAP off: its selector read, its queue not.
    for read in [
        "OXP_TOOL_TIMEOUT_MS",
        "OXP_MAX_CONNECTIONS",
        "OXP_RAP",
        "OXP_PORT",
        "OXP_WORK_LEASE_SECS",
        "OXP_RAP_DEAD_LETTER_FILE",
        "OXP_STATE_TABLE",
        "OXP_STATE_PATH",
    ] {
        let _ = env.get(read);
    }
    let named: Vec<(String, String)> = [
        ("OXP_MAX_CONECTIONS", "OXP_MAX_CONNECTIONS"),
        ("OXP_PROT", "OXP_PORT"),
        ("OXP_RAP_DEAD_LETTER_PATH", "OXP_RAP_DEAD_LETTER_FILE"),
        ("OXP_TOOL_TIMEOUT", "OXP_TOOL_TIMEOUT_MS"),
        ("OXP_WORK_LEASE_MS", "OXP_WORK_LEASE_SECS"),
    ]
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .into();
    assert_eq!(vars.misspelled(), named);
}
