//! When and how long to wait before trying a refused request again.
//!
//! Interim home: the shared `providers::retry` module replaces this file when
//! the providers are merged. Used from outside: [`is_retryable_status`],
//! [`retry_after`] and [`delay`].

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use crate::providers::RetryPolicy;

/// 429 (rate limited) and every 5xx, 529 "overloaded" included: answers that
/// say "not now" rather than "never".
pub(super) fn is_retryable_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The wait the server asked for: `retry-after-ms` (Anthropic's, exact) or
/// `retry-after` in seconds. An HTTP-date `retry-after` is ignored (the backoff
/// applies instead).
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let seconds = header("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| header("retry-after"))?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// Why no further retry is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum GiveUp {
    /// `max_retries` retries were made already.
    Exhausted,
    /// The server asked for a longer wait than `max_delay` allows.
    TooLong(Duration),
}

/// The wait before retry number `retry` (0 for the first retry): the server's
/// `retry_after` when it sent one, else `base_delay` doubled per retry, never
/// above `max_delay`. A server asking for more than `max_delay` is not
/// retried: waiting less would only be refused again (Pi's `maxRetryDelayMs`).
pub(super) fn delay(
    policy: &RetryPolicy,
    retry: u32,
    retry_after: Option<Duration>,
) -> Result<Duration, GiveUp> {
    if retry >= policy.max_retries {
        return Err(GiveUp::Exhausted);
    }
    match retry_after {
        Some(asked) if asked > policy.max_delay => Err(GiveUp::TooLong(asked)),
        Some(asked) => Ok(asked),
        None => Ok(policy
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(policy.max_delay)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(10),
        }
    }

    #[test]
    fn backoff_doubles_from_base_delay_up_to_max_delay() {
        let delays: Vec<_> = (0..3).map(|n| delay(&policy(), n, None)).collect();
        assert_eq!(
            delays,
            [
                Ok(Duration::from_secs(2)),
                Ok(Duration::from_secs(4)),
                Ok(Duration::from_secs(8))
            ]
        );
        let long = RetryPolicy {
            max_retries: 10,
            ..policy()
        };
        assert_eq!(delay(&long, 5, None), Ok(Duration::from_secs(10)));
    }

    #[test]
    fn no_retry_beyond_max_retries() {
        assert_eq!(delay(&policy(), 3, None), Err(GiveUp::Exhausted));
    }

    #[test]
    fn server_retry_after_wins_unless_longer_than_max_delay() {
        let asked = Some(Duration::from_secs(7));
        assert_eq!(delay(&policy(), 0, asked), Ok(Duration::from_secs(7)));
        let too_long = Some(Duration::from_secs(30));
        assert_eq!(
            delay(&policy(), 0, too_long),
            Err(GiveUp::TooLong(Duration::from_secs(30)))
        );
    }

    #[test]
    fn retry_after_reads_milliseconds_first_then_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn rate_limits_and_server_errors_are_retryable_client_errors_are_not() {
        let retryable: Vec<u16> = [400, 401, 404, 429, 500, 503, 529]
            .into_iter()
            .filter(|&code| is_retryable_status(StatusCode::from_u16(code).unwrap()))
            .collect();
        assert_eq!(retryable, [429, 500, 503, 529]);
    }
}
