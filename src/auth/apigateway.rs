//! Trusting an API Gateway authorizer: the gateway verified the caller (JWT, Cognito, Lambda or
//! IAM authorizer) and `lambda_http` hands its claims over with the request.

use lambda_http::request::RequestContext;

/// `OXP_AUTH=apigateway` is available in this build.
pub(crate) fn available() -> Result<(), String> {
    Ok(())
}

/// The caller's subject as an API Gateway authorizer verified it: `None` when the request has
/// no authorizer context at all, `Some(caller)` otherwise (`caller` itself may be absent).
///
/// Read from, in order: JWT authorizer claims (`authorizer.jwt.claims`: `sub`, else the client's
/// `client_id` or `azp`, as [`super::caller_of`] names them), Cognito user pool claims of REST
/// APIs (`authorizer.claims`, the same way), Lambda authorizer context (`sub` or
/// `principalId`), and IAM authorization (`userArn`).
pub(crate) fn authorizer_subject(extensions: &http::Extensions) -> Option<Option<String>> {
    let authorizer = match extensions.get::<RequestContext>()? {
        RequestContext::ApiGatewayV1(ctx) => Some(&ctx.authorizer),
        RequestContext::ApiGatewayV2(ctx) => ctx.authorizer.as_ref(),
        _ => None,
    }?;
    if let Some(jwt) = &authorizer.jwt {
        return Some(super::caller_of(|claim| {
            jwt.claims.get(claim).map(String::as_str)
        }));
    }
    if let Some(iam) = &authorizer.iam {
        return Some(iam.user_arn.clone().or_else(|| iam.user_id.clone()));
    }
    let fields = &authorizer.fields;
    if fields.is_empty() {
        return None;
    }
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let claims = fields.get("claims");
    let sub = claims
        .and_then(|c| super::caller_of(|claim| c.get(claim).and_then(|v| v.as_str())))
        .or_else(|| fields.get("sub").and_then(text))
        .or_else(|| fields.get("principalId").and_then(text));
    Some(sub)
}

/// The scopes an API Gateway authorizer reports: the JWT authorizer's `scopes` (else its
/// token's `scope` claim), a Cognito user pool token's `scope` claim, or a Lambda authorizer's
/// `scope` context value (space-separated). None from an IAM authorizer.
pub(crate) fn authorizer_scopes(extensions: &http::Extensions) -> Vec<String> {
    const MAX_SCOPES: usize = 256;
    let authorizer = match extensions.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV1(ctx)) => Some(&ctx.authorizer),
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.authorizer.as_ref(),
        _ => None,
    };
    let Some(authorizer) = authorizer else {
        return Vec::new();
    };
    let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
    let mut scopes = if let Some(jwt) = &authorizer.jwt {
        match &jwt.scopes {
            Some(scopes) if !scopes.is_empty() => scopes.clone(),
            _ => jwt.claims.get("scope").map_or_else(Vec::new, |s| words(s)),
        }
    } else {
        let fields = &authorizer.fields;
        fields
            .get("claims")
            .and_then(|c| c.get("scope"))
            .or_else(|| fields.get("scope"))
            .and_then(|v| v.as_str())
            .map_or_else(Vec::new, words)
    };
    scopes.truncate(MAX_SCOPES);
    scopes
}
