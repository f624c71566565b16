//! The conformance suite's fixtures that ask the client itself: its model
//! (`sampling/createMessage`) and its roots (`roots/list`), at 2026-07-28 as `input_required`
//! rounds and at the handshake revisions on the call's stream.

use oxp_lambda::{
    Filled, Form, NoInput, RegistryBuilder, Sample, TalkError, Tool, ToolContext, ToolError,
};
use serde_json::json;

/// Asks the client's model what the capital of France is.
async fn sampling(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let sampled = ctx
        .sample(Sample::new(100).user("What is the capital of France?"))
        .await?;
    Ok(format!("The model said: {}", sampled.text()))
}

/// Reads the client's roots and names them.
async fn list_roots(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let roots = ctx.roots().await?;
    let named: Vec<String> = roots
        .iter()
        .map(|r| format!("{} ({})", r.uri, r.name.as_deref().unwrap_or("unnamed")))
        .collect();
    Ok(format!("roots: {}", named.join(", ")))
}

/// The user's name, asked with a form.
fn name_form() -> Form {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    Form::new("user_name", "What is your name?", schema)
}

/// Asks the user's name, a greeting of the client's model and its roots, all in one round.
async fn multiple_inputs(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let (name, greeting, roots) = tokio::join!(
        ctx.fill(name_form()),
        ctx.sample(Sample::new(50).user("Generate a greeting")),
        ctx.roots(),
    );
    let name = match name? {
        Filled::Accepted(content) => content["name"].as_str().unwrap_or_default().to_owned(),
        _ => "nobody".to_owned(),
    };
    Ok(format!(
        "{name}: {} ({} roots)",
        greeting?.text(),
        roots?.len()
    ))
}

/// Asks what the client takes: the user's name where it shows forms, its model where it
/// samples; it does without what the client did not declare.
async fn capabilities(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let name = match ctx.fill(name_form()).await {
        Ok(Filled::Accepted(content)) => content["name"].as_str().map(str::to_owned),
        Ok(_) | Err(TalkError::NotCarried { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let said = match ctx.sample(Sample::new(50).user("Say hello")).await {
        Ok(sampled) => Some(sampled.text()),
        Err(TalkError::NotCarried { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    Ok(format!("name: {name:?}, model: {said:?}"))
}

/// Input of `test_sampling`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Prompt {
    /// The prompt for the client's model.
    prompt: String,
}

/// The handshake revisions' sampling: the prompt to the client's model, on the call's stream.
async fn sampling_handshake(input: Prompt, ctx: ToolContext) -> Result<String, ToolError> {
    let sampled = ctx.sample(Sample::new(100).user(input.prompt)).await?;
    Ok(format!("LLM response: {}", sampled.text()))
}

/// Adds the fixtures to `registry`.
pub fn tools(registry: RegistryBuilder) -> RegistryBuilder {
    let tool =
        |name: &str, description: &str| Tool::builder(name, "1.0.0").description(description);
    registry
        .tool(
            tool(
                "test_input_required_result_sampling",
                "Asks the client's model",
            )
            .handler(sampling),
        )
        .tool(
            tool(
                "test_input_required_result_list_roots",
                "Reads the client's roots",
            )
            .handler(list_roots),
        )
        .tool(
            tool(
                "test_input_required_result_multiple_inputs",
                "Asks the user, the model and the roots at once",
            )
            .handler(multiple_inputs),
        )
        .tool(
            tool(
                "test_input_required_result_capabilities",
                "Asks only what the client declared",
            )
            .handler(capabilities),
        )
        // Needs the client's model: a client that did not declare sampling gets -32021.
        .tool(tool("test_missing_capability", "Needs the client's model").handler(sampling))
        .tool(tool("test_sampling", "Asks the client's model a prompt").handler(sampling_handshake))
}
