//! OXP (`GET /tools`, `POST /tools/call`) as the value the app takes.

use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::config::{Config, ConfigError, Env};

/// OXP, always served. It has no settings of its own: the server's apply.
#[derive(Debug, Clone, Copy, Default)]
pub struct Oxp;

impl Protocol for Oxp {
    type Settings = ();

    fn name(&self) -> &'static str {
        "oxp"
    }

    fn settings(&self, _env: &Env<'_>, _server: &Config) -> Result<(), ConfigError> {
        Ok(())
    }

    fn build(&self, (): (), assembly: &Assembly<'_>) -> Result<Contribution, String> {
        Ok(Contribution::http(|| {
            (
                crate::oxp::router(assembly.invoker.clone(), assembly.auth),
                &crate::oxp::PATHS,
                crate::oxp::refused,
            )
        }))
    }
}
