//! What kind of failure ended a response, kept beside its `errorMessage` so
//! a caller can decide whether asking again may help without reading digits
//! out of a sentence (a `400 max_tokens 5000 too large` is not a server
//! error because it contains "500").
//!
//! The HTTP providers set [`AssistantMessage::error_kind`](crate::AssistantMessage::error_kind)
//! from the transport error or the server's answer; [`ErrorKind::is_transient`]
//! is the one judgement of "not now" versus "never".

use std::time::Duration;

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
                !exhausted
                    && (matches!(status, 408 | 429 | 500..=599)
                        || transient_type(error_type.as_deref()))
            }
            ErrorKind::Provider { busy } => *busy,
            ErrorKind::Connection | ErrorKind::Timeout => true,
            ErrorKind::Malformed | ErrorKind::Other => false,
        }
    }

    /// The wait the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ErrorKind::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
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
    fn provider_error_events_are_transient_when_busy() {
        assert!(ErrorKind::Provider { busy: true }.is_transient());
        assert!(!ErrorKind::Provider { busy: false }.is_transient());
    }
}
