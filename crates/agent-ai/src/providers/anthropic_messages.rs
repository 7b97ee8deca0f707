//! The `anthropic-messages` API: `POST {base_url}/v1/messages` with
//! `stream: true`, read as server-sent events.
//!
//! One response is one task driven by the returned stream itself (nothing is
//! spawned): it sends the request, retries refusals ("not now": 429, 5xx, 529,
//! an `overloaded_error` event before any content) with backoff, turns
//! Anthropic's events into Pi's [`AssistantMessageEvent`]s and ends with
//! exactly one `done` or `error`. Dropping the stream drops the request.
//!
//! Module map: `request` builds the body (through `replay`, Pi's
//! `transform-messages`), `wire` types the events, `assemble` turns them into
//! Pi's events. `sse`, `retry` and `partial_json` are the generic parts, kept
//! private and small so the shared modules can replace them.

mod assemble;
mod partial_json;
mod replay;
mod request;
mod retry;
mod sse;
mod wire;

use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use self::assemble::{Applied, Assembler};
use self::retry::GiveUp;
use self::wire::{ErrorBody, StreamEvent};
use super::ProviderConfig;
use crate::message::StopReason;
use crate::stream::{AssistantMessageEvent, AssistantStream, Context, Model, Provider};

/// The `anthropic-version` header this code speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The error text of a cancelled response (as the scripted provider's).
const ABORTED: &str = "Request was aborted";

/// Error bodies are read up to this size; beyond it they are not an
/// explanation but a misrouted page.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Events buffered between the request task and the consumer; beyond this the
/// task waits, so a slow consumer bounds memory.
const EVENT_BUFFER: usize = 32;

/// A provider for Anthropic's Messages API (and compatible endpoints).
#[derive(Clone)]
pub struct AnthropicMessagesProvider {
    config: ProviderConfig,
    /// `Err` when the HTTP client could not be built (no TLS roots); every
    /// stream then ends in that error instead of panicking here.
    client: Result<reqwest::Client, String>,
}

impl AnthropicMessagesProvider {
    /// A provider for `config.base_url` (e.g. `https://api.anthropic.com`).
    pub fn new(config: ProviderConfig) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(config.read_timeout)
            .build()
            .map_err(|error| format!("Could not set up the HTTP client: {}", error_chain(&error)));
        AnthropicMessagesProvider { config, client }
    }
}

/// Shows where it sends requests, never the API key.
impl std::fmt::Debug for AnthropicMessagesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicMessagesProvider")
            .field("base_url", &self.config.base_url)
            .finish_non_exhaustive()
    }
}

impl Provider for AnthropicMessagesProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        let job = Job {
            client: self.client.clone(),
            url: format!("{}/v1/messages", self.config.base_url.trim_end_matches('/')),
            body: request::request_body(model, context, &self.config).to_string(),
            config: self.config.clone(),
            model: model.clone(),
        };
        let (sender, receiver) = mpsc::channel(EVENT_BUFFER);
        let driver = futures::stream::once(job.run(cancel, Sink(sender)))
            .filter_map(|()| futures::future::ready(None));
        futures::stream::select(receiver, driver).boxed()
    }
}

/// Everything one response needs, owned by its task.
struct Job {
    client: Result<reqwest::Client, String>,
    url: String,
    body: String,
    config: ProviderConfig,
    model: Model,
}

/// How the attempts ended.
enum Outcome {
    /// `message_stop` arrived.
    Complete,
    /// A failure, with the text for `errorMessage`.
    Failed(String),
    /// The consumer dropped the stream; nobody is listening.
    ConsumerGone,
}

/// How one attempt ended.
enum Attempt {
    /// Final for the whole response.
    Done(Outcome),
    /// Refused for now; may be retried if nothing was shown yet.
    Retryable {
        message: String,
        retry_after: Option<Duration>,
    },
}

/// The sending half of the event channel.
struct Sink(mpsc::Sender<AssistantMessageEvent>);

/// The consumer dropped the stream.
struct Gone;

impl Sink {
    async fn emit(&mut self, event: AssistantMessageEvent) -> Result<(), Gone> {
        self.0.send(event).await.map_err(|_| Gone)
    }
}

impl Job {
    async fn run(self, cancel: CancellationToken, mut sink: Sink) {
        let mut assembler = Assembler::new(&self.model);
        let start = AssistantMessageEvent::Start {
            partial: assembler.message().clone(),
        };
        if sink.emit(start).await.is_err() {
            return;
        }
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            outcome = self.attempts(&mut assembler, &mut sink) => Some(outcome),
        };
        let last = match outcome {
            None => assembler.fail(StopReason::Aborted, ABORTED),
            Some(Outcome::Complete) => assembler.finish(),
            Some(Outcome::Failed(text)) => assembler.fail(StopReason::Error, text),
            Some(Outcome::ConsumerGone) => return,
        };
        let _ = sink.emit(last).await;
    }

    /// The first attempt and its retries.
    async fn attempts(&self, assembler: &mut Assembler, sink: &mut Sink) -> Outcome {
        let policy = self.config.retry;
        let mut retries = 0;
        loop {
            let (message, retry_after) = match self.attempt(assembler, sink).await {
                Attempt::Done(outcome) => return outcome,
                Attempt::Retryable {
                    message,
                    retry_after,
                } => (message, retry_after),
            };
            match retry::delay(&policy, retries, retry_after) {
                Ok(wait) => {
                    retries += 1;
                    tracing::warn!(
                        api = "anthropic-messages",
                        retry = retries,
                        max_retries = policy.max_retries,
                        wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        "{message}; retrying"
                    );
                    tokio::time::sleep(wait).await;
                    *assembler = Assembler::new(&self.model);
                }
                Err(GiveUp::Exhausted) if retries == 0 => return Outcome::Failed(message),
                Err(GiveUp::Exhausted) => {
                    return Outcome::Failed(format!("{message} (gave up after {retries} retries)"));
                }
                Err(GiveUp::TooLong(asked)) => {
                    return Outcome::Failed(format!(
                        "{message} (the server asked to retry after {asked:?}, more than the {:?} max_delay)",
                        policy.max_delay
                    ));
                }
            }
        }
    }

    /// One request and, when it is accepted, its whole stream.
    async fn attempt(&self, assembler: &mut Assembler, sink: &mut Sink) -> Attempt {
        let timeout = self.config.read_timeout;
        let client = match &self.client {
            Ok(client) => client,
            Err(text) => return Attempt::Done(Outcome::Failed(text.clone())),
        };
        let mut request = client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(self.body.clone());
        if let Some(key) = &self.config.api_key {
            request = request.header("x-api-key", key);
        }
        let response = match tokio::time::timeout(timeout, request.send()).await {
            Err(_) => {
                return Attempt::Done(Outcome::Failed(format!(
                    "No response from {} within {timeout:?} (read_timeout)",
                    self.url
                )));
            }
            Ok(Err(error)) => {
                return Attempt::Done(Outcome::Failed(format!(
                    "Request to {} failed: {}",
                    self.url,
                    error_chain(&error)
                )));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry::retry_after(response.headers());
            let body = read_error_body(response, timeout).await;
            let message = http_error_message(status, &body);
            return if retry::is_retryable_status(status) {
                Attempt::Retryable {
                    message,
                    retry_after,
                }
            } else {
                Attempt::Done(Outcome::Failed(message))
            };
        }

        let mut events = sse::events(response);
        let mut produced = Vec::new();
        loop {
            let event = match tokio::time::timeout(timeout, events.next()).await {
                Err(_) => {
                    return Attempt::Done(Outcome::Failed(format!(
                        "The stream stalled: no data for {timeout:?} (read_timeout)"
                    )));
                }
                Ok(None) => {
                    return Attempt::Done(Outcome::Failed(
                        "The stream ended before message_stop: the connection closed mid-response"
                            .to_owned(),
                    ));
                }
                Ok(Some(Err(cause))) => {
                    return Attempt::Done(Outcome::Failed(format!(
                        "The connection broke mid-stream: {cause}"
                    )));
                }
                Ok(Some(Ok(event))) => event,
            };
            let parsed: StreamEvent = match serde_json::from_str(&event.data) {
                Ok(parsed) => parsed,
                Err(error) => {
                    let name = if event.name.is_empty() {
                        "unnamed"
                    } else {
                        &event.name
                    };
                    return Attempt::Done(Outcome::Failed(format!(
                        "Malformed `{name}` event from the server: {error}"
                    )));
                }
            };
            let applied = assembler.apply(parsed, &mut produced);
            for event in produced.drain(..) {
                if sink.emit(event).await.is_err() {
                    return Attempt::Done(Outcome::ConsumerGone);
                }
            }
            match applied {
                Applied::Continue => {}
                Applied::Stop => return Attempt::Done(Outcome::Complete),
                Applied::ServerError(error) if error.is_retryable() && !assembler.has_content() => {
                    return Attempt::Retryable {
                        message: error.describe(),
                        retry_after: None,
                    };
                }
                Applied::ServerError(error) => {
                    return Attempt::Done(Outcome::Failed(error.describe()));
                }
            }
        }
    }
}

/// The body of a refused request, up to [`MAX_ERROR_BODY`] bytes; whatever
/// arrived when it breaks off or stalls.
async fn read_error_body(response: reqwest::Response, timeout: Duration) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while body.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(timeout, chunks.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

/// `429 rate_limit_error: <the server's message>`: the status first (so a
/// reader or a retry rule can match it), then what the server said.
fn http_error_message(status: StatusCode, body: &str) -> String {
    let code = status.as_u16();
    if let Ok(parsed) = serde_json::from_str::<ErrorBody>(body) {
        return format!("{code} {}", parsed.error.describe());
    }
    // Some proxies answer `{"message": ...}` or `{"error": "..."}`.
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(body)
        && let Some(text) = ["message", "error"]
            .iter()
            .find_map(|key| object.get(*key).and_then(Value::as_str))
    {
        return format!("{code} {text}");
    }
    let text = body.trim();
    if text.is_empty() {
        return format!("{code} status code (no body)");
    }
    let cut: String = text.chars().take(500).collect();
    let ellipsis = if cut.len() < text.len() { "…" } else { "" };
    format!("{code} {cut}{ellipsis}")
}

/// An error and its causes, outermost first, each said once.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(error) = current {
        let text = error.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        current = error.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_errors_carry_status_type_and_server_message() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#;
        assert_eq!(
            http_error_message(StatusCode::BAD_REQUEST, body),
            "400 invalid_request_error: max_tokens: too large"
        );
        assert_eq!(
            http_error_message(StatusCode::BAD_GATEWAY, r#"{"message":"upstream down"}"#),
            "502 upstream down"
        );
        assert_eq!(
            http_error_message(StatusCode::BAD_GATEWAY, "<html>Bad gateway</html>\n"),
            "502 <html>Bad gateway</html>"
        );
        assert_eq!(
            http_error_message(StatusCode::SERVICE_UNAVAILABLE, ""),
            "503 status code (no body)"
        );
    }
}
