//! A stdio server's transport: its stdin and stdout as newline-delimited
//! JSON-RPC, one message a line, each at most [`MAX_MESSAGE`].
//!
//! rmcp's own child-process transport drops a longer line without a word,
//! so the call it answered waited out its whole timeout and then read as a
//! slow server. Here the server's stdout passes through [`pump`], which
//! forwards lines up to the limit and turns a longer one into an error
//! answer to the request it was for (found by its `"id"` at either end of the
//! line, or the only request waiting): that call fails at once, saying why,
//! and the connection stands. Memory stays bounded: of a long line only its
//! ends are kept.
//!
//! rmcp drops a line it cannot read as a message the same way, so the pump
//! reads each line first ([`unreadable`]): bytes that are not UTF-8 become
//! U+FFFD (`"café"` sent in Latin-1 is still the answer, as a provider's
//! stream is read), and an answer to a waiting request that is JSON but no
//! message rmcp reads (an error without its `"message"`) becomes an error
//! answer to that request saying what was wrong.

use std::collections::VecDeque;
use std::io;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage, JsonRpcResponse, RequestId, ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use crate::support::sync::lock;
use crate::support::truncate::{format_size, truncate_line};

/// The longest message a server may send (rmcp's limit for stdio and for
/// HTTP events alike).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// The error code of the answer that stands in for a message over
/// [`MAX_MESSAGE`] (one of JSON-RPC's implementation-defined server errors).
pub const TOO_LARGE: ErrorCode = ErrorCode(-32_090);

/// The error code of the answer that stands in for an answer the client
/// cannot read ([`unreadable`]).
pub const UNREADABLE: ErrorCode = ErrorCode(-32_091);

/// How long a server may take to exit once its stdin is closed, and again
/// after SIGTERM, before it is killed (as the MCP specification's stdio
/// shutdown asks).
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// How many unanswered requests are remembered: calls that timed out are
/// never answered, and only the latest matter.
const REMEMBERED: usize = 64;

/// Bytes kept of each end of a message too long to keep, to find its id.
const ENDS_KEPT: usize = 4096;

/// Characters of an unreadable answer shown in the error that stands in
/// for it.
const SHOWN: usize = 300;

/// Requests sent and not yet answered, oldest first.
type Waiting = Arc<Mutex<VecDeque<RequestId>>>;

/// The transport to one server process.
pub struct StdioTransport {
    inner: AsyncRwTransport<RoleClient, DuplexStream, ChildStdin>,
    child: Child,
    waiting: Waiting,
}

impl StdioTransport {
    /// Starts `command` with piped stdio; its stderr is the caller's to read.
    /// The process is killed if the transport is dropped before it exits.
    pub fn spawn(mut command: Command) -> io::Result<(Self, Option<ChildStderr>)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the server's stdin or stdout is missing"));
        };
        let stderr = child.stderr.take();
        let waiting = Waiting::default();
        let (forwarded, read) = tokio::io::duplex(64 * 1024);
        tokio::spawn(pump(stdout, forwarded, waiting.clone()));
        let inner = AsyncRwTransport::new_client(read, stdin)
            // The pump already holds lines to the limit; its own answers
            // are short.
            .with_max_line_length(MAX_MESSAGE + 1);
        Ok((
            StdioTransport {
                inner,
                child,
                waiting,
            },
            stderr,
        ))
    }

    /// The server's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            let mut waiting = lock(&self.waiting);
            if waiting.len() == REMEMBERED {
                waiting.pop_front();
            }
            waiting.push_back(request.id.clone());
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        let answered = match &message {
            Some(JsonRpcMessage::Response(response)) => Some(&response.id),
            Some(JsonRpcMessage::Error(error)) => error.id.as_ref(),
            _ => None,
        };
        if let Some(id) = answered {
            lock(&self.waiting).retain(|waiting| waiting != id);
        }
        message
    }

    /// The MCP specification's stdio shutdown: close the server's stdin,
    /// wait for it to exit, then SIGTERM, wait again, then kill.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await?;
        if exited_within(&mut self.child, EXIT_WAIT).await {
            return Ok(());
        }
        if let Some(pid) = self.id().and_then(|pid| i32::try_from(pid).ok()) {
            use nix::sys::signal::{Signal, kill};
            let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
            if exited_within(&mut self.child, EXIT_WAIT).await {
                return Ok(());
            }
        }
        self.child.kill().await
    }
}

async fn exited_within(child: &mut Child, wait: Duration) -> bool {
    tokio::time::timeout(wait, child.wait()).await.is_ok()
}

/// Forwards the server's stdout to the client a line at a time; a line
/// over [`MAX_MESSAGE`] becomes an error answer ([`Overlong::answer`]), as
/// does an answer the client could not read ([`unreadable`]).
/// Ends when the server closes its stdout (the client then sees the end
/// of its input) or the client goes away.
async fn pump(stdout: ChildStdout, mut to_client: DuplexStream, waiting: Waiting) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut overlong: Option<Overlong> = None;
    loop {
        let (taken, ended) = {
            let available = match reader.fill_buf().await {
                Ok([]) | Err(_) => return,
                Ok(available) => available,
            };
            let newline = available.iter().position(|&byte| byte == b'\n');
            let taken = newline.map_or(available.len(), |at| at + 1);
            let part = &available[..taken];
            match &mut overlong {
                Some(overlong) => overlong.extend(part),
                None if line.len() + part.len() > MAX_MESSAGE + 1 => {
                    overlong = Some(Overlong::new(&line, part));
                    line = Vec::new();
                }
                None => line.extend_from_slice(part),
            }
            (taken, newline.is_some())
        };
        reader.consume(taken);
        if !ended {
            continue;
        }
        let forwarded = match overlong.take() {
            Some(overlong) => {
                let answer = overlong.answer(&lock(&waiting));
                match answer {
                    Some(answer) => to_client.write_all(answer.as_bytes()).await,
                    None => Ok(()),
                }
            }
            None => {
                let text = String::from_utf8_lossy(&line);
                let answer = unreadable(&text, |id| lock(&waiting).contains(id));
                let sent = to_client
                    .write_all(answer.as_deref().unwrap_or(&text).as_bytes())
                    .await;
                // A long message's buffer is not kept for the short ones.
                if line.capacity() > 1024 * 1024 {
                    line = Vec::new();
                } else {
                    line.clear();
                }
                sent
            }
        };
        if forwarded.is_err() {
            return;
        }
    }
}

/// A line too long to forward: its length and its two ends.
struct Overlong {
    bytes: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
}

impl Overlong {
    fn new(start: &[u8], part: &[u8]) -> Self {
        let mut overlong = Overlong {
            bytes: 0,
            head: Vec::with_capacity(ENDS_KEPT),
            tail: VecDeque::with_capacity(ENDS_KEPT),
        };
        overlong.extend(start);
        overlong.extend(part);
        overlong
    }

    fn extend(&mut self, part: &[u8]) {
        self.bytes += part.len();
        let room = ENDS_KEPT - self.head.len();
        self.head.extend_from_slice(&part[..part.len().min(room)]);
        let kept = &part[part.len().saturating_sub(ENDS_KEPT)..];
        let spill = (self.tail.len() + kept.len()).saturating_sub(ENDS_KEPT);
        self.tail.drain(..spill);
        self.tail.extend(kept);
    }

    /// The error answer (a JSON-RPC line) to the request this line answered:
    /// the waiting request whose id stands first at its start (rmcp and the
    /// Python SDK write `"id"` before `"result"`) or last at its end (the
    /// TypeScript SDK writes it after), else the only request waiting.
    /// `None` when it cannot be told which request it was for (a request
    /// from the server, or several calls at once): those calls time out.
    fn answer(&self, waiting: &VecDeque<RequestId>) -> Option<String> {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let is_waiting = |id: &String| waiting.iter().any(|w| id_text(w) == *id);
        let id = ids_in(&self.head)
            .into_iter()
            .find(is_waiting)
            .or_else(|| ids_in(&tail).into_iter().rev().find(is_waiting))
            .or_else(|| (waiting.len() == 1).then(|| id_text(&waiting[0])))?;
        let message = format!(
            "its answer was {}, more than the {} one message may hold. Ask the tool for less \
             (a narrower query, a page or a limit, if it takes one)",
            format_size(self.bytes.saturating_sub(1)),
            format_size(MAX_MESSAGE),
        );
        let id: Value = serde_json::from_str(&id).ok()?;
        Some(error_answer(&id, TOO_LARGE, message))
    }
}

/// The error answer (a JSON-RPC line) that stands in for `line` when it
/// answers a waiting request but is no message the client reads: rmcp
/// dropped it without a word (`{"error":{"code":-32000}}`, which has no
/// `"message"`), so a stdio call waited out its whole timeout and then read
/// "timed out ... Try a smaller request", and an HTTP one, whose event
/// stream then ended unanswered, read as the server gone. An answer here is
/// a JSON object with the `"id"` of a request `is_waiting` for, a
/// `"result"` or an `"error"`, and no `"method"`. A line that is not JSON
/// at all is left to rmcp, which ignores it as the other SDKs do: it cannot
/// be told from a log line the server printed to its stdout.
pub(super) fn unreadable(
    line: &str,
    is_waiting: impl FnOnce(&RequestId) -> bool,
) -> Option<String> {
    if serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(line).is_ok() {
        return None;
    }
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let id = answer.get("id")?.clone();
    let request: RequestId = serde_json::from_value(id.clone()).ok()?;
    if answer.contains_key("method") || !is_waiting(&request) {
        return None;
    }
    // The part that does not fit, read on its own: the whole message read
    // as one of several kinds only says that it is none of them.
    let why = if answer.contains_key("error") {
        serde_json::from_value::<JsonRpcError>(Value::Object(answer)).err()
    } else if answer.contains_key("result") {
        serde_json::from_value::<JsonRpcResponse<ServerResult>>(Value::Object(answer)).err()
    } else {
        return None;
    };
    let why = why.map_or_else(|| "not one JSON-RPC message".to_owned(), |e| e.to_string());
    let (shown, _) = truncate_line(line.trim(), SHOWN);
    let message = format!(
        "its answer is not a JSON-RPC message the client can read ({why}): {shown}. \
         The server is at fault, not the call: the same call will likely fail again"
    );
    Some(error_answer(&id, UNREADABLE, message))
}

/// The error answer to request `id`: a JSON-RPC line.
fn error_answer(id: &Value, code: ErrorCode, message: String) -> String {
    let error = ErrorData::new(code, message, None);
    format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "error": error}))
}

/// A request id as JSON text (`7`, `"a"`), as it stands in a message.
fn id_text(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// The values of the `"id"` keys in a piece of JSON, as written, in order.
/// Only a key can be `"id"` followed by a colon: in a string value its
/// quotes would be escaped.
fn ids_in(json: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"\"id\"";
    let mut ids = Vec::new();
    let mut from = 0;
    while let Some(at) = json[from..]
        .windows(KEY.len())
        .position(|window| window == KEY)
    {
        let after = from + at + KEY.len();
        from = after;
        let rest = skip_space(&json[after..]);
        let Some(rest) = rest.strip_prefix(b":") else {
            continue;
        };
        let value = skip_space(rest);
        let end = match value.first() {
            Some(b'"') => value[1..]
                .iter()
                .position(|&byte| byte == b'"')
                .map(|close| close + 2),
            Some(b'-' | b'0'..=b'9') => Some(
                value
                    .iter()
                    .position(|byte| !matches!(byte, b'-' | b'0'..=b'9'))
                    .unwrap_or(value.len()),
            ),
            _ => None,
        };
        if let Some(text) = end.and_then(|end| std::str::from_utf8(&value[..end]).ok()) {
            ids.push(text.to_owned());
        }
    }
    ids
}

fn skip_space(json: &[u8]) -> &[u8] {
    let start = json
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(json.len());
    &json[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(ids: &[i64]) -> VecDeque<RequestId> {
        ids.iter().map(|&id| RequestId::Number(id)).collect()
    }

    fn overlong(line: &str) -> Overlong {
        Overlong::new(b"", line.as_bytes())
    }

    #[test]
    fn ids_are_read_from_keys_only() {
        assert_eq!(
            ids_in(br#"{"jsonrpc":"2.0", "id" : 12,"result":{"x":"\"id\": 3","id":"a b"}}"#),
            ["12", "\"a b\""]
        );
        assert_eq!(ids_in(br#"{"identity": 4, "id":}"#), Vec::<String>::new());
    }

    #[test]
    fn an_overlong_answer_is_matched_to_its_request_at_either_end() {
        let head_first = overlong(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#);
        let answer = head_first.answer(&waiting(&[2, 3])).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], 3);
        assert_eq!(answer["error"]["code"], TOO_LARGE.0);

        // The TypeScript SDK's order; the structured content's own "id" is
        // no request's.
        let id_last =
            overlong(r#"{"result":{"structuredContent":{"id":9}},"jsonrpc":"2.0","id":2}"#);
        assert!(
            id_last
                .answer(&waiting(&[2, 3]))
                .unwrap()
                .contains(r#""id":2"#)
        );

        // No id to be seen: the only call waiting, else nobody.
        let no_id = overlong(r#"{"result":{}}"#);
        assert!(no_id.answer(&waiting(&[5])).unwrap().contains(r#""id":5"#));
        assert_eq!(no_id.answer(&waiting(&[5, 6])), None);
    }

    #[test]
    fn only_an_unreadable_answer_to_a_waiting_request_is_answered_for_it() {
        let waiting = |id: &RequestId| *id == RequestId::Number(4);
        let answer = unreadable(r#"{"jsonrpc":"2.0","id":4,"error":{"code":1}}"#, waiting);
        let answer: Value = serde_json::from_str(&answer.unwrap()).unwrap();
        assert_eq!(answer["id"], 4);
        assert_eq!(answer["error"]["code"], UNREADABLE.0);
        for passed in [
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":1}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"x","error":{}}"#,
            r#"{"level":"info","id":4}"#,
            r#"log: {"id":4,"error":{"#,
        ] {
            assert_eq!(unreadable(passed, waiting), None, "{passed}");
        }
    }

    #[test]
    fn of_an_overlong_line_only_the_ends_are_kept() {
        let mut line = overlong("{\"id\":1,");
        for _ in 0..100 {
            line.extend(&[b'x'; 10_000]);
        }
        line.extend(b"\"id\":2}\n");
        assert_eq!(line.head.len(), ENDS_KEPT);
        assert_eq!(line.tail.len(), ENDS_KEPT);
        assert_eq!(line.bytes, 8 + 1_000_000 + 8);
        assert_eq!(ids_in(&line.head), ["1"]);
        assert_eq!(
            ids_in(&line.tail.iter().copied().collect::<Vec<_>>()),
            ["2"]
        );
    }
}
