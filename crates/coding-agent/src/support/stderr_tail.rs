//! The end of what a child process wrote to stderr, kept to explain its
//! failure (an MCP server that would not start, ssh's reason for a dropped
//! connection) without holding all of a chatty process's logs.

use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::sync::lock;

/// Reads `pipe` to its end, keeping its last `limit` bytes in `tail`.
pub async fn keep_tail(mut pipe: impl AsyncRead + Unpin, tail: &Mutex<Vec<u8>>, limit: usize) {
    let mut buffer = [0u8; 1024];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let mut tail = lock(tail);
        tail.extend_from_slice(&buffer[..n]);
        let excess = tail.len().saturating_sub(limit);
        tail.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_last_bytes_are_kept() {
        let tail = Mutex::new(Vec::new());
        let written: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        keep_tail(&written[..], &tail, 100).await;
        assert_eq!(*lock(&tail), written[2900..]);
    }
}
