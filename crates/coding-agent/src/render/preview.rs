//! Bounded views of long texts: the first or last lines of a text and how
//! many lines are hidden, with lines cut to the terminal's width.
//!
//! A collapsed view must stay cheap however large the text (a 50 KB tool
//! result, a model writing a huge file): it looks at no more lines than it
//! shows, cuts each to the width, and counts the hidden lines with a byte
//! search rather than by splitting them.

use std::borrow::Cow;

use unicode_width::UnicodeWidthChar;

use super::{RenderOptions, Style, StyledLine};

/// Lines in `text` as [`str::lines`] counts them (a final `\n` ends the last
/// line rather than starting an empty one), without splitting.
pub fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    if text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// The first lines of a text and how many follow them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head<'a> {
    /// The lines shown, without their line endings.
    pub lines: Vec<&'a str>,
    /// Lines after them.
    pub more: usize,
}

/// The first `max` lines of `text` (all of them for `None`).
pub fn head(text: &str, max: Option<usize>) -> Head<'_> {
    let mut lines = Vec::new();
    let mut consumed = 0;
    for line in text.split_inclusive('\n') {
        if max.is_some_and(|max| lines.len() >= max) {
            break;
        }
        consumed += line.len();
        lines.push(strip_line_ending(line));
    }
    Head {
        lines,
        more: line_count(&text[consumed..]),
    }
}

/// The last lines of a text and how many come before them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail<'a> {
    /// The lines shown, in order, without their line endings.
    pub lines: Vec<&'a str>,
    /// Lines before them.
    pub earlier: usize,
}

/// The last `max` lines of `text` (all of them for `None`).
pub fn tail(text: &str, max: Option<usize>) -> Tail<'_> {
    if text.is_empty() || max == Some(0) {
        return Tail {
            lines: Vec::new(),
            earlier: line_count(text),
        };
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    let Some(max) = max else {
        return Tail {
            lines: body.split('\n').map(strip_line_ending).collect(),
            earlier: 0,
        };
    };
    let mut parts: Vec<&str> = body.rsplitn(max + 1, '\n').collect();
    // With more lines than `max`, the last part is everything before them.
    let earlier = if parts.len() > max {
        parts.pop().map_or(0, |rest| {
            memchr::memchr_iter(b'\n', rest.as_bytes()).count() + 1
        })
    } else {
        0
    };
    parts.reverse();
    Tail {
        lines: parts.into_iter().map(strip_line_ending).collect(),
        earlier,
    }
}

fn strip_line_ending(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// `line` cut to `width` columns, the last one an ellipsis, when the view
/// is collapsed and the width known; whole otherwise (the terminal wraps it).
/// Columns, not characters: a CJK character or an emoji takes two, and a
/// line cut by characters wrapped onto a second row.
pub fn clip(line: &str, options: RenderOptions) -> Cow<'_, str> {
    let width = usize::from(options.width);
    if options.expanded || width == 0 {
        return Cow::Borrowed(line);
    }
    let columns = |c: char| UnicodeWidthChar::width(c).unwrap_or(0);
    let mut used = 0;
    // Where the line must end to leave a column for the ellipsis.
    let mut keep = None;
    for (index, c) in line.char_indices() {
        used += columns(c);
        if used > width - 1 && keep.is_none() {
            keep = Some(index);
        }
        if used > width {
            let keep = keep.unwrap_or(index);
            return Cow::Owned(format!("{}…", &line[..keep]));
        }
    }
    Cow::Borrowed(line)
}

/// How many lines a preview shows: `collapsed` lines, or all when expanded.
pub fn limit(collapsed: usize, options: RenderOptions) -> Option<usize> {
    (!options.expanded).then_some(collapsed)
}

/// "1 line", "3 lines".
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("{n} {singular}")
    } else {
        format!("{n} {plural}")
    }
}

/// The first lines of `text` in `style`, then a dim count of the hidden ones.
pub fn head_lines(
    text: &str,
    collapsed: usize,
    style: Style,
    options: RenderOptions,
) -> Vec<StyledLine> {
    let head = head(text, limit(collapsed, options));
    let mut lines: Vec<StyledLine> = head
        .lines
        .iter()
        .map(|line| StyledLine::new(clip(line, options), style))
        .collect();
    if head.more > 0 {
        lines.push(StyledLine::new(
            format!("… {}", count(head.more, "more line", "more lines")),
            Style::Dim,
        ));
    }
    lines
}

/// A dim count of the hidden first lines of `text`, then its last lines in
/// `style`. `total_lines`, when known, is the length of the whole output
/// `text` is the end of.
pub fn tail_lines(
    text: &str,
    collapsed: usize,
    total_lines: Option<usize>,
    style: Style,
    options: RenderOptions,
) -> Vec<StyledLine> {
    let tail = tail(text, limit(collapsed, options));
    let earlier = total_lines.map_or(tail.earlier, |total| {
        // The count (Pi's) includes the empty line after a last `\n`, which
        // `tail` leaves out.
        let total = total.saturating_sub(usize::from(text.ends_with('\n')));
        total.saturating_sub(tail.lines.len()).max(tail.earlier)
    });
    let mut lines = Vec::with_capacity(tail.lines.len() + 1);
    if earlier > 0 {
        lines.push(StyledLine::new(
            format!("… {}", count(earlier, "earlier line", "earlier lines")),
            Style::Dim,
        ));
    }
    lines.extend(
        tail.lines
            .iter()
            .map(|line| StyledLine::new(clip(line, options), style)),
    );
    lines
}

/// Splits off the bracketed notice tools append after a blank line
/// (`text\n\n[notice]`, see `support::notices`), so it can show apart from a
/// preview that might hide it. Only brackets worded like the tools' notices
/// (limits, truncation, where to continue) count, so a file that happens to
/// end in `[section]` stays content.
pub fn split_notice(text: &str) -> (&str, Option<&str>) {
    let (body, last) = text.rsplit_once("\n\n").unwrap_or(("", text));
    let is_notice = last.starts_with('[')
        && last.ends_with(']')
        && !last.contains('\n')
        && ["limit", "Showing ", "Use offset=", "truncated"]
            .iter()
            .any(|word| last.contains(word));
    if is_notice {
        (body, Some(last))
    } else {
        (text, None)
    }
}

/// A notice in the warning style.
pub fn notice_line(notice: &str) -> StyledLine {
    StyledLine::new(notice, Style::Warning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::to_markup;

    fn collapsed(width: u16) -> RenderOptions {
        RenderOptions {
            width,
            ..RenderOptions::default()
        }
    }

    #[test]
    fn line_count_agrees_with_str_lines() {
        for text in [
            "",
            "a",
            "a\n",
            "a\nb",
            "a\nb\n",
            "\n",
            "\n\n",
            "a\r\nb\r\n",
            "\na",
        ] {
            assert_eq!(line_count(text), text.lines().count(), "{text:?}");
        }
    }

    #[test]
    fn head_shows_the_first_lines_and_counts_the_rest() {
        for (text, shown, lines, more) in [
            ("a\r\nb\nc\nd\n", Some(2), vec!["a", "b"], 2),
            ("a\nb", Some(5), vec!["a", "b"], 0),
            ("a\n\nb", None, vec!["a", "", "b"], 0),
            ("", Some(3), vec![], 0),
        ] {
            assert_eq!(head(text, shown), Head { lines, more }, "{text:?}");
        }
    }

    #[test]
    fn tail_shows_the_last_lines_and_counts_those_before() {
        let cases = [
            ("a\nb\nc\nd\n", Some(2), vec!["c", "d"], 2),
            ("\nx", Some(1), vec!["x"], 1),
            ("a\r\nb", Some(5), vec!["a", "b"], 0),
            ("a\nb\n", None, vec!["a", "b"], 0),
            ("a\nb", Some(0), vec![], 2),
            ("", Some(2), vec![], 0),
        ];
        for (text, shown, lines, earlier) in cases {
            let expected = Tail { lines, earlier };
            assert_eq!(tail(text, shown), expected, "{text:?}");
        }
    }

    #[test]
    fn collapsed_lines_are_cut_to_the_width_in_columns() {
        assert_eq!(clip("héllo wörld", collapsed(6)), "héllo…");
        assert_eq!(clip("héllo", collapsed(5)), "héllo");
        // Two columns each: six fit in twelve, five and the ellipsis in
        // eleven (the sixth would end past it).
        assert_eq!(clip("日本語日本語", collapsed(12)), "日本語日本語");
        assert_eq!(clip("日本語日本語日", collapsed(12)), "日本語日本…");
        assert_eq!(clip("日本語日本語日", collapsed(11)), "日本語日本…");
        assert_eq!(clip("ab日本語", collapsed(5)), "ab日…");
        assert_eq!(clip("héllo", collapsed(0)), "héllo");
        let expanded = RenderOptions {
            expanded: true,
            ..collapsed(3)
        };
        assert_eq!(clip("héllo", expanded), "héllo");
    }

    #[test]
    fn head_lines_count_what_they_hide() {
        let text = "one\ntwo\nthree\n";
        assert_eq!(
            to_markup(&head_lines(text, 1, Style::Normal, collapsed(0))),
            "one\n[dim]… 2 more lines[/]"
        );
        assert_eq!(
            to_markup(&head_lines(text, 2, Style::Error, collapsed(0))),
            "[error]one[/]\n[error]two[/]\n[dim]… 1 more line[/]"
        );
        let expanded = RenderOptions {
            expanded: true,
            ..collapsed(0)
        };
        assert_eq!(
            to_markup(&head_lines(text, 1, Style::Normal, expanded)),
            "one\ntwo\nthree"
        );
    }

    #[test]
    fn tail_lines_count_the_whole_output_when_it_is_known() {
        assert_eq!(
            to_markup(&tail_lines("a\nb\nc", 2, None, Style::Normal, collapsed(0))),
            "[dim]… 1 earlier line[/]\nb\nc"
        );
        assert_eq!(
            to_markup(&tail_lines(
                "a\nb\nc",
                2,
                Some(900),
                Style::Normal,
                collapsed(0)
            )),
            "[dim]… 898 earlier lines[/]\nb\nc"
        );
        // `seq 1 900`: 901 lines by the count, the last one empty.
        assert_eq!(
            to_markup(&tail_lines(
                "a\nb\nc\n",
                2,
                Some(901),
                Style::Normal,
                collapsed(0)
            )),
            "[dim]… 898 earlier lines[/]\nb\nc"
        );
    }

    #[test]
    fn only_notice_shaped_brackets_split_off() {
        assert_eq!(
            split_notice("a\nb\n\n[50.0KB limit reached]"),
            ("a\nb", Some("[50.0KB limit reached]"))
        );
        assert_eq!(
            split_notice("\n\n[3 more lines in file. Use offset=4 to continue.]"),
            (
                "",
                Some("[3 more lines in file. Use offset=4 to continue.]")
            )
        );
        assert_eq!(
            split_notice(
                "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' f | head -c 51200]"
            ),
            (
                "",
                Some(
                    "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' f | head -c 51200]"
                )
            )
        );
        assert_eq!(split_notice("x = 1\n\n[core]"), ("x = 1\n\n[core]", None));
        assert_eq!(
            split_notice("a\n\n[two\nlines limit]"),
            ("a\n\n[two\nlines limit]", None)
        );
        assert_eq!(split_notice(""), ("", None));
    }
}
