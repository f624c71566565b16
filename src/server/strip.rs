//! Path prefixes taken off before routing: the configured base path here, and an API Gateway
//! stage in the Lambda transport, so that `/prod/api/tools` reaches `/tools`.

use http::{Request, Uri};
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;

/// What was taken off the front of the path (`/prod/api`), for building URLs that point back at
/// this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StrippedPrefix(pub(crate) String);

/// Takes `prefix` off the front of `request`'s path (only at a segment boundary) and records it
/// in [`StrippedPrefix`].
pub(crate) fn strip_front<B>(request: &mut Request<B>, prefix: &str) {
    let Some(uri) = strip(request.uri(), prefix) else {
        return;
    };
    *request.uri_mut() = uri;
    let extensions = request.extensions_mut();
    match extensions.get_mut::<StrippedPrefix>() {
        Some(StrippedPrefix(stripped)) => stripped.push_str(prefix),
        None => {
            extensions.insert(StrippedPrefix(prefix.to_owned()));
        }
    }
}

/// Strips the configured base path (`OXP_BASE_PATH`) before routing.
#[derive(Debug, Clone)]
pub struct StripPrefix<S> {
    pub(crate) inner: S,
    pub(crate) base_path: Option<Arc<str>>,
}

impl<S, B> Service<Request<B>> for StripPrefix<S>
where
    S: Service<Request<B>, Error = Infallible>,
{
    type Response = S::Response;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if let Some(base) = &self.base_path {
            strip_front(&mut request, base);
        }
        self.inner.call(request)
    }
}

/// `uri` without `prefix` (only at a segment boundary), or `None` when it does not start with it.
fn strip(uri: &Uri, prefix: &str) -> Option<Uri> {
    let rest = uri.path().strip_prefix(prefix)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let path = if rest.is_empty() { "/" } else { rest };
    let path_and_query = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_stripped_at_segment_boundaries_only() {
        let uri: Uri = "/prod/tools?x=1".parse().unwrap();
        assert_eq!(strip(&uri, "/prod").unwrap(), "/tools?x=1");
        let uri: Uri = "/production/tools".parse().unwrap();
        assert!(strip(&uri, "/prod").is_none());
        let uri: Uri = "https://h.example/prod".parse().unwrap();
        assert_eq!(strip(&uri, "/prod").unwrap().path(), "/");
    }
}
