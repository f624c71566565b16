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

/// The largest whole number a setting takes (10^12: 31 years in milliseconds, a terabyte in
/// bytes). Above it a duration overflows the clock it is added to, a count the pool it sizes
/// (a tokio semaphore holds at most 2^61 permits): once a panic at start or in the sweep.
pub(crate) const MOST: u64 = 1_000_000_000_000;

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

    /// `name` parsed, when set. A whole number above `MOST` (10^12) is refused whatever `T` takes:
    /// no setting means more, and such values overflow the clocks and pools they size.
    pub fn parsed<T>(&self, name: &'static str) -> Result<Option<T>, ConfigError>
    where
        T: std::str::FromStr,
        T::Err: fmt::Display,
    {
        self.get(name)
            .map(|v| match v.trim().parse::<u128>() {
                Ok(n) if n > u128::from(MOST) => {
                    Err(invalid(name, &format!("must be at most {MOST}")))
                }
                _ => parse(name, &v),
            })
            .transpose()
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

/// The process's environment variables whose names `keep` takes, as text. One of those whose
/// value is not UTF-8 is an error naming it (never its value); any other variable, whatever its
/// bytes, is not looked at: `std::env::vars` panics on the first that is not UTF-8, whoever's.
pub(crate) fn process_env(keep: impl Fn(&str) -> bool) -> Result<Vec<(String, String)>, String> {
    let mut kept = Vec::new();
    for (name, value) in std::env::vars_os() {
        let Some(name) = name.to_str().filter(|name| keep(name)) else {
            continue;
        };
        match value.into_string() {
            Ok(value) => kept.push((name.to_owned(), value)),
            Err(_) => return Err(format!("{name} is not valid UTF-8")),
        }
    }
    Ok(kept)
}

/// The configuration variables as they were read (names starting `OXP_` or `AWS_`, and
/// `RUST_LOG`, without the local secret values `OXP_SECRET_*`): each protocol reads its own
/// section from them. `Debug` names the variables and never shows a value.
#[derive(Clone, Default)]
pub struct Vars {
    values: Arc<BTreeMap<String, String>>,
    /// The `OXP_` names asked for, set or not: what the server reads, for
    /// [`Vars::misspelled`].
    asked: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
}

impl Vars {
    /// The value of `name`, as it was read.
    pub fn get(&self, name: &str) -> Option<String> {
        if name.starts_with("OXP_") {
            let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
            if !asked.contains(name) {
                asked.insert(name.to_owned());
            }
        }
        self.values.get(name).cloned()
    }

    /// The `OXP_` variables set that nothing asked for, each beside the one asked for that it
    /// most likely misspells: one letter off (a letter missing, more, another, or two swapped),
    /// its name without a last `_PART` (`OXP_TOOL_TIMEOUT` for `OXP_TOOL_TIMEOUT_MS`), or with
    /// another unit or kind of place as its last part (`OXP_TOOL_TIMEOUT_SECS`,
    /// `OXP_RAP_DEAD_LETTER_PATH` for `OXP_RAP_DEAD_LETTER_FILE`). One near none is left out:
    /// a tool's own variable, or one of a part this configuration does not use
    /// (`OXP_RAP_QUEUE_URL` where RAP is off, though `OXP_RAP` is read).
    pub(crate) fn misspelled(&self) -> Vec<(String, String)> {
        let asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        let near = |set: &str, read: &str| {
            let cut = read.strip_prefix(set).is_some_and(|r| r.starts_with('_'));
            cut || strsim::osa_distance(set, read) <= 1 || another_unit(set, read)
        };
        self.values
            .keys()
            .filter(|set| set.starts_with("OXP_") && !asked.contains(*set))
            .filter_map(|set| {
                let nearest = asked.iter().filter(|read| near(set, read));
                let read = nearest.min_by_key(|read| strsim::osa_distance(set, read))?;
                Some((set.clone(), read.clone()))
            })
            .collect()
    }
}

/// Last parts of a name that say the same kind of thing: a unit of time, a unit of size, a
/// place on disk, an address.
const KINDS: [&[&str]; 4] = [
    &["MS", "MILLIS", "S", "SEC", "SECS", "SECONDS", "MINUTES"],
    &["BYTES", "B", "KB", "KIB", "MB", "MIB", "SIZE"],
    &["PATH", "FILE", "FILENAME", "DIR"],
    &["URL", "URI", "ENDPOINT"],
];

/// Whether `set` is `read` with another word of the same kind as its last part: the setting
/// meant, in another unit (a timeout in seconds where milliseconds are read, its value likely
/// wrong too) or named as another kind of place.
fn another_unit(set: &str, read: &str) -> bool {
    let (Some((stem, last)), Some((read_stem, read_last))) =
        (set.rsplit_once('_'), read.rsplit_once('_'))
    else {
        return false;
    };
    stem == read_stem
        && KINDS
            .iter()
            .any(|k| k.contains(&last) && k.contains(&read_last))
}

impl PartialEq for Vars {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

impl Eq for Vars {}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Vars {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        let values = pairs.into_iter().map(|(k, v)| (k.into(), v.into()));
        Self {
            values: Arc::new(values.collect()),
            asked: Arc::default(),
        }
    }
}

impl fmt::Debug for Vars {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}
