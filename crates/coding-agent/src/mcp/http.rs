//! Streamable HTTP for MCP servers configured with a `url`. rmcp's transport
//! does the protocol (sessions, the server's event streams, reconnects,
//! a new session when the server forgot the old one); it reaches the
//! network through its `StreamableHttpClient` trait, implemented here over
//! the workspace's reqwest 0.12 with rustls. rmcp's own implementation
//! would bring reqwest 0.13 and aws-lc into the build.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use reqwest::{RequestBuilder, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use rmcp::transport::{DynamicTransportError, StreamableHttpClientTransport};
use sse_stream::{Sse, SseStream};

/// Same-origin redirects followed at most (a server that moved `/mcp` to
/// `/mcp/`); more is a loop.
const MAX_REDIRECTS: usize = 5;

/// Headers the transport sets itself; one from the configuration would
/// send a second, conflicting value.
const RESERVED_HEADERS: [&str; 3] = ["accept", HEADER_SESSION_ID, HEADER_LAST_EVENT_ID];

/// Times a broken event stream is resumed before the transport gives up.
const STREAM_RETRIES: usize = 3;

type Error = StreamableHttpError<reqwest::Error>;

/// A few quick tries to resume a broken event stream ride out a hiccup; a
/// server that is gone then fails the call instead of holding it until its
/// timeout (rmcp's default retries forever).
#[derive(Debug)]
struct FewRetries;

impl SseRetryPolicy for FewRetries {
    fn retry(&self, attempt: usize) -> Option<Duration> {
        (attempt < STREAM_RETRIES).then(|| Duration::from_millis(200 << attempt))
    }
}

/// The HTTP client rmcp's streamable HTTP transport sends through.
#[derive(Clone)]
pub(super) struct HttpClient {
    client: reqwest::Client,
    last_failure: LastFailure,
}

/// Why the last request failed, in a few words ("Connection refused (os
/// error 111)", "HTTP 401 Unauthorized: ..."). rmcp wraps a failure in
/// layers of its own types whose texts do not chain to the cause, so the
/// connection reads the cause here when a request could not be sent.
pub(super) type LastFailure = Arc<Mutex<Option<String>>>;

/// The transport to the server at `url`, sending `headers` (already
/// expanded) with every request, and where it notes why a request failed.
/// `Err` says which header is unusable.
pub(super) fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<(StreamableHttpClientTransport<HttpClient>, LastFailure), String> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = HeaderName::try_from(name.as_str())
            .map_err(|e| format!("header \"{name}\" has an unusable name: {e}"))?;
        if RESERVED_HEADERS
            .iter()
            .any(|reserved| header.as_str().eq_ignore_ascii_case(reserved))
        {
            return Err(format!(
                "header \"{name}\" is set by the MCP transport itself; remove it from \"headers\""
            ));
        }
        let value = HeaderValue::try_from(value.as_str())
            .map_err(|e| format!("header \"{name}\" has an unusable value: {e}"))?;
        custom.insert(header, value);
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            // A redirect elsewhere would carry the configured headers
            // (tokens) to another origin, and 301-303 turn the POST into a
            // GET that loses the message: both are the server's error.
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            let keeps_method = matches!(
                attempt.status(),
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if same_origin && keeps_method {
                attempt.follow()
            } else {
                attempt.stop()
            }
        }))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    config.retry_config = Arc::new(FewRetries);
    let last_failure = LastFailure::default();
    let client = HttpClient {
        client,
        last_failure: last_failure.clone(),
    };
    Ok((
        StreamableHttpClientTransport::with_client(client, config),
        last_failure,
    ))
}

/// Sends `request` with the session, the token rmcp may pass and the
/// configured headers.
async fn send(
    mut request: RequestBuilder,
    session_id: Option<Arc<str>>,
    auth_token: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> Result<Response, Error> {
    if let Some(session_id) = session_id {
        request = request.header(HEADER_SESSION_ID, session_id.as_ref());
    }
    if let Some(token) = auth_token {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        request = request.header(name, value);
    }
    request.send().await.map_err(StreamableHttpError::Client)
}

/// Whether the response's `Content-Type` is `expected` (parameters such as
/// `charset` and case aside).
fn has_media_type(response: &Response, expected: &str) -> bool {
    content_type(response).is_some_and(|value| {
        value
            .split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
    })
}

fn content_type(response: &Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// The body, or `ResponseBodyTooLarge` past `max_size` bytes (counted as
/// they arrive: a server's `Content-Length` is not trusted).
async fn read_body(mut response: Response, max_size: usize) -> Result<Vec<u8>, Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(StreamableHttpError::Client)?
    {
        if chunk.len() > max_size - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most `max_size` bytes of an error body, to show the user.
async fn read_prefix(mut response: Response, max_size: usize) -> String {
    let mut body = Vec::new();
    while body.len() < max_size {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk[..chunk.len().min(max_size - body.len())]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&body).trim().to_owned()
}

/// The server's event stream, each event at most `max_event_size` bytes: a
/// server that never ends an event would otherwise grow it without bound.
/// An answer to `answering` (the request POSTed) that rmcp could not read,
/// and would drop, becomes an error answer saying why
/// ([`super::stdio::unreadable`]).
fn events(
    response: Response,
    max_event_size: usize,
    answering: Option<RequestId>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut size = EventSize::default();
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        if size.grows_past(&chunk, max_event_size) {
            return Err(std::io::Error::other(format!(
                "the server sent an event longer than {max_event_size} bytes"
            )));
        }
        Ok(chunk)
    });
    let events = SseStream::from_bytes_stream(bytes);
    let Some(request) = answering else {
        return events.boxed();
    };
    events
        .map(move |event| {
            let mut event = event?;
            if let Some(answer) = event
                .data
                .as_deref()
                .and_then(|data| super::stdio::unreadable(data, |id| *id == request))
            {
                event.data = Some(answer);
            }
            Ok(event)
        })
        .boxed()
}

/// The size of the event being received, as its bytes arrive.
#[derive(Default)]
struct EventSize {
    /// Its bytes so far, line ends aside.
    bytes: usize,
    /// Bytes of the line being received.
    line: usize,
    /// The last byte was `\r` (so a `\n` after it ends no other line).
    after_cr: bool,
}

impl EventSize {
    /// Counts `chunk`; true once the event is longer than `max`. An empty
    /// line (a line end right after one) ends the event.
    fn grows_past(&mut self, chunk: &[u8], max: usize) -> bool {
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    if self.line == 0 {
                        self.bytes = 0;
                    }
                    self.line = 0;
                }
                _ => {
                    self.line += 1;
                    self.bytes += 1;
                    if self.bytes > max {
                        return true;
                    }
                }
            }
        }
        false
    }
}

/// A failed request's status and what the server said.
async fn unexpected(response: Response, limits: StreamableHttpResponseLimits) -> Error {
    let status = response.status();
    let body = read_prefix(response, limits.max_error_response_size).await;
    refusal(status, &body)
}

/// A request refused with `status` (and `body`, its text). A server error
/// (5xx, 429) failed that request and leaves the session standing: it is a
/// [`ServerError`], which fails the call and nothing else. Another status
/// (400 for a session the server no longer knows, 401) is about the
/// connection, which the next call makes again.
fn refusal(status: StatusCode, body: &str) -> Error {
    let text = if body.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {body}")
    };
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        StreamableHttpError::Io(std::io::Error::other(ServerError(text)))
    } else {
        StreamableHttpError::UnexpectedServerResponse(text.into())
    }
}

/// A request the server answered with a server error: its status and text.
/// rmcp's error type has no variant for it that keeps the text, so it
/// travels as the source of an I/O error and is read back by
/// [`answered_failure`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ServerError(String);

/// Why a message failed when the server did answer it (a server error, a
/// body that is not MCP or is too large): the call fails, the connection
/// stands. `None` when the failure was the connection's (the network, the
/// session), which counts the connection gone.
pub(super) fn answered_failure(error: &DynamicTransportError) -> Option<String> {
    let error = error.error.downcast_ref::<Error>()?;
    let answered = match error {
        StreamableHttpError::Io(io) => io
            .get_ref()
            .is_some_and(|inner| inner.downcast_ref::<ServerError>().is_some()),
        StreamableHttpError::UnexpectedContentType(_)
        | StreamableHttpError::Deserialize(_)
        | StreamableHttpError::ResponseBodyTooLarge { .. } => true,
        _ => false,
    };
    answered.then(|| describe(error))
}

/// A failure in a few words, for the model and the user.
fn describe(error: &Error) -> String {
    match error {
        // reqwest's own text names only the URL; the cause (refused, a
        // timeout, TLS) is at the end of its chain.
        StreamableHttpError::Client(error) => {
            let mut cause: &dyn std::error::Error = error;
            while let Some(source) = cause.source() {
                cause = source;
            }
            cause.to_string()
        }
        StreamableHttpError::UnexpectedServerResponse(text) => text.to_string(),
        StreamableHttpError::Io(io) => match io.get_ref() {
            Some(inner) => inner.to_string(),
            None => io.to_string(),
        },
        StreamableHttpError::UnexpectedContentType(content_type) => format!(
            "it answered with {} where JSON or an event stream was expected",
            content_type.as_deref().unwrap_or("no Content-Type")
        ),
        StreamableHttpError::Deserialize(error) => {
            format!("its answer is not a JSON-RPC message: {error}")
        }
        other => other.to_string(),
    }
}

impl HttpClient {
    /// A POST answered with an error status: a JSON-RPC error for the
    /// request (`request_id`) is its answer (rmcp hands it to the caller);
    /// anything else ends the request with the status and the server's
    /// text. An error without the request's id would reach no caller, and
    /// the call would wait for its timeout (the reference server answers a
    /// session it does not know, after a restart, with such a 400).
    async fn failed_post(
        response: Response,
        request_id: Option<&RequestId>,
        session_id: Option<String>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        if !has_media_type(&response, JSON_MIME_TYPE) {
            return Err(unexpected(response, limits).await);
        }
        let status = response.status();
        let body = read_body(response, limits.max_json_response_size).await?;
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(ServerJsonRpcMessage::Error(error))
                if request_id.is_some() && error.id.as_ref() == request_id =>
            {
                Ok(StreamableHttpPostResponse::Json(
                    ServerJsonRpcMessage::Error(error),
                    session_id,
                ))
            }
            _ => {
                let shown = &body[..body.len().min(limits.max_error_response_size)];
                Err(refusal(status, String::from_utf8_lossy(shown).trim()))
            }
        }
    }

    /// `result`, with why it failed noted in [`LastFailure`].
    fn note<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(error) = &result {
            *crate::support::sync::lock(&self.last_failure) = Some(describe(error));
        }
        result
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    /// Sends one message; the answer is JSON, an event stream, or nothing.
    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let result: Result<_, Error> = async {
            let session_was_attached = session_id.is_some();
            let request = self
                .client
                .post(uri.as_ref())
                .header(
                    ACCEPT,
                    format!("{JSON_MIME_TYPE}, {EVENT_STREAM_MIME_TYPE}"),
                )
                .header(CONTENT_TYPE, JSON_MIME_TYPE)
                .body(serde_json::to_vec(&message)?);
            let response = send(request, session_id, auth_token, custom_headers).await?;
            let status = response.status();
            if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            if status == StatusCode::NOT_FOUND && session_was_attached {
                // The server restarted or dropped the session: rmcp opens a new one.
                return Err(StreamableHttpError::SessionExpired);
            }
            let session_id = response
                .headers()
                .get(HEADER_SESSION_ID)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let request_id = match &message {
                ClientJsonRpcMessage::Request(request) => Some(&request.id),
                _ => None,
            };
            if !status.is_success() {
                return Self::failed_post(response, request_id, session_id, limits).await;
            }
            // Notifications and answers to the server await nothing; some
            // servers answer them 200 with an empty or unusable body.
            let awaits_answer = request_id.is_some();
            if has_media_type(&response, EVENT_STREAM_MIME_TYPE) {
                Ok(StreamableHttpPostResponse::Sse(
                    events(response, limits.max_sse_event_size, request_id.cloned()),
                    session_id,
                ))
            } else if has_media_type(&response, JSON_MIME_TYPE) {
                let body = read_body(response, limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(answer) => Ok(StreamableHttpPostResponse::Json(answer, session_id)),
                    Err(_) if !awaits_answer => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::Deserialize(e)),
                }
            } else if !awaits_answer {
                Ok(StreamableHttpPostResponse::Accepted)
            } else {
                Err(StreamableHttpError::UnexpectedContentType(content_type(
                    &response,
                )))
            }
        }
        .await;
        self.note(result)
    }

    /// Ends the session on the server.
    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let result: Result<_, Error> = async {
            let request = self.client.delete(uri.as_ref());
            let response = send(request, Some(session_id), auth_token, custom_headers).await?;
            // A server may not support ending sessions; it forgets them itself.
            if response.status() != StatusCode::METHOD_NOT_ALLOWED {
                response
                    .error_for_status()
                    .map_err(StreamableHttpError::Client)?;
            }
            Ok(())
        }
        .await;
        self.note(result)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    /// Opens the stream of what the server sends on its own.
    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let result: Result<_, Error> = async {
            let mut request = self
                .client
                .get(uri.as_ref())
                .header(ACCEPT, EVENT_STREAM_MIME_TYPE);
            if let Some(last_event_id) = last_event_id {
                request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
            }
            let response = send(request, session_id, auth_token, custom_headers).await?;
            if response.status() == StatusCode::METHOD_NOT_ALLOWED {
                // The server sends everything as answers to POSTs.
                return Err(StreamableHttpError::ServerDoesNotSupportSse);
            }
            if !response.status().is_success() {
                return Err(unexpected(response, StreamableHttpResponseLimits::default()).await);
            }
            if !has_media_type(&response, EVENT_STREAM_MIME_TYPE) {
                return Err(StreamableHttpError::UnexpectedContentType(content_type(
                    &response,
                )));
            }
            Ok(events(response, max_sse_event_size, None))
        }
        .await;
        self.note(result)
    }
}

#[cfg(test)]
mod tests {
    use super::EventSize;

    #[test]
    fn an_event_is_measured_to_its_empty_line_whatever_the_line_ends() {
        for end in ["\n", "\r\n", "\r"] {
            let mut size = EventSize::default();
            let event = format!("event: message{end}data: 12345{end}{end}");
            // 14 + 11 bytes of lines, counted across chunks, then reset.
            let (head, tail) = event.as_bytes().split_at(7);
            assert!(!size.grows_past(head, 25));
            assert!(!size.grows_past(tail, 25), "{end:?}");
            assert!(!size.grows_past(event.as_bytes(), 25), "{end:?}: not reset");
            assert!(
                EventSize::default().grows_past(event.as_bytes(), 24),
                "{end:?}"
            );
        }
    }
}
