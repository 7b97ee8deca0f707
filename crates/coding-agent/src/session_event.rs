//! What a session tells its modes: the agent's events, and the session's
//! own around them (auto-retry, compaction), in one ordered stream so a mode
//! shows `auto_retry_start` after the failed turn's `agent_end` and before
//! the retry's `agent_start`.

use agent_ai::{AssistantMessage, AssistantMessageEvent, ThinkingLevel};
use agent_core::{AgentEvent, StreamedEvent};
use serde::Serialize;
use serde_json::Value;
use serde_with::skip_serializing_none;
use std::time::Duration;

use crate::guard::record::CallDecision;
use crate::modes::events::event_json;
use crate::session::CompactionResult;

/// Why a compaction runs (Pi's `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    /// `/compact` or RPC `compact`.
    Manual,
    /// The context passed `contextWindow - reserveTokens`.
    Threshold,
    /// The provider said the context is too long.
    Overflow,
}

/// One event of a session. Its JSON shape (Pi's, what RPC and `--mode json`
/// write) is derived: `type` is the variant's name in snake case, the
/// fields are camel case, and a missing optional field is left out.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionEvent {
    /// The agent's own (written by [`event_json`]).
    #[serde(skip)]
    Agent(Box<AgentEvent>),
    /// A failed turn will be asked again after `delay_ms`.
    AutoRetryStart {
        /// 1 for the first retry.
        attempt: u32,
        /// `retry.maxRetries`.
        max_attempts: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why the turn failed.
        error_message: String,
    },
    /// The retries ended: a turn succeeded, or they were used up or cancelled.
    AutoRetryEnd {
        /// A retried turn succeeded.
        success: bool,
        /// The retries made.
        attempt: u32,
        /// The last error, when they failed (`Retry cancelled` when cancelled).
        final_error: Option<String>,
        /// The failed answer, saved now that no retry replaces it.
        #[serde(skip)]
        failed: Option<Box<AssistantMessage>>,
    },
    /// What waits in the steering and follow-up queues changed.
    QueueUpdate {
        /// The steering messages' texts, oldest first.
        steering: Vec<String>,
        /// The follow-up messages' texts, oldest first.
        follow_up: Vec<String>,
    },
    /// The permission guard decided about a tool call.
    PermissionDecision(CallDecision),
    /// A compaction started.
    CompactionStart {
        /// Why.
        reason: CompactionReason,
    },
    /// A compaction that summarises its history in several requests (one
    /// too long for a single one) finished one of them. Not Pi's: its
    /// compactions are one request.
    CompactionProgress {
        /// Requests answered so far.
        done: usize,
        /// Requests in all.
        of: usize,
    },
    /// A compaction ended.
    CompactionEnd {
        /// Why it ran.
        reason: CompactionReason,
        /// The summary and what was kept, when it succeeded.
        result: Option<CompactionResult>,
        /// It was cancelled.
        aborted: bool,
        /// The failed turn is asked again now (overflow recovery).
        will_retry: bool,
        /// What went wrong, when it failed.
        error_message: Option<String>,
    },
    /// The session's thinking level changed (Pi's `thinking_level_changed`).
    ThinkingLevelChanged {
        /// The new level.
        level: ThinkingLevel,
    },
}

impl SessionEvent {
    /// A line for a person (stderr in print mode, a notice in the terminal
    /// UI), for the session's own events; `None` for the agent's and for a
    /// quiet ending.
    pub fn describe(&self) -> Option<String> {
        Some(match self {
            SessionEvent::Agent(_)
            | SessionEvent::QueueUpdate { .. }
            | SessionEvent::PermissionDecision(_)
            | SessionEvent::ThinkingLevelChanged { .. } => return None,
            SessionEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => format!(
                "Retrying ({attempt}/{max_attempts}) in {}: {error_message}",
                agent_ai::providers::retry::seconds(Duration::from_millis(*delay_ms))
            ),
            SessionEvent::AutoRetryEnd {
                success: true,
                attempt,
                ..
            } => format!("Retry {attempt} succeeded"),
            SessionEvent::AutoRetryEnd {
                attempt,
                final_error,
                ..
            } => match final_error.as_deref() {
                Some(crate::recovery::RETRY_CANCELLED) => {
                    format!("Retry cancelled after {}", attempts(*attempt))
                }
                error => format!(
                    "{}: {}",
                    retry_failed(*attempt),
                    error.unwrap_or("unknown error")
                ),
            },
            SessionEvent::CompactionStart { reason } => match reason {
                CompactionReason::Manual => "Compacting context...",
                CompactionReason::Threshold => "Auto-compacting...",
                CompactionReason::Overflow => "Context overflow detected, auto-compacting...",
            }
            .to_owned(),
            SessionEvent::CompactionProgress { done, of } => {
                format!("Compaction: {done} of {of} summary requests done")
            }
            SessionEvent::CompactionEnd {
                result: Some(result),
                ..
            } => format!("Compacted from {} tokens", grouped(result.tokens_before)),
            SessionEvent::CompactionEnd {
                error_message: Some(error),
                ..
            } => error.clone(),
            // Pi's two texts: the user's own compaction, or one the session
            // started (at the threshold, on an overflow).
            SessionEvent::CompactionEnd {
                aborted: true,
                reason,
                ..
            } => match reason {
                CompactionReason::Manual => "Compaction cancelled",
                CompactionReason::Threshold | CompactionReason::Overflow => {
                    "Auto-compaction cancelled"
                }
            }
            .to_owned(),
            SessionEvent::CompactionEnd { .. } => return None,
        })
    }

    /// The retries of a turn ran out: it failed every time. Not when they
    /// succeeded, nor when the user cancelled them.
    pub fn retries_exhausted(&self) -> bool {
        matches!(
            self,
            SessionEvent::AutoRetryEnd {
                success: false,
                final_error,
                ..
            } if final_error.as_deref() != Some(crate::recovery::RETRY_CANCELLED)
        )
    }

    /// The context overflowed and compacting it failed (or it overflowed
    /// again after one compaction): the turn is not asked again.
    pub fn overflow_recovery_failed(&self) -> bool {
        matches!(
            self,
            SessionEvent::CompactionEnd {
                reason: CompactionReason::Overflow,
                error_message: Some(_),
                ..
            }
        )
    }

    /// The event in Pi's JSON shape (what RPC and `--mode json` write).
    pub fn to_json(&self) -> Value {
        match self {
            SessionEvent::Agent(event) => event_json(event),
            own => serde_json::to_value(own).unwrap_or_default(),
        }
    }
}

impl StreamedEvent for SessionEvent {
    fn message_update(&mut self) -> Option<&mut AssistantMessageEvent> {
        match self {
            SessionEvent::Agent(event) => event.message_update(),
            _ => None,
        }
    }
}

/// Where one subscriber's session events go (agent-core's queue, which
/// keeps of a streaming message's updates those the subscriber asked for).
pub(crate) type Listener = agent_core::Listener<SessionEvent>;

/// The events of a session, in order; see [`crate::app::AgentSession::subscribe_all`].
pub type SessionEvents = agent_core::Events<SessionEvent>;

/// How a failed retry's line begins: `Retry failed after 3 attempts`.
pub(crate) fn retry_failed(attempt: u32) -> String {
    format!("Retry failed after {}", attempts(attempt))
}

/// `1 attempt`, `3 attempts`.
fn attempts(n: u32) -> String {
    let noun = if n == 1 { "attempt" } else { "attempts" };
    format!("{n} {noun}")
}

/// `n` with its digits in groups of three (`12,345`), as Pi shows token
/// counts (`toLocaleString`).
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::guard::Decision;
    use crate::guard::record::{DECISION_TYPE, DecidedBy};

    #[test]
    fn token_counts_are_grouped_in_threes_as_pi_shows_them() {
        let shown: Vec<String> = [0, 999, 1000, 3508, 114_625, 1_234_567].map(grouped).into();
        assert_eq!(
            shown,
            ["0", "999", "1,000", "3,508", "114,625", "1,234,567"]
        );
    }

    /// Pi's TUI says which compaction was cancelled: the user's own, or
    /// one the session started.
    #[test]
    fn a_cancelled_compaction_says_whether_it_was_automatic() {
        let cancelled = |reason| {
            SessionEvent::CompactionEnd {
                reason,
                result: None,
                aborted: true,
                will_retry: false,
                error_message: None,
            }
            .describe()
        };
        assert_eq!(
            [
                CompactionReason::Manual,
                CompactionReason::Threshold,
                CompactionReason::Overflow
            ]
            .map(cancelled),
            [
                Some("Compaction cancelled".to_owned()),
                Some("Auto-compaction cancelled".to_owned()),
                Some("Auto-compaction cancelled".to_owned())
            ]
        );
    }

    /// The wait was rounded up to whole seconds: with `retry.baseDelayMs`
    /// 100, waits of 100, 200 and 400 ms all read "in 1s", beside the
    /// provider's own retry line saying "in 0.1s".
    #[test]
    fn a_retry_line_says_the_wait_as_the_providers_line_does() {
        let line = |delay_ms| {
            SessionEvent::AutoRetryStart {
                attempt: 1,
                max_attempts: 3,
                delay_ms,
                error_message: "503 busy".into(),
            }
            .describe()
        };
        for (delay_ms, said) in [(200, "0.2s"), (1500, "1.5s"), (4000, "4s"), (40, "40ms")] {
            assert_eq!(
                line(delay_ms),
                Some(format!("Retrying (1/3) in {said}: 503 busy"))
            );
        }
    }

    #[test]
    fn session_events_have_pis_json_shapes() {
        let start = SessionEvent::AutoRetryStart {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "503 busy".into(),
        };
        assert_eq!(
            start.to_json(),
            json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"503 busy"})
        );
        let end = SessionEvent::AutoRetryEnd {
            success: true,
            attempt: 2,
            final_error: None,
            failed: None,
        };
        assert_eq!(
            end.to_json(),
            json!({"type":"auto_retry_end","success":true,"attempt":2})
        );
        let failed = SessionEvent::CompactionEnd {
            reason: CompactionReason::Overflow,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some("E".into()),
        };
        assert_eq!(
            failed.to_json(),
            json!({"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,"errorMessage":"E"})
        );
        let thinking = SessionEvent::ThinkingLevelChanged {
            level: ThinkingLevel::High,
        };
        assert_eq!(
            thinking.to_json(),
            json!({"type":"thinking_level_changed","level":"high"})
        );
        let queue = SessionEvent::QueueUpdate {
            steering: vec!["s".into()],
            follow_up: Vec::new(),
        };
        assert_eq!(
            queue.to_json(),
            json!({"type":"queue_update","steering":["s"],"followUp":[]})
        );
    }

    #[test]
    fn retries_are_exhausted_only_when_they_end_failed_and_not_cancelled() {
        let end = |success: bool, final_error: Option<&str>| SessionEvent::AutoRetryEnd {
            success,
            attempt: 3,
            final_error: final_error.map(str::to_owned),
            failed: None,
        };
        assert!(end(false, Some("503 busy")).retries_exhausted());
        assert!(!end(false, Some(crate::recovery::RETRY_CANCELLED)).retries_exhausted());
        assert!(!end(true, None).retries_exhausted());
        let start = SessionEvent::AutoRetryStart {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "503 busy".into(),
        };
        assert!(!start.retries_exhausted());
    }

    #[test]
    fn a_permission_decision_is_its_record_tagged_as_the_session_file_tags_it() {
        let decision = CallDecision {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            decision: Decision::Deny,
            by: DecidedBy::Policy,
            reason: "no".into(),
            rule: None,
            answer: None,
            updated_input: None,
        };
        let mut expected = serde_json::to_value(&decision).unwrap_or_default();
        expected["type"] = DECISION_TYPE.into();
        assert_eq!(
            SessionEvent::PermissionDecision(decision).to_json(),
            expected
        );
    }
}
