//! A model server on 127.0.0.1 for the end-to-end tests: HTTP/1.1 with
//! keep-alive, every request recorded, every answer a scripted reply sent as
//! a chunked `text/event-stream` body, one chunk per event, as the real APIs
//! stream theirs.
//!
//! The script sees each request (with its index, counted from 0 across all
//! connections) and returns the reply: events (see [`super::wire`] for the
//! bytes of each API) or a stall that holds the connection open, unanswered,
//! until the server is dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::wire::{Answer, Wire};

#[path = "../http_support/rate_limited.rs"]
mod rate_limited;
use rate_limited::write_rate_limited;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    /// Its place among all requests, from 0.
    pub index: usize,
    /// `POST`.
    pub method: String,
    /// The path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names in lower case, with their values, in order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl Request {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What the server answers a request with.
pub enum Reply {
    /// `200 OK` with these server-sent events, each a complete event
    /// (`data: ...\n\n`), each sent as its own chunk.
    Events(Vec<String>),
    /// No answer at all: the connection stays open until the server is dropped.
    Stall,
    /// A rate-limited API's refusal (429, retry at once), then the
    /// connection closes.
    RateLimited,
    /// A rate limit's refusal (429) asking to retry after this many
    /// seconds, then the connection closes.
    RateLimitedFor(u64),
    /// `200 OK` with these events, then the connection closes without
    /// ending the body: a stream cut mid-answer.
    Cut(Vec<String>),
    /// A refusal with this status and JSON body, then the connection closes.
    Status(u16, String),
}

type Script = dyn Fn(&Request) -> Reply + Send + Sync;

struct Shared {
    script: Box<Script>,
    state: Mutex<State>,
    /// Notified when a request arrives and when the server shuts down.
    changed: Condvar,
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    shutdown: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running server; dropping it ends stalls and stops accepting.
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Starts a server on a free loopback port answering with `script`.
    pub fn start(script: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            script: Box::new(script),
            state: Mutex::default(),
            changed: Condvar::new(),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if shared.lock().shutdown {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let shared = Arc::clone(&shared);
                    std::thread::spawn(move || serve(stream, &shared));
                }
            })
        };
        ModelServer {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// Starts a server that answers the `i`-th request with `answers[i]` in
    /// `wire`'s format, and every request after them with the last one: the
    /// script of most tests (tool calls, then a closing text).
    pub fn answering(wire: Wire, answers: Vec<Answer>) -> Self {
        assert!(!answers.is_empty(), "a server needs at least one answer");
        ModelServer::start(move |request| {
            let answer = &answers[request.index.min(answers.len() - 1)];
            Reply::Events(wire.events(answer))
        })
    }

    /// Starts a server that answers the `i`-th request with `answers[i]` in
    /// `wire`'s format, and any request after them with the text
    /// `unexpected request N`, so a test that asks once too often fails on
    /// what it reads.
    pub fn only(wire: Wire, answers: Vec<Answer>) -> Self {
        ModelServer::start(move |request| {
            let answer = answers.get(request.index).cloned().unwrap_or_else(|| {
                Answer::text(&[&format!("unexpected request {}", request.index)])
            });
            Reply::Events(wire.events(&answer))
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// Waits until `count` requests have arrived; panics after `timeout`.
    pub fn wait_for_requests(&self, count: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        while state.requests.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "waited for {count} requests, got {}",
                state.requests.len()
            );
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.changed.notify_all();
        // Wakes the acceptor so it sees the shutdown.
        let _ = TcpStream::connect(self.addr);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Serves the requests of one connection until the client closes it.
fn serve(stream: TcpStream, shared: &Shared) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Some(mut request) = read_request(&mut reader) {
        {
            let mut state = shared.lock();
            request.index = state.requests.len();
            state.requests.push(request.clone());
        }
        shared.changed.notify_all();
        match (shared.script)(&request) {
            Reply::Events(events) => {
                if write_events(&mut writer, &events).is_err() {
                    return;
                }
            }
            Reply::RateLimited => {
                let _ = write_rate_limited(&mut writer);
                return;
            }
            Reply::RateLimitedFor(seconds) => {
                let body =
                    r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#;
                let _ = write!(
                    writer,
                    "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: {seconds}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = writer.flush();
                return;
            }
            Reply::Cut(events) => {
                let _ = write_cut(&mut writer, &events);
                return;
            }
            Reply::Status(status, body) => {
                let _ = write!(
                    writer,
                    "HTTP/1.1 {status} Refused\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = writer.flush();
                return;
            }
            Reply::Stall => {
                let mut state = shared.lock();
                while !state.shutdown {
                    state = shared
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                return;
            }
        }
    }
}

/// The next request on the connection; `None` at its end or on garbage.
fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value): &(String, String)| value.clone())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        read_chunked(reader)?
    } else {
        let length: usize = header("content-length").map_or(Some(0), |v| v.parse().ok())?;
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some(Request {
        index: 0,
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let mut chunk = vec![0; size + 2]; // the data and its CRLF
        reader.read_exact(&mut chunk).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn write_events(writer: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    write_cut(writer, events)?;
    writer.write_all(b"0\r\n\r\n")?;
    writer.flush()
}

/// The head and `events` as chunks, without the last chunk that ends the body.
fn write_cut(writer: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    writer.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
    )?;
    writer.flush()?;
    for event in events {
        write!(writer, "{:x}\r\n{event}\r\n", event.len())?;
        writer.flush()?;
    }
    Ok(())
}
