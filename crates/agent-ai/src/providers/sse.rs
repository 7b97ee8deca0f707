//! Server-sent events from a streaming HTTP response; API-independent.
//!
//! [`SseStream`] parses the response body with `eventsource-stream` and adds
//! what a model stream needs on top: every read is bounded by the read
//! timeout (a server that stops sending, keep-alive comments aside, ends in
//! [`HttpError::Stalled`]), cancellation ends the read at once
//! ([`HttpError::Aborted`]), and a connection that breaks is an error
//! ([`HttpError::Connection`]) rather than a quiet end. Deciding what an event
//! means (OpenAI's `data: [DONE]`, Anthropic's `event: message_stop`) is the
//! provider's job; [`SseEvent::json`] reads its data.

use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::Response;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::http::{HttpError, error_chain};

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `message` when the server sent none.
    pub event: String,
    /// The `data:` lines joined with newlines.
    pub data: String,
}

impl SseEvent {
    /// The event's data parsed as JSON; text that does not parse is
    /// [`HttpError::Malformed`], quoting the parser's complaint and the data,
    /// in the same words for every API.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        let data = self.data.trim();
        serde_json::from_str(data)
            .map_err(|error| HttpError::Malformed(format!("{error} in {data:?}")))
    }
}

type EventResult = Result<eventsource_stream::Event, EventStreamError<HttpError>>;

/// The events of one streaming response, read with a timeout and a
/// cancellation token.
pub struct SseStream {
    events: Pin<Box<dyn Stream<Item = EventResult> + Send>>,
    cancel: CancellationToken,
}

impl SseStream {
    /// Reads `response`'s body as server-sent events. Each chunk of bytes
    /// must arrive within `read_timeout` of the previous one (so keep-alive
    /// comments keep a slow stream alive); `cancel` ends the stream at once.
    pub fn new(response: Response, read_timeout: Duration, cancel: CancellationToken) -> Self {
        let bytes = response.bytes_stream();
        let guarded = futures::stream::unfold(
            (Box::pin(bytes), cancel.clone(), false),
            move |(mut bytes, cancel, finished)| async move {
                if finished {
                    return None;
                }
                let next = tokio::select! {
                    biased;
                    () = cancel.cancelled() => Err(HttpError::Aborted),
                    next = tokio::time::timeout(read_timeout, bytes.next()) => match next {
                        Err(_) => Err(HttpError::Stalled(read_timeout)),
                        Ok(None) => return None,
                        Ok(Some(Ok(chunk))) => Ok(chunk),
                        Ok(Some(Err(error))) => Err(HttpError::Connection(error_chain(&error))),
                    },
                };
                // After an error the byte stream is done: report it once.
                let finished = next.is_err();
                Some((next, (bytes, cancel, finished)))
            },
        );
        SseStream {
            events: Box::pin(guarded.eventsource()),
            cancel,
        }
    }

    /// The next event; `Ok(None)` when the body ended (whether that end was
    /// expected is for the caller to judge). Once cancelled, always
    /// [`HttpError::Aborted`], even if more events are already buffered.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, HttpError> {
        if self.cancel.is_cancelled() {
            return Err(HttpError::Aborted);
        }
        match self.events.next().await {
            None => Ok(None),
            Some(Ok(event)) => Ok(Some(SseEvent {
                event: event.event,
                data: event.data,
            })),
            Some(Err(EventStreamError::Transport(error))) => Err(error),
            Some(Err(EventStreamError::Utf8(error))) => {
                Err(HttpError::Malformed(format!("invalid UTF-8: {error}")))
            }
            Some(Err(EventStreamError::Parser(error))) => Err(HttpError::Malformed(format!(
                "unparsable event line: {error}"
            ))),
        }
    }
}
