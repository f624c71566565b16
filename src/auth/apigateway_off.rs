//! Without the `lambda` feature no request comes through API Gateway, so there is no
//! authorizer to trust: `OXP_AUTH=apigateway` is refused at start.

/// Refuses `OXP_AUTH=apigateway`.
pub(crate) fn available() -> Result<(), String> {
    Err("OXP_AUTH=apigateway needs the `lambda` feature of oxp-lambda".into())
}

/// No authorizer claims outside Lambda.
pub(crate) fn authorizer_subject(_extensions: &http::Extensions) -> Option<Option<String>> {
    None
}

/// No authorizer scopes outside Lambda.
pub(crate) fn authorizer_scopes(_extensions: &http::Extensions) -> Vec<String> {
    Vec::new()
}
