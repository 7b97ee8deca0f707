//! The refusal a rate-limited API answers with, for the scripted model
//! servers: 429, OpenAI's JSON error body, and `retry-after: 0` so the
//! client retries at once. The connection is closed after it.

use std::io::Write;

/// Writes the whole refusal to `writer`.
pub fn write_rate_limited(writer: &mut impl Write) -> std::io::Result<()> {
    let body = r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#;
    write!(
        writer,
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 0\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )?;
    writer.flush()
}
