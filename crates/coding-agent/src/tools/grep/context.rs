//! The lines around a file's matches, for `grep` with `context`.
//!
//! The file is split on `\n` only, as the search numbers its lines and as
//! `read` counts them, and a `\r` inside a line is removed as it is from a
//! match shown without context ([`shown_line`]). Pi splits on a lone `\r`
//! too while rg's numbers count `\n` only, so below a progress bar it
//! showed the wrong lines: `Downloading 100%` as line 4 of a build log
//! whose line 4 matched `ERROR` (DEVIATIONS #32). A final `\n` leaves an
//! empty last line, as in Pi.
//!
//! The file is read again as a stream and only the lines some window shows
//! are kept, each once however many windows show it; reading stops after
//! the last of them. Held whole, a 280 MB log took 1.25 GB to show five
//! lines around one match, and a copy of the file per window 2.5 GB for
//! 100 matches in a 5 MB log with a huge `context`. Reading also stops in a
//! line longer than the search holds ([`LINE_LIMIT`]): the search stopped
//! there, so nothing after it matched, and a window reaching into a disk
//! image's zeros read all 5 GB of them to show a prefix.

use std::collections::BTreeMap;
use std::io::{self, BufRead};

use super::ops::{LINE_LIMIT, MatchLines};
use crate::support::truncate::{GREP_KEPT_LINE_BYTES, GREP_MAX_LINE_LENGTH, shown_prefix};

/// The lines the windows need, by number, and how many lines were read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct WindowLines {
    /// Taken out as windows are made: each goes to the first that shows it.
    kept: BTreeMap<u64, String>,
    /// Lines read: the whole file's count, or at least up to the last line
    /// any window shows when reading stopped there.
    count: u64,
    /// The last line a window was made with.
    handed_out: u64,
}

/// Reads `reader` split on `\n`, keeping the lines within `context` of the
/// lines `matches` (ascending line numbers), as [`shown_line`] shows them.
pub(super) fn window_lines(
    mut reader: impl BufRead,
    matches: &[u64],
    context: u64,
) -> io::Result<WindowLines> {
    let ranges = merged_ranges(matches, context);
    let Some(&(_, last_wanted)) = ranges.last() else {
        return Ok(WindowLines::default());
    };
    let mut lines = WindowLines::default();
    let mut number = 1;
    let mut range = 0;
    let mut current = Vec::new();
    // Bytes of the line being read, kept or not.
    let mut length = 0;
    loop {
        while ranges.get(range).is_some_and(|&(_, end)| end < number) {
            range += 1;
        }
        let wanted = ranges.get(range).is_some_and(|&(start, _)| start <= number);
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let Some(at) = memchr::memchr(b'\n', buffer) else {
            if wanted {
                keep(&mut current, buffer);
            }
            let all = buffer.len();
            reader.consume(all);
            length += all;
            if length > LINE_LIMIT {
                break;
            }
            continue;
        };
        if wanted {
            keep(&mut current, &buffer[..at]);
            lines.kept.insert(number, decode(&current));
        }
        current.clear();
        length = 0;
        reader.consume(at + 1);
        lines.count = number;
        if number == last_wanted {
            return Ok(lines);
        }
        number += 1;
    }
    // The text after the last `\n` (or the line too long to read on) is
    // the last line, empty or not.
    if ranges.get(range).is_some_and(|&(start, _)| start <= number) {
        lines.kept.insert(number, decode(&current));
    }
    lines.count = number;
    Ok(lines)
}

/// A line as grep shows it, from its bytes (its `\n` ending included or
/// not): without `\r`, the ending of a `\r\n` line and the lone ones a
/// progress bar writes alike, and no longer than the output shows it. The
/// same text with context or without.
pub(super) fn shown_line(bytes: &[u8]) -> String {
    let mut line = Vec::new();
    keep(&mut line, bytes.strip_suffix(b"\n").unwrap_or(bytes));
    decode(&line)
}

/// Adds `bytes` without their `\r`s to the line being read, up to what the
/// output can show of it ([`GREP_KEPT_LINE_BYTES`]): a window over a
/// minified bundle keeps kilobytes, not the megabytes of each of its lines.
fn keep(line: &mut Vec<u8>, bytes: &[u8]) {
    for piece in bytes.split(|&byte| byte == b'\r') {
        let room = GREP_KEPT_LINE_BYTES.saturating_sub(line.len());
        if room == 0 {
            return;
        }
        line.extend_from_slice(&piece[..piece.len().min(room)]);
    }
}

/// `bytes` as text, invalid UTF-8 replaced (each line on its own gives what
/// the whole file would: a line break is never inside a character), and no
/// longer than the output shows it.
fn decode(bytes: &[u8]) -> String {
    shown_prefix(&String::from_utf8_lossy(bytes), GREP_MAX_LINE_LENGTH).to_owned()
}

/// The line ranges the windows of `matches` cover, overlapping ones merged.
fn merged_ranges(matches: &[u64], context: u64) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &line in matches {
        let (start, end) = (
            line.saturating_sub(context).max(1),
            line.saturating_add(context),
        );
        match ranges.last_mut() {
            Some(last) if start <= last.1.saturating_add(1) => last.1 = last.1.max(end),
            _ => ranges.push((start, end)),
        }
    }
    ranges
}

impl WindowLines {
    /// The window of the match at `line_number`, the lines
    /// `max(1, n - context)..=min(count, n + context)`, holding those of
    /// them no window made before held (see [`MatchLines::Window`]); asked
    /// for in line order. A match past the end of the file (changed since
    /// the search) shows as empty lines up to it.
    pub(super) fn window(&mut self, line_number: u64, context: u64) -> MatchLines {
        let first = line_number.saturating_sub(context).max(1);
        let last = line_number
            .saturating_add(context)
            .min(self.count)
            .max(line_number);
        let lines = (first.max(self.handed_out + 1)..=last)
            .map(|n| self.kept.remove(&n).unwrap_or_default())
            .collect();
        self.handed_out = self.handed_out.max(last);
        MatchLines::Window { first, last, lines }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Every line of `text` with a window over all of it, as a list.
    fn split(text: &[u8]) -> Vec<String> {
        let lines = window_lines(text, &[1], u64::MAX / 2).unwrap();
        (1..=lines.count)
            .map(|n| lines.kept.get(&n).cloned().unwrap())
            .collect()
    }

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn only_a_newline_breaks_a_line_and_carriage_returns_are_removed() {
        assert_eq!(split(b"a\r\nb\rc\n"), strings(&["a", "bc", ""]));
        assert_eq!(split(b"x\r\r\ny"), strings(&["x", "y"]));
        assert_eq!(split(b"\n\r"), strings(&["", ""]));
        assert_eq!(split(b""), strings(&[""]));
        assert_eq!(split(b"a\xffb\n\xe4"), strings(&["a\u{FFFD}b", "\u{FFFD}"]));
    }

    /// The lines of `text` as the search numbers them and `read` counts
    /// them, split over the whole text at once, without their `\r`s.
    fn whole_split(text: &[u8]) -> Vec<String> {
        let without_cr: Vec<u8> = text.iter().copied().filter(|&b| b != b'\r').collect();
        String::from_utf8_lossy(&without_cr)
            .split('\n')
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_streamed_split_is_the_whole_texts_whatever_the_buffer_boundaries() {
        let mut next = crate::support::seeded::xorshift();
        let bytes = [b'a', b'\n', b'\r', 0xe4, 0xb8, 0x96, b' '];
        for _ in 0..2000 {
            let len = next(40);
            let text: Vec<u8> = (0..len).map(|_| bytes[next(bytes.len())]).collect();
            let capacity = 1 + next(5);
            let reader = io::BufReader::with_capacity(capacity, text.as_slice());
            let lines = window_lines(reader, &[1], u64::MAX / 2).unwrap();
            let streamed: Vec<String> = (1..=lines.count).map(|n| lines.kept[&n].clone()).collect();
            assert_eq!(
                streamed,
                whole_split(&text),
                "{text:?} read {capacity} at a time"
            );
        }
    }

    #[test]
    fn a_shown_line_drops_its_line_ending_and_carriage_returns() {
        assert_eq!(shown_line(b"a\rb\r\n"), "ab");
        assert_eq!(shown_line(b"plain"), "plain");
        assert_eq!(split(b"a\rb\r\n")[0], "ab", "in a window too");
        let long = format!("{}\r{}\r\n", "\r".repeat(5000), "y".repeat(1000));
        assert_eq!(
            shown_line(long.as_bytes()),
            shown_prefix(&"y".repeat(1000), GREP_MAX_LINE_LENGTH),
            "carriage returns take no room in what is kept"
        );
    }

    #[test]
    fn only_the_windows_lines_are_kept_each_once_and_reading_stops_after_the_last() {
        let text: String = (1..=100).map(|n| format!("{n}\n")).collect();
        let mut lines = window_lines(text.as_bytes(), &[10, 12, 50], 1).unwrap();
        let kept: Vec<u64> = lines.kept.keys().copied().collect();
        assert_eq!(kept, [9, 10, 11, 12, 13, 49, 50, 51]);
        assert_eq!(lines.count, 51);
        assert_eq!(
            lines.window(10, 1),
            MatchLines::Window {
                first: 9,
                last: 11,
                lines: strings(&["9", "10", "11"])
            }
        );
        assert_eq!(
            lines.window(12, 1),
            MatchLines::Window {
                first: 11,
                last: 13,
                lines: strings(&["12", "13"])
            },
            "line 11 is the window before's"
        );
        assert_eq!(
            lines.window(50, 1),
            MatchLines::Window {
                first: 49,
                last: 51,
                lines: strings(&["49", "50", "51"])
            }
        );
        assert!(lines.kept.is_empty(), "every line handed out once");
    }

    #[test]
    fn reading_stops_in_a_line_longer_than_the_search_holds() {
        let endless = io::repeat(0).take(4 * LINE_LIMIT as u64);
        let mut reader = io::BufReader::new(b"needle\n".chain(endless));
        let lines = window_lines(&mut reader, &[1], 1).unwrap();
        assert_eq!(lines.count, 2);
        assert_eq!(lines.kept[&1], "needle");
        assert!(lines.kept[&2].starts_with('\0'));
        let (_, endless) = reader.get_ref().get_ref();
        assert!(endless.limit() > 0, "read to the end of the long line");
    }

    #[test]
    fn windows_are_clipped_at_both_ends_and_a_match_past_the_end_is_empty() {
        let mut lines = window_lines(&b"1\n2\n3\n4\n5"[..], &[1, 5, 7], 2).unwrap();
        assert_eq!(
            lines.window(1, 2),
            MatchLines::Window {
                first: 1,
                last: 3,
                lines: strings(&["1", "2", "3"])
            }
        );
        assert_eq!(
            lines.window(5, 2),
            MatchLines::Window {
                first: 3,
                last: 5,
                lines: strings(&["4", "5"])
            }
        );
        assert_eq!(
            lines.window(7, 2),
            MatchLines::Window {
                first: 5,
                last: 7,
                lines: strings(&["", ""])
            }
        );
    }
}
