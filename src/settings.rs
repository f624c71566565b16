//! Reading `OXP_*` variables: one lookup, typed parsing, and the error that names the variable.
//! Each subsystem and each protocol reads its own settings with these ([`Env`]); [`crate::Config`]
//! puts the server's together, and each [`Protocol`](crate::protocol::Protocol) reads its own
//! section from the same variables.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A configuration variable with an invalid value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable name.
    pub variable: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid configuration: {}: {}",
            self.variable, self.reason
        )
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// `variable` has an invalid value: `reason` says why (never the value itself when it may
    /// be a secret).
    pub fn new(variable: &'static str, reason: impl Into<String>) -> Self {
        Self {
            variable,
            reason: reason.into(),
        }
    }
}

/// The configuration variables, read once at start; and whether the process runs in Lambda
/// (which picks some defaults). What a protocol reads its settings from.
pub struct Env<'a> {
    lambda: bool,
    vars: &'a Vars,
}

impl<'a> Env<'a> {
    /// `vars`; `lambda`: the defaults of a Lambda function.
    pub fn new(lambda: bool, vars: &'a Vars) -> Self {
        Self { lambda, vars }
    }

    /// Whether the process runs in Lambda.
    pub fn in_lambda(&self) -> bool {
        self.lambda
    }

    /// The value of `name`; set but blank counts as unset.
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|v| !v.trim().is_empty())
    }

    /// The value of `name` as it is, blank included.
    pub fn raw(&self, name: &str) -> Option<String> {
        self.vars.get(name)
    }

    /// `name` parsed, when set.
    pub fn parsed<T>(&self, name: &'static str) -> Result<Option<T>, ConfigError>
    where
        T: std::str::FromStr,
        T::Err: fmt::Display,
    {
        self.get(name).map(|v| parse(name, &v)).transpose()
    }

    /// `name` as a number greater than zero, when set.
    pub fn positive<T>(&self, name: &'static str) -> Result<Option<T>, ConfigError>
    where
        T: std::str::FromStr + Default + PartialEq,
        T::Err: fmt::Display,
    {
        match self.parsed::<T>(name)? {
            Some(n) if n == T::default() => Err(invalid(name, "must be greater than 0")),
            n => Ok(n),
        }
    }

    /// `name` in milliseconds, `0` meaning "no limit", when set.
    pub fn limit_ms(&self, name: &'static str) -> Result<Option<Option<Duration>>, ConfigError> {
        Ok(self
            .parsed::<u64>(name)?
            .map(|ms| (ms > 0).then(|| Duration::from_millis(ms))))
    }

    /// `name` as a rate per caller, `N/s`, `N/min` or `N/h`, when set.
    pub fn rate(
        &self,
        name: &'static str,
    ) -> Result<Option<oxp_lambda_core::invoke::rate::RateLimit>, ConfigError> {
        self.get(name)
            .map(|v| {
                oxp_lambda_core::invoke::rate::RateLimit::parse(&v)
                    .ok_or_else(|| invalid(name, "must be N/s, N/min or N/h with N greater than 0"))
            })
            .transpose()
    }

    /// `name` as `true` or `false` (default `false`).
    pub fn flag(&self, name: &'static str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref().map(str::trim) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(invalid(name, "must be 'true' or 'false'")),
        }
    }

    /// `name` as a comma-separated list (empty when unset).
    pub fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| {
                v.split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `value` of `variable` parsed as `T`.
pub(crate) fn parse<T: std::str::FromStr>(
    variable: &'static str,
    value: &str,
) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    value
        .trim()
        .parse()
        .map_err(|e: T::Err| invalid(variable, &format!("'{value}': {e}")))
}

/// The error for `variable`.
pub(crate) fn invalid(variable: &'static str, reason: &str) -> ConfigError {
    ConfigError {
        variable,
        reason: reason.to_owned(),
    }
}

/// The configuration variables as they were read (names starting `OXP_` or `AWS_`, without the
/// local secret values `OXP_SECRET_*`): each protocol reads its own section from them. `Debug`
/// names the variables and never shows a value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Vars(Arc<BTreeMap<String, String>>);

impl Vars {
    /// The value of `name`, as it was read.
    pub fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Vars {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        Self(Arc::new(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        ))
    }
}

impl fmt::Debug for Vars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}
