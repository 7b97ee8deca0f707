//! Sending one streaming request over HTTP with a read timeout and
//! cancellation, and the error texts of every HTTP provider; API-independent.
//!
//! A provider builds a [`JsonPost`] (URL, headers, JSON body); the
//! [`driver`](super::driver) sends it with [`send_once`] for each attempt: a
//! response with a success status, or a [`Refusal`] that says whether trying
//! again may help. Every [`HttpError`]'s `Display` is the `errorMessage` the
//! assistant message carries, written once here for all providers: a refused
//! request reads `<status> <type>: <server message>`. Every wait (connecting,
//! response headers, the error body) ends at once when the cancellation
//! token fires, and no wait for the server lasts longer than the read
//! timeout (when there is one: zero means none).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ProviderConfig;
use super::retry::{GiveUp, is_retryable, retry_after};
use crate::failure::ErrorKind;

/// How long to wait for a TCP (and TLS) connection before giving up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Error bodies are read up to this size; beyond it they are not an
/// explanation but a misrouted page.
pub(super) const MAX_ERROR_BODY: usize = 64 * 1024;

/// Longest error body quoted in an error message; HTML error pages from
/// proxies can be large and say little.
const MAX_QUOTED_BODY: usize = 2000;

/// Why a request or its stream failed. `Display` is the `errorMessage` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The server answered with an error status; `message` is what its body
    /// says ([`server_message`]).
    #[error("{status} {message}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The server's message, or its body, or `status code (no body)`;
        /// without the status it may start with (said once, before it).
        message: String,
        /// The `type` of the body's error object, when it has one.
        error_type: Option<String>,
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
    /// error event); the text is its own ([`ApiError::describe`]).
    #[error("{0}")]
    Provider(String),
    /// Like [`HttpError::Provider`], but the failure says "not now"
    /// (overloaded, rate limited): arriving before any content, it is retried
    /// like a refused request.
    #[error("{0}")]
    ProviderBusy(String),
    /// The response completed with a stop reason that means failure
    /// (`content_filter`, `refusal`), named here.
    #[error("The provider stopped the response: {0}")]
    Stopped(String),
    /// A retryable failure that is not retried again, and why.
    #[error("{last} ({why})")]
    GaveUp {
        /// The last failure.
        last: Box<HttpError>,
        /// Why no further retry is made.
        why: GiveUp,
    },
    /// The caller cancelled.
    #[error("Request was aborted")]
    Aborted,
    /// The request could not be built (a base URL that is not an
    /// `http(s)` URL, a bad header value).
    #[error("Invalid request: {0}")]
    InvalidRequest(String),
}

impl HttpError {
    /// True when the caller cancelled (the message's `stopReason` is then
    /// `aborted`, not `error`).
    pub fn is_aborted(&self) -> bool {
        matches!(self, HttpError::Aborted)
    }

    /// The kind of failure, for the message's `error_kind`; `retry_after` is
    /// the wait the server last asked for.
    pub fn kind(&self, retry_after: Option<Duration>) -> ErrorKind {
        match self {
            HttpError::Status {
                status, error_type, ..
            } => ErrorKind::Status {
                status: *status,
                error_type: error_type.clone(),
                retry_after,
            },
            HttpError::Connection(_) | HttpError::Incomplete => ErrorKind::Connection,
            HttpError::Stalled(_) => ErrorKind::Timeout,
            HttpError::Malformed(_) => ErrorKind::Malformed,
            HttpError::Provider(_) => ErrorKind::Provider { busy: false },
            HttpError::ProviderBusy(_) => ErrorKind::Provider { busy: true },
            HttpError::GaveUp { last, why } => match why {
                GiveUp::TooLong { asked, .. } => last.kind(Some(*asked)),
                GiveUp::Exhausted(_) => last.kind(retry_after),
            },
            HttpError::Stopped(_) | HttpError::Aborted | HttpError::InvalidRequest(_) => {
                ErrorKind::Other
            }
        }
    }
}

/// The error object APIs put in error bodies and error events:
/// `{"type": "overloaded_error", "message": "Overloaded"}` (either may be
/// absent or null).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ApiError {
    /// The error's kind, e.g. `invalid_request_error`, `overloaded_error`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// The server's explanation.
    #[serde(default)]
    pub message: Option<String>,
}

impl ApiError {
    /// `type: message`, or whichever of the two is present (`None` when
    /// neither is): the one way every provider quotes a server's error.
    pub fn describe(&self) -> Option<String> {
        let kind = self.kind.as_deref().filter(|k| !k.is_empty());
        let message = self.message.as_deref().filter(|m| !m.is_empty());
        match (kind, message) {
            (Some(kind), Some(message)) => Some(format!("{kind}: {message}")),
            (Some(text), None) | (None, Some(text)) => Some(text.to_owned()),
            (None, None) => None,
        }
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

/// What every HTTP provider holds: its settings and the HTTP client
/// (connection pool), built once and shared by all its requests.
#[derive(Clone)]
pub struct Endpoint {
    /// Base URL, key, retries.
    pub config: Arc<ProviderConfig>,
    /// `Err` when the HTTP client could not be built (no TLS roots); every
    /// stream then ends in that error instead of panicking here.
    client: Result<Client, HttpError>,
}

impl Endpoint {
    /// The endpoint of `config`, with a new client.
    pub fn new(config: ProviderConfig) -> Self {
        Endpoint {
            config: Arc::new(config),
            client: build_client(),
        }
    }

    /// A POST of `body` to `path` below the base URL, with `headers`.
    pub fn post<'a>(
        &self,
        path: &str,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        body: &Value,
    ) -> Result<JsonPost, HttpError> {
        let client = self.client.clone()?;
        let base_url = checked_base_url(&self.config.base_url)?;
        let url = format!("{}/{path}", base_url.trim_end_matches('/'));
        JsonPost::new(client, url, headers, body)
    }
}

/// `base_url` when it is an absolute `http(s)` URL. Checked here, where it
/// is known to be the base URL: reqwest's error for `not a url` read
/// `builder error: relative URL without a base`, naming neither the URL
/// nor the setting to fix, and `localhost:8080/v1` parses as a URL of the
/// scheme `localhost`.
fn checked_base_url(base_url: &str) -> Result<&str, HttpError> {
    let invalid = |why: &dyn std::fmt::Display| {
        HttpError::InvalidRequest(format!(
            "invalid base URL {base_url:?}: {why} (set the provider's baseUrl to an http:// or https:// URL, such as https://api.openai.com/v1)"
        ))
    };
    let url = reqwest::Url::parse(base_url).map_err(|error| invalid(&error))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(&"it does not start with http:// or https://"));
    }
    Ok(base_url)
}

/// One POST of a JSON body, as every attempt of a response repeats it.
#[derive(Debug, Clone)]
pub struct JsonPost {
    /// The client (connection pool) to send with.
    pub client: Client,
    /// Full URL of the endpoint.
    pub url: String,
    /// Headers besides `content-type: application/json` (auth, API version).
    pub headers: HeaderMap,
    /// The serialized JSON body.
    pub body: Vec<u8>,
}

impl JsonPost {
    /// A POST of `body` to `url` with `headers`; an invalid header name or
    /// value is an error that names it (never a panic: keys come from
    /// configuration).
    pub fn new<'a>(
        client: Client,
        url: String,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        body: &Value,
    ) -> Result<Self, HttpError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HttpError::InvalidRequest(format!("bad header name {name:?}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| HttpError::InvalidRequest(format!("bad value for header {name}")))?;
            map.insert(header, value);
        }
        let body =
            serde_json::to_vec(body).map_err(|e| HttpError::InvalidRequest(e.to_string()))?;
        Ok(JsonPost {
            client,
            url,
            headers: map,
            body,
        })
    }
}

/// How one failed attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Worth sending again (429, 5xx, overloaded, a failed connection:
    /// [`is_retryable`]), after the server's requested wait if it sent one.
    Retryable {
        /// What went wrong.
        error: HttpError,
        /// The server's `retry-after`.
        retry_after: Option<Duration>,
    },
    /// Not worth retrying (a client error, a bad request, cancellation).
    Final(HttpError),
}

/// Sends `post` once. `Ok` is a response with a success status, its body not
/// read yet.
pub async fn send_once(
    post: &JsonPost,
    read_timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Response, Refusal> {
    let request = post
        .client
        .post(&post.url)
        .headers(post.headers.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(post.body.clone());
    let response = match bounded(read_timeout, cancel, request.send()).await {
        Err(error) => return Err(Refusal::Final(error)),
        Ok(Err(error)) if error.is_builder() => {
            return Err(Refusal::Final(HttpError::InvalidRequest(error_chain(
                &error,
            ))));
        }
        Ok(Err(error)) => {
            let text = if error.is_connect() {
                connect_failure(&post.url, &error)
            } else {
                error_chain(&error)
            };
            return Err(Refusal::Retryable {
                error: HttpError::Connection(text),
                retry_after: None,
            });
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() && !is_whole_body(&response) {
        return Ok(response);
    }
    if status.is_success() {
        // A stream was asked for; this answer is not one, and will not be
        // the next time either.
        let body = read_error_body(response, read_timeout, cancel)
            .await
            .map_err(Refusal::Final)?;
        return Err(Refusal::Final(not_a_stream(status.as_u16(), &body)));
    }
    let server_asked = retry_after(response.headers(), SystemTime::now());
    let body = read_error_body(response, read_timeout, cancel)
        .await
        .map_err(Refusal::Final)?;
    let error = refused(status.as_u16(), server_message(&body), &body);
    if is_retryable(&error) {
        Err(Refusal::Retryable {
            error,
            retry_after: server_asked,
        })
    } else {
        Err(Refusal::Final(error))
    }
}

/// Whether a success answers with a whole JSON document, HTML page or
/// JSON lines rather than the event stream asked for: a proxy's error said
/// with status 200, a server that ignores `"stream": true`, or Ollama's
/// native API (`/api/chat` streams NDJSON) behind a base URL without
/// `/v1`. Read as a stream, it gave no event and read as a cut
/// connection, retried three times with the server's own words never
/// shown. (Other types pass: some servers label their event streams
/// loosely, `text/plain` among them.)
fn is_whole_body(response: &Response) -> bool {
    const WHOLE: [&str; 4] = [
        "application/json",
        "text/html",
        "application/x-ndjson",
        "application/ndjson",
    ];
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| {
            let kind = kind.trim().to_ascii_lowercase();
            WHOLE.iter().any(|whole| kind.starts_with(whole))
        })
}

/// The error of a success with `status` whose `body` is not an event
/// stream: a whole answer (the server ignored `"stream": true`), or the
/// server's message. The provider does not send the request again for
/// it: the same request is likely to get the same answer.
pub(super) fn not_a_stream(status: u16, body: &str) -> HttpError {
    let whole_answer = serde_json::from_str::<Value>(body)
        .is_ok_and(|json| json.get("choices").is_some() || json.get("content").is_some());
    let message = if whole_answer {
        "the server answered at once instead of streaming (it ignores \"stream\": true), which this client cannot read".to_owned()
    } else {
        format!(
            "the server answered without an event stream: {}",
            server_message(body)
        )
    };
    refused(status, message, body)
}

/// The error of an answer with `status` whose `body` says `message`
/// ([`HttpError::Status`], which reads the status first): a message that
/// starts with that status already does not repeat it (nginx's page,
/// titled `502 Bad Gateway`, read `502 502 Bad Gateway (an HTML page)`).
fn refused(status: u16, message: String, body: &str) -> HttpError {
    let message = match message
        .strip_prefix(&status.to_string())
        .and_then(|rest| rest.strip_prefix(' '))
    {
        Some(rest) => rest.to_owned(),
        None => message,
    };
    HttpError::Status {
        status,
        message,
        error_type: server_error_type(body),
    }
}

/// The body of a refused request, up to [`MAX_ERROR_BODY`] bytes; whatever
/// arrived when it breaks off or stalls. `Err` only when cancelled.
async fn read_error_body(
    mut response: Response,
    read_timeout: Duration,
    cancel: &CancellationToken,
) -> Result<String, HttpError> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match bounded(read_timeout, cancel, response.chunk()).await {
            Err(HttpError::Aborted) => return Err(HttpError::Aborted),
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Runs `future` until it completes, the read timeout passes, or the caller
/// cancels.
async fn bounded<T>(
    read_timeout: Duration,
    cancel: &CancellationToken,
    future: impl Future<Output = T>,
) -> Result<T, HttpError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(HttpError::Aborted),
        result = within(read_timeout, future) => result,
    }
}

/// `future`'s output, or [`HttpError::Stalled`] once `read_timeout` passes
/// first. A zero `read_timeout` is no timeout (as `ProviderConfig` says):
/// taken as a deadline, it failed every request at once with `Request timed
/// out: no data received for 0ns`.
pub(super) async fn within<T>(
    read_timeout: Duration,
    future: impl Future<Output = T>,
) -> Result<T, HttpError> {
    if read_timeout.is_zero() {
        return Ok(future.await);
    }
    tokio::time::timeout(read_timeout, future)
        .await
        .map_err(|_| HttpError::Stalled(read_timeout))
}

/// What an error body says: its error object as `type: message` (OpenAI,
/// Anthropic), else a string `error`, top-level `message` or `detail`, else
/// the body itself (shortened), else `status code (no body)` (the wording of
/// OpenAI's SDK, which Pi shows).
pub fn server_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        if let Some(described) = json
            .get("error")
            .and_then(|error| ApiError::deserialize(error).ok())
            .and_then(|error| error.describe())
        {
            return described;
        }
        let candidates = [json.get("error"), json.get("message"), json.get("detail")];
        if let Some(message) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return message.to_owned();
        }
    }
    let body = body.trim();
    if body.is_empty() {
        return "status code (no body)".to_owned();
    }
    if let Some(page) = html_page(body) {
        return page;
    }
    match body.char_indices().nth(MAX_QUOTED_BODY) {
        Some((cut, _)) => format!("{}...", &body[..cut]),
        None => body.to_owned(),
    }
}

/// What an HTML error page (a proxy's or a gateway's: nginx's `502 Bad
/// Gateway`, a login page) says, in a few words: its title, else the start
/// of its text. Quoted whole, its markup filled every retry notice.
fn html_page(body: &str) -> Option<String> {
    // The start of the body, cut at a character boundary (`get` at a byte
    // inside one gave `None`: such a page was quoted whole again).
    let end = (0..=body.len().min(512))
        .rev()
        .find(|&at| body.is_char_boundary(at))
        .unwrap_or(0);
    let lower = body[..end].to_ascii_lowercase();
    if !(lower.starts_with("<!doctype html")
        || lower.starts_with("<html")
        || lower.contains("<head"))
    {
        return None;
    }
    let text = match find_between(body, "<title>", "</title>") {
        Some(title) if !title.trim().is_empty() => title.to_owned(),
        _ => strip_tags(body),
    };
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = match words.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &words[..cut]),
        None => words,
    };
    Some(format!("{shown} (an HTML page)"))
}

/// The text between the first `open` and the `close` after it, the tags
/// matched without regard to case.
fn find_between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let lower = text.to_ascii_lowercase();
    let start = lower.find(open)? + open.len();
    let end = start + lower[start..].find(close)?;
    text.get(start..end)
}

/// `html` without its tags (and what `<style>`/`<script>` hold).
fn strip_tags(html: &str) -> String {
    let mut text = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        text.push(' ');
        let tag = rest[open..].to_ascii_lowercase();
        let skip_to = ["<style", "<script"]
            .iter()
            .find(|name| tag.starts_with(**name))
            .and_then(|name| tag.find(&format!("</{}", &name[1..])));
        let after = skip_to.unwrap_or(0) + open;
        match rest[after..].find('>') {
            Some(close) => rest = &rest[after + close + 1..],
            None => return text,
        }
    }
    text.push_str(rest);
    text
}

/// The `type` of an error body's error object (`{"error":{"type":...}}`).
fn server_error_type(body: &str) -> Option<String> {
    let json: Value = serde_json::from_str(body).ok()?;
    ApiError::deserialize(json.get("error")?).ok()?.kind
}

/// A connection that could not be made: where to, and the innermost cause
/// (`Connection refused (os error 111)`, a failed name lookup), without the
/// layers between them that say the same ("error sending request for url
/// ...: client error (Connect): tcp connect error: ...").
fn connect_failure(url: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    format!("could not connect to {url}: {cause}")
}

/// An error with its causes ("error sending request: connection refused"),
/// each said once, since the top-level message alone rarely says what
/// happened.
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
    use serde_json::json;

    #[test]
    fn server_message_is_the_error_type_and_message_of_the_body() {
        assert_eq!(
            server_message(
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#
            ),
            "requests: Rate limit reached"
        );
        assert_eq!(
            server_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            server_message(r#"{"error":{"message":"No such model","type":null}}"#),
            "No such model"
        );
        assert_eq!(
            server_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            server_message(r#"{"message":"upstream down"}"#),
            "upstream down"
        );
        assert_eq!(server_message("Bad Gateway\n"), "Bad Gateway");
        // Its 512th byte inside a character.
        let long_page = format!(
            "<html><head><title>Oops</title></head><body> {}</body></html>",
            "é".repeat(300)
        );
        assert_eq!(server_message(&long_page), "Oops (an HTML page)");
        // A gateway's page: its title, not its markup.
        assert_eq!(
            server_message(
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n<!-- a padding to disable MSIE and Chrome friendly error page -->"
            ),
            "502 Bad Gateway (an HTML page)"
        );
        assert_eq!(
            server_message(
                "<!DOCTYPE html><html><head><style>p {}</style></head><body><p>Sign in to   continue</p></body></html>"
            ),
            "Sign in to continue (an HTML page)"
        );
        assert_eq!(server_message(""), "status code (no body)");
    }

    #[test]
    fn status_error_reads_status_then_server_message() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#;
        let error = HttpError::Status {
            status: 400,
            message: server_message(body),
            error_type: server_error_type(body),
        };
        assert_eq!(
            error.to_string(),
            "400 invalid_request_error: max_tokens: too large"
        );
        assert_eq!(
            error.kind(None),
            ErrorKind::Status {
                status: 400,
                error_type: Some("invalid_request_error".into()),
                retry_after: None
            }
        );
        assert!(!error.kind(None).is_transient());
    }

    #[test]
    fn the_kind_of_a_given_up_error_is_its_last_failure_with_the_wait_asked_for() {
        let busy = HttpError::Status {
            status: 429,
            message: "rate limited".into(),
            error_type: None,
        };
        let too_long = HttpError::GaveUp {
            last: Box::new(busy.clone()),
            why: GiveUp::TooLong {
                asked: Duration::from_secs(90),
                max: Duration::from_secs(60),
            },
        };
        assert_eq!(
            too_long.kind(None).retry_after(),
            Some(Duration::from_secs(90))
        );
        let exhausted = HttpError::GaveUp {
            last: Box::new(busy),
            why: GiveUp::Exhausted(3),
        };
        assert_eq!(
            exhausted.kind(Some(Duration::from_secs(5))).retry_after(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(HttpError::Incomplete.kind(None), ErrorKind::Connection);
        assert_eq!(
            HttpError::Stalled(Duration::from_secs(1)).kind(None),
            ErrorKind::Timeout
        );
    }

    #[test]
    fn an_error_given_up_on_says_why() {
        let error = HttpError::GaveUp {
            last: Box::new(HttpError::Status {
                status: 529,
                message: "overloaded_error: Overloaded".into(),
                error_type: Some("overloaded_error".into()),
            }),
            why: GiveUp::Exhausted(2),
        };
        assert_eq!(
            error.to_string(),
            "529 overloaded_error: Overloaded (gave up after 2 retries)"
        );
    }

    #[test]
    fn api_errors_describe_whichever_parts_they_have() {
        let parse = |value| ApiError::deserialize(value).unwrap().describe();
        assert_eq!(
            parse(json!({"type": "api_error", "message": "Internal"})),
            Some("api_error: Internal".into())
        );
        assert_eq!(
            parse(json!({"type": "overloaded_error"})),
            Some("overloaded_error".into())
        );
        assert_eq!(parse(json!({"code": 502})), None);
    }

    #[test]
    fn long_bodies_are_shortened() {
        let body = "x".repeat(MAX_QUOTED_BODY + 10);
        assert_eq!(
            server_message(&body),
            format!("{}...", "x".repeat(MAX_QUOTED_BODY))
        );
    }

    // reqwest's own words were `builder error: relative URL without a
    // base`, naming neither the URL nor where it was set.
    #[test]
    fn a_base_url_that_is_not_one_is_named_with_its_setting() {
        let post = |base_url: &str| {
            Endpoint::new(ProviderConfig::new(base_url, None))
                .post("chat/completions", [], &json!({}))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            post("not a url"),
            "Invalid request: invalid base URL \"not a url\": relative URL without a base \
             (set the provider's baseUrl to an http:// or https:// URL, such as https://api.openai.com/v1)"
        );
        assert_eq!(
            post("localhost:8080/v1"),
            "Invalid request: invalid base URL \"localhost:8080/v1\": it does not start with http:// or https:// \
             (set the provider's baseUrl to an http:// or https:// URL, such as https://api.openai.com/v1)"
        );
        let valid = Endpoint::new(ProviderConfig::new("http://127.0.0.1:8080/v1/", None))
            .post("chat/completions", [], &json!({}))
            .unwrap();
        assert_eq!(valid.url, "http://127.0.0.1:8080/v1/chat/completions");
    }

    #[test]
    fn bad_header_values_are_errors_not_panics() {
        let client = build_client().unwrap();
        let post = JsonPost::new(
            client,
            "http://127.0.0.1:1".into(),
            [("authorization", "Bearer a\nb")],
            &json!({}),
        );
        assert_eq!(
            post.unwrap_err(),
            HttpError::InvalidRequest("bad value for header authorization".into())
        );
    }
}
