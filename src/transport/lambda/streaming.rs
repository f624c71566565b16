//! HTTP events answered with Lambda response streaming (`OXP_LAMBDA_STREAMING=true`): the
//! status and headers go back first, then the body as the app writes it, so an MCP call's
//! progress (a Server-Sent Events stream) reaches the client before its result. Lambda takes
//! such answers from functions behind a Function URL with `InvokeMode: RESPONSE_STREAM` or an
//! API Gateway REST integration that streams; a buffered integration cannot read them.

use axum::body::Bytes;
use futures_util::future::BoxFuture;
use http_body::{Body, Frame};
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll, ready};

/// `response` with its body wrapped so that the invocation's metrics and spans are sent when
/// the body ends: the call goes on recording after the headers went back, and Lambda may
/// freeze the environment as soon as the stream closes.
pub(crate) fn flush_at_end(
    response: axum::response::Response,
) -> http::Response<FlushAtEnd<axum::body::Body>> {
    response.map(|body| FlushAtEnd {
        body: Mutex::new(body),
        flush: Mutex::new(None),
        ended: false,
    })
}

/// A body that, once its last frame is out, sends what the invocation recorded before it
/// reports its end. Its body and flush are each in a `Mutex` only so that it is `Sync`, as
/// `lambda_http`'s `StreamAdapter` needs of a body: reached through `&mut` alone
/// (`Mutex::get_mut`), never locked.
pub(crate) struct FlushAtEnd<B> {
    body: Mutex<B>,
    flush: Mutex<Option<BoxFuture<'static, ()>>>,
    ended: bool,
}

impl<B> Body for FlushAtEnd<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let flush = this.flush.get_mut().unwrap_or_else(PoisonError::into_inner);
        if flush.is_none() {
            let body = this.body.get_mut().unwrap_or_else(PoisonError::into_inner);
            match ready!(Pin::new(body).poll_frame(cx)) {
                Some(frame) => return Poll::Ready(Some(frame)),
                None => *flush = Some(Box::pin(super::invocation::flush())),
            }
        }
        if let Some(pending) = flush.as_mut() {
            ready!(pending.as_mut().poll(cx));
        }
        *flush = None;
        this.ended = true;
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_body_comes_through_whole_and_then_ends() {
        let response = flush_at_end(axum::response::Response::new("data: one\n\n".into()));
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"data: one\n\n");
    }
}
