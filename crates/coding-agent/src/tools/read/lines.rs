//! Streaming line windows: what `read` shows of a file, computed from the
//! file's bytes as they stream past, in memory bounded by the output limits.
//!
//! Pi decodes the whole file, splits it on `\n`, joins the selected lines and
//! runs `truncateHead` on the result. [`WindowCollector`] gives the same answer
//! (same text, same [`Truncation`] accounting, same line counts) while holding
//! only the kept head and the line being considered, so the 50 lines at line
//! 1,000,000 of a 2 GB file cost what any 50 lines cost (DEVIATIONS #6).
//!
//! Bytes are decoded as UTF-8 lossily, one U+FFFD per invalid sequence, as
//! Node's `Buffer.toString("utf-8")` does; byte counts are of the decoded
//! text. Splitting on `\n` before or after decoding gives the same lines
//! (`\n` never belongs to a multi-byte sequence), so decoding can work line by
//! line or chunk by chunk.
//!
//! The collectors do no I/O: whoever has the bytes (a local file, a remote
//! stream) pushes them in any chunk sizes and calls `finish`.

use crate::support::truncate::{Limits, TruncatedBy, Truncation};

/// Bytes U+FFFD takes in UTF-8, what each invalid sequence decodes to.
const REPLACEMENT_LEN: usize = '\u{FFFD}'.len_utf8();

/// Counts the bytes that lossy UTF-8 decoding of a stream produces, without
/// keeping the stream. Holds at most three bytes of an unfinished character
/// between pushes.
#[derive(Debug, Default, Clone)]
struct DecodedLen {
    carry: [u8; 4],
    carry_len: usize,
    decoded: usize,
}

impl DecodedLen {
    fn push(&mut self, mut bytes: &[u8]) {
        // Finish a character split across pushes, one byte at a time.
        while self.carry_len > 0 {
            let Some((&byte, rest)) = bytes.split_first() else {
                return;
            };
            self.carry[self.carry_len] = byte;
            self.carry_len += 1;
            bytes = rest;
            match std::str::from_utf8(&self.carry[..self.carry_len]) {
                Ok(text) => {
                    self.decoded += text.len();
                    self.carry_len = 0;
                }
                Err(e) => match e.error_len() {
                    None => {}
                    Some(bad) => {
                        // The invalid prefix becomes one U+FFFD; what follows
                        // it starts afresh.
                        self.decoded += REPLACEMENT_LEN;
                        let leftover = self.carry;
                        let leftover_len = self.carry_len;
                        self.carry_len = 0;
                        self.push(&leftover[bad..leftover_len]);
                    }
                },
            }
        }
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    self.decoded += text.len();
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    self.decoded += valid;
                    match e.error_len() {
                        Some(bad) => {
                            self.decoded += REPLACEMENT_LEN;
                            bytes = &bytes[valid + bad..];
                        }
                        None => {
                            let tail = &bytes[valid..];
                            self.carry[..tail.len()].copy_from_slice(tail);
                            self.carry_len = tail.len();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Ends the stream: an unfinished character decodes to one U+FFFD.
    /// Returns the decoded length and starts counting afresh.
    fn finish(&mut self) -> usize {
        if self.carry_len > 0 {
            self.decoded += REPLACEMENT_LEN;
            self.carry_len = 0;
        }
        std::mem::take(&mut self.decoded)
    }
}

/// Keeps the head of a text pushed in pieces, exactly as
/// [`truncate_head`](crate::support::truncate::truncate_head) would keep it
/// from the whole (lossily decoded) text.
///
/// Memory: the kept text (at most `max_bytes`) plus the line under
/// consideration, which is dropped as soon as it cannot fit; a line too long
/// to show is only measured.
#[derive(Debug)]
pub struct HeadCollector {
    limits: Limits,
    kept: String,
    kept_lines: usize,
    kept_bytes: usize,
    /// Lines ended so far (each `\n` ends one).
    ended_lines: usize,
    /// Decoded bytes of the ended lines and the newlines between them.
    total_bytes: usize,
    /// Set once a line did not fit; from then on the text is only counted.
    cut: Option<TruncatedBy>,
    /// Raw bytes of the current line while it may still fit.
    line: Vec<u8>,
    line_may_fit: bool,
    /// Decoded length of the current line; once cut and the first line is
    /// known, of everything after the last line considered.
    line_len: DecodedLen,
    first_line_bytes: Option<usize>,
}

impl HeadCollector {
    /// A collector keeping at most `limits` of the text.
    pub fn new(limits: Limits) -> Self {
        HeadCollector {
            limits,
            kept: String::new(),
            kept_lines: 0,
            kept_bytes: 0,
            ended_lines: 0,
            total_bytes: 0,
            cut: None,
            line: Vec::new(),
            line_may_fit: true,
            line_len: DecodedLen::default(),
            first_line_bytes: None,
        }
    }

    /// Whether only counting is left: the head is decided and the first
    /// line's length known, so lines need not be told apart any more.
    fn counting_only(&self) -> bool {
        self.cut.is_some() && self.first_line_bytes.is_some()
    }

    /// Adds the next piece of the text (it may hold any number of `\n`).
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.counting_only() {
                self.ended_lines += memchr::memchr_iter(b'\n', bytes).count();
                self.line_len.push(bytes);
                return;
            }
            match memchr::memchr(b'\n', bytes) {
                Some(newline) => {
                    self.extend_line(&bytes[..newline]);
                    self.end_line();
                    self.total_bytes += 1;
                    bytes = &bytes[newline + 1..];
                }
                None => {
                    self.extend_line(bytes);
                    return;
                }
            }
        }
    }

    fn extend_line(&mut self, piece: &[u8]) {
        self.line_len.push(piece);
        if self.cut.is_some() || !self.line_may_fit {
            return;
        }
        if self.kept_lines >= self.limits.max_lines {
            // The line limit cuts here whatever this line holds.
            self.line_may_fit = false;
            self.line = Vec::new();
            return;
        }
        let separator = usize::from(self.kept_lines > 0);
        let budget = self
            .limits
            .max_bytes
            .saturating_sub(self.kept_bytes + separator);
        // Decoding never shrinks bytes, so a line already over the budget in
        // raw bytes cannot fit once decoded either.
        if self.line.len() + piece.len() <= budget {
            self.line.extend_from_slice(piece);
        } else {
            self.line_may_fit = false;
            self.line = Vec::new();
        }
    }

    /// Ends the current line: the same decision `truncate_head`'s loop makes.
    fn end_line(&mut self) {
        let decoded = self.line_len.finish();
        self.total_bytes += decoded;
        self.first_line_bytes.get_or_insert(decoded);
        self.ended_lines += 1;
        if self.cut.is_none() {
            let cost = decoded + usize::from(self.kept_lines > 0);
            if self.kept_lines >= self.limits.max_lines {
                self.cut = Some(TruncatedBy::Lines);
            } else if !self.line_may_fit || self.kept_bytes + cost > self.limits.max_bytes {
                self.cut = Some(TruncatedBy::Bytes);
            } else {
                if self.kept_lines > 0 {
                    self.kept.push('\n');
                }
                self.kept.push_str(&String::from_utf8_lossy(&self.line));
                self.kept_lines += 1;
                self.kept_bytes += cost;
            }
        }
        self.line.clear();
        self.line_may_fit = true;
    }

    /// Newlines seen so far.
    pub fn newlines(&self) -> usize {
        self.ended_lines
    }

    /// Ends the text. Returns what `truncate_head` returns for it, and the
    /// decoded byte length of its first line (what read's "Line N is X"
    /// notice reports when that line alone is over the limit).
    pub fn finish(mut self) -> (Truncation, usize) {
        if self.counting_only() {
            // The rest was counted as one stream, its newlines included.
            self.total_bytes += self.line_len.finish();
            self.ended_lines += 1;
        } else {
            self.end_line();
        }
        let first_line_bytes = self.first_line_bytes.unwrap_or(0);
        let truncation = Truncation {
            content: self.kept,
            truncated: self.cut.is_some(),
            truncated_by: self.cut,
            total_lines: self.ended_lines,
            total_bytes: self.total_bytes,
            output_lines: self.kept_lines,
            output_bytes: self.kept_bytes,
            last_line_partial: false,
            first_line_exceeds_limit: self.kept_lines == 0 && self.cut == Some(TruncatedBy::Bytes),
            max_lines: self.limits.max_lines,
            max_bytes: self.limits.max_bytes,
        };
        (truncation, first_line_bytes)
    }
}

/// Which lines of a file to show and how much of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineWindow {
    /// Index (0-based) of the first selected line.
    pub start: usize,
    /// How many lines to select at most (read's `limit`); `None` selects to
    /// the end of the file.
    pub max_selected: Option<usize>,
    /// Output limits applied to the joined selection, as `truncate_head` does.
    pub limits: Limits,
}

/// What a file holds in a [`LineWindow`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WindowText {
    /// Lines in the whole file, split on `\n` (a trailing newline counts one
    /// more, empty, line; an empty file has one line).
    pub file_lines: usize,
    /// The selected lines, joined with `\n` and truncated as `truncate_head`
    /// truncates them. Empty when `start` is past the end.
    pub selection: Truncation,
    /// Decoded bytes of the first selected line.
    pub first_line_bytes: usize,
}

/// Splits a file's bytes, pushed in any chunks, into the lines before a
/// [`LineWindow`] (counted), the selected lines (fed to a [`HeadCollector`])
/// and the lines after it (counted).
#[derive(Debug)]
pub struct WindowCollector {
    start: usize,
    end: Option<usize>,
    /// Index of the line the next byte belongs to.
    line: usize,
    head: HeadCollector,
}

impl WindowCollector {
    /// A collector for `window`.
    pub fn new(window: LineWindow) -> Self {
        WindowCollector {
            start: window.start,
            end: window
                .max_selected
                .map(|count| window.start.saturating_add(count)),
            line: 0,
            head: HeadCollector::new(window.limits),
        }
    }

    /// Adds the next bytes of the file.
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.line < self.start {
                match nth_newline(bytes, self.start - self.line) {
                    Ok(newline) => {
                        self.line = self.start;
                        bytes = &bytes[newline + 1..];
                    }
                    Err(seen) => {
                        self.line += seen;
                        return;
                    }
                }
            } else if let Some(end) = self.end {
                if self.line >= end {
                    self.line += memchr::memchr_iter(b'\n', bytes).count();
                    return;
                }
                // The selection ends at the newline that ends line `end - 1`.
                match nth_newline(bytes, end - self.line) {
                    Ok(newline) => {
                        self.head.push(&bytes[..newline]);
                        self.line = end;
                        bytes = &bytes[newline + 1..];
                    }
                    Err(seen) => {
                        self.head.push(bytes);
                        self.line += seen;
                        return;
                    }
                }
            } else {
                let before = self.head.newlines();
                self.head.push(bytes);
                self.line += self.head.newlines() - before;
                return;
            }
        }
    }

    /// Ends the file.
    pub fn finish(self) -> WindowText {
        let (selection, first_line_bytes) = self.head.finish();
        WindowText {
            file_lines: self.line + 1,
            selection,
            first_line_bytes,
        }
    }
}

/// The position of the `n`th (1-based) newline in `bytes`, or how many
/// newlines there are when fewer than `n`.
fn nth_newline(bytes: &[u8], n: usize) -> Result<usize, usize> {
    // Most chunks of a long skip hold fewer newlines than wanted; counting is
    // much faster than visiting each one.
    let count = memchr::memchr_iter(b'\n', bytes).count();
    if count < n {
        return Err(count);
    }
    memchr::memchr_iter(b'\n', bytes)
        .nth(n.saturating_sub(1))
        .ok_or(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::truncate::truncate_head;

    /// A small deterministic generator (xorshift), so the tests need no crate.
    struct Bytes(u64);

    impl Bytes {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// Text with newlines, multi-byte characters and invalid UTF-8.
        fn text(&mut self, len: usize) -> Vec<u8> {
            const PIECES: [&[u8]; 10] = [
                b"a",
                b"bc",
                b"\n",
                b"\n",
                "é".as_bytes(),
                "😀".as_bytes(),
                b"\xff",
                b"\xe2\x82",
                b"\xf0\x9f",
                b"xyz",
            ];
            let mut out = Vec::new();
            while out.len() < len {
                out.extend_from_slice(PIECES[(self.next() % PIECES.len() as u64) as usize]);
            }
            out
        }

        /// `bytes` cut into pieces of random sizes.
        fn chunks<'a>(&mut self, bytes: &'a [u8]) -> Vec<&'a [u8]> {
            let mut out = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let size = (self.next() % 7 + 1) as usize;
                let (piece, tail) = rest.split_at(size.min(rest.len()));
                out.push(piece);
                rest = tail;
            }
            out
        }
    }

    /// What Pi does: decode everything, split, select, join, truncate.
    fn pi_window(file: &[u8], window: LineWindow) -> WindowText {
        let text = String::from_utf8_lossy(file);
        let lines: Vec<&str> = text.split('\n').collect();
        let start = window.start.min(lines.len());
        let end = window
            .max_selected
            .map_or(lines.len(), |count| (start + count).min(lines.len()));
        let selected = &lines[start..end];
        WindowText {
            file_lines: lines.len(),
            selection: truncate_head(&selected.join("\n"), window.limits),
            first_line_bytes: selected.first().map_or(0, |line| line.len()),
        }
    }

    fn collect(chunks: &[&[u8]], window: LineWindow) -> WindowText {
        let mut collector = WindowCollector::new(window);
        chunks.iter().for_each(|chunk| collector.push(chunk));
        collector.finish()
    }

    #[test]
    fn streamed_windows_match_decoding_the_whole_file() {
        let mut random = Bytes(0x5eed);
        for round in 0..3000 {
            let len = (random.next() % 120) as usize;
            let file = random.text(len);
            let limits = Limits {
                max_lines: (random.next() % 6) as usize,
                max_bytes: (random.next() % 40) as usize,
            };
            let window = LineWindow {
                start: (random.next() % 12) as usize,
                max_selected: (!random.next().is_multiple_of(3))
                    .then(|| (random.next() % 8) as usize),
                limits,
            };
            let chunks = random.chunks(&file);
            assert_eq!(
                collect(&chunks, window),
                pi_window(&file, window),
                "round {round}: {:?} in {window:?}",
                String::from_utf8_lossy(&file)
            );
        }
    }

    #[test]
    fn head_collector_matches_truncate_head_with_default_limits() {
        let content = (1..=2500)
            .map(|i| format!("Line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut head = HeadCollector::new(Limits::default());
        content
            .as_bytes()
            .chunks(4096)
            .for_each(|chunk| head.push(chunk));
        let (streamed, first_line_bytes) = head.finish();
        assert_eq!(streamed, truncate_head(&content, Limits::default()));
        assert_eq!(first_line_bytes, 6);
    }

    #[test]
    fn a_first_line_over_the_limit_is_measured_not_kept() {
        let mut head = HeadCollector::new(Limits::default());
        for _ in 0..100 {
            head.push(&[b'y'; 1000]);
        }
        head.push(b"\nshort");
        assert!(head.line.capacity() <= Limits::default().max_bytes);
        let (truncation, first_line_bytes) = head.finish();
        assert_eq!(first_line_bytes, 100_000);
        assert!(truncation.first_line_exceeds_limit);
        assert_eq!(
            (
                truncation.total_lines,
                truncation.total_bytes,
                truncation.content.as_str()
            ),
            (2, 100_006, "")
        );
    }

    #[test]
    fn invalid_utf8_split_across_pushes_decodes_like_the_whole() {
        let bytes = b"a\xf0\x9f\x98\x80b\xe2\x82\nc\xf0\x9f";
        for split in 0..=bytes.len() {
            let mut len = DecodedLen::default();
            len.push(&bytes[..split]);
            len.push(&bytes[split..]);
            assert_eq!(
                len.finish(),
                String::from_utf8_lossy(bytes).len(),
                "split at {split}"
            );
        }
    }

    #[test]
    fn an_empty_file_is_one_empty_line() {
        let window = LineWindow {
            start: 0,
            max_selected: None,
            limits: Limits::default(),
        };
        let text = collect(&[], window);
        assert_eq!((text.file_lines, text.selection.content.as_str()), (1, ""));
    }

    #[test]
    fn a_trailing_newline_counts_one_more_line() {
        let window = LineWindow {
            start: 2,
            max_selected: None,
            limits: Limits::default(),
        };
        let text = collect(&[b"a\nb\n"], window);
        assert_eq!((text.file_lines, text.selection.content.as_str()), (3, ""));
    }
}
