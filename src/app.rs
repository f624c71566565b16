//! Assembly: the parts the configuration names, built once and wired together: the secret
//! source, the idempotency store and authentication around one [`Invoker`], the protocol
//! adapters over it, and the plumbing and transports around them.

use crate::auth::Authenticator;
use crate::config::{Config, in_lambda};
use crate::core::invoke::Invoker;
use crate::core::registry::Registry;
use crate::server::{self, HttpApp};
use crate::transport::local;
use axum::Router;
use http::Request;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tower::Service;

/// Why the app could not start: the part at fault and why (configuration errors name their
/// variable).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartError {
    /// An `OXP_*` variable has an invalid value.
    Config(crate::config::ConfigError),
    /// The secret source could not be set up.
    Secrets(String),
    /// Authentication could not be set up.
    Auth(String),
    /// The idempotency store could not be set up.
    Idempotency(String),
    /// The async adapter could not be set up.
    Rap(String),
    /// The MCP adapter could not be set up.
    Mcp(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::Secrets(why) => write!(f, "invalid configuration: secrets: {why}"),
            Self::Auth(why) => write!(f, "invalid configuration: authentication: {why}"),
            Self::Idempotency(why) => write!(f, "invalid configuration: idempotency: {why}"),
            Self::Rap(why) => write!(f, "invalid configuration: async invocation: {why}"),
            Self::Mcp(why) => write!(f, "invalid configuration: MCP: {why}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Builds an [`App`]: the tools, the configuration, and what the embedding program holds
/// itself.
///
/// ```
/// # async fn example() -> Result<(), oxp_lambda::StartError> {
/// use oxp_lambda::{App, Config, Registry};
///
/// let app = App::builder(Registry::builder().build().unwrap())
///     .config(Config::default())
///     .secret("TWILIO_API_KEY", "from-my-vault")
///     .build()
///     .await?;
/// # let _ = app;
/// # Ok(()) }
/// ```
#[must_use]
pub struct AppBuilder {
    registry: Registry,
    config: Config,
    secrets: Vec<(String, String)>,
    #[cfg(feature = "aws")]
    aws: Option<aws_config::SdkConfig>,
}

impl fmt::Debug for AppBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppBuilder")
            .field("registry", &self.registry)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AppBuilder {
    /// The configuration (default: [`Config::default`], not the environment; see
    /// [`Config::from_env`]).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// A server-held secret the program holds itself, as if set as `OXP_SECRET_<ID>`. Used
    /// with the local secret source.
    pub fn secret(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets.push((id.into(), value.into()));
        self
    }

    /// The AWS configuration for the parts that talk to AWS, instead of the one loaded from
    /// the environment (for example a local emulator's endpoint).
    #[cfg(feature = "aws")]
    pub fn aws_config(mut self, sdk: aws_config::SdkConfig) -> Self {
        self.aws = Some(sdk);
        self
    }

    /// Builds every part the configuration names. Nothing is fetched yet: secrets, keys and
    /// AWS clients are first used by the first request that needs them.
    pub async fn build(self) -> Result<App, StartError> {
        let config = self.config;
        #[cfg(feature = "aws")]
        let sdk = match self.aws {
            Some(sdk) => Some(sdk),
            None => aws_sdk_config(&config).await,
        };
        let secrets = crate::secrets::build(
            &config.secrets,
            &self.secrets,
            #[cfg(feature = "aws")]
            sdk.as_ref(),
        )
        .map_err(StartError::Secrets)?;
        signing_key_kept_from_tools(&config.auth, &self.registry)?;
        let auth = Arc::new(
            Authenticator::from_config(&config.auth, secrets.clone()).map_err(StartError::Auth)?,
        );
        if let crate::config::AuthConfig::None { explicit } = config.auth
            && !in_lambda()
        {
            tracing::warn!(
                explicit,
                "authentication is off (OXP_AUTH=none): any local process can call the tools"
            );
        }
        let idempotency = crate::idempotency::build(
            &config.idempotency,
            #[cfg(feature = "aws")]
            sdk.as_ref(),
        )
        .map_err(StartError::Idempotency)?;
        let invoker = Arc::new(Invoker::new(
            Arc::new(self.registry),
            secrets,
            idempotency,
            config.max_concurrent_calls,
            config.tool_timeout,
        ));
        let routes: Router = crate::oxp::router(invoker.clone(), &auth);
        #[cfg(feature = "mcp")]
        let mcp = (config.mcp.enabled
            || config.lambda_role == crate::config::LambdaRole::AgentCore)
            .then(|| crate::mcp::served(invoker.clone(), &config.mcp))
            .transpose()
            .map_err(StartError::Mcp)?;
        #[cfg(feature = "mcp")]
        let routes = match &mcp {
            Some(served) if config.mcp.enabled => routes.merge(crate::mcp::router(
                served.clone(),
                &auth,
                &config.mcp,
                &config.allowed_origins,
                config.max_body_bytes,
            )),
            _ => routes,
        };
        #[cfg(feature = "rap-sqs")]
        let sqs = sdk.as_ref().map(aws_sdk_sqs::Client::new);
        #[cfg(feature = "rap")]
        let (routes, rap) = rap_parts(
            routes,
            &invoker,
            &auth,
            &config,
            #[cfg(feature = "rap-sqs")]
            sqs,
        )?;
        let http = server::assemble(routes, config.max_body_bytes, config.base_path.as_deref());
        Ok(App {
            #[cfg(feature = "lambda")]
            service: crate::transport::lambda::http::LambdaHttp {
                app: http,
                margin: config.deadline_margin,
            },
            #[cfg(not(feature = "lambda"))]
            service: http,
            parts: Arc::new(Parts {
                config,
                #[cfg(feature = "agentcore")]
                mcp,
                #[cfg(feature = "rap")]
                rap,
            }),
        })
    }
}

/// The JWT signing key is the server's, never a tool's: a tool declaring a secret of the same
/// id would be handed the key that mints every caller's identity.
fn signing_key_kept_from_tools(
    auth: &crate::config::AuthConfig,
    registry: &Registry,
) -> Result<(), StartError> {
    let crate::config::AuthConfig::Jwt(jwt) = auth else {
        return Ok(());
    };
    let crate::config::JwtKeys::Hs256 { secret_id } = &jwt.keys else {
        return Ok(());
    };
    match registry
        .tools()
        .iter()
        .find(|t| t.requirements.secrets.contains(secret_id))
    {
        Some(tool) => Err(StartError::Auth(format!(
            "tool {} requires secret '{secret_id}', the JWT signing key (OXP_JWT_HS256_SECRET_ID): tools never get it",
            tool.id
        ))),
        None => Ok(()),
    }
}

#[cfg(feature = "rap")]
type RapParts = (Router, Option<RapServed>);

/// The async adapter, when served: its HTTP side and, for the Lambda worker role, its worker.
#[cfg(feature = "rap")]
struct RapServed {
    adapter: Arc<crate::rap::Rap>,
    #[cfg(feature = "rap-sqs")]
    worker: Option<Arc<crate::rap::worker::Worker>>,
}

#[cfg(feature = "rap")]
fn rap_parts(
    routes: Router,
    invoker: &Arc<Invoker>,
    auth: &Arc<Authenticator>,
    config: &Config,
    #[cfg(feature = "rap-sqs")] sqs: Option<aws_sdk_sqs::Client>,
) -> Result<RapParts, StartError> {
    if !config.rap.enabled {
        return Ok((routes, None));
    }
    let adapter = Arc::new(
        crate::rap::build(
            invoker.clone(),
            &config.rap,
            #[cfg(feature = "rap-sqs")]
            sqs.as_ref(),
        )
        .map_err(StartError::Rap)?,
    );
    #[cfg(feature = "rap-sqs")]
    let worker = match config.lambda_role {
        crate::config::LambdaRole::Worker => Some(Arc::new(
            crate::rap::build_worker(invoker.clone(), &config.rap, sqs.as_ref())
                .map_err(StartError::Rap)?,
        )),
        _ => None,
    };
    let routes = routes.merge(crate::rap::routes::router(adapter.clone(), auth));
    Ok((
        routes,
        Some(RapServed {
            adapter,
            #[cfg(feature = "rap-sqs")]
            worker,
        }),
    ))
}

/// The AWS configuration, loaded only when a configured part talks to AWS.
#[cfg(feature = "aws")]
async fn aws_sdk_config(config: &Config) -> Option<aws_config::SdkConfig> {
    use crate::config::{IdempotencyMode, SecretSourceKind};
    let rap_queues = {
        #[cfg(feature = "rap")]
        {
            config.rap.enabled
                && (config.rap.queue_url.is_some() || config.rap.dead_letter_queue_url.is_some())
        }
        #[cfg(not(feature = "rap"))]
        false
    };
    let needs_aws = config.secrets.source == SecretSourceKind::Aws
        || config.idempotency.mode == IdempotencyMode::DynamoDb
        || rap_queues;
    if !needs_aws {
        return None;
    }
    Some(
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .load()
            .await,
    )
}

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
        AppBuilder {
            registry,
            config: Config::default(),
            secrets: Vec::new(),
            #[cfg(feature = "aws")]
            aws: None,
        }
    }

    /// Serves HTTP on `listener` until `shutdown` completes; in-flight requests finish, then
    /// accepted async invocations get `OXP_RAP_DRAIN_SECS` to finish before the rest are
    /// dead-lettered. On a loopback listener, a request whose `Host` is not a loopback name or
    /// whose `Origin` is not in `OXP_ALLOWED_ORIGINS` is refused (403): web pages open in a
    /// browser on the same machine cannot reach the tools.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let origins = self.parts.config.allowed_origins.clone().into();
        let served = local::serve(listener, self.http(), origins, shutdown).await;
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
            return serde_json::json!({
                "content": [{"type": "text", "text": "{\"message\":\"MCP is off (OXP_MCP=off)\"}"}],
                "isError": true
            });
        };
        crate::agentcore::invoke(served, event, client_context, None).await
    }

    /// Serves the Lambda Runtime API in the configured role until the environment ends.
    #[cfg(feature = "lambda")]
    pub(crate) async fn run_lambda(self) -> Result<(), lambda_http::Error> {
        #[cfg(feature = "agentcore")]
        if self.parts.config.lambda_role == crate::config::LambdaRole::AgentCore
            && let Some(served) = self.parts.mcp.clone()
        {
            let margin = self.parts.config.deadline_margin;
            return crate::transport::lambda::direct::run(served, margin).await;
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
