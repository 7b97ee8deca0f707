//! `cargo xtask bench-session`: what one turn costs as a conversation grows.
//!
//! The release binary runs one prompt in print mode against a model server on
//! 127.0.0.1 that answers at once: its first N answers each ask for a `read`
//! of the same 4 KB file, the last one is text. The server notes when each request
//! arrives and when its answer was sent, so the gap before request `k` is the
//! client's whole turn (decoding the stream, the tool call through the
//! pipeline, the session file, building the next request), without the model.
//!
//! Only the request body has to grow with the history (every old turn is sent
//! again). So the figures are the gap at turns 30 and N, the request body at
//! both, and as the baseline, measured in the same run, what parsing and
//! writing that body once with `serde_json` costs: a client whose per-turn
//! cost grows faster than that clones or re-walks the history more than once.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{cargo, workspace_root};

/// The turns of a full run (the issue's long session).
const TURNS: usize = 300;

/// The earlier turn the last one is compared with.
const EARLY_TURN: usize = 30;

/// Gaps are the median over this many turns ending at the one reported, so
/// one scheduler hiccup does not make the figure.
const WINDOW: usize = 9;

/// One request as the server saw it.
#[derive(Debug, Clone, Copy)]
struct Exchange {
    arrived: Instant,
    answered: Instant,
    body_bytes: usize,
}

/// Entry point: `cargo xtask bench-session [--quick]` (`--quick`: 60 turns).
pub fn run(quick: bool) -> Result<()> {
    let turns = if quick { 60 } else { TURNS };
    cargo(&["build", "--release", "-p", "coding-agent"])?;
    let agent = workspace_root().join("target/release/coding-agent");
    let dir = workspace_root().join("target/bench/session");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("agent"))?;
    // 300 turns of a 4 KB file pass any model's window: without this the
    // session compacts on the way, and the figures would measure a summary
    // request instead of a turn.
    std::fs::write(
        dir.join("agent/settings.json"),
        r#"{"compaction":{"enabled":false}}"#,
    )?;
    std::fs::create_dir_all(dir.join("project"))?;
    let line = format!("{}\n", "x".repeat(63));
    std::fs::write(dir.join("project/notes.txt"), line.repeat(64))?;

    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
    let bodies: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    {
        let (log, bodies) = (Arc::clone(&log), Arc::clone(&bodies));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, bodies) = (Arc::clone(&log), Arc::clone(&bodies));
                std::thread::spawn(move || serve(stream, turns, &log, &bodies));
            }
        });
    }

    let started = Instant::now();
    let output = run_agent(&agent, &dir, &format!("http://{addr}/v1"))?;
    let total = started.elapsed();
    if !output.contains("done") {
        bail!("the session did not end with the model's answer; it printed:\n{output}");
    }
    let log = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let bodies = bodies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    // One request per tool turn, and the one the text answers.
    if log.len() != turns + 1 {
        bail!(
            "expected {} requests, the server saw {}",
            turns + 1,
            log.len()
        );
    }
    report(&log, &bodies, total, EARLY_TURN.min(turns / 2));
    Ok(())
}

fn run_agent(agent: &Path, dir: &Path, base_url: &str) -> Result<String> {
    let output = Command::new(agent)
        .args(["--provider", "openai", "--model", "bench-model"])
        .args(["--base-url", base_url, "--api-key", "bench-key"])
        .args(["-p", "Read notes.txt until I say stop."])
        .current_dir(dir.join("project"))
        .env("CODING_AGENT_DIR", dir.join("agent"))
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", agent.display()))?;
    if !output.status.success() {
        bail!(
            "coding-agent failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Prints the gaps and body sizes at the early and the last turn.
fn report(log: &[Exchange], bodies: &[Vec<u8>], total: Duration, early: usize) {
    // The gap before request k (k >= 1) is turn k's client time.
    let gap = |k: usize| log[k].arrived.duration_since(log[k - 1].answered);
    let median_gap = |turn: usize| {
        let first = turn.saturating_sub(WINDOW - 1).max(1);
        let mut gaps: Vec<Duration> = (first..=turn).map(gap).collect();
        gaps.sort();
        gaps[gaps.len() / 2]
    };
    let baseline = |turn: usize| serde_baseline(&bodies[turn]);
    let last = log.len() - 1;
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!();
    println!(
        "| turn | gap before the request (µs, median of {WINDOW}) | request body (KB) | baseline: serde_json parse + write of that body (µs) | gap / baseline |"
    );
    println!("|---|---|---|---|---|");
    for turn in [early, last] {
        let (g, b) = (median_gap(turn), baseline(turn));
        println!(
            "| {turn} | {:.0} | {:.1} | {:.0} | {:.1}x |",
            micros(g),
            log[turn].body_bytes as f64 / 1024.0,
            micros(b),
            micros(g) / micros(b).max(1.0)
        );
    }
    println!();
    println!(
        "turn {last} vs turn {early}: gap {:.2}x, body {:.2}x, baseline {:.2}x; whole session {:.2} s",
        micros(median_gap(last)) / micros(median_gap(early)).max(1.0),
        log[last].body_bytes as f64 / log[early].body_bytes.max(1) as f64,
        micros(baseline(last)) / micros(baseline(early)).max(1.0),
        total.as_secs_f64()
    );
}

/// The best of five parses and writes of `body`: the work any client must do
/// once per request at that size.
fn serde_baseline(body: &[u8]) -> Duration {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let bytes = serde_json::to_vec(&value).unwrap_or_default();
            std::hint::black_box(bytes);
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Serves one connection: each request answered at once, a `read` call until
/// `turns` requests have been answered, then text.
fn serve(
    stream: TcpStream,
    turns: usize,
    log: &Mutex<Vec<Exchange>>,
    bodies: &Mutex<Vec<Vec<u8>>>,
) {
    // Each event is its own small write: with Nagle's algorithm on, the last
    // one waits for the client's delayed ACK (40 ms on Linux), and every
    // gap measured would be that wait rather than the client's turn.
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Some(body) = read_body(&mut reader) {
        let arrived = Instant::now();
        let index = bodies.lock().unwrap_or_else(PoisonError::into_inner).len();
        let events = answer(index, turns);
        if write_events(&mut writer, &events).is_err() {
            return;
        }
        let answered = Instant::now();
        log.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Exchange {
                arrived,
                answered,
                body_bytes: body.len(),
            });
        bodies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(body);
    }
}

/// The body of the next request (Content-Length framed, as reqwest sends
/// JSON); `None` when the connection ends.
fn read_body(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = 0;
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// The OpenAI chat-completions events answering request `index`.
fn answer(index: usize, turns: usize) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "bench", "object": "chat.completion.chunk", "created": 0,
            "model": "bench-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut events = if index < turns {
        vec![
            chunk(json!({"role": "assistant", "content": null}), Value::Null),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": format!("call_{index}"), "type": "function",
                    "function": {"name": "read", "arguments": "{\"path\":\"notes.txt\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ]
    } else {
        vec![
            chunk(json!({"role": "assistant", "content": "done"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ]
    };
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn write_events(writer: &mut TcpStream, events: &[String]) -> std::io::Result<()> {
    writer.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    )?;
    for event in events {
        write!(writer, "{:x}\r\n{event}\r\n", event.len())?;
    }
    writer.write_all(b"0\r\n\r\n")?;
    writer.flush()
}
