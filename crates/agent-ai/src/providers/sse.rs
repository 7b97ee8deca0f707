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

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
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

/// The body's chunks, each within the read timeout, until cancelled.
type Chunks = Pin<Box<dyn Stream<Item = Result<Bytes, HttpError>> + Send>>;

/// The events of one streaming response, read with a timeout and a
/// cancellation token.
pub struct SseStream {
    chunks: Chunks,
    parser: SseParser,
    /// Events parsed and not yet taken.
    ready: VecDeque<SseEvent>,
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
            chunks: Box::pin(guarded),
            parser: SseParser::default(),
            ready: VecDeque::new(),
            cancel,
        }
    }

    /// The next event; `Ok(None)` when the body ended (whether that end was
    /// expected is for the caller to judge; an event the body cut off before
    /// its blank line is dropped, as the standard says). Once cancelled,
    /// always [`HttpError::Aborted`], even if more events are already
    /// buffered.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, HttpError> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(HttpError::Aborted);
            }
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            match self.chunks.next().await {
                None => return Ok(None),
                Some(Err(error)) => return Err(error),
                Some(Ok(chunk)) => self.parser.feed(&chunk, &mut self.ready),
            }
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
            // answer never does; other fields are ignored.
            _ => {}
        }
    }

    /// Ends the event: one without data is none (a keep-alive).
    fn dispatch(&mut self, out: &mut VecDeque<SseEvent>) {
        let mut data = std::mem::take(&mut self.data);
        let event = std::mem::take(&mut self.event);
        if data.is_empty() {
            return;
        }
        data.pop();
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
