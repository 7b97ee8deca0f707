//! A loopback stand-in for Anthropic's API: a tokio `TcpListener` on
//! 127.0.0.1 speaking just enough HTTP/1.1. It records every request and
//! answers each connection with the next scripted reply: server-sent events
//! written byte for byte (chunked, as Anthropic streams), or a status with a
//! body. Every reply closes its connection, so a retry is a new connection.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::{AssistantContent, AssistantMessageEvent};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`.
    pub method: String,
    /// `/v1/messages`.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
}

impl Recorded {
    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What to do with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200 text/event-stream`, then these parts in order.
    Sse(Vec<Part>),
    /// A status with extra headers and a body.
    Status {
        code: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
}

/// A piece of a streamed reply.
#[derive(Debug, Clone)]
pub enum Part {
    /// These bytes as one HTTP chunk.
    Bytes(String),
    /// Close the socket now, without the final empty chunk.
    Cut,
    /// Send nothing more and keep the connection open until the client leaves.
    Hang,
}

/// A running server.
pub struct Server {
    base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Starts a server answering with `replies`, one per connection, in order.
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies.next().unwrap_or(Reply::Status {
                    code: 404,
                    headers: vec![],
                    body: "no more scripted replies".into(),
                });
                let recorded = recorded.clone();
                tokio::spawn(serve(socket, reply, recorded));
            }
        });
        Server { base_url, requests }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Requests so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    match reply {
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
        Reply::Sse(parts) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for part in parts {
                match part {
                    Part::Bytes(bytes) => {
                        let chunk = format!("{:x}\r\n{bytes}\r\n", bytes.len());
                        if socket.write_all(chunk.as_bytes()).await.is_err() {
                            return;
                        }
                        let _ = socket.flush().await;
                    }
                    Part::Cut => return,
                    Part::Hang => {
                        // Until the client closes (or a minute passes).
                        let mut sink = [0u8; 256];
                        let _ = tokio::time::timeout(Duration::from_secs(60), async {
                            while let Ok(n) = socket.read(&mut sink).await {
                                if n == 0 {
                                    break;
                                }
                            }
                        })
                        .await;
                        return;
                    }
                }
            }
            let _ = socket.write_all(b"0\r\n\r\n").await;
        }
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// A reply streaming `events` (each a complete `event: ...\ndata: ...\n\n`
/// text), one chunk per event, ending cleanly.
pub fn sse(events: &[&str]) -> Reply {
    Reply::Sse(
        events
            .iter()
            .map(|e| Part::Bytes((*e).to_owned()))
            .collect(),
    )
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
