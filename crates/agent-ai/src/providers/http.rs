//! Sending one streaming request over HTTP, with retries, a read timeout and
//! cancellation; API-independent.
//!
//! A provider builds its JSON body and headers, then calls [`send_with_retry`]:
//! it gets back a response with a success status, or an [`HttpError`] whose
//! `Display` is the `errorMessage` the assistant message will carry. The body
//! is then read as server-sent events with [`crate::providers::sse`]. Every
//! wait here (connecting, response headers, the error body, backoff sleeps)
//! ends at once when the cancellation token fires, and no wait for the server
//! lasts longer than the read timeout.

use std::future::Future;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::retry::{RetryCallback, RetryNotice, RetryPolicy, is_retryable, retry_after};

/// How long to wait for a TCP (and TLS) connection before giving up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest error body quoted in an error message; HTML error pages from
/// proxies can be large and say little.
const MAX_QUOTED_BODY: usize = 2000;

/// Why a request or its stream failed. `Display` is the `errorMessage` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The server answered with an error status; `message` is the server's
    /// own message when its body has one (`{"error": {"message": ...}}`).
    #[error("{status} {message}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The server's message, or its body, or `status code (no body)`.
        message: String,
    },
    /// The connection could not be made or broke.
    #[error("Connection error: {0}")]
    Connection(String),
    /// Nothing arrived for longer than the read timeout.
    #[error("Request timed out: no data received for {0:?}")]
    Stalled(Duration),
    /// The stream sent something that is not a valid event of its API.
    #[error("Malformed stream event: {0}")]
    Malformed(String),
    /// The stream ended before the API's end-of-response marker.
    #[error("Connection closed before the response was complete")]
    Incomplete,
    /// The provider reported a failure inside a successful response (an
    /// `error` event, a refusal); the text is its own.
    #[error("{0}")]
    Provider(String),
    /// The caller cancelled.
    #[error("Request was aborted")]
    Aborted,
    /// The request could not be built (bad base URL or header value).
    #[error("Invalid request: {0}")]
    InvalidRequest(String),
}

impl HttpError {
    /// True when the caller cancelled (the message's `stopReason` is then
    /// `aborted`, not `error`).
    pub fn is_aborted(&self) -> bool {
        matches!(self, HttpError::Aborted)
    }
}

/// An HTTP client for streaming APIs: rustls TLS, a connect timeout, and no
/// overall timeout (a long answer may stream for many minutes; stalls are
/// caught by the read timeout instead).
pub fn build_client() -> Result<Client, HttpError> {
    Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| HttpError::InvalidRequest(format!("cannot create the HTTP client: {e}")))
}

/// Headers from name/value pairs; an invalid name or value is an error that
/// names it (never a panic: keys come from configuration).
pub fn header_map<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<HeaderMap, HttpError> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::InvalidRequest(format!("bad header name {name:?}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| HttpError::InvalidRequest(format!("bad value for header {name}")))?;
        map.insert(header, value);
    }
    Ok(map)
}

/// One POST of a JSON body, as [`send_with_retry`] repeats it.
pub struct JsonPost<'a> {
    /// The client (connection pool) to send with.
    pub client: &'a Client,
    /// Full URL of the endpoint.
    pub url: &'a str,
    /// Headers besides `content-type: application/json` (auth, API version).
    pub headers: &'a HeaderMap,
    /// The serialized JSON body.
    pub body: &'a [u8],
}

/// How patiently [`send_with_retry`] waits and whom it tells about retries.
pub struct Patience<'a> {
    /// When to retry.
    pub retry: &'a RetryPolicy,
    /// Longest wait for the response headers or the error body.
    pub read_timeout: Duration,
    /// Told about each retry (after a `tracing` warning).
    pub on_retry: Option<&'a RetryCallback>,
    /// Stops everything at once.
    pub cancel: &'a CancellationToken,
}

/// Sends `post`, retrying 429, 5xx, "overloaded" answers and connection
/// failures with backoff (the server's `retry-after` first), at most
/// `max_retries` times. Returns the first response with a success status, or
/// the last error.
pub async fn send_with_retry(
    post: &JsonPost<'_>,
    patience: &Patience<'_>,
) -> Result<Response, HttpError> {
    let mut retries = 0;
    loop {
        let (error, server_asked) = match send_once(post, patience).await {
            Ok(response) => return Ok(response),
            Err(Attempt::Final(error)) => return Err(error),
            Err(Attempt::Retryable(error, server_asked)) => (error, server_asked),
        };
        if retries >= patience.retry.max_retries {
            return Err(error);
        }
        retries += 1;
        let Some(delay) = patience.retry.delay(retries, server_asked) else {
            return Err(error);
        };
        let notice = RetryNotice {
            attempt: retries,
            max_retries: patience.retry.max_retries,
            delay,
            status: match &error {
                HttpError::Status { status, .. } => Some(*status),
                _ => None,
            },
            message: error.to_string(),
        };
        tracing::warn!(
            attempt = notice.attempt,
            max_retries = notice.max_retries,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %notice.message,
            "retrying the request"
        );
        if let Some(callback) = patience.on_retry {
            callback(&notice);
        }
        tokio::select! {
            biased;
            () = patience.cancel.cancelled() => return Err(HttpError::Aborted),
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// The outcome of one failed attempt.
enum Attempt {
    /// Worth sending again, after the server's requested wait if any.
    Retryable(HttpError, Option<Duration>),
    /// Not worth retrying (a client error, or cancellation).
    Final(HttpError),
}

async fn send_once(post: &JsonPost<'_>, patience: &Patience<'_>) -> Result<Response, Attempt> {
    let request = post
        .client
        .post(post.url)
        .headers(post.headers.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(post.body.to_vec());
    let response = match bounded(patience, request.send()).await {
        Err(error) => return Err(Attempt::Final(error)),
        Ok(Err(error)) if error.is_builder() => {
            return Err(Attempt::Final(HttpError::InvalidRequest(error_chain(
                &error,
            ))));
        }
        Ok(Err(error)) => {
            return Err(Attempt::Retryable(
                HttpError::Connection(error_chain(&error)),
                None,
            ));
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let server_asked = retry_after(response.headers(), SystemTime::now());
    let body = match bounded(patience, response.text()).await {
        Err(HttpError::Aborted) => return Err(Attempt::Final(HttpError::Aborted)),
        Err(_) | Ok(Err(_)) => String::new(),
        Ok(Ok(body)) => body,
    };
    let error = HttpError::Status {
        status: status.as_u16(),
        message: server_message(&body),
    };
    if is_retryable(status, &body) {
        Err(Attempt::Retryable(error, server_asked))
    } else {
        Err(Attempt::Final(error))
    }
}

/// Runs `future` until it completes, the read timeout passes, or the caller
/// cancels.
async fn bounded<T>(
    patience: &Patience<'_>,
    future: impl Future<Output = T>,
) -> Result<T, HttpError> {
    tokio::select! {
        biased;
        () = patience.cancel.cancelled() => Err(HttpError::Aborted),
        result = tokio::time::timeout(patience.read_timeout, future) => {
            result.map_err(|_| HttpError::Stalled(patience.read_timeout))
        }
    }
}

/// The message of an error body: `error.message` (OpenAI, Anthropic), a
/// string `error` or top-level `message`, else the body itself (shortened),
/// else `status code (no body)` (the wording of OpenAI's SDK, which Pi shows).
pub fn server_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let candidates = [
            json.pointer("/error/message"),
            json.get("error"),
            json.get("message"),
            json.pointer("/detail"),
        ];
        if let Some(message) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return message.to_owned();
        }
    }
    let body = body.trim();
    if body.is_empty() {
        return "status code (no body)".to_owned();
    }
    match body.char_indices().nth(MAX_QUOTED_BODY) {
        Some((cut, _)) => format!("{}...", &body[..cut]),
        None => body.to_owned(),
    }
}

/// A reqwest error with its causes ("error sending request: connection
/// refused"), since the top-level message alone rarely says what happened.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_message_prefers_the_json_error_message() {
        assert_eq!(
            server_message(r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            server_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            server_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(server_message("Bad Gateway\n"), "Bad Gateway");
        assert_eq!(server_message(""), "status code (no body)");
    }

    #[test]
    fn status_error_reads_like_openais_sdk() {
        let error = HttpError::Status {
            status: 401,
            message: "Incorrect API key provided".into(),
        };
        assert_eq!(error.to_string(), "401 Incorrect API key provided");
    }

    #[test]
    fn long_bodies_are_shortened() {
        let body = "x".repeat(MAX_QUOTED_BODY + 10);
        assert_eq!(
            server_message(&body),
            format!("{}...", "x".repeat(MAX_QUOTED_BODY))
        );
    }

    #[test]
    fn bad_header_values_are_errors_not_panics() {
        assert_eq!(
            header_map([("authorization", "Bearer a\nb")]).unwrap_err(),
            HttpError::InvalidRequest("bad value for header authorization".into())
        );
    }
}
