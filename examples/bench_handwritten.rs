//! The hand-written function scripts/bench measures the HTTP role against (docs/performance.md,
//! "Lambda functions"): `POST /tools/call` of `SMS.Send` done by hand with the crates the
//! server uses, as a careful author would write it for Lambda: `lambda_http`, the input
//! checked by `jsonschema` (compiled at start, as the server compiles its tools' schemas), the
//! secret read from Secrets Manager and the `call_id` claimed in DynamoDB (a conditional put,
//! then the outcome kept), the AWS configuration and clients made at the first call. Nothing
//! of oxp-lambda: no registry, no protocols, no middleware.
//!
//! Configured as the server is in the bench: `OXP_SECRETS_PREFIX` (the secret
//! `<prefix>TWILIO_API_KEY`) and `OXP_IDEMPOTENCY_TABLE` (a table keyed `pk`, `sk`).

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{Body, Error, Request, Response, service_fn};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

struct Function {
    input: jsonschema::Validator,
    table: String,
    secret_id: String,
    clients: OnceCell<(aws_sdk_secretsmanager::Client, aws_sdk_dynamodb::Client)>,
    secret: OnceCell<String>,
}

fn answer(status: u16, body: Value) -> Result<Response<Body>, Error> {
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))?)
}

impl Function {
    async fn clients(&self) -> &(aws_sdk_secretsmanager::Client, aws_sdk_dynamodb::Client) {
        self.clients
            .get_or_init(|| async {
                // The SDK's own HTTP client, as `aws-config`'s default features give it.
                use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
                let http = aws_smithy_http_client::Builder::new()
                    .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
                    .build_https();
                let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
                    .http_client(http)
                    .load()
                    .await;
                (
                    aws_sdk_secretsmanager::Client::new(&sdk),
                    aws_sdk_dynamodb::Client::new(&sdk),
                )
            })
            .await
    }

    async fn secret(&self) -> Result<&str, Error> {
        let (secrets, _) = self.clients().await;
        let secret = self
            .secret
            .get_or_try_init(|| async {
                let got = secrets
                    .get_secret_value()
                    .secret_id(&self.secret_id)
                    .send()
                    .await?;
                Ok::<_, Error>(got.secret_string().unwrap_or_default().to_owned())
            })
            .await?;
        Ok(secret)
    }

    async fn claim(&self, call_id: &str) -> Result<bool, Error> {
        let (_, dynamo) = self.clients().await;
        let put = dynamo
            .put_item()
            .table_name(&self.table)
            .item("pk", AttributeValue::S(format!("call#{call_id}")))
            .item("sk", AttributeValue::S("call".into()))
            .item("state", AttributeValue::S("running".into()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn keep(&self, call_id: &str, outcome: &Value) -> Result<(), Error> {
        let (_, dynamo) = self.clients().await;
        dynamo
            .put_item()
            .table_name(&self.table)
            .item("pk", AttributeValue::S(format!("call#{call_id}")))
            .item("sk", AttributeValue::S("call".into()))
            .item("state", AttributeValue::S("done".into()))
            .item("outcome", AttributeValue::S(outcome.to_string()))
            .send()
            .await?;
        Ok(())
    }

    async fn call(&self, request: Request) -> Result<Response<Body>, Error> {
        let Ok(body) = serde_json::from_slice::<Value>(request.body()) else {
            return answer(400, json!({"error": "InvalidRequest"}));
        };
        let call = &body["request"];
        if call["tool_id"] != "SMS.Send@0.1.2" && call["tool_id"] != "SMS.Send" {
            return answer(404, json!({"error": "ToolNotFound"}));
        }
        if !self.input.is_valid(&call["input"]) {
            return answer(400, json!({"error": "InvalidInput"}));
        }
        let call_id = call["call_id"].as_str().unwrap_or_default().to_owned();
        let (secret, claimed) = tokio::join!(self.secret(), self.claim(&call_id));
        if !claimed? {
            return answer(409, json!({"error": "CallInProgress"}));
        }
        if secret?.is_empty() {
            return answer(500, json!({"error": "SMS is not configured"}));
        }
        let value = json!({"status": "sent"});
        self.keep(&call_id, &value).await?;
        answer(200, json!({"result": {"call_id": call_id, "value": value}}))
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let schema = json!({
        "type": "object",
        "properties": {"to": {"type": "string"}, "message": {"type": "string"}},
        "required": ["to", "message"],
        "additionalProperties": false
    });
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let function: &'static Function = Box::leak(Box::new(Function {
        input: jsonschema::validator_for(&schema)?,
        table: var("OXP_IDEMPOTENCY_TABLE"),
        secret_id: format!("{}TWILIO_API_KEY", var("OXP_SECRETS_PREFIX")),
        clients: OnceCell::new(),
        secret: OnceCell::new(),
    }));
    lambda_http::run(service_fn(move |request| function.call(request))).await
}
