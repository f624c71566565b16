//! Trusting an API Gateway authorizer: the gateway verified the caller (JWT, Cognito, Lambda or
//! IAM authorizer) and `lambda_http` hands its claims over with the request.

use lambda_http::request::RequestContext;

/// `OXP_AUTH=apigateway` is available in this build.
pub(crate) fn available() -> Result<(), String> {
    Ok(())
}

/// The caller's subject as an API Gateway authorizer verified it: `None` when the request has
/// no authorizer context at all, `Some(sub)` otherwise (`sub` itself may be absent).
///
/// Read from, in order: JWT authorizer claims (`authorizer.jwt.claims.sub`), Cognito user pool
/// claims of REST APIs (`authorizer.claims.sub`), Lambda authorizer context (`sub` or
/// `principalId`), and IAM authorization (`userArn`).
pub(crate) fn authorizer_subject(extensions: &http::Extensions) -> Option<Option<String>> {
    let authorizer = match extensions.get::<RequestContext>()? {
        RequestContext::ApiGatewayV1(ctx) => Some(&ctx.authorizer),
        RequestContext::ApiGatewayV2(ctx) => ctx.authorizer.as_ref(),
        _ => None,
    }?;
    if let Some(jwt) = &authorizer.jwt {
        return Some(jwt.claims.get("sub").cloned());
    }
    if let Some(iam) = &authorizer.iam {
        return Some(iam.user_arn.clone().or_else(|| iam.user_id.clone()));
    }
    let fields = &authorizer.fields;
    if fields.is_empty() {
        return None;
    }
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let sub = fields
        .get("claims")
        .and_then(|c| c.get("sub"))
        .and_then(text)
        .or_else(|| fields.get("sub").and_then(text))
        .or_else(|| fields.get("principalId").and_then(text));
    Some(sub)
}
