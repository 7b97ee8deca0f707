//! Output truncation with Pi's limits and accounting.
//!
//! Content is split on `\n`, so a trailing newline counts as one more (empty)
//! line, exactly as Pi counts. Byte limits are UTF-8 bytes; [`truncate_line`]
//! counts UTF-16 code units, as Pi's `String.length` does.

use serde::{Deserialize, Serialize};

use crate::support::notices::append_notices;

/// Lines a tool shows at most (Pi's `DEFAULT_MAX_LINES`).
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Bytes a tool shows at most (Pi's `DEFAULT_MAX_BYTES`, 50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Characters of one grep line shown at most.
pub const GREP_MAX_LINE_LENGTH: usize = 500;
/// Bytes of a grep line worth keeping from a file: once decoded (a character
/// takes at most 4 bytes, an invalid sequence's replacement at most 3), they
/// hold more than [`GREP_MAX_LINE_LENGTH`] whole characters even when the
/// last one is cut, so the line shows and is marked as the whole line would.
pub const GREP_KEPT_LINE_BYTES: usize = 4 * (GREP_MAX_LINE_LENGTH + 2);

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// Limits for a truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Maximum number of lines.
    pub max_lines: usize,
    /// Maximum number of UTF-8 bytes.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// The default byte limit with no line limit (grep, find and ls). The line
    /// limit is JavaScript's `Number.MAX_SAFE_INTEGER`, as Pi reports it in `details`.
    pub fn bytes_only() -> Self {
        Limits {
            max_lines: 9_007_199_254_740_991,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// What a truncation kept and why; serialized as Pi's `TruncationResult` in
/// `details`. Read back leniently (missing fields take their defaults), as
/// details may come from a hook or an older session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Truncation {
    /// The text kept.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit cut it.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the whole input.
    pub total_lines: usize,
    /// UTF-8 bytes in the whole input.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// The kept text ends in part of a line (tail truncation of one huge line).
    pub last_line_partial: bool,
    /// The first line alone is over the byte limit (head truncation keeps nothing).
    pub first_line_exceeds_limit: bool,
    /// The line limit used.
    pub max_lines: usize,
    /// The byte limit used.
    pub max_bytes: usize,
}

impl Truncation {
    fn untouched(content: &str, total_lines: usize, limits: Limits) -> Self {
        Truncation {
            content: content.to_owned(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        }
    }

    /// `whole` (of `total_lines` lines) cut by `by` to `kept`, its
    /// `kept_lines` lines. Keeping nothing because of the byte limit means the
    /// first line alone was over it.
    fn cut(
        whole: &str,
        total_lines: usize,
        kept: &str,
        kept_lines: usize,
        by: TruncatedBy,
        limits: Limits,
    ) -> Self {
        Truncation {
            content: kept.to_owned(),
            truncated: true,
            truncated_by: Some(by),
            total_lines,
            total_bytes: whole.len(),
            output_lines: kept_lines,
            output_bytes: kept.len(),
            last_line_partial: false,
            first_line_exceeds_limit: kept_lines == 0 && by == TruncatedBy::Bytes,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        }
    }
}

/// How many whole `lines` fit within `limits` (a `\n` between two kept lines
/// counts), their bytes, and which limit stopped them.
struct Fit {
    lines: usize,
    bytes: usize,
    by: TruncatedBy,
}

/// Takes `lines` (from the start or from the end) while both limits hold.
fn fit_lines<'a>(lines: impl Iterator<Item = &'a str>, limits: Limits) -> Fit {
    let mut fit = Fit {
        lines: 0,
        bytes: 0,
        by: TruncatedBy::Lines,
    };
    for line in lines {
        if fit.lines >= limits.max_lines {
            break;
        }
        let cost = line.len() + usize::from(fit.lines > 0);
        if fit.bytes + cost > limits.max_bytes {
            fit.by = TruncatedBy::Bytes;
            break;
        }
        fit.bytes += cost;
        fit.lines += 1;
    }
    fit
}

/// Keeps whole lines from the start of `content` within `limits`.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let total_lines = content.split('\n').count();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, total_lines, limits);
    }
    let fit = fit_lines(content.split('\n'), limits);
    let kept = &content[..fit.bytes];
    Truncation::cut(content, total_lines, kept, fit.lines, fit.by, limits)
}

/// The start of `text` within `room`, for text that is read, not shown
/// by line (MCP results, a hook's replacement of one): whole lines as
/// [`truncate_head`] keeps them, or, when the first line alone is too long
/// (minified JSON), the bytes of it that fit. Returns the text kept, its
/// lines (a line cut in the middle counts) and whether it is all of `text`.
pub fn head_or_bytes(text: &str, room: Limits) -> (String, usize, bool) {
    let truncation = truncate_head(text, room);
    if !truncation.first_line_exceeds_limit {
        return (
            truncation.content,
            truncation.output_lines,
            !truncation.truncated,
        );
    }
    let mut end = room.max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), usize::from(end > 0), false)
}

/// Keeps whole lines from the end of `content` within `limits`; when the last
/// line alone is over the byte limit, keeps its last bytes (on a char boundary).
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let total_lines = content.split('\n').count();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, total_lines, limits);
    }
    let fit = fit_lines(content.rsplit('\n'), limits);
    if fit.lines == 0 && fit.by == TruncatedBy::Bytes {
        // The last line alone is over the byte limit: keep its last bytes.
        // So the tail always keeps a line when bytes cut it, and
        // `first_line_exceeds_limit` stays false.
        let mut start = content.len() - limits.max_bytes;
        while !content.is_char_boundary(start) {
            start += 1;
        }
        return Truncation {
            last_line_partial: true,
            ..Truncation::cut(content, total_lines, &content[start..], 1, fit.by, limits)
        };
    }
    let kept = &content[content.len() - fit.bytes..];
    Truncation::cut(content, total_lines, kept, fit.lines, fit.by, limits)
}

/// The output of a tool that lists (grep, find, ls): `lines` joined and cut
/// to 50 KB ([`Limits::bytes_only`]), then the notices in Pi's order: the
/// tool's own count limit (`count_notice`, when it was reached), the byte
/// limit, then `later_notices`. Returns the text and the truncation, when the
/// byte limit cut it.
pub fn truncate_list(
    lines: &[String],
    count_notice: Option<String>,
    later_notices: impl IntoIterator<Item = Option<String>>,
) -> (String, Option<Truncation>) {
    let truncation = truncate_head(&lines.join("\n"), Limits::bytes_only());
    let byte_notice = truncation
        .truncated
        .then(|| format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
    let notices: Vec<String> = [count_notice, byte_notice]
        .into_iter()
        .chain(later_notices)
        .flatten()
        .collect();
    let text = append_notices(truncation.content.clone(), &notices);
    (text, truncation.truncated.then_some(truncation))
}

/// Shortens a line longer than `max_chars` UTF-16 code units, marking the cut.
/// Returns the line and whether it was cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (std::borrow::Cow<'_, str>, bool) {
    let mut units = 0usize;
    for (index, ch) in line.char_indices() {
        if units + ch.len_utf16() > max_chars {
            return (format!("{}... [truncated]", &line[..index]).into(), true);
        }
        units += ch.len_utf16();
    }
    (line.into(), false)
}

/// The start of `line` that [`truncate_line`] with `max_chars` shows and marks
/// as it does the whole line: the line itself, or its first characters up to
/// one past `max_chars` UTF-16 code units. Lets grep keep what it shows rather
/// than every matching line of a minified bundle whole.
pub fn shown_prefix(line: &str, max_chars: usize) -> &str {
    let mut units = 0usize;
    for (index, ch) in line.char_indices() {
        units += ch.len_utf16();
        if units > max_chars {
            return &line[..index + ch.len_utf8()];
        }
    }
    line
}

/// Pi's `formatSize`: `512B`, `50.0KB`, `1.5MB`.
pub fn format_size(bytes: usize) -> String {
    const KB: f64 = 1024.0;
    const MB: f64 = 1024.0 * 1024.0;
    let b = bytes as f64;
    if b < KB {
        format!("{bytes}B")
    } else if b < MB {
        format!("{:.1}KB", b / KB)
    } else {
        format!("{:.1}MB", b / MB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n)
            .map(|i| format!("Line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn head_keeps_everything_within_limits() {
        let t = truncate_head("a\nb\n", Limits::default());
        assert!(!t.truncated);
        assert_eq!(t.total_lines, 3, "a trailing newline counts as a line");
        assert_eq!(t.content, "a\nb\n");
    }

    #[test]
    fn head_cuts_by_lines_like_pi() {
        let content = numbered(2500);
        let t = truncate_head(&content, Limits::default());
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.total_lines, t.output_lines), (2500, 2000));
        assert_eq!((t.total_bytes, t.output_bytes), (23892, 18892));
        assert!(t.content.ends_with("Line 2000"));
    }

    #[test]
    fn head_cuts_by_bytes_like_pi() {
        let content = (1..=500)
            .map(|i| format!("Line {i}: {}", "x".repeat(200)))
            .collect::<Vec<_>>()
            .join("\n");
        let t = truncate_head(&content, Limits::default());
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(
            (t.output_lines, t.output_bytes, t.total_bytes),
            (243, 51164, 105391)
        );
    }

    #[test]
    fn head_reports_a_first_line_over_the_limit() {
        let content = format!("{}\nshort", "y".repeat(60000));
        let t = truncate_head(&content, Limits::default());
        assert!(t.first_line_exceeds_limit);
        assert_eq!((t.content.as_str(), t.output_lines), ("", 0));
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let content = (1..=3000).map(|i| format!("{i}\n")).collect::<String>();
        let t = truncate_tail(&content, Limits::default());
        assert_eq!((t.total_lines, t.output_lines), (3001, 2000));
        assert!(t.content.starts_with("1002\n"));
    }

    #[test]
    fn tail_keeps_the_end_of_one_huge_line_on_a_char_boundary() {
        let content = format!("start{}", "é".repeat(40000));
        let t = truncate_tail(&content, Limits::default());
        assert!(t.last_line_partial);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(t.output_bytes, 51200);
        assert!(t.content.chars().all(|c| c == 'é'));
    }

    #[test]
    fn line_truncation_counts_utf16_units() {
        assert_eq!(truncate_line("abc", 3), ("abc".into(), false));
        assert_eq!(
            truncate_line("abcd", 3),
            ("abc... [truncated]".into(), true)
        );
        assert_eq!(truncate_line("a😀b", 2), ("a... [truncated]".into(), true));
    }

    #[test]
    fn a_shown_prefix_truncates_as_the_whole_line_does() {
        let mut next = crate::support::seeded::xorshift();
        let chars = ['a', 'é', '😀', '世'];
        for _ in 0..2000 {
            let line: String = (0..next(12)).map(|_| chars[next(chars.len())]).collect();
            let max = next(8);
            let prefix = shown_prefix(&line, max);
            assert!(line.starts_with(prefix));
            assert!(prefix.encode_utf16().count() <= max + 2, "{prefix:?}");
            assert_eq!(
                truncate_line(prefix, max),
                truncate_line(&line, max),
                "{line:?} at {max}"
            );
        }
    }

    #[test]
    fn sizes_are_formatted_like_pi() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(60000), "58.6KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }
}
