//! Amazon Bedrock Agents action groups (`OXP_LAMBDA_ROLE=bedrock-agent`) as the value the app
//! takes: a direct-invocation role, and `App::handle_bedrock_agent`.

use crate::app::App;
use crate::app::StartError;
use crate::app::protocol::{Assembly, BoxFuture, Contribution, Protocol};
use crate::bedrock::BedrockAgent;
use crate::config::LambdaRole;
use crate::transport::lambda::direct::DirectHandler;
use oxp_lambda_core::invoke::Invoker;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Bedrock Agents: built for the role at start, and for [`App::handle_bedrock_agent`] on its
/// first call.
pub(crate) struct BedrockAgentsProtocol;

/// The agent's tools, built once.
struct Lazy {
    invoker: Arc<Invoker>,
    agent: OnceLock<Option<Arc<BedrockAgent>>>,
}

impl Lazy {
    fn agent(&self) -> Option<&Arc<BedrockAgent>> {
        self.agent
            .get_or_init(|| BedrockAgent::new(self.invoker.clone()).ok().map(Arc::new))
            .as_ref()
    }
}

/// The agent as the direct Runtime API loop runs it.
struct Direct(BedrockAgent);

impl DirectHandler for Direct {
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        _client_context: Option<&'a [u8]>,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Value> {
        Box::pin(self.0.invoke(event, deadline))
    }

    fn too_large(&self) -> Value {
        self.0.too_large()
    }
}

impl Protocol for BedrockAgentsProtocol {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let mut contribution = Contribution::default();
        if assembly.config.lambda_role == LambdaRole::BedrockAgent {
            let agent =
                BedrockAgent::new(assembly.invoker.clone()).map_err(StartError::BedrockAgent)?;
            contribution.lambda_role = Some((
                LambdaRole::BedrockAgent,
                super::direct_runner(Arc::new(Direct(agent))),
            ));
        }
        contribution.state.insert(Arc::new(Lazy {
            invoker: assembly.invoker.clone(),
            agent: OnceLock::new(),
        }));
        Ok(contribution)
    }
}

impl App {
    /// Answers one Amazon Bedrock Agents action group invocation as the Lambda role
    /// `OXP_LAMBDA_ROLE=bedrock-agent` does: `event` is the raw event (`messageVersion`,
    /// `actionGroup`, `function`, `parameters`, session attributes); the answer is the
    /// documented response (`response.functionResponse.responseBody.TEXT.body`, with
    /// `responseState` `REPROMPT` or `FAILURE` when the call failed).
    pub async fn handle_bedrock_agent(&self, event: &[u8]) -> Value {
        let Some(agent) = self
            .protocol_state::<Arc<Lazy>>()
            .and_then(|lazy| lazy.agent())
        else {
            return Value::Null;
        };
        if event.len() > self.config().max_body_bytes {
            return agent.too_large();
        }
        agent.invoke(event, None).await
    }
}
