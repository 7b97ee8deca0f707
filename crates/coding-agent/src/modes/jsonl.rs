//! Strict JSONL framing (Pi's `rpc/jsonl.ts`): records end with `\n` only.
//! A trailing `\r` is dropped (CRLF clients), U+2028/U+2029 inside strings
//! are data, not line ends, and a last record without `\n` still counts.

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

/// `value` as one JSONL record: compact JSON and `\n`.
pub fn serialize_json_line(value: &Value) -> String {
    format!("{value}\n")
}

/// Splits a byte stream into lines on `\n` only.
#[derive(Debug, Default)]
pub struct LineSplitter {
    /// The line begun and not ended yet: it holds no `\n`, so each chunk is
    /// scanned once (a 40 MB record in 64 KiB chunks was scanned from its
    /// start at every chunk).
    buffer: Vec<u8>,
}

impl LineSplitter {
    /// An empty splitter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a chunk; returns the lines it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (line, after) = rest.split_at(end);
            if self.buffer.is_empty() {
                lines.push(finish_line(line));
            } else {
                self.buffer.extend_from_slice(line);
                lines.push(finish_line(&std::mem::take(&mut self.buffer)));
            }
            rest = after.get(1..).unwrap_or_default();
        }
        self.buffer.extend_from_slice(rest);
        lines
    }

    /// The last line, when the stream ended without `\n`.
    pub fn finish(&mut self) -> Option<String> {
        if self.buffer.is_empty() {
            return None;
        }
        let line = std::mem::take(&mut self.buffer);
        Some(finish_line(&line))
    }
}

fn finish_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// Reads `input` to its end, sending each line as it completes; stops early
/// when the receiver is gone.
pub async fn read_lines(
    mut input: impl AsyncRead + Unpin,
    lines: tokio::sync::mpsc::UnboundedSender<String>,
) {
    let mut splitter = LineSplitter::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let read = match input.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        for line in splitter.push(&chunk[..read]) {
            if lines.send(line).is_err() {
                return;
            }
        }
    }
    if let Some(line) = splitter.finish() {
        let _ = lines.send(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unicode_separators_stay_inside_one_record() {
        let line = serialize_json_line(&json!({"text": "a\u{2028}b\u{2029}c"}));
        assert_eq!(line, "{\"text\":\"a\u{2028}b\u{2029}c\"}\n");
        let mut splitter = LineSplitter::new();
        let lines = splitter.push(line.as_bytes());
        assert_eq!(lines.len(), 1);
        let back: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(back, json!({"text": "a\u{2028}b\u{2029}c"}));
    }

    #[test]
    fn crlf_records_lose_their_carriage_return() {
        let mut splitter = LineSplitter::new();
        assert_eq!(
            splitter.push(b"{\"a\":1}\r\n{\"b\":2}\r\n"),
            ["{\"a\":1}", "{\"b\":2}"]
        );
        assert_eq!(splitter.finish(), None);
    }

    #[test]
    fn a_last_record_without_newline_is_still_a_line() {
        let mut splitter = LineSplitter::new();
        assert!(splitter.push(b"{\"a\":").is_empty());
        assert!(splitter.push(b"1}").is_empty());
        assert_eq!(splitter.finish().as_deref(), Some("{\"a\":1}"));
    }

    #[test]
    fn records_come_out_whole_however_the_stream_is_cut() {
        let records: Vec<String> = (0..200)
            .map(|n| format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(n * 7 % 300)))
            .collect();
        let stream: Vec<u8> = records
            .iter()
            .flat_map(|r| format!("{r}\n").into_bytes())
            .collect();
        for size in [1, 2, 3, 7, 64, 1000, stream.len()] {
            let mut splitter = LineSplitter::new();
            let lines: Vec<String> = stream.chunks(size).flat_map(|c| splitter.push(c)).collect();
            assert_eq!(lines, records, "chunks of {size}");
            assert_eq!(splitter.finish(), None);
        }
    }

    #[test]
    fn a_character_split_across_chunks_is_decoded_whole() {
        let mut splitter = LineSplitter::new();
        let bytes = "é\n".as_bytes();
        assert!(splitter.push(&bytes[..1]).is_empty());
        assert_eq!(splitter.push(&bytes[1..]), ["é"]);
    }
}
