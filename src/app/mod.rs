//! Assembly: the parts the configuration names, built once and wired together: the secret
//! source, the idempotency store and authentication around one [`Invoker`], the protocol
//! adapters over it, and the plumbing and transports around them.

use crate::config::Config;
use crate::server::HttpApp;
use crate::transport::local;
use http::Request;
use oxp_lambda_core::registry::Registry;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tower::Service;

mod build;

#[cfg(feature = "rap")]
use build::RapServed;
pub use build::{AppBuilder, StartError};

#[cfg(feature = "lambda")]
type Inner = crate::transport::lambda::http::LambdaHttp;
#[cfg(not(feature = "lambda"))]
type Inner = HttpApp;

/// The app: every route of every adapter, as one `tower` service for the local server, the
/// Lambda runtime or tests (`tower::ServiceExt::oneshot`).
#[derive(Clone)]
pub struct App {
    service: Inner,
    parts: Arc<Parts>,
}

struct Parts {
    config: Config,
    /// The call path, for the protocols built on first use.
    #[cfg(feature = "bedrock-agent")]
    invoker: Arc<oxp_lambda_core::invoke::Invoker>,
    /// The Bedrock Agents protocol for [`App::handle_bedrock_agent`], built by its first call.
    #[cfg(feature = "bedrock-agent")]
    bedrock: std::sync::OnceLock<Option<Arc<crate::bedrock::BedrockAgent>>>,
    /// The protocol of a direct-invocation Lambda role, when the role is one.
    #[cfg(any(feature = "agentcore", feature = "bedrock-agent"))]
    direct: Option<Arc<dyn crate::transport::lambda::direct::DirectHandler>>,
    /// The tools the AgentCore target serves (those of MCP), when MCP or the role is on.
    #[cfg(feature = "agentcore")]
    mcp: Option<Arc<crate::mcp::Served>>,
    #[cfg(feature = "rap")]
    rap: Option<RapServed>,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("config", &self.parts.config)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Starts building an app serving `registry`.
    pub fn builder(registry: Registry) -> AppBuilder {
        AppBuilder::new(registry)
    }

    /// Serves HTTP on `listener` until `shutdown` completes; in-flight requests finish, then
    /// accepted async invocations get `OXP_RAP_DRAIN_SECS` to finish before the rest are
    /// dead-lettered. On a loopback listener, and on any listener while authentication is off,
    /// a request whose `Host` is neither a loopback name nor in `OXP_ALLOWED_HOSTS`, or whose
    /// `Origin` is not in `OXP_ALLOWED_ORIGINS`, is refused (403): web pages open in a browser
    /// on the same machine cannot reach the tools, even through a rebound DNS name.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let config = &self.parts.config;
        let rules = local::BrowserRules {
            allowed_origins: config.allowed_origins.clone().into(),
            allowed_hosts: config.allowed_hosts.clone().into(),
            auth_off: matches!(config.auth, crate::config::AuthConfig::None { .. }),
        };
        let served = local::serve(listener, self.http(), rules, shutdown).await;
        #[cfg(feature = "rap")]
        {
            let abandoned = self.drain(self.parts.config.rap.drain_timeout).await;
            if abandoned > 0 {
                tracing::warn!(
                    abandoned,
                    "unfinished invocations were dead-lettered at shutdown"
                );
            }
        }
        served
    }

    /// Waits up to `timeout` for the async invocations this process accepted onto its
    /// in-process queue to finish, then dead-letters those still running; returns how many
    /// were. Nothing to wait for with an SQS queue (or without the async adapter).
    #[cfg(feature = "rap")]
    pub async fn drain(&self, timeout: std::time::Duration) -> usize {
        match &self.parts.rap {
            Some(rap) => rap.adapter.drain(timeout).await,
            None => 0,
        }
    }

    fn http(&self) -> HttpApp {
        #[cfg(feature = "lambda")]
        return self.service.app.clone();
        #[cfg(not(feature = "lambda"))]
        return self.service.clone();
    }

    /// Handles one SQS batch of async invocations as the Lambda worker role does
    /// (`OXP_LAMBDA_ROLE=worker`): each record's tool runs (once per invocation id, however
    /// often SQS delivers it) and its result is delivered or dead-lettered; the records to retry
    /// come back in `batchItemFailures`. An app built for another role reports every record.
    #[cfg(feature = "rap-sqs")]
    pub async fn handle_sqs_batch(
        &self,
        event: aws_lambda_events::event::sqs::SqsEvent,
    ) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        let worker = self.parts.rap.as_ref().and_then(|r| r.worker.as_deref());
        match worker {
            Some(worker) => crate::transport::lambda::sqs::handle_batch(worker, event, None).await,
            None => crate::transport::lambda::sqs::refuse_batch(event),
        }
    }

    /// Answers one Bedrock AgentCore Gateway invocation as the Lambda role
    /// `OXP_LAMBDA_ROLE=agentcore` does: `event` is the raw event (the tool's arguments),
    /// `client_context` the raw client context JSON naming the tool
    /// (`custom.bedrockAgentCoreToolName`). The answer is an MCP `CallToolResult`; an app that
    /// serves neither MCP nor that role answers `isError` for every tool.
    #[cfg(feature = "agentcore")]
    pub async fn handle_agentcore(
        &self,
        event: &[u8],
        client_context: Option<&[u8]>,
    ) -> serde_json::Value {
        let Some(served) = &self.parts.mcp else {
            return crate::agentcore::refused("MCP is off (OXP_MCP=off)".into());
        };
        if event.len() > self.parts.config.max_body_bytes {
            return crate::agentcore::refused("The event is too large".into());
        }
        crate::agentcore::invoke(served, event, client_context, None).await
    }

    /// Answers one Amazon Bedrock Agents action group invocation as the Lambda role
    /// `OXP_LAMBDA_ROLE=bedrock-agent` does: `event` is the raw event (`messageVersion`,
    /// `actionGroup`, `function`, `parameters`, session attributes); the answer is the
    /// documented response (`response.functionResponse.responseBody.TEXT.body`, with
    /// `responseState` `REPROMPT` or `FAILURE` when the call failed).
    #[cfg(feature = "bedrock-agent")]
    pub async fn handle_bedrock_agent(&self, event: &[u8]) -> serde_json::Value {
        let agent = self.parts.bedrock.get_or_init(|| {
            crate::bedrock::BedrockAgent::new(self.parts.invoker.clone())
                .ok()
                .map(Arc::new)
        });
        match agent {
            Some(agent) if event.len() <= self.parts.config.max_body_bytes => {
                agent.invoke(event, None).await
            }
            Some(agent) => agent.too_large(),
            None => serde_json::Value::Null,
        }
    }

    /// Serves the Lambda Runtime API in the configured role (`OXP_LAMBDA_ROLE`) until the
    /// environment ends: the entry point of a Lambda function built around this app, for
    /// programs that start the runtime themselves rather than through [`crate::run`].
    #[cfg(feature = "lambda")]
    pub async fn run_lambda(self) -> Result<(), lambda_http::Error> {
        #[cfg(any(feature = "agentcore", feature = "bedrock-agent"))]
        if let Some(handler) = self.parts.direct.clone() {
            let config = &self.parts.config;
            return crate::transport::lambda::direct::run(
                handler,
                config.deadline_margin,
                config.max_body_bytes,
            )
            .await;
        }
        #[cfg(feature = "rap-sqs")]
        if self.parts.config.lambda_role == crate::config::LambdaRole::Worker
            && let Some(worker) = self.parts.rap.as_ref().and_then(|r| r.worker.clone())
        {
            let margin = self.parts.config.deadline_margin;
            return crate::transport::lambda::sqs::run(worker, margin).await;
        }
        crate::transport::lambda::http::run(self.service).await
    }
}

impl<B> Service<Request<B>> for App
where
    B: axum::body::HttpBody<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = axum::routing::future::RouteFuture<Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<Request<B>>::poll_ready(&mut self.service, cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.service.call(request)
    }
}
