//! The SAM template (`template.yaml`) as a deployer meets it: every endpoint routed, each
//! function bounded and given only the access its role uses, the dashboard, the streaming
//! entries, and the rules that refuse an unsafe deployment.

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_template_routes_every_oxp_and_rap_endpoint() {
    let template = read("template.yaml");
    for (method, path) in [
        ("GET", "/tools"),
        ("POST", "/tools/call"),
        ("POST", "/call"),
        ("GET", "/health"),
        ("GET", "/.well-known/rap-toolset"),
        ("POST", "/invoke"),
        ("POST", "/close_thread"),
        ("POST", "/cancel_tool_call"),
        ("POST", "/tool_call_status"),
    ] {
        let route = format!("Method: {method}\n            Path: {path}\n");
        assert!(
            template.contains(&route),
            "template.yaml lacks {method} {path}"
        );
    }
    assert!(template.contains("BuildMethod: rust-cargolambda"));
    assert!(template.contains("Runtime: provided.al2023"));
    assert!(template.contains("Architectures: [arm64]"));
}

#[test]
fn the_template_bounds_the_worker_and_guards_the_queue_and_the_secrets() {
    let template = read("template.yaml");
    for needle in [
        // Slow callbacks cannot starve the HTTP function of the account's concurrency.
        "ReservedConcurrentExecutions: !Ref WorkerMaxConcurrency",
        "MaximumConcurrency: !Ref WorkerMaxConcurrency",
        // Only the HTTP function may enqueue invocations: the worker trusts what it reads.
        "aws:PrincipalArn: !GetAtt OxpFunctionRole.Arn",
        // `oxp` would also grant `oxp-prod-db`.
        r#"AllowedPattern: "^[A-Za-z0-9/_+=.@-]*/$""#,
        // No trace level: the runtime logs raw events below info.
        "AllowedValues: [error, warn, info, debug]",
        // The JWT signing key apart from the tool secrets, readable by the HTTP function only.
        "Sid: ReadJwtSigningKey",
        "secret:oxp-auth/${JwtHs256SecretId}-??????",
    ] {
        assert!(template.contains(needle), "template.yaml lacks {needle}");
    }
}

/// The part of `template.yaml` that declares resource `name` (up to the next resource).
fn resource<'a>(template: &'a str, name: &str) -> &'a str {
    let start = template
        .find(&format!("\n  {name}:\n"))
        .unwrap_or_else(|| panic!("template.yaml has no {name}"));
    let rest = &template[start + 1..];
    let end = rest[1..].find("\n  O").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

#[test]
fn every_function_that_claims_idempotency_records_may_use_the_table() {
    // Globals give every function OXP_IDEMPOTENCY_TABLE; the HTTP function and the worker
    // claim call ids there (the worker: each job's invocation id), so their roles need it.
    let template = read("template.yaml");
    assert!(template.contains("OXP_IDEMPOTENCY_TABLE: !Ref OxpCallsTable"));
    for function in ["OxpFunction", "OxpWorkerFunction"] {
        let declared = resource(&template, function);
        for action in ["dynamodb:GetItem", "dynamodb:PutItem"] {
            assert!(declared.contains(action), "{function} lacks {action}");
        }
    }
    // The records are the one state store's: the calls and tokens tables have its schema.
    for table in ["OxpCallsTable", "OxpTokensTable", "OxpStateTable"] {
        let declared = resource(&template, table);
        for key in ["AttributeName: pk", "AttributeName: sk", "KeyType: RANGE"] {
            assert!(declared.contains(key), "{table} lacks {key}");
        }
    }
    // Least privilege: the AgentCore target and the Bedrock agent function never claim one.
    assert!(!resource(&template, "OxpAgentCoreFunction").contains("dynamodb:"));
    assert!(!resource(&template, "OxpBedrockAgentFunction").contains("OxpCallsTable"));
}

#[test]
fn with_oauth_providers_the_template_has_the_vault_its_access_and_the_flows_routes() {
    let template = read("template.yaml");
    let table = resource(&template, "OxpTokensTable");
    assert!(table.contains("Condition: HasOAuth") && table.contains("AttributeName: pk"));
    assert!(table.contains("AttributeName: expires_at") && table.contains("SSEEnabled: true"));
    assert!(template.contains("OXP_OAUTH_TABLE: !If [HasOAuth, !Ref OxpTokensTable"));
    // Every function whose calls may use a user's token reads and writes the vault; the
    // AgentCore target has no user to use one for.
    for function in [
        "OxpFunction",
        "OxpWorkerFunction",
        "OxpBedrockAgentFunction",
    ] {
        let declared = resource(&template, function);
        assert!(
            declared.contains("Sid: TokenVault") && declared.contains("OxpTokensTable.Arn"),
            "{function}"
        );
    }
    let http = resource(&template, "OxpFunction");
    assert!(
        http.contains("Path: /oauth/{provider}/{step}")
            && http.contains("Path: /oauth/{provider}/forget")
    );
}

#[test]
fn only_this_accounts_bedrock_agents_may_invoke_the_action_group_function() {
    let template = read("template.yaml");
    let function = resource(&template, "OxpBedrockAgentFunction");
    assert!(function.contains("OXP_LAMBDA_ROLE: bedrock-agent"));
    let permission = resource(&template, "OxpBedrockAgentInvokePermission");
    assert!(permission.contains("Principal: bedrock.amazonaws.com"));
    assert!(permission.contains("SourceAccount: !Ref AWS::AccountId"));
    assert!(permission.contains(":agent/${BedrockAgentId}") && permission.contains(":agent/*"));
}

#[test]
fn the_templates_dashboard_graphs_every_metric_the_server_writes() {
    let template = read("template.yaml");
    let dashboard = resource(&template, "OxpDashboard");
    let body = &dashboard[dashboard.find("{\"widgets\"").unwrap()..];
    let body = body
        .replace("${AWS::Region}", "us-east-1")
        .replace("${AWS::StackName}", "tools");
    // The body is the first JSON value of the block (the template goes on after it).
    let parsed: serde_json::Value = serde_json::Deserializer::from_str(&body)
        .into_iter()
        .next()
        .unwrap()
        .expect("valid JSON");
    let searches: Vec<String> = parsed["widgets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["properties"]["metrics"][0][0]["expression"].to_string())
        .collect();
    use oxp_lambda_core::invoke::metrics::{CALLS, DURATION, ERRORS};
    for metric in [CALLS, ERRORS, DURATION, "cold_starts"] {
        let name = format!("MetricName=\\\"{metric}\\\"");
        assert!(
            searches.iter().any(|s| s.contains(&name)),
            "no widget for {metric}: {searches:?}"
        );
    }
}

#[test]
fn the_streaming_entries_are_open_only_where_the_server_checks_every_token() {
    let template = read("template.yaml");
    let rules =
        &template[template.find("\nRules:\n").unwrap()..template.find("\nConditions:\n").unwrap()];
    assert!(rules.contains("RuleCondition: !Equals [!Ref StreamingAuthType, NONE]"));
    assert!(rules.contains("Assert: !Equals [!Ref AuthMode, jwt]"));
    assert!(template.contains("IsStreamingOpen: !Equals [!Ref StreamingAuthType, NONE]"));
    for name in ["OxpStreamUrlPublicInvokeUrl", "OxpStreamUrlPublicInvoke"] {
        assert!(
            resource(&template, name).contains("Condition: HasOpenStreamingUrl"),
            "{name}"
        );
    }
    let method = resource(&template, "OxpStreamRestProxyAny");
    assert!(method.contains("AuthorizationType: !If [IsStreamingOpen, NONE, AWS_IAM]"));
    let url = resource(&template, "OxpStreamFunctionUrl");
    assert!(url.contains("AuthType: !Ref StreamingAuthType"));
}

/// Whether a rule's condition or assertion, written on one line as these templates write them
/// (`!Equals [!Ref Name, value]`, and `!Not`, `!And`, `!Or` of such), holds.
fn holds(expression: &str, value_of: &dyn Fn(&str) -> String) -> bool {
    let (function, rest) = expression.trim().split_once(" [").expect("a function");
    let inner = rest.strip_suffix(']').expect("a closed list");
    // The list's items, split at the commas outside brackets.
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    match function {
        "!Equals" => {
            let name = items[0].trim().strip_prefix("!Ref ").expect("a !Ref first");
            value_of(name) == items[1].trim().trim_matches('"')
        }
        "!Not" => !holds(items[0], value_of),
        "!And" => items.iter().all(|item| holds(item, value_of)),
        "!Or" => items.iter().any(|item| holds(item, value_of)),
        other => panic!("a rule function these templates do not use: {other}"),
    }
}

/// Whether CloudFormation would refuse `template` deployed with `given` parameters (the rest
/// at their defaults): each rule whose condition holds must have its assertions hold.
fn refused_by_rules(template: &str, given: &[(&str, &str)]) -> bool {
    let value_of = |name: &str| -> String {
        if let Some((_, v)) = given.iter().find(|(n, _)| *n == name) {
            return (*v).to_owned();
        }
        let declared = template
            .split(&format!("\n  {name}:\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no parameter {name}"));
        let default = declared
            .lines()
            .take_while(|l| l.starts_with("    "))
            .find_map(|l| l.trim().strip_prefix("Default: "))
            .unwrap_or_else(|| panic!("{name} has no default"));
        default.trim_matches('"').to_owned()
    };
    let holds = |line: &str| -> bool { holds(line, &value_of) };
    let rules = template
        .split("\nRules:\n")
        .nth(1)
        .and_then(|rest| rest.split("\nConditions:\n").next())
        .unwrap_or_default();
    let mut applies = false;
    for line in rules.lines().map(str::trim) {
        if let Some(condition) = line.strip_prefix("RuleCondition: ") {
            applies = holds(condition);
        } else if let Some(assert) = line.strip_prefix("- Assert: ")
            && applies
            && !holds(assert)
        {
            return true;
        }
    }
    false
}

#[test]
fn a_template_refuses_a_public_api_without_authentication_unless_its_user_accepts_the_risk() {
    for path in ["template.yaml", "examples/starter/template.yaml"] {
        let template = read(path);
        assert!(
            !refused_by_rules(&template, &[]),
            "{path}: its defaults deploy"
        );
        assert!(
            refused_by_rules(&template, &[("AuthMode", "none")]),
            "{path}: AuthMode none alone is refused"
        );
        assert!(
            !refused_by_rules(
                &template,
                &[
                    ("AuthMode", "none"),
                    ("AllowUnauthenticatedPublicApi", "true")
                ]
            ),
            "{path}: accepted when the parameter that names the risk says so"
        );
    }
    // The streaming entry's own rule is read the same way.
    let template = read("template.yaml");
    assert!(refused_by_rules(
        &template,
        &[("StreamingAuthType", "NONE"), ("AuthMode", "apigateway")]
    ));
}

#[test]
fn a_template_refuses_keys_from_a_jwks_without_an_audience_to_check() {
    // The server refuses to start so (`auth_start::keys_from_a_jwks_without_an_audience_or_client_id_to_check_fail_at_start`);
    // the template says so before anything is deployed.
    for path in ["template.yaml", "examples/starter/template.yaml"] {
        let template = read(path);
        let jwks = ("JwtJwksUrl", "https://issuer.example/.well-known/jwks.json");
        let jwt = ("AuthMode", "jwt");
        assert!(refused_by_rules(&template, &[jwt, jwks]), "{path}");
        for named in [
            ("JwtAudience", "https://tools.example/mcp"),
            ("JwtClientId", "app-1"),
        ] {
            assert!(
                !refused_by_rules(&template, &[jwt, jwks, named]),
                "{path}: {named:?}"
            );
        }
        let gateway = ("AuthMode", "apigateway");
        assert!(
            !refused_by_rules(&template, &[gateway, jwks]),
            "{path}: not verified here"
        );
    }
}
