//! The one seam through which the guard asks a person: when the policy (or a
//! PreToolUse hook) says `ask`, [`crate::guard::Guard`] sends an
//! [`ApprovalRequest`] to the session's [`Approver`] and acts on its
//! [`ApprovalAnswer`].
//!
//! Each mode brings its own approver: the interactive UI a prompt over the
//! transcript, RPC an `extension_ui_request` to its client
//! ([`crate::modes::rpc`]), and print and JSON modes [`NoApprover`], which
//! refuses and says which rule or flag would allow the call. A cancelled
//! approval is a deny.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// A call that needs the user's approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The validated arguments the tool would get.
    pub args: serde_json::Value,
    /// The verdict's reason: why it asks.
    pub reason: String,
    /// What "allow for this session" and "always allow" would add
    /// (`bash(cargo build)`, one rule for each part of a command line that
    /// asks); empty when no rule fits the call.
    pub suggested_rules: Vec<String>,
    /// Whether a rule saved to the project's settings applies (the project
    /// is trusted): "always allow in this project" is offered only then.
    pub project_rules: bool,
}

/// Which settings file "always allow" writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// The project's `.coding-agent/settings.json`.
    Project,
    /// `$CODING_AGENT_DIR/settings.json`.
    Global,
}

/// What the user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call.
    AllowOnce,
    /// Run it, and add the request's `suggested_rule` to the policy for the
    /// rest of the session (without a suggested rule: this call only).
    AllowSession,
    /// As [`ApprovalAnswer::AllowSession`], and write the rule to that
    /// settings file's `permissions.allow`.
    AllowAlways {
        /// Which settings file.
        scope: RuleScope,
    },
    /// Do not run it. The model reads [`denial_text`] of `reason`: the
    /// user's own words after [`user_denied_text`], or, from an approver
    /// that refuses in the user's place (print mode, an RPC timeout), its
    /// whole text starting with `Blocked`.
    Deny {
        /// What the user said (or the whole refusal), for the model.
        reason: Option<String>,
    },
}

impl ApprovalAnswer {
    /// What a call gets when the prompt closed with no answer: the run was
    /// cancelled (Esc, Ctrl+C, an abort) or the UI went away. It fails
    /// closed, and says so rather than that the user said no (a resumed
    /// session shows the model the denial).
    pub fn unanswered() -> Self {
        ApprovalAnswer::Deny {
            reason: Some(
                "Blocked: the approval prompt closed before anyone answered (the run was cancelled, or the agent quit)"
                    .to_owned(),
            ),
        }
    }
}

/// What the model reads when the user denied a call without a reason.
pub fn user_denied_text() -> &'static str {
    "Blocked: the user denied this call"
}

/// What the model reads of a [`ApprovalAnswer::Deny`] with `reason`.
pub fn denial_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        None => user_denied_text().to_owned(),
        Some(whole) if whole.starts_with("Blocked") => whole.to_owned(),
        Some(words) => format!("{}: {words}", user_denied_text()),
    }
}

/// Asks a person whether a call may run.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The answer to `request`. When `cancel` fires (the run is aborted)
    /// the answer is a deny.
    async fn approve(&self, request: ApprovalRequest, cancel: &CancellationToken)
    -> ApprovalAnswer;

    /// Whether a person is asked (and so waits to be told: the Notification
    /// hooks run); false for an approver that answers on its own.
    fn asks_someone(&self) -> bool {
        true
    }
}

/// The approver of modes where no one can be asked (print and JSON, and
/// `coding-agent tool` and `mcp serve` with `--permission-mode`): every ask
/// is refused with the rule or flag that would allow it, and the user is
/// told once per run (a warning: stderr, or the interactive transcript).
#[derive(Debug, Default)]
pub struct NoApprover {
    told: AtomicBool,
    /// The command reads no rules (neither settings nor `--allow`): only a
    /// looser permission mode allows more.
    without_rules: bool,
}

impl NoApprover {
    /// An approver that has not told the user anything yet, where rules
    /// (settings, `--allow`) allow calls.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same for a command that reads no rules (`tool`, `mcp serve`): its
    /// refusals point at the permission mode, not at rules it would ignore.
    pub fn without_rules() -> Self {
        NoApprover {
            without_rules: true,
            ..Self::default()
        }
    }
}

#[async_trait::async_trait]
impl Approver for NoApprover {
    async fn approve(
        &self,
        request: ApprovalRequest,
        _cancel: &CancellationToken,
    ) -> ApprovalAnswer {
        let text = if self.without_rules {
            format!(
                "Blocked: needs approval ({}). This command reads no rules: to allow it, run with a looser --permission-mode (bypass allows every call that is not denied)",
                request.reason
            )
        } else {
            needs_approval_text(&request)
        };
        if !self.told.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{text} (no one can approve calls in this mode; later calls that need approval are refused the same way)"
            );
        }
        ApprovalAnswer::Deny { reason: Some(text) }
    }

    fn asks_someone(&self) -> bool {
        false
    }
}

/// What the model (and, once, the user) reads when a call needs an approval
/// no one can give.
pub fn needs_approval_text(request: &ApprovalRequest) -> String {
    let rules = &request.suggested_rules;
    let how = match rules.len() {
        1.. => {
            // A rule may hold quotes (`bash(echo it\'s)`): each quoted
            // for the shell and for JSON.
            let flags: Vec<String> = rules
                .iter()
                .map(|rule| format!("--allow '{}'", rule.replace('\'', "'\\''")))
                .collect();
            let quoted: Vec<String> = rules
                .iter()
                .map(|rule| serde_json::Value::from(rule.as_str()).to_string())
                .collect();
            format!(
                "To allow it, run with {} or add {} to permissions.allow in settings",
                flags.join(" "),
                quoted.join(", ")
            )
        }
        // No rule is suggested (a wildcard in the command, a write to the
        // configuration), yet a rule the user writes may still allow it
        // (`bash(rm *.o)`, `edit(.coding-agent/**)`), but not past an ask
        // rule or a hook's ask (`bash(git push:*)` kept even an `--allow
        // 'bash(git push origin main)'` asking), nor past a deny or ask
        // rule that a word known only at run time may make match (`echo
        // $X` under a project's `bash(echo denied:*)` asked whatever was
        // allowed): say only what is true.
        0 => "No rule is suggested for this exact call: approve it where someone can answer (the interactive or RPC mode), or run with --permission-mode bypass; an allow rule of your own (docs/permissions.md) may let it run, but not past an ask rule (remove it to run the call unasked), a hook's ask, or words known only at run time that a deny or ask rule may match (write the command without them)".to_owned(),
    };
    format!("Blocked: needs approval ({}). {how}", request.reason)
}

/// What the approval tests ask about.
#[cfg(test)]
impl ApprovalRequest {
    /// Call `c1`, bash running `cargo build`, asking for `reason`, with
    /// `rule` as the rule that would allow it.
    pub(crate) fn cargo_build(reason: &str, rule: Option<&str>) -> Self {
        ApprovalRequest {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args: serde_json::json!({"command": "cargo build"}),
            reason: reason.into(),
            suggested_rules: rule.map(str::to_owned).into_iter().collect(),
            project_rules: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(rule: Option<&str>) -> ApprovalRequest {
        ApprovalRequest::cargo_build(
            "`cargo build` is not on the known-safe list; running it needs approval",
            rule,
        )
    }

    /// What `approver` tells the model of a `cargo build` that needs approval.
    async fn refusal(approver: NoApprover) -> ApprovalAnswer {
        approver
            .approve(
                request(Some("bash(cargo build)")),
                &CancellationToken::new(),
            )
            .await
    }

    fn deny(reason: &str) -> ApprovalAnswer {
        ApprovalAnswer::Deny {
            reason: Some(reason.into()),
        }
    }

    #[tokio::test]
    async fn no_approver_refuses_with_the_rule_that_would_allow_the_call() {
        assert_eq!(
            refusal(NoApprover::new()).await,
            deny(
                "Blocked: needs approval (`cargo build` is not on the known-safe list; running it needs approval). To allow it, run with --allow 'bash(cargo build)' or add \"bash(cargo build)\" to permissions.allow in settings"
            )
        );
        assert_eq!(
            needs_approval_text(&request(None)),
            "Blocked: needs approval (`cargo build` is not on the known-safe list; running it needs approval). No rule is suggested for this exact call: approve it where someone can answer (the interactive or RPC mode), or run with --permission-mode bypass; an allow rule of your own (docs/permissions.md) may let it run, but not past an ask rule (remove it to run the call unasked), a hook's ask, or words known only at run time that a deny or ask rule may match (write the command without them)"
        );
    }

    #[tokio::test]
    async fn where_no_rules_are_read_the_refusal_points_at_the_mode() {
        assert_eq!(
            refusal(NoApprover::without_rules()).await,
            deny(
                "Blocked: needs approval (`cargo build` is not on the known-safe list; running it needs approval). This command reads no rules: to allow it, run with a looser --permission-mode (bypass allows every call that is not denied)"
            )
        );
    }

    #[test]
    fn a_user_denial_carries_their_words_for_the_model() {
        assert_eq!(
            denial_text(Some(" use the staging db ")),
            "Blocked: the user denied this call: use the staging db"
        );
        assert_eq!(denial_text(Some("  ")), user_denied_text());
        assert_eq!(denial_text(None), user_denied_text());
        let refusal = needs_approval_text(&request(None));
        assert_eq!(denial_text(Some(&refusal)), refusal);
    }
}
