//! The hooks of the session's life outside a prompt: `PreCompact` (may
//! refuse a compaction), `SessionEnd` (cleanup when the session ends) and
//! `Notification` (the agent waits for the user: an approval, or the next
//! prompt). The last two only report: what their hooks say is logged, and
//! what would block (exit 2, `"onError": "block"`) is a warning, as for
//! SessionStart (see `hooks/outcome.rs`).

use tokio_util::sync::CancellationToken;

use super::CommandHooks;
use super::io::EventInput;

/// Why a compaction runs, as PreCompact hooks are told (`trigger`) and
/// select on (`matcher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// `/compact`, RPC `compact`.
    Manual,
    /// The context passed its threshold, or overflowed.
    Auto,
}

impl CompactTrigger {
    fn name(self) -> &'static str {
        match self {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto => "auto",
        }
    }
}

/// Why a session ends, as SessionEnd hooks are told (`reason`) and select
/// on (`matcher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEndReason {
    /// A new session replaces it (`/new`, RPC `new_session`).
    Clear,
    /// The user quit the interactive UI.
    PromptInputExit,
    /// A print, JSON or RPC run ended.
    Other,
}

impl SessionEndReason {
    fn name(self) -> &'static str {
        match self {
            SessionEndReason::Clear => "clear",
            SessionEndReason::PromptInputExit => "prompt_input_exit",
            SessionEndReason::Other => "other",
        }
    }
}

impl CommandHooks {
    /// Runs the PreCompact hooks; `Err` with the reason when one refused the
    /// compaction (exit 2, `decision: "block"`, `continue: false`).
    pub async fn pre_compact(
        &self,
        trigger: CompactTrigger,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let fields = EventInput::PreCompact {
            trigger: trigger.name().to_owned(),
            custom_instructions: focus.unwrap_or_default().to_owned(),
        };
        let Some(outcome) = self.run(fields, cancel).await else {
            return Ok(());
        };
        let mut blocks = outcome.blocks;
        blocks.extend(outcome.stop);
        match blocks.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "Compaction blocked by PreCompact hook: {}",
                blocks.join("\n")
            )),
        }
    }

    /// Runs the SessionEnd hooks and waits for them (each bounded by its
    /// timeout), so their cleanup is done before the process exits.
    pub async fn session_end(&self, reason: SessionEndReason) {
        let fields = EventInput::SessionEnd {
            reason: reason.name().to_owned(),
        };
        self.run(fields, &CancellationToken::new()).await;
    }

    /// Runs the Notification hooks for a `permission_prompt`: a call of
    /// `tool` waits for the user's approval.
    pub async fn permission_prompt(&self, tool: &str) {
        self.notify(
            format!("coding-agent needs your permission to use {tool}"),
            "permission_prompt",
        )
        .await;
    }

    /// Runs the Notification hooks for an `idle_prompt`: the answer is in,
    /// and the agent has waited a while for the user's next prompt.
    pub async fn idle_prompt(&self) {
        self.notify(
            "coding-agent is waiting for your input".to_owned(),
            "idle_prompt",
        )
        .await;
    }

    async fn notify(&self, message: String, notification_type: &str) {
        let fields = EventInput::Notification {
            message,
            notification_type: notification_type.to_owned(),
        };
        self.run(fields, &CancellationToken::new()).await;
    }
}
