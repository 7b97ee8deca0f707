//! A scripted HTTP/1.1 server on 127.0.0.1 for provider tests, and helpers
//! to compare what a provider streams.
//!
//! Each accepted connection serves one request with the next [`Reply`] of the
//! script and then closes (`Connection: close`), so retries open new
//! connections and every request is recorded in order; a request beyond the
//! script gets `404 no more scripted replies`. Replies are written byte for
//! byte as scripted: a status with a body, or an event stream made of
//! [`Step`]s (bytes, pauses, an abrupt cut or reset, or holding the
//! connection open until the client leaves). No step waits longer than [`MAX_HOLD`].

// Test code: a failed unwrap here is a failed test. Not every test uses every helper.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::providers::{ProviderConfig, RetryNotice};
use agent_ai::{AssistantContent, AssistantMessageEvent};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Longest a [`Step::Hold`] keeps a connection open when the client does not
/// go away first.
pub const MAX_HOLD: Duration = Duration::from_secs(10);

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete answer with this status, extra headers and body.
    Status {
        /// HTTP status code.
        status: u16,
        /// Extra headers (`retry-after`, ...).
        headers: Vec<(&'static str, String)>,
        /// The body, sent with a `content-length`.
        body: String,
    },
    /// A `200 text/event-stream` answer written step by step.
    Stream {
        /// `transfer-encoding: chunked` (each `Send` one chunk) when true;
        /// else a body delimited by closing the connection.
        chunked: bool,
        /// What to write, in order.
        steps: Vec<Step>,
    },
}

impl Reply {
    /// A chunked event stream of `events` (each a complete server-sent
    /// event, `...\n\n`), one chunk each, ending cleanly.
    pub fn events<S: Into<String>>(events: impl IntoIterator<Item = S>) -> Reply {
        Reply::steps(events.into_iter().map(|e| Step::Send(e.into())).collect())
    }

    /// A chunked event stream written as `steps`.
    pub fn steps(steps: Vec<Step>) -> Reply {
        Reply::Stream {
            chunked: true,
            steps,
        }
    }
}

/// One step of a streamed answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// Write these bytes (one chunk when chunked).
    Send(String),
    /// Wait before the next step.
    Pause(Duration),
    /// Close the connection now, without the chunked terminator: the body
    /// is cut mid-way.
    Cut,
    /// Reset the connection now (an RST, as a crashed proxy's): the client
    /// reads `Connection reset by peer`.
    Reset,
    /// Keep the connection open, sending nothing, until the client closes it
    /// (or [`MAX_HOLD`] passes).
    Hold,
}

/// A recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`.
    pub method: String,
    /// `/v1/chat/completions`.
    pub path: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body, parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl Request {
    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A running test server.
pub struct TestServer {
    address: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    expired_holds: Arc<AtomicUsize>,
}

impl TestServer {
    /// Starts a server that answers successive requests with `replies`.
    pub async fn start(replies: Vec<Reply>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let expired_holds = Arc::new(AtomicUsize::new(0));
        let expired = Arc::clone(&expired_holds);
        tokio::spawn(async move {
            let mut script = replies.into_iter();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = script.next().unwrap_or_else(|| Reply::Status {
                    status: 404,
                    headers: vec![],
                    body: "no more scripted replies".into(),
                });
                tokio::spawn(serve(
                    socket,
                    reply,
                    Arc::clone(&recorded),
                    Arc::clone(&expired),
                ));
            }
        });
        TestServer {
            address,
            requests,
            expired_holds,
        }
    }

    /// `http://127.0.0.1:<port>` followed by `path` (`""`, or `/v1` for a
    /// base URL that includes the API version).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// How many [`Step::Hold`]s ended because [`MAX_HOLD`] passed (the
    /// client never closed the connection). Counted before the server
    /// closes it: a client that saw the end of such a body sees the count.
    pub fn expired_holds(&self) -> usize {
        self.expired_holds.load(Ordering::SeqCst)
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    recorded: Arc<Mutex<Vec<Request>>>,
    expired_holds: Arc<AtomicUsize>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            // JSON unless the reply names its own type.
            if !headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            {
                head.push_str("content-type: application/json\r\n");
            }
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
        Reply::Stream { chunked, steps } => {
            let mut head = String::from(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nconnection: close\r\n",
            );
            if chunked {
                head.push_str("transfer-encoding: chunked\r\n");
            }
            head.push_str("\r\n");
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for step in steps {
                match step {
                    Step::Send(bytes) => {
                        let framed = if chunked {
                            format!("{:x}\r\n{bytes}\r\n", bytes.len())
                        } else {
                            bytes
                        };
                        if socket.write_all(framed.as_bytes()).await.is_err() {
                            return;
                        }
                        let _ = socket.flush().await;
                    }
                    Step::Pause(duration) => tokio::time::sleep(duration).await,
                    Step::Cut => return,
                    Step::Reset => {
                        socket.set_zero_linger().unwrap();
                        return;
                    }
                    Step::Hold => {
                        let mut buffer = [0u8; 64];
                        let held = tokio::time::timeout(MAX_HOLD, async {
                            // Returns when the client closes (0) or errors.
                            while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
                        })
                        .await;
                        if held.is_err() {
                            expired_holds.fetch_add(1, Ordering::SeqCst);
                        }
                        return;
                    }
                }
            }
            if chunked {
                let _ = socket.write_all(b"0\r\n\r\n").await;
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// Reads one request: the head up to the blank line, then `content-length`
/// bytes of body.
async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// One line per event: its type, index and payload, and for tool calls the
/// arguments parsed so far, so whole sequences can be compared at a glance.
pub fn trace(events: &[AssistantMessageEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| match event {
            AssistantMessageEvent::Start { .. } => "start".to_owned(),
            AssistantMessageEvent::TextStart { content_index, .. } => {
                format!("text_start {content_index}")
            }
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
                ..
            } => format!("text_delta {content_index} {delta:?}"),
            AssistantMessageEvent::TextEnd {
                content_index,
                content,
                ..
            } => format!("text_end {content_index} {content:?}"),
            AssistantMessageEvent::ThinkingStart { content_index, .. } => {
                format!("thinking_start {content_index}")
            }
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
                ..
            } => format!("thinking_delta {content_index} {delta:?}"),
            AssistantMessageEvent::ThinkingEnd {
                content_index,
                content,
                ..
            } => format!("thinking_end {content_index} {content:?}"),
            AssistantMessageEvent::ToolCallStart {
                content_index,
                partial,
            } => match &partial.content[*content_index] {
                AssistantContent::ToolCall(call) => {
                    format!("toolcall_start {content_index} {} {}", call.id, call.name)
                }
                other => format!("toolcall_start {content_index} on {other:?}"),
            },
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
                partial,
            } => match &partial.content[*content_index] {
                AssistantContent::ToolCall(call) => {
                    format!(
                        "toolcall_delta {content_index} {delta:?} -> {}",
                        call.arguments
                    )
                }
                other => format!("toolcall_delta {content_index} on {other:?}"),
            },
            AssistantMessageEvent::ToolCallEnd {
                content_index,
                tool_call,
                ..
            } => format!(
                "toolcall_end {content_index} {} {} {}",
                tool_call.id, tool_call.name, tool_call.arguments
            ),
            AssistantMessageEvent::Done { reason, .. } => {
                format!(
                    "done {}",
                    serde_json::to_value(reason).unwrap().as_str().unwrap()
                )
            }
            AssistantMessageEvent::Error { reason, error } => format!(
                "error {}: {}",
                serde_json::to_value(reason).unwrap().as_str().unwrap(),
                error
                    .error_message
                    .as_deref()
                    .unwrap_or("<no errorMessage>")
            ),
        })
        .collect()
}

/// `value` with every `timestamp` set to 0, so messages compare whole.
pub fn without_timestamps(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, inner) in map.iter_mut() {
                    if key == "timestamp" {
                        *inner = Value::from(0);
                    } else {
                        walk(inner);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// Sets `config.on_retry` to record every retry notice, and returns the record.
pub fn recorded_notices(config: &mut ProviderConfig) -> Arc<Mutex<Vec<RetryNotice>>> {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    config.on_retry = Some(Arc::new(move |notice: &RetryNotice| {
        sink.lock().unwrap().push(notice.clone());
    }));
    notices
}
