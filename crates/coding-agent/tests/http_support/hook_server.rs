//! A loopback HTTP server for `http` hooks: each path answers with the
//! status and body it was given (a path without one never answers, for
//! timeouts), and every request is kept, headers and body, for the test to
//! read.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request the server received.
#[derive(Debug, Clone)]
pub struct HookRequest {
    /// The path, e.g. `/pre`.
    pub path: String,
    /// The headers, names lowercased.
    pub headers: HashMap<String, String>,
    /// The body, parsed as JSON.
    pub body: serde_json::Value,
}

/// The server; it runs until the test process ends.
pub struct HookServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<HookRequest>>>,
}

impl HookServer {
    /// Serves `answers`: path -> (status line, body).
    pub fn start(answers: &[(&str, &str, &str)]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let answers: HashMap<String, (String, String)> = answers
            .iter()
            .map(|(path, status, body)| {
                (
                    (*path).to_owned(),
                    ((*status).to_owned(), (*body).to_owned()),
                )
            })
            .collect();
        let requests: Arc<Mutex<Vec<HookRequest>>> = Arc::default();
        let kept = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (answers, kept) = (answers.clone(), kept.clone());
                std::thread::spawn(move || serve(stream, &answers, &kept));
            }
        });
        HookServer { url, requests }
    }

    /// The requests so far, in the order they came.
    pub fn requests(&self) -> Vec<HookRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

fn serve(
    stream: TcpStream,
    answers: &HashMap<String, (String, String)>,
    kept: &Mutex<Vec<HookRequest>>,
) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            headers.insert(name.to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    kept.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(HookRequest {
            path: path.clone(),
            headers,
            body,
        });
    let Some((status, body)) = answers.get(&path) else {
        // No answer: the hook's timeout ends the wait.
        std::thread::sleep(std::time::Duration::from_secs(60));
        return;
    };
    let _ = write!(
        writer,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = writer.flush();
}
