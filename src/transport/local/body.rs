//! The whole request within a deadline: a body that trickles in (a byte a second after a
//! complete head) would otherwise hold its connection, and its slot of `OXP_MAX_CONNECTIONS`,
//! for ever. The body is read here, up to one byte over the limit, before the app sees the
//! request; one that does not arrive within `OXP_BODY_READ_TIMEOUT_MS` of the head is
//! answered 408 and its connection closed. Every route reads the whole body anyway (bounded by
//! `OXP_MAX_BODY_BYTES`), so nothing streams that did before.

use crate::server::ServerError;
use axum::body::{Body, Bytes, HttpBody};
use axum::response::Response;
use futures_util::future::BoxFuture;
use http::Request;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::Service;

/// Reads each request's body within `timeout` before handing the request to `inner`.
#[derive(Debug, Clone)]
pub(crate) struct Deadlined<S> {
    pub(crate) inner: S,
    pub(crate) timeout: Duration,
    /// The app's body limit: reading stops one byte past it, and the app refuses the body in
    /// its protocol's shape.
    pub(crate) max_body_bytes: usize,
    /// Each protocol's shape for a body that did not arrive.
    pub(crate) shapes: crate::server::Shapes,
}

impl<S, B> Service<Request<B>> for Deadlined<S>
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
    B: HttpBody<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::fmt::Display,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The clone that was polled ready serves this request (tower's clone-and-swap).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (timeout, limit) = (self.timeout, self.max_body_bytes);
        let shapes = self.shapes.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            if body.is_end_stream() {
                return inner.call(Request::from_parts(parts, Body::empty())).await;
            }
            match tokio::time::timeout(timeout, read_up_to(body, limit.saturating_add(1))).await {
                Ok(Ok(bytes)) => {
                    inner
                        .call(Request::from_parts(parts, Body::from(bytes)))
                        .await
                }
                // The peer reset (no one reads the answer), or sent a malformed chunk.
                Ok(Err(reason)) => {
                    tracing::info!(target: "oxp::server", outcome = "bad_body", reason = reason.as_str());
                    Ok(shapes.answer(parts.uri.path(), ServerError::BodyUnreadable))
                }
                Err(_) => {
                    tracing::info!(target: "oxp::server", outcome = "request_timeout");
                    Ok(shapes.answer(parts.uri.path(), ServerError::RequestTimeout))
                }
            }
        })
    }
}

/// The body's bytes, stopping once `most` were read. A body that comes in one frame, as a
/// small one does, is handed on as it came, without a copy.
async fn read_up_to<B>(mut body: B, most: usize) -> Result<Bytes, String>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let (mut frames, mut read) = (Vec::new(), 0);
    while read < most
        && let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
    {
        if let Ok(mut data) = frame.map_err(|e| e.to_string())?.into_data() {
            data.truncate(most - read);
            read += data.len();
            frames.push(data);
        }
    }
    Ok(match frames.len() {
        0 | 1 => frames.pop().unwrap_or_default(),
        _ => Bytes::from(frames.concat()),
    })
}

#[cfg(test)]
mod tests {
    use super::read_up_to;
    use axum::body::Bytes;
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    fn frames(
        parts: &[&'static str],
    ) -> StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Unpin>
    {
        let frames: Vec<_> = parts
            .iter()
            .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))))
            .collect();
        StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_is_read_whole_in_one_frame_or_many_and_never_past_the_most_asked() {
        assert_eq!(read_up_to(frames(&["abc"]), 10).await.unwrap(), "abc");
        assert_eq!(
            read_up_to(frames(&["ab", "cd", "e"]), 10).await.unwrap(),
            "abcde"
        );
        assert_eq!(read_up_to(frames(&["abcdef"]), 4).await.unwrap(), "abcd");
        assert_eq!(
            read_up_to(frames(&["ab", "cdef", "gh"]), 4).await.unwrap(),
            "abcd"
        );
        assert_eq!(
            read_up_to(frames(&["ab", "c", "defg"]), 5).await.unwrap(),
            "abcde"
        );
        assert_eq!(read_up_to(frames(&[]), 4).await.unwrap(), "");
    }
}
