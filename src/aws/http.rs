//! The AWS SDK's HTTP client: the reqwest client (HTTP/1.1 over rustls) the server links for its
//! callbacks, JWKS and OAuth, in place of the SDK's own (hyper with HTTP/2, a second rustls
//! set-up that loads the CA roots again). AWS's endpoints answer HTTP/1.1; every function
//! carries one HTTP stack (docs/performance.md measures the packages before and after).
//!
//! Like the SDK's client it reads no proxy from the environment, keeps a connector per set of
//! timeouts asked for, and tells the SDK's retries a timeout and an I/O failure from the rest.

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
/// credential providers'); past them each is built for its request.
const KEPT: usize = 8;

#[derive(Debug, Default)]
struct Reqwest {
    connectors: Mutex<Vec<(Timeouts, SharedHttpConnector)>>,
}

impl HttpClient for Reqwest {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let timeouts = (settings.connect_timeout(), settings.read_timeout());
        let mut kept = self.connectors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, connector)) = kept.iter().find(|(t, _)| *t == timeouts) {
            return connector.clone();
        }
        let connector = SharedHttpConnector::new(Connector::new(timeouts));
        if kept.len() < KEPT {
            kept.push((timeouts, connector.clone()));
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
