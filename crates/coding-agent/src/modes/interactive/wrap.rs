//! Wrapping styled lines to the terminal's width, so the transcript knows
//! exactly how many rows it takes (scrolling and bottom anchoring need it).

use unicode_width::UnicodeWidthChar;

use crate::render::{Span, Style, StyledLine};

/// Columns a tab expands to.
const TAB: &str = "    ";

/// `line` cut into rows of at most `width` columns: at the last space when a
/// row has one, else mid-word. Tabs become spaces and other control
/// characters are dropped, so every character's width is known.
pub fn wrap(line: &StyledLine, width: u16) -> Vec<StyledLine> {
    let width = usize::from(width.max(1));
    let mut chars: Vec<(char, Style)> = Vec::new();
    for span in &line.spans {
        for c in span.text.chars() {
            if c == '\t' {
                chars.extend(TAB.chars().map(|t| (t, span.style)));
            } else if !c.is_control() {
                chars.push((c, span.style));
            }
        }
    }
    let mut hang = hanging_prefix(&chars);
    let mut hang_width: usize = hang.iter().map(|&(c, _)| c.width().unwrap_or(0)).sum();
    if hang_width * 2 >= width {
        (hang, hang_width) = (Vec::new(), 0);
    }
    let mut rows = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        // Later rows start under the first one's text.
        let prefix: &[(char, Style)] = if rows.is_empty() { &[] } else { &hang };
        let mut used = if rows.is_empty() { 0 } else { hang_width };
        let mut end = start;
        let mut last_space = None;
        // Beside a wide character (CJK ideographs, which break anywhere):
        // a line of them does not leave `> ` alone on its row.
        let mut last_wide = None;
        let mut words = false;
        while end < chars.len() {
            let w = chars[end].0.width().unwrap_or(0);
            if used + w > width && end > start {
                break;
            }
            if chars[end].0 == ' ' {
                // Leading indentation is no place to break.
                if words {
                    last_space = Some(end);
                }
            } else {
                if words && beside_wide(&chars, end) {
                    last_wide = Some(end);
                }
                words = true;
            }
            used += w;
            end += 1;
        }
        let mut next = end;
        if end < chars.len() && chars[end].0 == ' ' {
            next = end + 1;
        } else if end < chars.len() && beside_wide(&chars, end) {
            // The row ends beside a wide character: a break already.
        } else if end < chars.len() {
            match (last_space.filter(|&s| s > start), last_wide) {
                (Some(space), wide) if wide.is_none_or(|w| w <= space) => {
                    end = space;
                    next = space + 1;
                }
                (_, Some(wide)) if wide > start => {
                    end = wide;
                    next = wide;
                }
                _ => {}
            }
        }
        if prefix.is_empty() {
            rows.push(join(&chars[start..end]));
        } else {
            let row: Vec<(char, Style)> =
                prefix.iter().chain(&chars[start..end]).copied().collect();
            rows.push(join(&row));
        }
        start = next;
    }
    if rows.is_empty() {
        rows.push(StyledLine::default());
    }
    rows
}

/// Each of `lines` cut into rows of at most `width` columns ([`wrap`]).
pub fn wrap_all(lines: &[StyledLine], width: u16) -> Vec<StyledLine> {
    lines.iter().flat_map(|line| wrap(line, width)).collect()
}

/// Whether a line may break before `chars[i]`: beside a wide character
/// (an ideograph), as text in those scripts breaks between any two.
fn beside_wide(chars: &[(char, Style)], i: usize) -> bool {
    let wide = |at: usize| chars.get(at).is_some_and(|&(c, _)| c.width() == Some(2));
    i > 0 && (wide(i) || wide(i - 1))
}

/// What the rows after a wrapped line's first start with, so they line up
/// under its text: its leading spaces, a quote's bar (`│ `, kept), and a
/// list marker (`- `, `* `, `+ `, `12. `, `3) `) as spaces.
fn hanging_prefix(chars: &[(char, Style)]) -> Vec<(char, Style)> {
    let mut prefix = Vec::new();
    let mut i = 0;
    let blank = |prefix: &mut Vec<(char, Style)>, count: usize| {
        prefix.extend(std::iter::repeat_n((' ', Style::Normal), count));
    };
    loop {
        match chars.get(i..i + 2).map(|pair| (pair[0].0, pair[1].0)) {
            Some(('│', ' ')) => {
                prefix.extend_from_slice(&chars[i..i + 2]);
                i += 2;
            }
            _ if chars.get(i).is_some_and(|&(c, _)| c == ' ') => {
                blank(&mut prefix, 1);
                i += 1;
            }
            _ => break,
        }
    }
    let rest: String = chars[i..].iter().take(12).map(|&(c, _)| c).collect();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let marker = if ["- ", "* ", "+ "].iter().any(|m| rest.starts_with(m)) {
        2
    } else if digits > 0 && (rest[digits..].starts_with(". ") || rest[digits..].starts_with(") ")) {
        digits + 2
    } else {
        0
    };
    blank(&mut prefix, marker);
    prefix
}

/// Where a line of the prompt editor breaks into rows of `width` columns
/// (`widths` holds each character's): after the last space that fits, as
/// [`wrap`] breaks, or mid-word when a word is longer than a row. Unlike
/// [`wrap`], every character stays in a row (the space a row ends on too),
/// so the cursor's column maps onto the rows. The character ranges of the
/// rows (one, empty, for an empty line).
pub fn break_ranges(chars: &[char], widths: &[usize], width: usize) -> Vec<std::ops::Range<usize>> {
    let mut rows = Vec::new();
    let (mut start, mut used, mut space) = (0, 0, None);
    let mut i = 0;
    while i < chars.len() {
        if used + widths[i] > width && i > start {
            let end = space.map_or(i, |s: usize| s + 1);
            rows.push(start..end);
            start = end;
            used = widths[start..i].iter().sum();
            space = None;
            continue;
        }
        if chars[i] == ' ' {
            space = Some(i);
        }
        used += widths[i];
        i += 1;
    }
    rows.push(start..chars.len());
    rows
}

/// Characters back into spans, neighbours of one style merged.
fn join(chars: &[(char, Style)]) -> StyledLine {
    let mut line = StyledLine::default();
    for &(c, style) in chars {
        match line.spans.last_mut() {
            Some(span) if span.style == style => span.text.push(c),
            _ => line.spans.push(Span {
                text: c.to_string(),
                style,
            }),
        }
    }
    line
}

/// `line` with every character a terminal shows as nothing, or obeys
/// instead of showing, spelled out in [`Style::Warning`]: `\r`, `\n`,
/// `\x1b` for the ASCII controls, `<U+202E>` for the others, for
/// whitespace other than a space or a tab, and for Unicode's default-ignorable
/// characters (zero-width and bidi controls, variation selectors, tags,
/// fillers). For text the user approves: [`wrap`] drops control characters
/// and the terminal draws the others as nothing or reorders the text around
/// them, so `touch a\u{202e}b.txt` was approved as `touch ab.txt` and an
/// escape sequence could erase what came before it. A tab stays (it is
/// drawn as blank space, which it is).
pub fn spell_out_hidden(line: &StyledLine) -> StyledLine {
    let mut shown = StyledLine::default();
    for span in &line.spans {
        let mut text = String::new();
        for c in span.text.chars() {
            let Some(name) = hidden_name(c) else {
                text.push(c);
                continue;
            };
            if !text.is_empty() {
                shown.spans.push(Span {
                    text: std::mem::take(&mut text),
                    style: span.style,
                });
            }
            shown.spans.push(Span {
                text: name,
                style: Style::Warning,
            });
        }
        if !text.is_empty() {
            shown.spans.push(Span {
                text,
                style: span.style,
            });
        }
    }
    shown
}

/// How [`spell_out_hidden`] shows `c`; `None` for a character that shows
/// as itself.
fn hidden_name(c: char) -> Option<String> {
    match c {
        '\t' | ' ' => None,
        '\r' => Some("\\r".to_owned()),
        '\n' => Some("\\n".to_owned()),
        c if c.is_ascii_control() => Some(format!("\\x{:02x}", u32::from(c))),
        c if c.is_control() || c.is_whitespace() || default_ignorable(c) => {
            Some(format!("<U+{:04X}>", u32::from(c)))
        }
        _ => None,
    }
}

/// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt):
/// characters drawn as nothing unless the renderer knows them, plus the
/// interlinear annotation controls (U+FFF9-U+FFFB, format characters drawn
/// as nothing too).
fn default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{61C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Display width of a text.
pub fn text_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(rows: &[StyledLine]) -> Vec<String> {
        rows.iter().map(StyledLine::plain).collect()
    }

    #[test]
    fn wrap_breaks_at_the_last_space_and_keeps_styles() {
        let line = StyledLine::new("hello ", Style::Bold).push("wide world", Style::Dim);
        let rows = wrap(&line, 11);
        assert_eq!(plain(&rows), ["hello wide", "world"]);
        assert_eq!(rows[0].spans[1].style, Style::Dim);
    }

    #[test]
    fn wrap_cuts_words_longer_than_the_width_and_expands_tabs() {
        let line = StyledLine::new("\tabcdefgh", Style::Normal);
        assert_eq!(plain(&wrap(&line, 5)), ["    a", "bcdef", "gh"]);
    }

    #[test]
    fn a_wrapped_list_item_or_quote_goes_on_under_its_text() {
        let item = StyledLine::new("  - ", Style::Dim).push("one two three four", Style::Normal);
        assert_eq!(plain(&wrap(&item, 14)), ["  - one two", "    three four"]);
        let numbered = StyledLine::new("12. alpha beta gamma", Style::Normal);
        assert_eq!(plain(&wrap(&numbered, 14)), ["12. alpha beta", "    gamma"]);
        let quote = StyledLine::new("│ ", Style::Dim).push("said this and that", Style::Normal);
        let rows = wrap(&quote, 12);
        assert_eq!(plain(&rows), ["│ said this", "│ and that"]);
        assert_eq!(
            rows[1].spans[0].style,
            Style::Dim,
            "the bar keeps its style"
        );
        // A prefix as wide as half the row is left off.
        let deep = StyledLine::new("        - abc def", Style::Normal);
        assert_eq!(plain(&wrap(&deep, 14)), ["        - abc", "def"]);
    }

    /// Ideographs break anywhere: a line of them after a prompt mark fills
    /// the row instead of leaving the mark alone on it; a Latin word after
    /// them still moves whole.
    #[test]
    fn wide_characters_are_places_to_break() {
        let rows = wrap(
            &StyledLine::new(format!("> {}", "中".repeat(12)), Style::Normal),
            10,
        );
        assert_eq!(plain(&rows), ["> 中中中中", "中中中中中", "中中中"]);
        let rows = wrap(&StyledLine::new("中文 abcdefgh", Style::Normal), 10);
        assert_eq!(plain(&rows), ["中文", "abcdefgh"]);
        let rows = wrap(&StyledLine::new("ab中文字abcdef", Style::Normal), 10);
        assert_eq!(plain(&rows), ["ab中文字", "abcdef"]);
    }

    #[test]
    fn hidden_characters_are_spelled_out_as_warnings_and_the_rest_kept() {
        let line = StyledLine::new("$ ", Style::Bold).push(
            "touch a\u{202e}b\u{200b}.txt\r\x1b[2K\u{a0}\u{7f}\u{85}\tx é中",
            Style::Accent,
        );
        assert_eq!(
            crate::render::to_markup(&[spell_out_hidden(&line)]),
            "[bold]$ [/][accent]touch a[/][warning]<U+202E>[/][accent]b[/]\
             [warning]<U+200B>[/][accent].txt[/][warning]\\r[/][warning]\\x1b[/]\
             [accent][2K[/][warning]<U+00A0>[/][warning]\\x7f[/][warning]<U+0085>[/]\
             [accent]\tx é中[/]"
        );
        let plain = StyledLine::new("ls -la", Style::Normal);
        assert_eq!(spell_out_hidden(&plain), plain);
    }

    #[test]
    fn wrap_keeps_an_empty_line_as_one_row() {
        assert_eq!(plain(&wrap(&StyledLine::default(), 10)), [""]);
    }
}
