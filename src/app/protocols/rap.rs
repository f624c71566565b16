//! The async tool invocation protocol as the value the app takes: its routes, its drain at
//! shutdown, and (feature `rap-sqs`) the worker role's SQS loop and `App::handle_sqs_batch`.

use crate::app::StartError;
use crate::app::protocol::{Assembly, BoxFuture, Contribution, Drain, Protocol};
use crate::rap::Rap;
use std::sync::Arc;
use std::time::Duration;

/// RAP (`OXP_RAP`), as the value the app takes.
pub(crate) struct RapProtocol;

impl Protocol for RapProtocol {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let config = &assembly.config.rap;
        if !config.enabled {
            return Ok(Contribution::default());
        }
        #[cfg(feature = "rap-sqs")]
        let sqs = crate::aws::AwsClient::lazy(
            &assembly
                .shared
                .get::<crate::aws::SharedSdk>()
                .cloned()
                .unwrap_or_default(),
            aws_sdk_sqs::Client::new,
        );
        let adapter = Arc::new(
            crate::rap::build(
                assembly.invoker.clone(),
                config,
                #[cfg(feature = "rap-sqs")]
                &sqs,
                #[cfg(feature = "oauth")]
                authorizing(assembly),
            )
            .map_err(StartError::Rap)?,
        );
        #[cfg_attr(not(feature = "rap-sqs"), allow(unused_mut))]
        let mut contribution = Contribution {
            routes: Some(crate::rap::routes::router(adapter.clone(), assembly.auth)),
            drain: Some(Arc::new(Draining {
                adapter,
                timeout: config.drain_timeout,
            })),
            ..Contribution::default()
        };
        #[cfg(feature = "rap-sqs")]
        worker_role(assembly, &sqs, &mut contribution)?;
        Ok(contribution)
    }
}

/// The users' authorizations, when the server runs a provider's flow.
#[cfg(feature = "oauth")]
fn authorizing(assembly: &Assembly<'_>) -> Option<crate::rap::authorize::Authorizing> {
    let broker = assembly.shared.get::<Arc<crate::oauth::Broker>>()?;
    Some(crate::rap::authorize::Authorizing {
        broker: broker.clone(),
        timeout: assembly.config.oauth.pending_timeout,
    })
}

/// The in-process queue's invocations, finished (or dead-lettered) at shutdown.
struct Draining {
    adapter: Arc<Rap>,
    timeout: Duration,
}

impl Drain for Draining {
    fn drain(&self, timeout: Option<Duration>) -> BoxFuture<'_, usize> {
        Box::pin(self.adapter.drain(timeout.unwrap_or(self.timeout)))
    }
}

/// The worker of `OXP_LAMBDA_ROLE=worker`, for `App::handle_sqs_batch`.
#[cfg(feature = "rap-sqs")]
struct SqsWorker(Arc<crate::rap::worker::Worker>);

#[cfg(feature = "rap-sqs")]
fn worker_role(
    assembly: &Assembly<'_>,
    sqs: &crate::aws::AwsClient<aws_sdk_sqs::Client>,
    contribution: &mut Contribution,
) -> Result<(), StartError> {
    use crate::config::LambdaRole;
    if assembly.config.lambda_role != LambdaRole::Worker {
        return Ok(());
    }
    let worker = Arc::new(
        crate::rap::build_worker(
            assembly.invoker.clone(),
            &assembly.config.rap,
            sqs,
            #[cfg(feature = "oauth")]
            authorizing(assembly),
        )
        .map_err(StartError::Rap)?,
    );
    contribution
        .state
        .insert(Arc::new(SqsWorker(worker.clone())));
    contribution.lambda_role = Some((
        LambdaRole::Worker,
        Arc::new(move |margin, _max_bytes| run_worker(worker.clone(), margin)),
    ));
    Ok(())
}

/// The worker role's loop.
#[cfg(feature = "rap-sqs")]
fn run_worker(
    worker: Arc<crate::rap::worker::Worker>,
    margin: Duration,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), crate::app::protocol::BoxError>>>>
{
    Box::pin(crate::transport::lambda::sqs::run(worker, margin))
}

#[cfg(feature = "rap-sqs")]
impl crate::app::App {
    /// Handles one SQS batch of async invocations as the Lambda worker role does
    /// (`OXP_LAMBDA_ROLE=worker`): each record's tool runs (once per invocation id, however
    /// often SQS delivers it) and its result is delivered or dead-lettered; the records to retry
    /// come back in `batchItemFailures`. An app built for another role reports every record.
    pub async fn handle_sqs_batch(
        &self,
        event: aws_lambda_events::event::sqs::SqsEvent,
    ) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        match self.protocol_state::<Arc<SqsWorker>>() {
            Some(worker) => {
                crate::transport::lambda::sqs::handle_batch(&worker.0, event, None).await
            }
            None => crate::transport::lambda::sqs::refuse_batch(event),
        }
    }
}
