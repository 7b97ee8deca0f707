//! A scripted OpenAI-format (`/chat/completions`, server-sent events) model
//! on 127.0.0.1 for driving the real binary.
//!
//! A request whose conversation holds N tool results is answered with the
//! N-th scripted call (by default one: bash running
//! `for i in 1 2 3; do echo $i; sleep 1; done`); once they are used up, with
//! the text `Done. Last user message: <text of the last user message>`,
//! so a test can see which steering message reached the model. `GET
//! /models` lists `test-model` and `served-model`. Requests
//! can be refused first (429 with `retry-after: 0`, see
//! [`SseServer::refuse_next`]), as a rate-limited API does. Each
//! connection serves one request and closes; the server thread runs until
//! the test process ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

#[path = "../http_support/rate_limited.rs"]
mod rate_limited;
use rate_limited::write_rate_limited;

/// The command the first answer runs.
pub const COUNT_COMMAND: &str = "for i in 1 2 3; do echo $i; sleep 1; done";

/// A running scripted model.
pub struct SseServer {
    /// `http://127.0.0.1:<port>/v1`
    pub base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    refusals: Arc<AtomicUsize>,
}

impl SseServer {
    /// Starts the server on a free port, scripted with the count command.
    pub fn start() -> SseServer {
        Self::with_calls(vec![("bash", json!({"command": COUNT_COMMAND}))])
    }

    /// Starts the server on a free port, answering with `calls` (tool name
    /// and arguments) one per turn.
    pub fn with_calls(calls: Vec<(&'static str, Value)>) -> SseServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let refusals = Arc::new(AtomicUsize::new(0));
        let to_refuse = Arc::clone(&refusals);
        std::thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let recorded = Arc::clone(&recorded);
                let to_refuse = Arc::clone(&to_refuse);
                let calls = calls.clone();
                std::thread::spawn(move || serve(socket, &recorded, &to_refuse, &calls));
            }
        });
        SseServer {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            requests,
            refusals,
        }
    }

    /// Refuses the next `count` requests with 429 Too Many Requests.
    pub fn refuse_next(&self, count: usize) {
        self.refusals.store(count, Ordering::SeqCst);
    }

    /// The bodies of the requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(
    socket: TcpStream,
    recorded: &Mutex<Vec<Value>>,
    refusals: &AtomicUsize,
    calls: &[(&'static str, Value)],
) {
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    if request_line.starts_with("GET ") && request_line.contains("/models ") {
        let list = r#"{"object":"list","data":[{"id":"test-model"},{"id":"served-model"}]}"#;
        let mut socket = socket;
        let _ = write!(
            socket,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{list}",
            list.len()
        );
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    recorded.lock().unwrap().push(request.clone());
    let mut socket = socket;
    if refusals
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        let _ = write_rate_limited(&mut socket);
        return;
    }
    let events = answer(&request, calls);
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    );
    for event in events {
        out.push_str(&format!("data: {event}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    let _ = socket.write_all(out.as_bytes());
}

/// The chunks answering `request` (see the module docs).
fn answer(request: &Value, calls: &[(&'static str, Value)]) -> Vec<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let usage = json!({"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020});
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    if let Some((name, arguments)) = calls.get(results) {
        let arguments = arguments.to_string();
        let id = if results == 0 {
            "call_count".to_owned()
        } else {
            format!("call_{results}")
        };
        return vec![
            json!({"id": "r1", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
                {"index": 0, "id": id, "type": "function",
                 "function": {"name": name, "arguments": arguments}}]}, "finish_reason": null}]}),
            json!({"id": "r1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": usage}),
        ];
    }
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(user_text)
        .unwrap_or_default();
    vec![
        json!({"id": "r2", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Done. Last user message: "}, "finish_reason": null}]}),
        json!({"id": "r2", "choices": [{"index": 0, "delta": {"content": last_user}, "finish_reason": null}]}),
        json!({"id": "r2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}),
    ]
}

fn user_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
