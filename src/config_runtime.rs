//! Where the process runs ([`Runtime`]: in Lambda or not, its concurrency, its function), read
//! from the environment once, at start, and the variables the configuration reads.

use super::{Env, Vars};

/// Where the process runs: read from the environment once, at start, and nowhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// Whether the process runs inside AWS Lambda (`AWS_LAMBDA_RUNTIME_API` is set).
    pub lambda: bool,
    /// `AWS_LAMBDA_MAX_CONCURRENCY` (Lambda Managed Instances): invocations the Lambda transport
    /// serves at once; 1 elsewhere.
    pub max_concurrency: usize,
    /// `AWS_LAMBDA_FUNCTION_NAME`, in Lambda.
    pub function_name: Option<String>,
    /// `AWS_LAMBDA_FUNCTION_VERSION`, in Lambda.
    pub function_version: Option<String>,
    /// Whether the Lambda environment was started for a call that waits for it
    /// (`AWS_LAMBDA_INITIALIZATION_TYPE` `on-demand`, or unset): work its first call does not
    /// need is left until after the first poll. False for provisioned concurrency, SnapStart
    /// and Managed Instances, which start ahead of their calls, and outside Lambda.
    pub on_demand: bool,
}

impl Runtime {
    /// Where this process runs, from its environment (what [`Config::from_env`](super::Config::from_env) reads).
    pub fn of_process() -> Self {
        // A variable that does not read is Config::from_env's to report.
        Self::of(&process_vars().unwrap_or_default())
    }

    /// Where a process with `vars` runs.
    pub(super) fn of(vars: &Vars) -> Self {
        let lambda = Env::new(false, vars)
            .get("AWS_LAMBDA_RUNTIME_API")
            .is_some();
        Self::within(lambda, vars)
    }

    /// Where a process with `vars` runs, in Lambda or not as `lambda` says.
    pub(super) fn within(lambda: bool, vars: &Vars) -> Self {
        let env = Env::new(false, vars);
        Self {
            lambda,
            max_concurrency: env
                .parsed::<usize>("AWS_LAMBDA_MAX_CONCURRENCY")
                .ok()
                .flatten()
                .filter(|&n| n > 1)
                .unwrap_or(1),
            function_name: env.get("AWS_LAMBDA_FUNCTION_NAME"),
            function_version: env.get("AWS_LAMBDA_FUNCTION_VERSION"),
            on_demand: lambda
                && env
                    .get("AWS_LAMBDA_INITIALIZATION_TYPE")
                    .is_none_or(|t| t == "on-demand"),
        }
    }

    /// A local process.
    pub fn local() -> Self {
        Self {
            lambda: false,
            max_concurrency: 1,
            function_name: None,
            function_version: None,
            on_demand: false,
        }
    }
}

/// The process's configuration variables: names starting `OXP_` or `AWS_`, and `RUST_LOG`,
/// without the local secret values `OXP_SECRET_*` (the local secret source reads those itself).
pub(super) fn process_vars() -> Result<Vars, super::ConfigError> {
    let ours = |name: &str| {
        (name.starts_with("OXP_") || name.starts_with("AWS_") || name == "RUST_LOG")
            && !name.starts_with("OXP_SECRET_")
    };
    let vars = crate::settings::process_env(ours);
    Ok(vars
        .map_err(|e| super::ConfigError::new("environment", e))?
        .into_iter()
        .collect())
}
