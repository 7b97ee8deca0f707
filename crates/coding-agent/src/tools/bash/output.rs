//! A bounded accumulator for command output of any size.
//!
//! A command may print gigabytes; the model only ever sees the tail (Pi's
//! `truncateTail` limits). So the accumulator keeps a rolling tail of the
//! text the model sees (escape sequences stripped, a NUL shown as `␀`,
//! DEVIATIONS #7) plus running counts of its lines and bytes, and memory stays
//! bounded at any output size. The limits apply to that text: output of
//! nothing but escape sequences within them is all shown (as nothing) and
//! leaves no file. Once the text goes over the limits, the full raw output
//! (escape sequences kept, earlier chunks included) streams to an
//! [`OutputLog`] (a file
//! `<temp dir>/<prefix>-<16 hex>.log` where the command ran), which the
//! truncation notice names. The file keeps the first [`MAX_LOG_BYTES`]: a
//! command that never stops printing (a server in the foreground, `yes`)
//! would otherwise fill the disk at the speed it prints.
//!
//! Bytes arrive in arbitrary pieces: UTF-8 is decoded incrementally, so a
//! character split across two reads is decoded whole, and invalid bytes become
//! U+FFFD (as a non-fatal `TextDecoder` does).
//!
//! All methods do blocking file I/O; call them off the async runtime.

use std::io;
use std::path::{Path, PathBuf};

use super::ansi::AnsiStripper;
use super::log::OutputLog;
use crate::support::truncate::{Limits, Truncation, truncate_tail};

/// Raw bytes held in memory, waiting for the full-output file, at most. Past
/// this the file is opened even though the visible text is still within the
/// limits (output made mostly of escape sequences); it is removed again at
/// [`OutputAccumulator::finish`] if the text never goes over.
const MAX_PENDING_RAW_BYTES: usize = 1024 * 1024;

/// Raw bytes the full-output file keeps at most (the first ones; the model
/// is shown the last). Pi keeps everything (DEVIATIONS #25).
pub const MAX_LOG_BYTES: usize = 64 * 1024 * 1024;

/// What the model would see of the output so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSnapshot {
    /// `truncate_tail` of the text, with totals counted over all of the output.
    pub truncation: Truncation,
    /// UTF-8 bytes of the last line of the whole output (it may be longer than the tail).
    pub last_line_bytes: usize,
    /// Where the full output is, once it went over the limits.
    pub full_output_path: Option<PathBuf>,
    /// Set when the output outgrew the file: the bytes it kept.
    pub full_output_cut_at: Option<usize>,
}

/// Collects a command's output; see the module docs.
pub struct OutputAccumulator {
    limits: Limits,
    log: Box<dyn OutputLog>,
    /// Bytes of an incomplete UTF-8 character at the end of the last chunk.
    undecoded: Vec<u8>,
    stripper: AnsiStripper,
    /// The end of the visible text, at least `2 * max_bytes` once trimmed.
    tail: String,
    total_bytes: usize,
    /// Pi's count: 1 once there is any output, plus one per `\n`.
    total_lines: usize,
    last_line_bytes: usize,
    /// Raw bytes not yet in the file (only until the file exists).
    pending_raw: Vec<u8>,
    /// The file could not be created, or the operations keep none: raw
    /// bytes are no longer held for it.
    no_file: bool,
    /// Where the log file is, once created.
    full_output_path: Option<PathBuf>,
    /// Raw bytes written to the log file.
    logged: usize,
    /// The most the log file keeps ([`MAX_LOG_BYTES`]).
    max_log_bytes: usize,
    /// Whether raw bytes were left out of the log file for want of room.
    log_cut: bool,
    /// Bumped whenever the visible text changes, so callers can tell whether
    /// a new snapshot would differ from the last one they sent.
    version: u64,
}

impl OutputAccumulator {
    /// An empty accumulator; the full output, if needed, goes to `log`.
    pub fn new(log: Box<dyn OutputLog>, limits: Limits) -> Self {
        OutputAccumulator {
            limits,
            log,
            undecoded: Vec::new(),
            stripper: AnsiStripper::new(),
            tail: String::new(),
            total_bytes: 0,
            total_lines: 0,
            last_line_bytes: 0,
            pending_raw: Vec::new(),
            no_file: false,
            full_output_path: None,
            logged: 0,
            max_log_bytes: MAX_LOG_BYTES,
            log_cut: false,
            version: 0,
        }
    }

    /// Adds a chunk of raw output. Fails only when the full-output file cannot
    /// be created or written; the text is accumulated either way.
    pub fn push(&mut self, raw: &[u8]) -> io::Result<()> {
        let text = self.decode(raw);
        self.push_text(&text);
        self.store_raw(raw)
    }

    /// Ends the output: decodes what is left, flushes the full-output file, and
    /// removes that file if the output stayed within the limits after all.
    pub fn finish(&mut self) -> io::Result<()> {
        if !self.undecoded.is_empty() {
            self.undecoded.clear();
            self.push_text("\u{FFFD}");
        }
        if self.is_truncated() {
            self.open_file()?;
        }
        if self.full_output_path.is_some() {
            self.log.flush()?;
            if !self.is_truncated() {
                self.full_output_path = None;
                self.log.remove()?;
            }
        }
        Ok(())
    }

    /// Whether the output is over the line or byte limit.
    pub fn is_truncated(&self) -> bool {
        self.total_bytes > self.limits.max_bytes || self.total_lines > self.limits.max_lines
    }

    /// Changes whenever the visible text changes.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Where the full output goes, once the output went over the limits.
    pub fn full_output_path(&self) -> Option<&Path> {
        self.full_output_path
            .as_deref()
            .filter(|_| self.is_truncated())
    }

    /// What the model would see now: the tail within the limits, and totals.
    pub fn snapshot(&self) -> OutputSnapshot {
        let mut truncation = truncate_tail(&self.tail, self.limits);
        truncation.total_lines = self.total_lines;
        truncation.total_bytes = self.total_bytes;
        truncation.truncated = self.is_truncated();
        OutputSnapshot {
            truncation,
            last_line_bytes: self.last_line_bytes,
            full_output_path: self.full_output_path().map(Path::to_path_buf),
            full_output_cut_at: self.log_cut.then_some(self.logged),
        }
    }

    /// Decodes `raw` after any bytes left over from the previous chunk.
    fn decode(&mut self, raw: &[u8]) -> String {
        let joined;
        let mut bytes = raw;
        if !self.undecoded.is_empty() {
            self.undecoded.extend_from_slice(raw);
            joined = std::mem::take(&mut self.undecoded);
            bytes = &joined;
        }
        let mut text = String::with_capacity(bytes.len());
        loop {
            match std::str::from_utf8(bytes) {
                Ok(valid) => {
                    text.push_str(valid);
                    break;
                }
                Err(error) => {
                    let (valid, rest) = bytes.split_at(error.valid_up_to());
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(bad) => {
                            text.push('\u{FFFD}');
                            bytes = &rest[bad..];
                        }
                        None => {
                            self.undecoded = rest.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        text
    }

    fn push_text(&mut self, decoded: &str) {
        let mut text = String::with_capacity(decoded.len());
        self.stripper.strip_into(decoded, &mut text);
        if text.is_empty() {
            return;
        }
        self.version += 1;
        if self.total_lines == 0 {
            self.total_lines = 1;
        }
        self.total_bytes += text.len();
        let newlines = text.bytes().filter(|&b| b == b'\n').count();
        self.total_lines += newlines;
        self.last_line_bytes = match text.rfind('\n') {
            Some(at) => text.len() - at - 1,
            None => self.last_line_bytes + text.len(),
        };
        self.tail.push_str(&text);
        self.trim_tail();
    }

    /// Keeps at least `2 * max_bytes` of the tail, trimming only when it has
    /// grown to twice that, so each byte is copied a bounded number of times.
    /// `truncate_tail` never keeps more than `max_bytes`, so what it shows always
    /// lies inside the tail, and the cut (possibly mid-line) never shows.
    fn trim_tail(&mut self) {
        let keep = self.limits.max_bytes.saturating_mul(2).max(1);
        if self.tail.len() <= keep.saturating_mul(2) {
            return;
        }
        let mut cut = self.tail.len() - keep;
        while !self.tail.is_char_boundary(cut) {
            cut += 1;
        }
        self.tail.drain(..cut);
    }

    fn store_raw(&mut self, raw: &[u8]) -> io::Result<()> {
        if self.full_output_path.is_some() {
            return self.write_log(raw);
        }
        if self.no_file {
            return Ok(());
        }
        self.pending_raw.extend_from_slice(raw);
        if self.is_truncated() || self.pending_raw.len() > MAX_PENDING_RAW_BYTES {
            self.open_file()?;
        }
        Ok(())
    }

    /// Creates the full-output file (once) and writes what was held back.
    ///
    /// Tried once: when it fails, the output goes on without a file. Trying
    /// again at every chunk held all of the raw output in memory
    /// meanwhile. A log that keeps no file by design
    /// ([`io::ErrorKind::Unsupported`]) is not an error.
    fn open_file(&mut self) -> io::Result<()> {
        if self.full_output_path.is_some() || self.no_file {
            return Ok(());
        }
        match self.log.create() {
            Ok(path) => {
                self.full_output_path = Some(path);
                let pending = std::mem::take(&mut self.pending_raw);
                self.write_log(&pending)
            }
            Err(error) => {
                self.no_file = true;
                self.pending_raw = Vec::new();
                match error.kind() {
                    io::ErrorKind::Unsupported => Ok(()),
                    _ => Err(error),
                }
            }
        }
    }

    /// Appends what still fits of `raw` to the log file.
    fn write_log(&mut self, raw: &[u8]) -> io::Result<()> {
        let room = self.max_log_bytes - self.logged;
        let kept = &raw[..raw.len().min(room)];
        self.log_cut |= kept.len() < raw.len();
        if kept.is_empty() {
            return Ok(());
        }
        self.logged += kept.len();
        self.log.write_all(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::truncate::TruncatedBy;
    use crate::tools::bash::log::LocalOutputLog;

    fn accumulator(dir: &Path) -> OutputAccumulator {
        let log = LocalOutputLog::new(Some(dir), "pi-bash");
        OutputAccumulator::new(Box::new(log), Limits::default())
    }

    #[test]
    fn small_output_is_kept_whole_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        acc.push(b"one\n").unwrap();
        acc.push(b"two\n").unwrap();
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        assert_eq!(snapshot.truncation.content, "one\ntwo\n");
        assert!(!snapshot.truncation.truncated);
        assert_eq!(snapshot.truncation.total_lines, 3);
        assert_eq!(snapshot.full_output_path, None);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn no_output_counts_no_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        assert_eq!(snapshot.truncation.content, "");
        assert_eq!(snapshot.truncation.total_lines, 0);
    }

    /// The text kept of `chunks`, pushed one after the other.
    fn kept_text<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        for chunk in chunks {
            acc.push(chunk).unwrap();
        }
        acc.finish().unwrap();
        acc.snapshot().truncation.content
    }

    #[test]
    fn a_character_split_across_chunks_is_decoded_whole() {
        let text = "h\u{e9}llo \u{4e16}\n";
        assert_eq!(kept_text(text.as_bytes().chunks(1)), text);
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let raw: &[u8] = b"a\xffb\xe4\xb8";
        assert_eq!(kept_text([raw]), "a\u{FFFD}b\u{FFFD}");
    }

    #[test]
    fn escape_sequences_are_stripped_from_the_text_but_kept_in_the_file() {
        // DEVIATIONS #7.
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        let mut raw = Vec::new();
        for i in 1..=3000 {
            raw.extend_from_slice(format!("\x1b[32m{i}\x1b[0m\n").as_bytes());
        }
        for chunk in raw.chunks(7) {
            acc.push(chunk).unwrap();
        }
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        let expected: String = (1002..=3000).map(|i| format!("{i}\n")).collect();
        assert_eq!(snapshot.truncation.content, expected);
        assert_eq!(snapshot.truncation.total_lines, 3001);
        assert_eq!(snapshot.truncation.output_lines, 2000);
        assert_eq!(snapshot.truncation.truncated_by, Some(TruncatedBy::Lines));
        let path = snapshot.full_output_path.unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("pi-bash-") && name.ends_with(".log"));
        assert_eq!(name.len(), "pi-bash-".len() + 16 + ".log".len());
        assert_eq!(std::fs::read(&path).unwrap(), raw);
    }

    #[test]
    fn memory_stays_bounded_and_totals_count_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        let line = format!("{}\n", "x".repeat(99));
        let chunk = line.repeat(640);
        for _ in 0..200 {
            acc.push(chunk.as_bytes()).unwrap();
        }
        acc.finish().unwrap();
        assert!(acc.tail.len() <= 4 * Limits::default().max_bytes + chunk.len());
        let snapshot = acc.snapshot();
        assert_eq!(snapshot.truncation.total_bytes, 12_800_000);
        assert_eq!(snapshot.truncation.total_lines, 128_001);
        assert_eq!(snapshot.truncation.output_lines, 513);
        assert_eq!(snapshot.truncation.content, line.repeat(512));
        let path = snapshot.full_output_path.unwrap();
        assert_eq!(std::fs::metadata(path).unwrap().len(), 12_800_000);
    }

    // A log that could not be created was tried again at every chunk, and
    // every raw byte was held for it meanwhile: memory grew with the output.
    #[test]
    fn a_file_that_cannot_be_created_is_tried_once_and_nothing_is_held_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, "").unwrap();
        let mut acc = accumulator(&not_a_dir);
        let chunk = format!("{}\n", "x".repeat(99)).repeat(640);
        assert!(
            acc.push(chunk.as_bytes()).is_err(),
            "the failure is told once"
        );
        for _ in 0..20 {
            acc.push(chunk.as_bytes()).unwrap();
        }
        acc.finish().unwrap();
        assert!(acc.pending_raw.is_empty());
        let snapshot = acc.snapshot();
        assert!(snapshot.truncation.truncated);
        assert_eq!(snapshot.full_output_path, None);
    }

    #[test]
    fn operations_that_keep_no_file_cut_the_output_without_an_error() {
        use crate::tools::bash::log::NoOutputLog;
        let mut acc = OutputAccumulator::new(Box::new(NoOutputLog), Limits::default());
        let chunk = format!("{}\n", "x".repeat(99)).repeat(640);
        for _ in 0..20 {
            acc.push(chunk.as_bytes()).unwrap();
        }
        acc.finish().unwrap();
        assert!(acc.pending_raw.is_empty());
        assert_eq!(acc.snapshot().full_output_path, None);
    }

    /// DEVIATIONS #25: Pi's file keeps all of the output, whatever its size.
    #[test]
    fn the_file_keeps_the_first_bytes_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        acc.max_log_bytes = 100_000;
        let line = format!("{}\n", "y".repeat(99));
        for _ in 0..30 {
            acc.push(line.repeat(70).as_bytes()).unwrap();
        }
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        assert_eq!(snapshot.truncation.total_bytes, 210_000);
        assert_eq!(snapshot.full_output_cut_at, Some(100_000));
        let kept = std::fs::read(snapshot.full_output_path.unwrap()).unwrap();
        assert_eq!(kept, line.repeat(1000).as_bytes());

        // Within the limit, nothing is said.
        let mut acc = accumulator(dir.path());
        acc.push(line.repeat(3000).as_bytes()).unwrap();
        acc.finish().unwrap();
        assert_eq!(acc.snapshot().full_output_cut_at, None);
    }

    #[test]
    fn one_huge_line_keeps_its_end_and_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        acc.push(b"first\n").unwrap();
        for _ in 0..100 {
            acc.push(&[b'y'; 10_000]).unwrap();
        }
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        assert!(snapshot.truncation.last_line_partial);
        assert_eq!(snapshot.truncation.content, "y".repeat(51_200));
        assert_eq!(snapshot.last_line_bytes, 1_000_000);
        assert_eq!(snapshot.truncation.total_lines, 2);
    }

    /// DEVIATIONS #7: NULs were dropped, so 100 MB of them (`head -c
    /// 100000000 /dev/zero`) read as `(no output)`, with no file; and
    /// `find -print0` as one name.
    #[test]
    fn nuls_are_shown_counted_and_kept_in_the_file() {
        assert_eq!(kept_text([b"a\0a/b\0".as_slice()]), "a\u{2400}a/b\u{2400}");

        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        let zeros = [0u8; 64 * 1024];
        for _ in 0..16 {
            acc.push(&zeros).unwrap();
        }
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        assert!(snapshot.truncation.truncated);
        assert_eq!(
            snapshot.truncation.content,
            "\u{2400}".repeat(Limits::default().max_bytes / 3)
        );
        assert_eq!(snapshot.last_line_bytes, 3 * 16 * zeros.len());
        let kept = std::fs::read(snapshot.full_output_path.unwrap()).unwrap();
        assert_eq!(kept, zeros.repeat(16));
    }

    #[test]
    fn escape_heavy_output_within_the_limits_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = accumulator(dir.path());
        for _ in 0..300_000 {
            acc.push(b"\x1b[2K\x1b[1G").unwrap();
        }
        acc.push(b"done\n").unwrap();
        acc.finish().unwrap();
        let snapshot = acc.snapshot();
        assert_eq!(snapshot.truncation.content, "done\n");
        assert_eq!(snapshot.full_output_path, None);
        assert!(acc.pending_raw.len() <= MAX_PENDING_RAW_BYTES);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
