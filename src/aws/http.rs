//! The AWS SDK's HTTP client: the reqwest client (HTTP/1.1 over rustls) the server links for its
//! callbacks, JWKS and OAuth, in place of the SDK's own (hyper with HTTP/2, a second rustls
//! set-up that loads the CA roots again). AWS's endpoints answer HTTP/1.1; every function
//! carries one HTTP stack (docs/performance.md measures the packages before and after).
//!
//! Like the SDK's client it reads no proxy from the environment, keeps a connector per set of
//! timeouts asked for (and per runtime, see `Key`), and tells the SDK's retries a timeout and an I/O failure from the rest.

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The HTTP client every SDK client of the process shares.
pub(crate) fn shared() -> SharedHttpClient {
    static CLIENT: OnceLock<SharedHttpClient> = OnceLock::new();
    CLIENT
        .get_or_init(|| SharedHttpClient::new(Reqwest::default()))
        .clone()
}

/// A connect and a read timeout.
type Timeouts = (Option<Duration>, Option<Duration>);

/// The connectors kept (a process asks for a few sets of timeouts: its clients' and the
/// credential providers'); past them the oldest is let go.
const KEPT: usize = 8;

/// What a connector is kept for: the runtime it serves and its timeouts. A connection's task
/// runs on the runtime that opened it and ends with it; a request another runtime sent over it
/// would fail ("runtime dropped the dispatch task") if that runtime ended first, so each
/// runtime has connections of its own. (A Lambda function has one runtime; a test suite of
/// `#[tokio::test]`s has one a test.)
type Key = (Option<tokio::runtime::Id>, Timeouts);

#[derive(Debug, Default)]
struct Reqwest {
    connectors: Mutex<std::collections::VecDeque<(Key, SharedHttpConnector)>>,
}

impl HttpClient for Reqwest {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.connector((settings.connect_timeout(), settings.read_timeout()))
    }
}

impl Reqwest {
    /// The connector for `timeouts` on the runtime asking (the SDK asks on each attempt).
    fn connector(&self, timeouts: Timeouts) -> SharedHttpConnector {
        let runtime = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
        let key = (runtime, timeouts);
        let mut kept = self.connectors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, connector)) = kept.iter().find(|(k, _)| *k == key) {
            return connector.clone();
        }
        let connector = SharedHttpConnector::new(Connector::new(timeouts));
        if runtime.is_some() {
            if kept.len() == KEPT {
                kept.pop_front();
            }
            kept.push_back((key, connector.clone()));
        }
        connector
    }
}

/// One reqwest client with its timeouts (or why it could not be built: each request says so).
#[derive(Debug)]
struct Connector(Result<reqwest::Client, String>);

impl Connector {
    fn new((connect, read): Timeouts) -> Self {
        let mut builder = crate::http_client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none());
        if let Some(connect) = connect {
            builder = builder.connect_timeout(connect);
        }
        if let Some(read) = read {
            builder = builder.read_timeout(read);
        }
        Self(
            builder
                .build()
                .map_err(|e| format!("the AWS HTTP client: {e}")),
        )
    }
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = match &self.0 {
            Ok(client) => client.clone(),
            Err(e) => {
                return HttpConnectorFuture::ready(Err(ConnectorError::other(
                    e.clone().into(),
                    None,
                )));
            }
        };
        HttpConnectorFuture::new(async move {
            let request = request
                .try_into_http1x()
                .map_err(|e| ConnectorError::user(e.into()))?;
            let (parts, body) = request.into_parts();
            // The SDK's requests are in memory: sent as they are, their length known.
            let body = match body.bytes() {
                Some(bytes) => reqwest::Body::from(bytes.to_vec()),
                None => reqwest::Body::wrap(body),
            };
            let request = reqwest::Request::try_from(http::Request::from_parts(parts, body))
                .map_err(|e| ConnectorError::user(e.into()))?;
            let response = client.execute(request).await.map_err(failed)?;
            let response = http::Response::from(response).map(SdkBody::from_body_1_x);
            HttpResponse::try_from(response).map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

/// A failed exchange as the SDK's retries read it: a timeout, an I/O failure (transient), or
/// another error.
fn failed(e: reqwest::Error) -> ConnectorError {
    if e.is_timeout() {
        ConnectorError::timeout(e.into())
    } else if e.is_connect() || e.is_request() || e.is_body() {
        ConnectorError::io(e.into())
    } else {
        ConnectorError::other(e.into(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str) -> HttpRequest {
        let mut request = HttpRequest::new(SdkBody::from("{}"));
        request.set_uri(uri).expect("a URI");
        request
    }

    /// A server on a runtime of its own answering every request `ok`, keeping connections open.
    fn keep_alive_server() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let slow = || async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    "ok"
                };
                let app = axum::Router::new()
                    .route("/slow", axum::routing::get(slow).post(slow))
                    .fallback(|| async { "ok" });
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        url
    }

    #[test]
    fn a_request_is_not_sent_over_a_connection_of_a_runtime_that_ends_while_it_is_answered() {
        let url = keep_alive_server();
        let client = std::sync::Arc::new(Reqwest::default());
        let timeouts = (Some(Duration::from_secs(1)), Some(Duration::from_secs(2)));
        // Runtime A opens a connection and goes on until told to end.
        let (opened, end) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
        let a = std::thread::spawn({
            let (client, url) = (client.clone(), url.clone());
            move || {
                let runtime = tokio::runtime::Runtime::new().unwrap();
                runtime.block_on(async {
                    let answer = client.connector(timeouts).call(request(&url)).await;
                    http_body_util::BodyExt::collect(answer.unwrap().into_body())
                        .await
                        .unwrap();
                });
                opened.0.send(()).unwrap();
                end.1.recv().unwrap();
                drop(runtime);
            }
        });
        opened.1.recv().unwrap();
        // Runtime B asks while A is running, and A ends before the answer comes.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let body = runtime.block_on(async {
            let call = tokio::spawn(
                client
                    .connector(timeouts)
                    .call(request(&format!("{url}slow"))),
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
            end.0.send(()).unwrap();
            a.join().unwrap();
            let answer = call.await.unwrap();
            let answer = answer.unwrap_or_else(|e| panic!("{e:?}"));
            http_body_util::BodyExt::collect(answer.into_body()).await
        });
        assert_eq!(&body.unwrap().to_bytes()[..], b"ok");
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_io_error_which_the_sdk_retries() {
        let refused = Connector::new((Some(Duration::from_secs(1)), None))
            .call(request("http://127.0.0.1:9/"))
            .await
            .unwrap_err();
        assert!(refused.is_io(), "{refused:?}");
    }

    #[tokio::test]
    async fn a_service_that_does_not_answer_in_the_read_timeout_is_a_timeout() {
        // Connected (the kernel accepts), never answered.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let uri = format!("http://{}/", silent.local_addr().unwrap());
        let timeouts = (
            Some(Duration::from_secs(1)),
            Some(Duration::from_millis(100)),
        );
        let late = Connector::new(timeouts)
            .call(request(&uri))
            .await
            .unwrap_err();
        assert!(late.is_timeout(), "{late:?}");
    }
}
