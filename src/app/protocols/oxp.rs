//! OXP (`GET /tools`, `POST /tools/call`) as the value the app takes.

use crate::app::StartError;
use crate::app::protocol::{Assembly, Contribution, Protocol};

/// OXP, always served.
pub(crate) struct OxpProtocol;

impl Protocol for OxpProtocol {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        Ok(Contribution::routes(crate::oxp::router(
            assembly.invoker.clone(),
            assembly.auth,
        )))
    }
}
