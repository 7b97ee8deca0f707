//! Server-sent events from a streaming HTTP response.
//!
//! Interim home: the shared `providers::sse` module replaces this file when the
//! providers are merged; only [`events`] and [`SseEvent`] are used from outside.

use eventsource_stream::Eventsource;
use futures::stream::{BoxStream, StreamExt};

/// One event: its `event:` name (empty when absent) and its `data:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event:` field, e.g. `message_start`.
    pub(super) name: String,
    /// The `data:` lines joined with `\n`.
    pub(super) data: String,
}

/// The events of `response`'s body, in order; an `Err` says why the body
/// broke off (a dropped connection, a body that is not UTF-8).
pub(super) fn events(response: reqwest::Response) -> BoxStream<'static, Result<SseEvent, String>> {
    response
        .bytes_stream()
        .eventsource()
        .map(|item| match item {
            Ok(event) => Ok(SseEvent {
                name: event.event,
                data: event.data,
            }),
            Err(eventsource_stream::EventStreamError::Transport(error)) => {
                Err(super::error_chain(&error))
            }
            Err(other) => Err(other.to_string()),
        })
        .boxed()
}
