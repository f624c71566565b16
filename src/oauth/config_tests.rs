//! The OAuth providers' settings, read and refused (`OXP_OAUTH_*`).
use super::*;

fn config(vars: &[(&str, &str)], lambda: bool) -> Result<OAuthConfig, ConfigError> {
    let vars: crate::config::Vars = vars.iter().copied().collect();
    OAuthConfig::from_env(&Env::new(lambda, &vars))
}

#[test]
fn a_preset_provider_needs_only_its_client_id_and_its_secret_is_named_after_it() {
    let c = config(
        &[
            ("OXP_OAUTH_PROVIDERS", "github"),
            ("OXP_OAUTH_GITHUB_CLIENT_ID", "Iv1.abc"),
        ],
        false,
    )
    .unwrap();
    let github = &c.providers[0];
    assert_eq!(
        github.token_url.as_deref(),
        Some("https://github.com/login/oauth/access_token")
    );
    assert_eq!(github.client_auth, ClientAuth::Post);
    assert_eq!(github.client_secret_id, "OAUTH_GITHUB_CLIENT_SECRET");
}

#[test]
fn a_provider_without_endpoints_or_client_id_is_refused_at_start() {
    assert!(
        config(
            &[
                ("OXP_OAUTH_PROVIDERS", "demo"),
                ("OXP_OAUTH_DEMO_CLIENT_ID", "c")
            ],
            false
        )
        .is_err()
    );
    assert!(config(&[("OXP_OAUTH_PROVIDERS", "github")], false).is_err());
    let ok = config(
        &[
            ("OXP_OAUTH_PROVIDERS", "my-idp"),
            ("OXP_OAUTH_MY_IDP_CLIENT_ID", "c"),
            ("OXP_OAUTH_MY_IDP_ISSUER", "https://idp.example"),
        ],
        false,
    )
    .unwrap();
    assert_eq!(
        ok.providers[0].client_secret_id,
        "OAUTH_MY_IDP_CLIENT_SECRET"
    );
}

#[test]
fn the_public_url_must_be_https_except_on_loopback_and_is_required_in_lambda() {
    let github = [
        ("OXP_OAUTH_PROVIDERS", "github"),
        ("OXP_OAUTH_GITHUB_CLIENT_ID", "c"),
        ("OXP_OAUTH_TABLE", "t"),
    ];
    assert!(config(&github, true).is_err());
    let mut vars = github.to_vec();
    vars.push(("OXP_PUBLIC_URL", "http://tools.example.com"));
    assert!(config(&vars, true).is_err());
    vars[3] = ("OXP_PUBLIC_URL", "https://tools.example.com/");
    assert_eq!(
        config(&vars, true).unwrap().public_url.as_deref(),
        Some("https://tools.example.com")
    );
    vars[3] = ("OXP_PUBLIC_URL", "http://127.0.0.1:8080");
    assert!(config(&vars, false).is_ok());
}

#[test]
fn who_completes_a_flow_is_checked_unless_turned_off() {
    let explicit = [
        ("OXP_OAUTH_PROVIDERS", "corp"),
        ("OXP_OAUTH_CORP_CLIENT_ID", "c"),
        (
            "OXP_OAUTH_CORP_AUTHORIZE_URL",
            "https://idp.example/authorize",
        ),
        ("OXP_OAUTH_CORP_TOKEN_URL", "https://idp.example/token"),
    ];
    // By default the userinfo's `sub` or `email` must be the link's user: without a
    // userinfo endpoint to ask, the provider is refused at start.
    assert!(config(&explicit, false).is_err());
    let mut vars = explicit.to_vec();
    vars.push((
        "OXP_OAUTH_CORP_USERINFO_URL",
        "https://idp.example/userinfo",
    ));
    let checked = config(&vars, false).unwrap();
    assert_eq!(checked.providers[0].identity, ["sub", "email"]);
    vars.push(("OXP_OAUTH_CORP_IDENTITY", "login, id"));
    assert_eq!(
        config(&vars, false).unwrap().providers[0].identity,
        ["login", "id"]
    );
    let mut off = explicit.to_vec();
    off.push(("OXP_OAUTH_CORP_IDENTITY", "none"));
    assert!(
        config(&off, false).unwrap().providers[0]
            .identity
            .is_empty()
    );
}
