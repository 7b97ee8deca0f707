//! What kind of failure ended a response, kept beside its `errorMessage` so
//! a caller can decide whether asking again may help without reading digits
//! out of a sentence (a `400 max_tokens 5000 too large` is not a server
//! error because it contains "500").
//!
//! The HTTP providers set [`AssistantMessage::error_kind`](crate::AssistantMessage::error_kind)
//! from the transport error or the server's answer; [`ErrorKind::is_transient`]
//! is the one judgement of "not now" versus "never", and
//! [`ErrorKind::is_retryable`] the one judgement of "send it again as it
//! is", for the provider's retries of a request and the session's retries
//! of a turn alike.

use std::time::Duration;

use crate::overflow::is_overflow_error;

/// Why a response failed, as far as the provider could tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The server refused the request with this HTTP status.
    Status {
        /// The HTTP status code.
        status: u16,
        /// The error object's `type` in the body (`overloaded_error`,
        /// `invalid_request_error`), when it had one.
        error_type: Option<String>,
        /// The wait the server asked for (`retry-after`), when it did.
        retry_after: Option<Duration>,
    },
    /// The provider reported a failure inside a successful response (an
    /// error event); `busy` when its type or code says "not now"
    /// (overloaded, rate limited, a 5xx code).
    Provider {
        /// The failure is "not now" rather than "never".
        busy: bool,
    },
    /// The connection could not be made, broke, or closed before the
    /// response was complete.
    Connection,
    /// Nothing arrived within the read timeout.
    Timeout,
    /// The stream was not valid for its API.
    Malformed,
    /// The request could not be built, or the provider stopped the response
    /// on purpose (content filter, refusal).
    Other,
}

/// Error types providers use for "try again later".
const TRANSIENT_ERROR_TYPES: &[&str] = &[
    "overloaded_error",
    "rate_limit_error",
    "rate_limit_exceeded",
    "api_error",
    "server_error",
    "service_unavailable",
    "timeout_error",
];

/// Error types that come with a 429 but mean no retry will pass: the
/// account is out of credit (OpenAI's `insufficient_quota`).
const EXHAUSTED_ERROR_TYPES: &[&str] = &["insufficient_quota"];

impl ErrorKind {
    /// Whether the same request may succeed later: rate limits (429),
    /// request timeouts (408), server errors (5xx, Anthropic's 529), an error
    /// type that says overloaded or rate limited, a broken or stalled
    /// connection. Client errors (other 4xx), malformed streams and refusals
    /// are final.
    pub fn is_transient(&self) -> bool {
        match self {
            ErrorKind::Status {
                status, error_type, ..
            } => {
                let exhausted = error_type
                    .as_deref()
                    .is_some_and(|kind| EXHAUSTED_ERROR_TYPES.contains(&kind));
                !exhausted && (transient_status(*status) || transient_type(error_type.as_deref()))
            }
            ErrorKind::Provider { busy } => *busy,
            ErrorKind::Connection | ErrorKind::Timeout => true,
            ErrorKind::Malformed | ErrorKind::Other => false,
        }
    }

    /// Whether the same request, sent again unchanged, may succeed: the
    /// failure is transient and `text` (its `errorMessage`) does not say the
    /// context is too long. An overflow that comes with a 5xx (`500 ...
    /// prompt is too long: 300000 tokens > 200000 maximum`) is refused
    /// again at the same size: it needs a compaction, not a retry. The
    /// provider's retries of a refused request and the session's retries of
    /// a failed turn both ask this, so neither re-sends what the other
    /// would not (the provider re-sent such an overflow, and a 429
    /// `insufficient_quota`, twice before the session saw it).
    pub fn is_retryable(&self, text: &str) -> bool {
        self.is_transient() && !is_overflow_error(text, Some(self))
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ErrorKind::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Whether an HTTP status (or an error event's numeric `code`) says "not
/// now" rather than "never": 408, 429 and every 5xx.
pub(crate) fn transient_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// Whether an error object's `type` says "not now": for a refused request
/// and for an error sent inside a stream alike.
pub(crate) fn transient_type(error_type: Option<&str>) -> bool {
    error_type.is_some_and(|kind| TRANSIENT_ERROR_TYPES.contains(&kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, error_type: Option<&str>) -> ErrorKind {
        ErrorKind::Status {
            status,
            error_type: error_type.map(str::to_owned),
            retry_after: None,
        }
    }

    #[test]
    fn rate_limits_timeouts_and_server_errors_are_transient() {
        let transient: Vec<u16> = [
            400, 401, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 529,
        ]
        .into_iter()
        .filter(|&code| status(code, None).is_transient())
        .collect();
        assert_eq!(transient, [408, 429, 500, 502, 503, 504, 529]);
        // Out of credit: asking again (12 times, with the session's retries)
        // only waits longer for the same refusal.
        assert!(!status(429, Some("insufficient_quota")).is_transient());
    }

    #[test]
    fn an_overloaded_error_type_is_transient_whatever_the_status() {
        assert!(status(400, Some("overloaded_error")).is_transient());
        assert!(!status(400, Some("invalid_request_error")).is_transient());
    }

    #[test]
    fn broken_and_stalled_connections_are_transient_malformed_streams_are_not() {
        assert!(ErrorKind::Connection.is_transient());
        assert!(ErrorKind::Timeout.is_transient());
        assert!(!ErrorKind::Malformed.is_transient());
        assert!(!ErrorKind::Other.is_transient());
    }

    #[test]
    fn an_overflow_is_not_retryable_whatever_its_status() {
        let overflow = "500 api_error: prompt is too long: 300000 tokens > 200000 maximum";
        assert!(status(500, Some("api_error")).is_transient());
        assert!(!status(500, Some("api_error")).is_retryable(overflow));
        assert!(status(500, Some("api_error")).is_retryable("500 api_error: Internal error"));
        // Rate limits that mention tokens are not overflows.
        assert!(status(429, None).is_retryable("429 rate limit: too many tokens per minute"));
        assert!(!status(429, Some("insufficient_quota")).is_retryable("429 insufficient_quota"));
        assert!(!ErrorKind::Provider { busy: true }.is_retryable("context_length_exceeded"));
    }

    #[test]
    fn provider_error_events_are_transient_when_busy() {
        assert!(ErrorKind::Provider { busy: true }.is_transient());
        assert!(!ErrorKind::Provider { busy: false }.is_transient());
    }
}
