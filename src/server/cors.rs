//! CORS: the answers to the web pages of `OXP_ALLOWED_ORIGINS`, wherever the app serves HTTP
//! (the local server, and Lambda's HTTP events: a Function URL or an API of a deployed server).

use std::time::Duration;

/// CORS for the web pages of `origins` (`OXP_ALLOWED_ORIGINS`), which the browser guard lets in:
/// their preflights are answered (any method and request header they ask for), and their
/// answers readable, every header included (an MCP client reads `Mcp-Session-Id`). Without it a
/// page of an allowed origin, the MCP Inspector's direct connection, could send nothing with a
/// JSON body (its preflight got 405) and read no answer. No credentials: tokens go in
/// `Authorization`, which a page sets itself.
pub(crate) fn layer(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, Any, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    // `*` is no origin (`Config::from_env` refuses it; tower-http's list panics on it).
    let origins = origins
        .iter()
        .filter(|o| o.as_str() != "*")
        .filter_map(|o| http::HeaderValue::from_str(&o.to_ascii_lowercase()).ok());
    let layer = CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods(AllowMethods::mirror_request())
        .allow_headers(AllowHeaders::mirror_request())
        .expose_headers(Any)
        .max_age(Duration::from_secs(600));
    Some(layer)
}
