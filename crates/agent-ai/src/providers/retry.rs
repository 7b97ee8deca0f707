//! When and how long to wait before asking a busy server again.
//!
//! API-independent: any HTTP provider decides with [`is_retryable`] whether a
//! refused request is worth repeating (by the session's rule: 429, 5xx, an
//! overloaded error type, but never an overflow or an account out of
//! credit), asks the
//! [`RetryPolicy`] how long to wait (the server's `retry-after` wins over our
//! own exponential backoff) or why not to ([`GiveUp`]), and [`Retries`]
//! counts the retries of one response, waits, and reports each one as a
//! [`RetryNotice`] so a UI can say "rate limited, retrying in 4 s" instead of
//! hanging silently. A refusal may also arrive inside a successful response
//! before any content (Anthropic's `overloaded_error` event); the provider
//! classifies it ([`HttpError::ProviderBusy`]) and it is retried the same way.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use tokio_util::sync::CancellationToken;

use super::ProviderConfig;
use super::http::HttpError;

/// How often and how patiently to retry a request the server refused for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (Pi's default: 3).
    pub max_retries: u32,
    /// First delay; doubled each retry unless the server sends `retry-after`.
    pub base_delay: Duration,
    /// No wait of ours is longer than this; a server asking for a longer wait
    /// gets no retry (its error is returned at once, as Pi does).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Why a refused request is not tried again; shown after its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GiveUp {
    /// Every retry the policy allows was made.
    #[error("gave up after {0} retries")]
    Exhausted(u32),
    /// The server asked for a longer wait than `max_delay` allows: waiting
    /// less would only be refused again (Pi's `maxRetryDelayMs`).
    #[error(
        "the server asked to retry after {asked:?}, longer than the {max:?} this client waits at most"
    )]
    TooLong {
        /// The wait the server asked for.
        asked: Duration,
        /// The policy's `max_delay`.
        max: Duration,
    },
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `retry` (1 for the first retry): the
    /// server's `retry-after` when it sent one, else `base_delay * 2^(retry-1)`
    /// capped at `max_delay`. [`GiveUp`] when the server asks for longer
    /// than `max_delay`, or `max_retries` retries were made already. The
    /// wait is checked first: with no retries allowed, the error of a 429
    /// asking for 120s said nothing of it, though no retry would ever pass
    /// that soon.
    pub fn delay(&self, retry: u32, server_asked: Option<Duration>) -> Result<Duration, GiveUp> {
        if let Some(asked) = server_asked
            && asked > self.max_delay
        {
            return Err(GiveUp::TooLong {
                asked,
                max: self.max_delay,
            });
        }
        if retry > self.max_retries {
            return Err(GiveUp::Exhausted(retry.saturating_sub(1)));
        }
        if let Some(asked) = server_asked {
            return Ok(asked);
        }
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        Ok(self.base_delay.saturating_mul(factor).min(self.max_delay))
    }
}

/// One retry about to happen, for logs and UIs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// Which retry this is: 1 for the first.
    pub attempt: u32,
    /// How many retries the policy allows in all.
    pub max_retries: u32,
    /// How long we wait before sending again.
    pub delay: Duration,
    /// The HTTP status that was refused, or `None` for a connection failure
    /// or an error event inside the stream.
    pub status: Option<u16>,
    /// What went wrong, as it would appear in `errorMessage`.
    pub message: String,
}

/// Called before each retry (after the `tracing` warning); see
/// [`crate::providers::ProviderConfig::on_retry`].
pub type RetryCallback = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// The retries of one response: how many were made, and the wait before the
/// next. One counter covers refused requests and refusals inside the stream.
#[derive(Debug, Default)]
pub struct Retries {
    made: u32,
}

impl Retries {
    /// Before retrying after `error`: logs a warning, tells
    /// `config.on_retry`, and waits (the server's `server_asked`, else the
    /// backoff). `Err` is the error to end the response with: `error` with why
    /// no retry is made ([`HttpError::GaveUp`]; `error` alone when the policy
    /// allows none), or [`HttpError::Aborted`] when `cancel` fires meanwhile.
    pub async fn wait(
        &mut self,
        config: &ProviderConfig,
        error: HttpError,
        server_asked: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<(), HttpError> {
        let delay = match config.retry.delay(self.made + 1, server_asked) {
            Ok(delay) => delay,
            Err(GiveUp::Exhausted(0)) => return Err(error),
            Err(why) => {
                return Err(HttpError::GaveUp {
                    last: Box::new(error),
                    why,
                });
            }
        };
        self.made += 1;
        let notice = RetryNotice {
            attempt: self.made,
            max_retries: config.retry.max_retries,
            delay,
            status: match &error {
                HttpError::Status { status, .. } => Some(*status),
                _ => None,
            },
            message: error.to_string(),
        };
        tracing::warn!(
            "Retrying the request ({}/{}) in {}: {}",
            notice.attempt,
            notice.max_retries,
            seconds(delay),
            notice.message
        );
        if let Some(callback) = &config.on_retry {
            callback(&notice);
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(HttpError::Aborted),
            () = tokio::time::sleep(delay) => Ok(()),
        }
    }
}

/// `2s`, `0.5s`: a wait as people read it, in this crate's retry warning
/// and in the session's own retry line (coding-agent), so both read alike:
/// that line rounded up to whole seconds, and a 100 ms wait read "in 1s"
/// beside this warning's "in 0.1s".
pub fn seconds(delay: Duration) -> String {
    let millis = delay.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else if millis < 100 {
        // One decimal of a second would read 40 ms as "0.0s".
        format!("{millis}ms")
    } else {
        format!("{:.1}s", delay.as_secs_f64())
    }
}

/// Whether a refused request may succeed if sent again, by the rule the
/// session's retries of a failed turn follow ([`crate::ErrorKind::is_retryable`]
/// of the error's kind and its text): rate limits (429), server errors
/// (5xx, including Anthropic's 529), request timeouts (408), an error type
/// such as `overloaded_error`; not an overflow, whatever its status, nor a
/// 429 `insufficient_quota`. A rule of its own here re-sent both twice
/// before the session's overflow recovery (or its error) could begin, and
/// retried any status whose body said "overloaded" anywhere.
pub fn is_retryable(error: &HttpError) -> bool {
    error.kind(None).is_retryable(&error.to_string())
}

/// The wait a server asked for: `retry-after-ms` (OpenAI), or `retry-after`
/// as seconds or as an HTTP date (RFC 9110), measured from `now`. A date in
/// the past means "now"; an unreadable header is ignored.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    // A wait past what a `Duration` holds is the longest one (and so longer
    // than any client waits): `from_secs_f64` would panic on it.
    let wait = |seconds: f64| {
        (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(wait) = wait(ms / 1000.0)
    {
        return Some(wait);
    }
    let value = text(RETRY_AFTER.as_str())?;
    if let Ok(seconds) = value.parse::<f64>() {
        return wait(seconds);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn backoff_doubles_from_the_base_delay_up_to_the_cap() {
        let policy = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(10),
        };
        let delays: Vec<_> = (1..=5).map(|n| policy.delay(n, None).unwrap()).collect();
        assert_eq!(delays, [2, 4, 8, 10, 10].map(Duration::from_secs).to_vec());
    }

    #[test]
    fn no_retry_beyond_max_retries() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(4, None), Err(GiveUp::Exhausted(3)));
        assert_eq!(GiveUp::Exhausted(3).to_string(), "gave up after 3 retries");
    }

    #[test]
    fn server_requested_wait_wins_unless_it_is_longer_than_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7))),
            Ok(Duration::from_secs(7))
        );
        let too_long = policy.delay(1, Some(Duration::from_secs(61)));
        assert_eq!(
            too_long,
            Err(GiveUp::TooLong {
                asked: Duration::from_secs(61),
                max: Duration::from_secs(60)
            })
        );
        assert_eq!(
            too_long.unwrap_err().to_string(),
            "the server asked to retry after 61s, longer than the 60s this client waits at most"
        );
        // Also with no retries allowed (or left): the error names the wait.
        assert_eq!(
            RetryPolicy::none().delay(1, Some(Duration::from_secs(120))),
            Err(GiveUp::TooLong {
                asked: Duration::from_secs(120),
                max: Duration::from_secs(60)
            })
        );
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")]), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")]), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "250"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(250))
        );
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:47 GMT")]),
                now
            ),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    // `Duration::from_secs_f64` panicked on a wait past u64 seconds, so a
    // server's `Retry-After: 99999999999999999999999` ended the turn as
    // "Provider panicked" instead of "asked to retry after ...".
    #[test]
    fn a_wait_too_long_to_count_is_the_longest_wait() {
        let now = SystemTime::UNIX_EPOCH;
        for header in [
            ("retry-after", "99999999999999999999999"),
            ("retry-after-ms", "1e30"),
        ] {
            assert_eq!(retry_after(&headers(&[header]), now), Some(Duration::MAX));
        }
    }

    #[test]
    fn rate_limits_server_errors_and_overload_are_retryable_client_errors_are_not() {
        let refused = |status: u16, message: &str, error_type: Option<&str>| HttpError::Status {
            status,
            message: message.to_owned(),
            error_type: error_type.map(str::to_owned),
        };
        let retryable: Vec<u16> = [400, 401, 404, 408, 429, 500, 503, 529]
            .into_iter()
            .filter(|&code| is_retryable(&refused(code, "status code (no body)", None)))
            .collect();
        assert_eq!(retryable, [408, 429, 500, 503, 529]);
        let overloaded = Some("overloaded_error");
        assert!(is_retryable(&refused(
            400,
            "overloaded_error: Overloaded",
            overloaded
        )));
        // The session's rule: out of credit and overflows are final, and a
        // message is not a status.
        let quota = "insufficient_quota: You exceeded your current quota";
        assert!(!is_retryable(&refused(
            429,
            quota,
            Some("insufficient_quota")
        )));
        let overflow = "invalid_request_error: prompt is too long: 300000 tokens > 200000 maximum";
        assert!(!is_retryable(&refused(
            500,
            overflow,
            Some("invalid_request_error")
        )));
        let mentions = "invalid_request_error: tool 'overloaded' is defined twice";
        assert!(!is_retryable(&refused(
            400,
            mentions,
            Some("invalid_request_error")
        )));
        assert!(is_retryable(&HttpError::Connection("reset".into())));
    }
}
