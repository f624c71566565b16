//! Secrets from `OXP_SECRET_<ID>` variables and an optional JSON file: the source of a local
//! server, with no AWS account.

use oxp_lambda_core::secrets::{SecretError, SecretErrorKind, SecretFuture, SecretSource};
use oxp_lambda_core::tool::Secret;
use std::collections::HashMap;
use std::fmt;

/// The environment variable that holds secret `id` locally: `OXP_SECRET_` and the id in upper
/// case with every character other than letters and digits as `_` (`TWILIO_API_KEY` is
/// `OXP_SECRET_TWILIO_API_KEY`).
pub(crate) fn env_var_for(id: &str) -> String {
    let mut name = String::with_capacity(11 + id.len());
    name.push_str("OXP_SECRET_");
    name.extend(id.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// Secrets from `OXP_SECRET_<ID>` variables and an optional JSON file (`{"ID": "value"}`), read
/// once at start. Variables win over the file.
#[derive(Clone, Default)]
pub(crate) struct LocalSecrets {
    values: HashMap<String, Secret>,
}

impl fmt::Debug for LocalSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSecrets")
            .field("ids", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl LocalSecrets {
    /// Reads the file (if any) and the given variables.
    pub(crate) fn from_parts(
        file: Option<&std::path::Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, String> {
        let mut values = HashMap::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            // serde's own message would quote the value that is no string: a secret.
            let map: HashMap<String, String> = serde_json::from_str(&text).map_err(|e| {
                format!(
                    "{} must be a JSON object of id to string value: {}",
                    path.display(),
                    oxp_lambda_core::naming::unfit(&e)
                )
            })?;
            for (id, value) in map {
                values.insert(env_var_for(&id), Secret::new(value));
            }
        }
        for (name, value) in vars {
            if name.starts_with("OXP_SECRET_") {
                values.insert(name, Secret::new(value));
            }
        }
        Ok(Self { values })
    }
}

impl SecretSource for LocalSecrets {
    fn holds(&self, id: &str) -> bool {
        self.values.contains_key(&env_var_for(id))
    }

    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        let found = self
            .values
            .get(&env_var_for(id))
            .cloned()
            .ok_or_else(|| SecretError::new(id, SecretErrorKind::NotFound, env_var_for(id)));
        Box::pin(std::future::ready(found))
    }

    fn peek(&self, id: &str) -> Option<Secret> {
        self.values.get(&env_var_for(id)).cloned()
    }
}

/// The secrets an embedding program gives the builder, answered before the configured source
/// (AWS, local or its own), so they are honoured whichever source is used.
#[derive(Debug)]
pub(crate) struct Layered {
    pub(crate) first: LocalSecrets,
    pub(crate) then: std::sync::Arc<dyn SecretSource>,
}

impl SecretSource for Layered {
    fn holds(&self, id: &str) -> bool {
        self.first.holds(id) || self.then.holds(id)
    }

    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        if self.first.holds(id) {
            self.first.fetch(id)
        } else {
            self.then.fetch(id)
        }
    }

    fn peek(&self, id: &str) -> Option<Secret> {
        if self.first.holds(id) {
            self.first.peek(id)
        } else {
            self.then.peek(id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_names_are_derived_from_ids() {
        assert_eq!(env_var_for("TWILIO_API_KEY"), "OXP_SECRET_TWILIO_API_KEY");
        assert_eq!(env_var_for("github.token-v2"), "OXP_SECRET_GITHUB_TOKEN_V2");
    }

    #[test]
    fn the_local_file_is_read_and_variables_win() {
        let dir = std::env::temp_dir().join(format!("oxp-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secrets.json");
        std::fs::write(&file, r#"{"A": "from-file", "B": "file-b"}"#).unwrap();
        let s = LocalSecrets::from_parts(
            Some(&file),
            [("OXP_SECRET_B".to_string(), "env-b".to_string())],
        )
        .unwrap();
        assert!(s.holds("A") && s.holds("B") && !s.holds("C"));
        let b = futures_util::FutureExt::now_or_never(s.fetch("B"))
            .unwrap()
            .unwrap();
        assert_eq!(b.expose(), "env-b");
        std::fs::write(&file, "[]").unwrap();
        assert!(LocalSecrets::from_parts(Some(&file), []).is_err());
        // A value that is no string is refused without being quoted: it is a secret.
        std::fs::write(&file, r#"{"PIN": 73915486, "KEY": {"k": "sk_live_1"}}"#).unwrap();
        let refused = LocalSecrets::from_parts(Some(&file), []).unwrap_err();
        assert!(!refused.contains("73915486"), "{refused}");
        assert!(
            refused.contains("invalid type, expected a string at line 1"),
            "{refused}"
        );
        assert!(
            !format!("{s:?}").contains("from-file"),
            "Debug shows ids only"
        );
    }
}
