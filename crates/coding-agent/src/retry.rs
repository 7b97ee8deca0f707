//! Auto-retry of a failed turn (Pi's `retry.*`): a turn that ends in a
//! transient error (overloaded, rate limited, 5xx, a connection reset or cut
//! mid-stream, a read timeout) is asked again after a backoff, with the
//! failed answer taken out of the context. The session drives it
//! ([`crate::recovery`]); this module decides whether and how long.
//!
//! Whether an error is transient is read from what the provider knew (HTTP
//! status, the error's type, the transport failure: [`agent_ai::ErrorKind`]),
//! never from digits in the message: Pi retries `400 max_tokens 5000 too
//! large` because it contains "500" (`docs/DEVIATIONS.md`).

use std::time::Duration;

use agent_ai::{AssistantMessage, StopReason};
use serde::Deserialize;

/// `retry.*` in settings.json, with Pi's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetrySettings {
    /// Retry failed turns at all.
    pub enabled: bool,
    /// Retries after the first failure.
    pub max_retries: u32,
    /// The first wait; doubled for each further retry.
    pub base_delay_ms: u64,
    /// The longest wait a server's `retry-after` may ask for; one asking
    /// for longer is not retried (as the provider's own retries, and Pi's
    /// `maxRetryDelayMs`): a run would otherwise wait out a day's limit.
    pub max_delay_ms: u64,
    /// The provider's own retries of a refused request
    /// (`retry.provider.maxRetries`), before the turn fails.
    pub provider: ProviderRetrySettings,
}

/// `retry.provider.*`: the HTTP provider's retries of one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProviderRetrySettings {
    /// Retries of a refused request (the provider's default when absent).
    pub max_retries: Option<u32>,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_delay_ms: 60_000,
            provider: ProviderRetrySettings::default(),
        }
    }
}

impl RetrySettings {
    /// The wait before retry `attempt` (1 for the first): `baseDelayMs ·
    /// 2^(attempt-1)`, or the server's `retry-after` when it asked for longer;
    /// `None` when it asked for more than `maxDelayMs` (no retry).
    pub fn delay(&self, attempt: u32, server_asked: Option<Duration>) -> Option<Duration> {
        let factor = 2u64.saturating_pow(attempt.saturating_sub(1));
        let backoff = Duration::from_millis(self.base_delay_ms.saturating_mul(factor));
        match server_asked {
            Some(asked) if asked > Duration::from_millis(self.max_delay_ms) => None,
            Some(asked) => Some(asked.max(backoff)),
            None => Some(backoff),
        }
    }

    /// The wait before retry `attempt` (1 for the first) of a turn that
    /// ended in `message`, or `None` when such a turn is not asked again at
    /// all: retries off or none allowed, a failure that is not transient
    /// ([`is_retryable`]), or a server asking for a longer wait than
    /// `maxDelayMs`. Counting the retries made is the caller's.
    ///
    /// The one rule for both the session's retries and what its file
    /// holds back: a failed answer is saved only once no retry replaces
    /// it. Decided apart, a 429 asking for 120s was held back as "to be
    /// retried", then not retried, and the prompt never reached the file.
    pub fn retry_delay(&self, message: &AssistantMessage, attempt: u32) -> Option<Duration> {
        if !self.enabled || self.max_retries == 0 || !is_retryable(message) {
            return None;
        }
        let asked = message.error_kind.as_ref().and_then(|k| k.retry_after());
        self.delay(attempt, asked)
    }
}

/// Whether a turn that ended in `message` is worth asking again: it failed,
/// and by what the provider knew of the failure it is transient and not an
/// overflow (that is compaction's): [`agent_ai::ErrorKind::is_retryable`],
/// the rule the provider's own retries of the request follow too.
pub fn is_retryable(message: &AssistantMessage) -> bool {
    message.stop_reason == StopReason::Error
        && message.error_kind.as_ref().is_some_and(|kind| {
            kind.is_retryable(message.error_message.as_deref().unwrap_or_default())
        })
}

#[cfg(test)]
mod tests {
    use agent_ai::{ErrorKind, Model};

    use super::*;

    fn failed(text: &str, kind: ErrorKind) -> AssistantMessage {
        let mut message = AssistantMessage::empty(&Model::new("m", "p", "a"));
        message.stop_reason = StopReason::Error;
        message.error_message = Some(text.into());
        message.error_kind = Some(kind);
        message
    }

    fn status(status: u16) -> ErrorKind {
        ErrorKind::Status {
            status,
            error_type: None,
            retry_after: None,
        }
    }

    #[test]
    fn the_backoff_doubles_and_a_longer_retry_after_wins() {
        let settings = RetrySettings::default();
        let delays: Vec<_> = (1..=3).map(|n| settings.delay(n, None)).collect();
        assert_eq!(
            delays,
            [2000, 4000, 8000].map(|ms| Some(Duration::from_millis(ms)))
        );
        assert_eq!(
            settings.delay(1, Some(Duration::from_secs(30))),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            settings.delay(3, Some(Duration::from_secs(1))),
            Some(Duration::from_secs(8))
        );
        // A day's rate limit is not waited out.
        assert_eq!(
            settings.delay(1, Some(Duration::from_secs(60))),
            Some(Duration::from_secs(60))
        );
        assert_eq!(settings.delay(1, Some(Duration::from_secs(86_400))), None);
    }

    #[test]
    fn a_turn_is_retried_only_when_a_retry_is_allowed_and_soon_enough() {
        let settings = RetrySettings::default();
        let busy = failed("503 unavailable", status(503));
        assert_eq!(settings.retry_delay(&busy, 1), Some(Duration::from_secs(2)));
        let limited = |after: u64| {
            failed(
                "429 rate limited",
                ErrorKind::Status {
                    status: 429,
                    error_type: None,
                    retry_after: Some(Duration::from_secs(after)),
                },
            )
        };
        assert_eq!(
            settings.retry_delay(&limited(30), 1),
            Some(Duration::from_secs(30))
        );
        assert_eq!(settings.retry_delay(&limited(120), 1), None);
        let none = RetrySettings {
            max_retries: 0,
            ..RetrySettings::default()
        };
        assert_eq!(none.retry_delay(&busy, 1), None);
    }

    #[test]
    fn the_status_decides_not_the_digits_in_the_text() {
        assert!(is_retryable(&failed("503 unavailable", status(503))));
        assert!(!is_retryable(&failed(
            "400 max_tokens 5000 too large",
            status(400)
        )));
        assert!(is_retryable(&failed(
            "Connection error: reset",
            ErrorKind::Connection
        )));
        assert!(!is_retryable(&failed(
            "Connection error: reset",
            ErrorKind::Malformed
        )));
    }

    #[test]
    fn overflows_and_unclassified_errors_are_not_retried() {
        assert!(!is_retryable(&failed(
            "500 prompt is too long: 300000 tokens",
            status(500)
        )));
        let mut unknown = failed("503 from a file", status(503));
        unknown.error_kind = None;
        assert!(!is_retryable(&unknown));
        let mut aborted = failed("Request was aborted", ErrorKind::Connection);
        aborted.stop_reason = StopReason::Aborted;
        assert!(!is_retryable(&aborted));
    }
}
