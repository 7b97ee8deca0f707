//! Server-sent events from a streaming HTTP response; API-independent.
//!
//! [`SseStream`] parses the response body as the HTML standard says
//! (`SseParser`) and adds what a model stream needs on top: every read is
//! bounded by the read timeout (a server that stops sending, keep-alive
//! comments aside, ends in [`HttpError::Stalled`]), cancellation ends the
//! read at once ([`HttpError::Aborted`]), and a connection that breaks is an
//! error ([`HttpError::Connection`]) rather than a quiet end. Deciding what
//! an event means (OpenAI's `data: [DONE]`, Anthropic's `event:
//! message_stop`) is the provider's job; [`SseEvent::json`] reads its data.
//!
//! A server that escapes text as UTF-16 (`\ud83d\ude00`) may split an
//! emoji's surrogate pair between two events, or send half of one alone
//! (Pi's `JSON.parse` takes both, and its string concatenation joins the
//! pair). The high half that ends a string of one event is joined with the
//! low half that starts a string of the next event, when that event has the
//! same name; a half left alone is read as U+FFFD. Either used to fail the
//! whole answer: "Malformed stream event: unexpected end of hex escape".
//!
//! A body that holds no event at all but a JSON document (a proxy's error
//! sent as a 200 `text/event-stream`) ends in what that document says
//! (`http::not_a_stream`), not in a cut connection.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::Response;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::http::{HttpError, MAX_ERROR_BODY, error_chain, not_a_stream, within};
use crate::json_text::{self, ESCAPE_LEN, lone_surrogates};

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
    /// A UTF-16 surrogate escape with no partner is read as U+FFFD.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        let data = self.data.trim();
        json_text::from_str(data)
            .map_err(|error| HttpError::Malformed(format!("{error} in {data:?}")))
    }
}

/// Joins the high surrogate that ends a string of `event` with the low one
/// that starts a string of `next`: the low half's escape moves to `event`,
/// so each parses on its own and the character comes out whole in the first.
/// Nothing changes when either half is missing.
fn join_split_pair(event: &mut SseEvent, next: &mut SseEvent) {
    let Some(high) = trailing_high(&event.data) else {
        return;
    };
    let Some(low) = lone_surrogates(&next.data)
        .into_iter()
        .find(|escape| !escape.high && escape.opens)
    else {
        return;
    };
    let range = low.at..low.at + ESCAPE_LEN;
    event
        .data
        .insert_str(high + ESCAPE_LEN, &next.data[range.clone()]);
    next.data.replace_range(range, "");
}

/// Where the last lone high surrogate escape that ends a string of `json`
/// is, if one does.
fn trailing_high(json: &str) -> Option<usize> {
    lone_surrogates(json)
        .into_iter()
        .rev()
        .find(|escape| escape.high && escape.closes)
        .map(|escape| escape.at)
}

/// The body's chunks, each within the read timeout, until cancelled.
type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, HttpError>> + Send>>;

/// The events of one streaming response, read with a timeout and a
/// cancellation token.
pub struct SseStream {
    chunks: Chunks,
    parser: SseParser,
    /// Events parsed and not yet taken.
    ready: VecDeque<SseEvent>,
    /// How the body ended while reading ahead for the other half of a
    /// split surrogate pair: reported after the events before it.
    ended: Option<Result<(), HttpError>>,
    cancel: CancellationToken,
    /// The response's status, for [`not_a_stream`].
    status: u16,
}

impl SseStream {
    /// Reads `response`'s body as server-sent events. Each chunk of bytes
    /// must arrive within `read_timeout` of the previous one (so keep-alive
    /// comments keep a slow stream alive; zero waits for ever); `cancel` ends
    /// the stream at once.
    pub fn new(response: Response, read_timeout: Duration, cancel: CancellationToken) -> Self {
        let status = response.status().as_u16();
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
                    next = within(read_timeout, bytes.next()) => match next {
                        Err(stalled) => Err(stalled),
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
            chunks: Box::pin(guarded),
            parser: SseParser::default(),
            ready: VecDeque::new(),
            ended: None,
            cancel,
            status,
        }
    }

    /// The next event; `Ok(None)` when the body ended (whether that end was
    /// expected is for the caller to judge; an event the body cut off before
    /// its blank line is dropped, as the standard says). A body that ended
    /// with no event but a JSON document is the server's error instead
    /// (`http::not_a_stream`). Once cancelled, always [`HttpError::Aborted`],
    /// even if more events are already buffered.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, HttpError> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(HttpError::Aborted);
            }
            if let Some(mut event) = self.ready.pop_front() {
                if trailing_high(&event.data).is_some() {
                    self.join_with_next(&mut event).await;
                }
                return Ok(Some(event));
            }
            if let Some(ended) = self.ended.take() {
                // A failure is reported once; after it, as after the end,
                // there is nothing more (the body is not read again).
                self.ended = Some(Ok(()));
                ended?;
                // A proxy's JSON error sent as a 200 event stream read as a
                // cut connection, retried three times, its words never shown.
                return match self.parser.take_skipped() {
                    Some(body)
                        if serde_json::from_str::<serde_json::Value>(&body)
                            .is_ok_and(|json| json.is_object()) =>
                    {
                        Err(not_a_stream(self.status, &body))
                    }
                    _ => Ok(None),
                };
            }
            self.read_chunk().await;
        }
    }

    /// `event` ends a string with half of a surrogate pair: reads on to the
    /// next event, whose first string may start with the other half
    /// ([`join_split_pair`]) when it has the same name. Only that event: a
    /// pair is split between consecutive deltas, and another event after
    /// the half (Anthropic's `content_block_stop`, `message_stop`) says no
    /// other half comes. Reading on to the next event of the same name
    /// held back an answer that ended with a lone half (its
    /// `message_stop` already received) for as long as the server kept the
    /// connection open with pings.
    async fn join_with_next(&mut self, event: &mut SseEvent) {
        while self.ready.is_empty() && self.ended.is_none() {
            self.read_chunk().await;
        }
        if let Some(next) = self
            .ready
            .front_mut()
            .filter(|next| next.event == event.event)
        {
            join_split_pair(event, next);
        }
    }

    /// Feeds the next chunk to the parser; at the body's end (or a failed
    /// read, cancellation included) sets [`SseStream::ended`].
    async fn read_chunk(&mut self) {
        match self.chunks.next().await {
            Some(Ok(chunk)) => self.parser.feed(&chunk, &mut self.ready),
            Some(Err(error)) => self.ended = Some(Err(error)),
            None => self.ended = Some(Ok(())),
        }
    }
}

/// The HTML standard's event-stream parser, fed bytes as they arrive. Each
/// byte is looked at once, however long an event grows (a 20 MB event took
/// 52 s with `eventsource-stream`, which parsed its whole buffer again at
/// every chunk), and a line is decoded on its own: bytes that are not UTF-8
/// (a server that split a character) become U+FFFD in that line, as a
/// browser's decoder makes them, instead of failing the rest of the answer.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// The bytes of the line being received (no line end among them).
    line: Vec<u8>,
    /// The last line ended with `\r`: a `\n` right after it ends nothing.
    after_cr: bool,
    /// The first bytes were seen (a byte-order mark before them is dropped).
    started: bool,
    /// The `event:` field of the event being received.
    event: String,
    /// Its `data:` lines, each followed by `\n`.
    data: String,
    /// The lines that are no field of an event stream (a JSON document's,
    /// up to [`MAX_ERROR_BODY`] bytes), until the first event: all the body
    /// held when it has no event, what the server said instead of one.
    skipped: Vec<u8>,
    /// An event was dispatched: the skipped lines are of no interest.
    dispatched: bool,
}

/// UTF-8's byte-order mark, which may open a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// Takes `chunk`; the events it completed go to `out`.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<SseEvent>) {
        let mut rest = chunk;
        if !self.started && !rest.is_empty() {
            self.started = true;
            rest = rest.strip_prefix(BOM).unwrap_or(rest);
        }
        while let Some(&first) = rest.first() {
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                rest = &rest[1..];
                continue;
            }
            let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.line.extend_from_slice(rest);
                return;
            };
            self.line.extend_from_slice(&rest[..end]);
            self.after_cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out);
        }
    }

    /// One whole line: a blank one ends the event, `:` starts a comment,
    /// anything else is `field: value` (`data` and `event` are kept).
    fn take_line(&mut self, line: &[u8], out: &mut VecDeque<SseEvent>) {
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "event" => self.event = value.to_owned(),
            // `id` and `retry` are for reconnecting, which a model's
            // answer never does.
            "id" | "retry" => {}
            // Other fields are ignored.
            _ => self.skip(line),
        }
    }

    /// Keeps `bytes` of a line that is no field, while they may be all
    /// the body holds.
    fn skip(&mut self, bytes: &[u8]) {
        if self.dispatched {
            return;
        }
        let room = MAX_ERROR_BODY.saturating_sub(self.skipped.len());
        self.skipped
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        if self.skipped.len() < MAX_ERROR_BODY {
            self.skipped.push(b'\n');
        }
    }

    /// At the body's end: what it held instead of events (its lines that
    /// are no field, the unfinished last line too), when it held no event.
    fn take_skipped(&mut self) -> Option<String> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.skip(&line);
        }
        let skipped = std::mem::take(&mut self.skipped);
        (!self.dispatched && !skipped.is_empty())
            .then(|| String::from_utf8_lossy(&skipped).into_owned())
    }

    /// Ends the event: one without data is none (a keep-alive).
    fn dispatch(&mut self, out: &mut VecDeque<SseEvent>) {
        let mut data = std::mem::take(&mut self.data);
        let event = std::mem::take(&mut self.event);
        if data.is_empty() {
            return;
        }
        data.pop();
        self.dispatched = true;
        self.skipped = Vec::new();
        out.push_back(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `stream` fed in chunks of `size` bytes.
    fn events(stream: &[u8], size: usize) -> Vec<(String, String)> {
        let mut parser = SseParser::default();
        let mut out = VecDeque::new();
        for chunk in stream.chunks(size) {
            parser.feed(chunk, &mut out);
        }
        out.into_iter().map(|e| (e.event, e.data)).collect()
    }

    #[test]
    fn events_come_out_whole_at_any_chunking_and_line_ending() {
        let stream = "\u{FEFF}: keep-alive\r\n\r\nevent: delta\r\ndata: {\"a\":1}\r\n\r\ndata:x\ndata:  two spaces\n\nevent: end\rdata: é😀\r\rid: 7\nretry: 10\n\ndata: [DONE]\n\ndata: cut off";
        let expected = vec![
            ("delta".to_owned(), "{\"a\":1}".to_owned()),
            ("message".to_owned(), "x\n two spaces".to_owned()),
            ("end".to_owned(), "é😀".to_owned()),
            ("message".to_owned(), "[DONE]".to_owned()),
        ];
        for size in [1, 2, 3, 5, 7, 64, stream.len()] {
            assert_eq!(
                events(stream.as_bytes(), size),
                expected,
                "chunks of {size}"
            );
        }
    }

    /// What the escapes of a string hold, in JSON text (a `\\` before `u`
    /// is no escape of a surrogate).
    #[test]
    fn lone_surrogates_read_as_replacements_and_pairs_as_characters() {
        let event = |data: &str| SseEvent {
            event: "message".into(),
            data: data.into(),
        };
        let value: serde_json::Value =
            event(r#"{"a":"\\ud83d \ud83d\ude00 \udc00\ud83d","b":"\ud83d"}"#)
                .json()
                .unwrap();
        assert_eq!(
            value,
            serde_json::json!({"a": "\\ud83d \u{1F600} \u{FFFD}\u{FFFD}", "b": "\u{FFFD}"})
        );
        let (mut first, mut second) = (
            event(r#"{"a":"x\ud83d","b":"\ud83d"}"#),
            event(r#"{"a":"\ude00y"}"#),
        );
        join_split_pair(&mut first, &mut second);
        assert_eq!(
            (first.data.as_str(), second.data.as_str()),
            (r#"{"a":"x\ud83d","b":"\ud83d\ude00"}"#, r#"{"a":"y"}"#)
        );
    }

    /// A body that is no event stream (a JSON error sent as one) is kept
    /// to be said; a body with events has nothing to say of its own.
    #[test]
    fn lines_that_are_no_field_are_kept_until_the_first_event() {
        let skipped = |stream: &[u8], size: usize| {
            let mut parser = SseParser::default();
            let mut out = VecDeque::new();
            for chunk in stream.chunks(size) {
                parser.feed(chunk, &mut out);
            }
            parser.take_skipped()
        };
        let error =
            r#"{"error":{"message":"Invalid API key provided","type":"invalid_request_error"}}"#;
        for size in [1, 7, 1000] {
            let body = format!(": hello\nid: 1\n{error}\n");
            assert_eq!(skipped(body.as_bytes(), size), Some(format!("{error}\n")));
            assert_eq!(skipped(error.as_bytes(), size), Some(format!("{error}\n")));
            let events = format!("{error}\ndata: x\n\n{error}\n");
            assert_eq!(skipped(events.as_bytes(), size), None);
        }
        assert_eq!(skipped(b": keep-alive\n\n", 3), None);
        let long = "x".repeat(MAX_ERROR_BODY * 2);
        assert_eq!(
            skipped(long.as_bytes(), 4096).unwrap().len(),
            MAX_ERROR_BODY
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_become_replacement_characters_in_their_line() {
        let stream = b"data: bad \xff byte\n\ndata: next\n\n";
        assert_eq!(
            events(stream, 3),
            [
                ("message".to_owned(), "bad \u{FFFD} byte".to_owned()),
                ("message".to_owned(), "next".to_owned())
            ]
        );
    }
}
