//! In-process calls: a tool called by id through the real call path (resolution, requirements,
//! validation, deadline, output check), as tool tests and programs embedding tools make them.

use super::{Call, Invoker, Target};
use crate::registry::Registry;
use crate::secrets::Secrets;
use crate::tool::Secret;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Invoker {
    /// An invoker for in-process calls: no server-held secrets (each call brings the ones its
    /// tool needs, [`Call::secret`]), no idempotency store, 64 calls at once, 30 s per call.
    ///
    /// ```
    /// # async fn example() {
    /// use oxp_lambda_core::{Call, Invoker, Registry, Tool, ToolContext, ToolError};
    /// use serde_json::json;
    ///
    /// async fn echo(input: serde_json::Value, _ctx: ToolContext) -> Result<serde_json::Value, ToolError> {
    ///     Ok(input["text"].clone())
    /// }
    /// let registry = Registry::builder()
    ///     .tool(Tool::builder("Echo.Say", "1.0.0").raw_handler(
    ///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    ///         Some(json!({"type": "string"})),
    ///         echo,
    ///     ))
    ///     .build()
    ///     .unwrap();
    /// let invoker = Invoker::local(registry);
    /// let outcome = invoker.invoke(Call::tool("Echo.Say", json!({"text": "hi"}))).await.unwrap();
    /// assert_eq!(outcome.result.unwrap().value, json!("hi"));
    /// // The input is validated as over any protocol: a refusal, not a tool run.
    /// assert!(invoker.invoke(Call::tool("Echo.Say", json!({}))).await.is_err());
    /// # }
    /// ```
    pub fn local(registry: Registry) -> Self {
        Self::new(
            Arc::new(registry),
            Secrets::default(),
            None,
            64,
            Some(Duration::from_secs(30)),
        )
    }
}

impl Call {
    /// An in-process call (protocol `local`) of tool `id` (`Name`, `Name@x.y.z`, or a listing
    /// name) with `input`.
    pub fn tool(id: impl Into<String>, input: Value) -> Self {
        Self::new("local", Target::Id(id.into()), input)
    }

    /// Supplies secret `id` as a client would send it (the invoker's secrets policy applies).
    pub fn secret(mut self, id: impl Into<String>, value: impl Into<Arc<str>>) -> Self {
        self.secrets.push((id.into(), Secret::new(value)));
        self
    }

    /// Supplies the token for authorization provider `id`.
    pub fn token(mut self, id: impl Into<String>, value: impl Into<Arc<str>>) -> Self {
        self.authorization.push((id.into(), Secret::new(value)));
        self
    }

    /// Names the end user.
    pub fn user_id(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// Gives the call an id: with an idempotency store, a repeat replays the outcome.
    pub fn call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Ends the call at `deadline` at the latest.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }
}
