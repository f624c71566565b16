//! What every protocol takes from a request before it builds a [`Call`]: who is calling (the
//! authentication layer's [`Principal`]), when the transport stops waiting (the Lambda
//! transport's [`Deadline`]) and the caller's W3C trace context. One extractor for all of them,
//! as axum's are: a handler takes a [`CallContext`] argument, and a protocol written outside this
//! crate honours the Lambda deadline and the caller's trace the same way the built-in ones do.

use axum::extract::FromRequestParts;
use http::HeaderMap;
use http::request::Parts;
use oxp_lambda_core::invoke::{Call, Target};
use oxp_lambda_core::principal::Principal;
use serde_json::Value;
use std::convert::Infallible;
use std::time::Instant;

/// When the transport stops waiting for the answer (in Lambda, the invocation's deadline less
/// `OXP_DEADLINE_MARGIN_MS`), as the Lambda transport puts it on a request. Read it through
/// [`CallContext`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(pub Instant);

/// The call's context, protocol-neutral: the caller, the transport's deadline, the trace.
///
/// As an axum extractor it never fails (a request without authentication has the anonymous
/// principal, one outside Lambda no deadline). A direct or queued invocation gets one from the
/// Lambda transport ([`DirectHandler`](crate::protocol::DirectHandler),
/// [`RecordHandler`](crate::protocol::RecordHandler)).
///
/// ```
/// use axum::extract::State;
/// use oxp_lambda::invoke::Target;
/// use oxp_lambda::protocol::CallContext;
/// use oxp_lambda::Invoker;
/// use std::sync::Arc;
///
/// async fn handler(State(invoker): State<Arc<Invoker>>, context: CallContext) -> String {
///     let call = context.call("mine", Target::Id("Calculator.Add".into()), serde_json::json!({"a": 1, "b": 2}));
///     match invoker.invoke(call).await {
///         Ok(outcome) => format!("{:?}", outcome.result.map(|o| o.value)),
///         Err(rejection) => rejection.user_message(),
///     }
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// Who is calling (anonymous without authentication).
    pub principal: Principal,
    /// When the transport stops waiting (`None` outside Lambda).
    pub deadline: Option<Instant>,
    /// The caller's W3C trace context, when its `traceparent` header is well-formed.
    pub traceparent: Option<String>,
}

impl CallContext {
    /// The context of a request: what the plumbing put in its extensions and its `traceparent`.
    pub fn of(parts: &Parts) -> Self {
        Self {
            principal: parts
                .extensions
                .get::<Principal>()
                .cloned()
                .unwrap_or_default(),
            deadline: parts.extensions.get::<Deadline>().map(|d| d.0),
            traceparent: traceparent(&parts.headers),
        }
    }

    /// A call of `target` with `input` over `protocol`, in this context.
    pub fn call(self, protocol: &'static str, target: Target, input: Value) -> Call {
        let mut call = Call::new(protocol, target, input);
        self.apply(&mut call);
        call
    }

    /// Puts this context on `call`.
    pub fn apply(self, call: &mut Call) {
        call.principal = self.principal;
        call.deadline = self.deadline;
        call.traceparent = self.traceparent;
    }
}

impl<S: Send + Sync> FromRequestParts<S> for CallContext {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(Self::of(parts))
    }
}

/// The W3C trace context's header, named once: a lookup by `&str` parses the name at every call.
const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// The caller's W3C trace context from a `traceparent` header, when it is well-formed.
pub(crate) fn traceparent(headers: &HeaderMap) -> Option<String> {
    headers
        .get(TRACEPARENT)
        .and_then(|v| v.to_str().ok())
        .and_then(oxp_lambda_core::invoke::traceparent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_context_is_what_the_plumbing_and_the_caller_put_on_the_request() {
        let at = Instant::now() + Duration::from_secs(3);
        let (mut parts, ()) = http::Request::post("/x")
            .header(
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            )
            .extension(Deadline(at))
            .extension(Principal {
                subject: Some("alice".into()),
                bind_user_id: true,
                scopes: None,
            })
            .body(())
            .unwrap()
            .into_parts();
        let context = CallContext::from_request_parts(&mut parts, &())
            .await
            .unwrap();
        assert_eq!(context.principal.subject.as_deref(), Some("alice"));
        assert_eq!(context.deadline, Some(at));
        assert!(context.traceparent.is_some());
        let call = context.call("test", Target::Id("T".into()), Value::Null);
        assert_eq!(call.deadline, Some(at));
        assert!(call.principal.bind_user_id);
    }

    #[tokio::test]
    async fn without_authentication_deadline_or_trace_the_context_is_empty() {
        let (mut parts, ()) = http::Request::post("/x")
            .header("traceparent", "not a trace")
            .body(())
            .unwrap()
            .into_parts();
        let context = CallContext::from_request_parts(&mut parts, &())
            .await
            .unwrap();
        assert_eq!(context, CallContext::default());
    }
}
