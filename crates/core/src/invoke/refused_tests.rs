//! A token the service refused, as the invoker ends the call: a held token is forgotten and
//! the user asked again; a caller's own token is the caller's to replace; a provider the tool
//! did not declare leaves the tool's error as it is.

use crate::invoke::{Call, Invoker, Rejection, Target};
use crate::refusal::Missing;
use crate::secrets::{ClientSecrets, Secrets};
use crate::tokens::{Challenge, Completed, Held, TokenError, TokenFuture, UserTokens};
use crate::tool::{Secret, ToolError};
use crate::{Registry, Tool};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A vault holding `alice`'s token for `demo` until it is forgotten; what was forgotten.
#[derive(Debug, Default)]
struct Vault {
    held: Mutex<Option<Secret>>,
    forgotten: Mutex<Vec<String>>,
}

impl UserTokens for Vault {
    fn serves(&self, provider: &str) -> bool {
        provider == "demo"
    }

    fn holds<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a [String],
    ) -> TokenFuture<'a, Result<bool, TokenError>> {
        Box::pin(async { Ok(self.held.lock().unwrap().is_some()) })
    }

    fn when_completed(&self, _: Completed) {}

    fn token<'a>(
        &'a self,
        provider: &'a str,
        _: &'a str,
        _: &'a [String],
    ) -> TokenFuture<'a, Result<Held, TokenError>> {
        Box::pin(async move {
            Ok(match self.held.lock().unwrap().clone() {
                Some(token) => Held::Token(token),
                None => Held::Authorize(Challenge {
                    provider: provider.into(),
                    url: "https://tools.example.com/oauth/demo/start?link=l".into(),
                    check_url: "https://tools.example.com/oauth/demo/check?link=l".into(),
                }),
            })
        })
    }

    fn forget_refused<'a>(
        &'a self,
        _: &'a str,
        user: &'a str,
        refused: &'a Secret,
    ) -> TokenFuture<'a, Result<(), TokenError>> {
        Box::pin(async move {
            let mut held = self.held.lock().unwrap();
            if held.as_ref() == Some(refused) {
                *held = None;
                self.forgotten.lock().unwrap().push(user.to_owned());
            }
            Ok(())
        })
    }
}

/// `Test.Profile` needs `demo`'s token and finds it refused; `Test.Other` names a provider it
/// did not declare.
fn invoker(vault: Arc<Vault>) -> Invoker {
    let refusing = |provider: &'static str| {
        move |_, _| async move { Err::<serde_json::Value, _>(ToolError::token_refused(provider)) }
    };
    let registry = Registry::builder()
        .tool(
            Tool::builder("Test.Profile", "1.0.0")
                .authorization("demo", ["profile"])
                .raw_handler(json!({"type": "object"}), None, refusing("demo")),
        )
        .tool(
            Tool::builder("Test.Other", "1.0.0")
                .authorization("demo", ["profile"])
                .raw_handler(json!({"type": "object"}), None, refusing("elsewhere")),
        )
        .build()
        .unwrap();
    let secrets = Secrets::new(None, Duration::ZERO, ClientSecrets::Unheld);
    Invoker::new(Arc::new(registry), secrets, None, 4, None).with_user_tokens(vault)
}

fn call(tool: &str) -> Call {
    let mut call = Call::new("test", Target::Id(tool.into()), json!({}));
    call.user_id = Some("alice".into());
    call
}

fn holding() -> Arc<Vault> {
    let vault = Vault::default();
    *vault.held.lock().unwrap() = Some(Secret::new("revoked-at-the-provider"));
    Arc::new(vault)
}

#[tokio::test]
async fn a_held_token_the_service_refused_is_forgotten_and_the_user_asked_to_authorize_again() {
    let vault = holding();
    let invoker = invoker(vault.clone());
    let ended = invoker.invoke(call("Test.Profile")).await;
    match ended {
        Err(Rejection::Missing(Missing::Authorization {
            provider,
            challenge: Some(challenge),
        })) => {
            assert_eq!(provider, "demo");
            assert!(challenge.url.contains("/oauth/demo/start"), "{challenge:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(*vault.forgotten.lock().unwrap(), ["alice"]);
}

#[tokio::test]
async fn a_callers_own_token_refused_asks_the_caller_for_another_and_forgets_nothing_held() {
    let vault = holding();
    let invoker = invoker(vault.clone());
    let mut call = call("Test.Profile");
    call.authorization = vec![("demo".into(), Secret::new("the-callers-own"))];
    match invoker.invoke(call).await {
        Err(Rejection::Missing(Missing::Authorization {
            provider,
            challenge: None,
        })) => assert_eq!(provider, "demo"),
        other => panic!("{other:?}"),
    }
    assert!(vault.forgotten.lock().unwrap().is_empty());
    assert!(vault.held.lock().unwrap().is_some(), "the held token stays");
}

#[tokio::test]
async fn a_refused_token_of_a_provider_the_tool_did_not_declare_is_the_tools_error() {
    let vault = holding();
    let invoker = invoker(vault.clone());
    let outcome = invoker.invoke(call("Test.Other")).await.unwrap();
    let error = outcome.result.unwrap_err();
    assert_eq!(error.refused_token.as_deref(), Some("elsewhere"));
    assert!(vault.forgotten.lock().unwrap().is_empty());
}
