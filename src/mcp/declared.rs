//! What a client declared it takes ([`Offers`], [`OnRequest`], read from rmcp's typed
//! `ClientCapabilities` on a 2026-07-28 request, at a handshake revision's `initialize`, or when
//! its task was created), what a question needs of it ([`Needs`]), and the revision's -32021 of
//! what it did not declare.

use oxp_lambda_core::talk::{self, TalkError};
use rmcp::ErrorData;
use serde::{Deserialize, Serialize};

/// A client capability a question needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Needs {
    /// Form elicitation.
    Form,
    /// `sampling`.
    Sampling,
    /// `roots`.
    Roots,
}

impl Needs {
    /// The error of a question whose client does not take it.
    pub(crate) fn not_carried(self) -> TalkError {
        let what = match self {
            Self::Form => talk::ASKING_THE_USER,
            Self::Sampling => talk::ASKING_THE_CLIENTS_MODEL,
            Self::Roots => talk::READING_THE_CLIENTS_ROOTS,
        };
        TalkError::NotCarried {
            what,
            protocol: "mcp",
        }
    }
}

/// What a client declared it takes (on a 2026-07-28 request, at a handshake revision's
/// `initialize`, or when its task was created).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Offers {
    /// Form elicitation.
    #[serde(default, rename = "f")]
    pub(crate) form: bool,
    /// `sampling`.
    #[serde(default, rename = "s")]
    pub(crate) sampling: bool,
    /// `roots`.
    #[serde(default, rename = "r")]
    pub(crate) roots: bool,
}

impl Offers {
    /// What `capabilities` declares.
    pub(crate) fn of(capabilities: &rmcp::model::ClientCapabilities) -> Self {
        let elicitation = capabilities.elicitation.as_ref();
        Self {
            // An empty object is form mode (2025-06-18's meaning, kept since).
            form: elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
            sampling: capabilities.sampling.is_some(),
            roots: capabilities.roots.is_some(),
        }
    }

    /// Form elicitation alone.
    pub(crate) fn forms() -> Self {
        Self {
            form: true,
            ..Self::default()
        }
    }

    /// Whether the client takes any question.
    pub(crate) fn takes_any(self) -> bool {
        self.form || self.sampling || self.roots
    }

    /// Whether the client takes what `needs` names.
    pub(crate) fn takes(self, needs: Needs) -> bool {
        match needs {
            Needs::Form => self.form,
            Needs::Sampling => self.sampling,
            Needs::Roots => self.roots,
        }
    }
}

/// What a request's client declared on it (`_meta`, read once through rmcp's typed accessors).
pub(crate) struct OnRequest {
    /// The tasks extension (SEP-2663).
    pub(crate) tasks: bool,
    /// At 2026-07-28: what it takes, and whether it opens links (URL-mode elicitation).
    /// `None` for a request of an earlier revision, which declares them at `initialize` only,
    /// which a stateless server does not see on `tools/call`.
    pub(crate) modern: Option<(Offers, bool)>,
}

impl OnRequest {
    pub(crate) fn of(meta: &rmcp::model::RequestMetaObject) -> Self {
        let modern = meta
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        Self::declared(meta.client_capabilities(), modern)
    }

    /// What `capabilities` (read from a request's `_meta`, if it declared them) say, on a
    /// request of 2026-07-28 or later (`modern`).
    pub(crate) fn declared(
        capabilities: Option<rmcp::model::ClientCapabilities>,
        modern: bool,
    ) -> Self {
        let tasks = capabilities
            .as_ref()
            .is_some_and(rmcp::model::ClientCapabilities::supports_tasks);
        let modern = modern.then(|| {
            let capabilities = capabilities.unwrap_or_default();
            let url = capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| e.url.is_some());
            (Offers::of(&capabilities), url)
        });
        Self { tasks, modern }
    }
}

/// The revision's `MissingRequiredClientCapabilityError` (-32021, HTTP 400) of a call whose
/// tool needed what its client did not declare, naming each capability.
pub(crate) fn missing_capabilities(needs: &std::collections::BTreeSet<Needs>) -> ErrorData {
    let mut required = rmcp::model::ClientCapabilities::default();
    let mut what = Vec::new();
    for need in needs {
        what.push(match need {
            Needs::Form => {
                required.elicitation =
                    Some(rmcp::model::ElicitationCapability::new().with_form(Default::default()));
                "asks the user (elicitation, form mode)"
            }
            Needs::Sampling => {
                required.sampling = Some(Default::default());
                "asks the client's model (sampling)"
            }
            Needs::Roots => {
                required.roots = Some(Default::default());
                "reads the client's roots"
            }
        });
    }
    missing(required, &format!("the tool {}", what.join(" and ")))
}

/// The -32021 of a call to a tool served only as a task (`OXP_MCP_TASK_REQUIRED`) from a client
/// that did not declare the tasks extension (SEP-2663, "Required Capabilities").
pub(crate) fn missing_tasks_capability() -> ErrorData {
    let mut required = rmcp::model::ClientCapabilities::default();
    let tasks = (
        rmcp::model::TASKS_EXTENSION_ID.to_owned(),
        Default::default(),
    );
    required.extensions = Some([tasks].into());
    missing(
        required,
        "the tool runs only as a task (io.modelcontextprotocol/tasks)",
    )
}

/// rmcp's -32021 naming `required`, its message saying why (`because`).
pub(crate) fn missing(required: rmcp::model::ClientCapabilities, because: &str) -> ErrorData {
    let mut error = ErrorData::missing_required_client_capability(required);
    error.message = format!("{}: {because}", error.message).into();
    error
}
