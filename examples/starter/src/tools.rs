//! The tools. Each is an async function; `#[tool]` takes its description from the doc comment
//! and its input schema from its parameters, and serves it over every protocol (OXP, MCP, RAP,
//! Bedrock's Lambda targets) through one call path.

use oxp_lambda::{SecretKey, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;
use std::time::Duration;

/// The forecast service's key: held by the server (`OXP_SECRET_FORECAST_API_KEY` locally,
/// `oxp/FORECAST_API_KEY` in Secrets Manager), declared by the tool that reads it.
pub const FORECAST_KEY: SecretKey = SecretKey::new("FORECAST_API_KEY");

/// Adds two numbers.
#[tool(name = "Math.Add", version = "1.0.0", read_only, idempotent_hint)]
pub async fn add(
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
) -> Result<f64, ToolError> {
    Ok(a + b)
}

/// A forecast.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Forecast {
    /// The city it is for.
    pub city: String,
    /// What the weather will do.
    pub summary: String,
}

/// Tells tomorrow's weather for a city. A demo: it calls no service, but it needs the service's
/// key, checked before it runs, and says when to try again when the service is busy.
#[tool(name = "Weather.Forecast", version = "1.0.0", read_only, secrets = [FORECAST_KEY])]
pub async fn forecast(
    /// The city, e.g. "Lisbon".
    city: String,
    ctx: ToolContext,
) -> Result<Forecast, ToolError> {
    let _key = ctx.expose(FORECAST_KEY)?;
    if city.trim().is_empty() {
        return Err(ToolError::new("Name a city"));
    }
    if city.eq_ignore_ascii_case("Atlantis") {
        // The caller (and the model) learns that the same call may work later, and when.
        return Err(ToolError::new("The forecast service is busy")
            .retryable()
            .retry_after(Duration::from_secs(2)));
    }
    Ok(Forecast {
        summary: format!("Sunny in {city}"),
        city,
    })
}
