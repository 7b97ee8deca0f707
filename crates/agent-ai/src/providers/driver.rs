//! One streamed response over HTTP, whatever the API: the loop every HTTP
//! provider shares.
//!
//! [`drive`] returns the [`AssistantStream`] and does all the work lazily, as
//! the stream is polled (nothing is spawned; dropping the stream drops the
//! connection):
//!
//! 1. `start`, always first, before anything is sent, so every response
//!    reads `start`, ..., `done` or `error` whatever happens;
//! 2. the request, sent again after a [`Refusal::Retryable`] answer, and
//!    also after an [`HttpError::ProviderBusy`] event (Anthropic's
//!    `overloaded_error`) or a broken connection ([`HttpError::Connection`])
//!    that comes before the response showed anything, with the backoff,
//!    notices and cancellation of [`Retries`]; a stall is not retried here
//!    (each attempt would wait the read timeout again: the session's retries
//!    take it);
//! 3. the body as server-sent events, each handed to the API's [`Decoder`],
//!    which turns it into [`AssistantMessageEvent`]s;
//! 4. exactly one last event: `done` when the decoder says the response is
//!    complete, else `error` with the message so far, `stopReason` `error`
//!    or `aborted`, and the [`HttpError`]'s text as `errorMessage`.
//!
//! [`HttpProvider`] is the [`Provider`] every HTTP API shares: an API is a
//! [`WireApi`], its request and its decoder.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::ProviderConfig;
use super::http::{Endpoint, HttpError, JsonPost, Refusal, send_once};
use super::retry::Retries;
use super::sse::{SseEvent, SseStream};
use crate::message::{AssistantMessage, StopReason};
use crate::stream::{AssistantMessageEvent, AssistantStream, Context, Model, Provider};

/// Whether the response goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    More,
    /// The API's end-of-response marker (`[DONE]`, `message_stop`).
    End,
}

/// What one API adds to the driver: how its events become Pi's. A pure
/// state machine (no I/O), so every event sequence can be tested without a
/// server. It is cloned before the first attempt, and a retry starts again
/// from that clone.
pub trait Decoder: Clone + Send + 'static {
    /// The message assembled so far (the `partial` of `start`, the base of
    /// the last event).
    fn message(&self) -> &Arc<AssistantMessage>;

    /// Applies one server-sent event (never one with blank data), queuing
    /// the events it produces on `out`. `Err` ends the response (or retries
    /// it, for [`HttpError::ProviderBusy`] before anything was shown).
    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) -> Result<Flow, HttpError>;

    /// The body ended without the end-of-response marker: `Ok` when the API's
    /// answer counts as complete anyway, else why not.
    fn body_ended(&self) -> Result<(), HttpError> {
        Err(HttpError::Incomplete)
    }

    /// The response is complete: closes what is still open (queuing its end
    /// events) and settles the stop reason; `Err` when that stop reason means
    /// failure.
    fn finish(&mut self, out: &mut VecDeque<AssistantMessageEvent>) -> Result<(), HttpError>;

    /// The response failed: what is still open is closed without end
    /// events, so the error's message carries complete content (tool-call
    /// arguments parsed); what no delta has said yet is said on `out` first,
    /// so the deltas still add up to that message.
    fn abandon(&mut self, out: &mut VecDeque<AssistantMessageEvent>);
}

/// One wire API over HTTP: the request it sends and the decoder that reads
/// its events. [`HttpProvider`] does the rest.
pub trait WireApi: Send + Sync + 'static {
    /// The type name a provider of this API shows in `Debug`.
    const PROVIDER: &'static str;

    /// Reads the events of one response.
    type Decoder: Decoder;

    /// The POST of one request to `endpoint`.
    fn post(endpoint: &Endpoint, model: &Model, context: &Context) -> Result<JsonPost, HttpError>;

    /// A decoder for the response to one request.
    fn decoder(config: &ProviderConfig, model: &Model, context: &Context) -> Self::Decoder;
}

/// A [`Provider`] speaking the wire API `A` to one endpoint.
pub struct HttpProvider<A> {
    endpoint: Endpoint,
    api: PhantomData<fn() -> A>,
}

impl<A: WireApi> HttpProvider<A> {
    /// A provider for `config.base_url`. The HTTP client (connection pool)
    /// is built once here and shared by all requests.
    pub fn new(config: ProviderConfig) -> Self {
        HttpProvider {
            endpoint: Endpoint::new(config),
            api: PhantomData,
        }
    }
}

impl<A> Clone for HttpProvider<A> {
    fn clone(&self) -> Self {
        HttpProvider {
            endpoint: self.endpoint.clone(),
            api: PhantomData,
        }
    }
}

/// Shows where it sends requests, never the API key.
impl<A: WireApi> std::fmt::Debug for HttpProvider<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(A::PROVIDER)
            .field("base_url", &self.endpoint.config.base_url)
            .finish_non_exhaustive()
    }
}

impl<A: WireApi> Provider for HttpProvider<A> {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        let config = &self.endpoint.config;
        drive(
            Arc::clone(config),
            A::post(&self.endpoint, model, context),
            A::decoder(config, model, context),
            cancel,
        )
    }
}

/// The stream of one response: `post` sent (`Err` when the request could not
/// be built: the stream is then `start` and that error), its events read by
/// `decoder`, all of it bounded by `config`'s read timeout and retries and
/// by `cancel`.
pub fn drive<D: Decoder>(
    config: Arc<ProviderConfig>,
    post: Result<JsonPost, HttpError>,
    decoder: D,
    cancel: CancellationToken,
) -> AssistantStream {
    let driver = Driver {
        config,
        post,
        cancel,
        fresh: decoder.clone(),
        decoder,
        phase: Phase::Start,
        queue: VecDeque::new(),
        retries: Retries::default(),
        shown: false,
    };
    futures::stream::unfold(driver, |mut driver| async move {
        driver.next().await.map(|event| (event, driver))
    })
    .boxed()
}

/// Where a response is in its life.
enum Phase {
    /// Nothing emitted yet.
    Start,
    /// The next attempt is due.
    Send,
    /// Reading events.
    Streaming(Box<SseStream>),
    /// The last event is queued.
    Finished,
}

struct Driver<D> {
    config: Arc<ProviderConfig>,
    post: Result<JsonPost, HttpError>,
    cancel: CancellationToken,
    /// The decoder as it was before the first attempt.
    fresh: D,
    decoder: D,
    phase: Phase,
    queue: VecDeque<AssistantMessageEvent>,
    retries: Retries,
    /// Whether the decoder produced any event, after which a retry would
    /// repeat what the consumer already saw.
    shown: bool,
}

/// Sends the request once; its body as events when accepted. (A free
/// function: borrowing the whole driver across the wait would need it to be
/// `Sync`, which the event stream is not.)
async fn attempt(
    post: &Result<JsonPost, HttpError>,
    config: &ProviderConfig,
    cancel: &CancellationToken,
) -> Result<SseStream, Refusal> {
    let post = post.as_ref().map_err(|e| Refusal::Final(e.clone()))?;
    let response = send_once(post, config.read_timeout, cancel).await?;
    Ok(SseStream::new(
        response,
        config.read_timeout,
        cancel.clone(),
    ))
}

impl<D: Decoder> Driver<D> {
    async fn next(&mut self) -> Option<AssistantMessageEvent> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            match std::mem::replace(&mut self.phase, Phase::Finished) {
                Phase::Finished => return None,
                Phase::Start => {
                    self.queue.push_back(AssistantMessageEvent::Start {
                        partial: self.decoder.message().clone(),
                    });
                    self.phase = Phase::Send;
                }
                Phase::Send => match attempt(&self.post, &self.config, &self.cancel).await {
                    Ok(events) => self.phase = Phase::Streaming(Box::new(events)),
                    Err(Refusal::Final(error)) => self.fail(error),
                    Err(Refusal::Retryable { error, retry_after }) => {
                        self.retry(error, retry_after).await;
                    }
                },
                Phase::Streaming(mut events) => match self.read(&mut events).await {
                    Ok(Flow::More) => self.phase = Phase::Streaming(events),
                    Ok(Flow::End) => self.finish(),
                    // A reset after the headers (a proxy that lost its
                    // upstream) ended the answer at once, though nothing
                    // was shown and a new attempt repeats nothing.
                    Err(error @ (HttpError::ProviderBusy(_) | HttpError::Connection(_)))
                        if !self.shown =>
                    {
                        drop(events);
                        self.retry(error, None).await;
                    }
                    Err(error) => self.fail(error),
                },
            }
        }
    }

    /// Waits for the next attempt from a fresh decoder, or ends the response
    /// when no retry is left.
    async fn retry(&mut self, error: HttpError, retry_after: Option<std::time::Duration>) {
        match self
            .retries
            .wait(&self.config, error, retry_after, &self.cancel)
            .await
        {
            Ok(()) => {
                self.decoder = self.fresh.clone();
                self.phase = Phase::Send;
            }
            Err(error) => self.fail_after(error, retry_after),
        }
    }

    /// Reads one event and queues what it produces.
    async fn read(&mut self, events: &mut SseStream) -> Result<Flow, HttpError> {
        let next = match events.next_event().await {
            Ok(next) => next,
            // Cut after the answer's stop reason, the connection lost at
            // most the end marker or a usage chunk: the answer is as
            // complete as when the body ends cleanly there, and asking
            // again would have the model write (and bill) it twice.
            Err(HttpError::Connection(_) | HttpError::Stalled(_))
                if self.decoder.body_ended().is_ok() =>
            {
                None
            }
            Err(error) => return Err(error),
        };
        let Some(event) = next else {
            self.decoder.body_ended()?;
            return Ok(Flow::End);
        };
        if event.data.trim().is_empty() {
            return Ok(Flow::More);
        }
        let before = self.queue.len();
        let flow = self.decoder.decode(&event, &mut self.queue);
        self.shown |= self.queue.len() > before;
        flow
    }

    fn finish(&mut self) {
        if let Err(error) = self.decoder.finish(&mut self.queue) {
            return self.fail(error);
        }
        let message = AssistantMessage::clone(self.decoder.message());
        self.queue.push_back(AssistantMessageEvent::Done {
            reason: message.stop_reason,
            message,
        });
        self.phase = Phase::Finished;
    }

    fn fail(&mut self, error: HttpError) {
        self.fail_after(error, None);
    }

    /// Ends the response with `error`; `retry_after` is the wait the server
    /// last asked for, kept in the message's `error_kind`.
    fn fail_after(&mut self, error: HttpError, retry_after: Option<std::time::Duration>) {
        self.decoder.abandon(&mut self.queue);
        let mut message = AssistantMessage::clone(self.decoder.message());
        message.stop_reason = if error.is_aborted() {
            StopReason::Aborted
        } else {
            StopReason::Error
        };
        message.error_message = Some(error.to_string());
        message.error_kind = Some(error.kind(retry_after));
        self.queue.push_back(AssistantMessageEvent::Error {
            reason: message.stop_reason,
            error: message,
        });
        self.phase = Phase::Finished;
    }
}

/// What every decoder's tests check: each event shares the decoder's
/// message rather than carrying a copy, and once the consumer has dropped
/// the events, the next deltas change that message in place (a new block
/// may copy it once: the end of the one before holds it). A copy per delta
/// made a long answer quadratic: 400 KB of text took 3 s.
#[cfg(test)]
pub(crate) fn assert_streams_in_place<D: Decoder>(mut decoder: D, data: &[String]) {
    let mut out = VecDeque::new();
    let mut address = None;
    let mut shared = 0;
    for data in data {
        let event = SseEvent {
            event: "message".into(),
            data: data.clone(),
        };
        assert!(decoder.decode(&event, &mut out).is_ok(), "{data}");
        let message = decoder.message();
        let mut new_block = false;
        for event in out.drain(..) {
            new_block |= matches!(
                event,
                AssistantMessageEvent::TextStart { .. }
                    | AssistantMessageEvent::ThinkingStart { .. }
                    | AssistantMessageEvent::ToolCallStart { .. }
            );
            let partial = match &event {
                AssistantMessageEvent::TextDelta { partial, .. }
                | AssistantMessageEvent::ThinkingDelta { partial, .. }
                | AssistantMessageEvent::ToolCallDelta { partial, .. } => partial,
                _ => continue,
            };
            assert!(Arc::ptr_eq(partial, message), "a copy in {event:?}");
            shared += 1;
        }
        // The events are gone: the message stays where it is.
        let here = Arc::as_ptr(message);
        if new_block {
            address = Some(here);
        }
        assert_eq!(*address.get_or_insert(here), here, "copied after {data}");
    }
    assert!(shared >= data.len() / 2, "only {shared} deltas");
}

/// What every decoder's tests check too: data that makes no event leaves
/// the message untouched. A subscriber that draws the message holds the
/// one of its last update only weakly (so the decoder may append in
/// place); a decoder that changed its message between events (a tool
/// call's arguments, parsed only every eighth of growth) moved it from
/// under that reference, and the terminal UI drew the call as it was
/// several kilobytes earlier for as long as the stream paused.
#[cfg(test)]
pub(crate) fn assert_silent_data_leaves_the_message<D: Decoder>(mut decoder: D, data: &[String]) {
    let mut out = VecDeque::new();
    let mut silent = 0;
    for data in data {
        let event = SseEvent {
            event: "message".into(),
            data: data.clone(),
        };
        let before = Arc::downgrade(decoder.message());
        assert!(decoder.decode(&event, &mut out).is_ok(), "{data}");
        if out.is_empty() {
            silent += 1;
            assert!(
                before.upgrade().is_some(),
                "changed without an event: {data}"
            );
        }
        out.clear();
    }
    assert!(silent > 0, "every piece of data made an event");
}
