//! Colours for the numbered diff `edit` reports in `details.diff`
//! ([`diff`](super::diff)): added lines (`+`) in the success style, removed lines
//! (`-`) in the error style, context and the `...` marker of skipped lines
//! dim.

use crate::render::preview::{clip, count, head, limit};
use crate::render::{RenderOptions, Style, StyledLine};

/// Diff lines shown before the view is expanded.
pub const DIFF_PREVIEW_LINES: usize = 40;

/// The style of one diff line.
fn style_of(line: &str) -> Style {
    match line.as_bytes().first() {
        Some(b'+') => Style::Success,
        Some(b'-') => Style::Error,
        _ => Style::Dim,
    }
}

/// The diff as coloured lines: its first [`DIFF_PREVIEW_LINES`] and a count
/// of the rest when collapsed, all of it when expanded.
pub fn diff_lines(diff: &str, options: RenderOptions) -> Vec<StyledLine> {
    let head = head(diff, limit(DIFF_PREVIEW_LINES, options));
    let mut lines: Vec<StyledLine> = head
        .lines
        .iter()
        .map(|line| StyledLine::new(clip(line, options), style_of(line)))
        .collect();
    if head.more > 0 {
        lines.push(StyledLine::new(
            format!(
                "… {}",
                count(head.more, "more diff line", "more diff lines")
            ),
            Style::Dim,
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::to_markup;
    use crate::tools::edit::diff::generate_diff_string;

    #[test]
    fn added_removed_and_context_lines_take_their_colours() {
        let old: String = (1..=14).map(|i| format!("line {i}\n")).collect();
        let new = old
            .replace("line 1\n", "first\n")
            .replace("line 14\n", "last\n");
        let diff = generate_diff_string(&old, &new, 4).diff;
        assert_eq!(
            to_markup(&diff_lines(&diff, RenderOptions::default())),
            "[error]- 1 line 1[/]\n[success]+ 1 first[/]\n\
             [dim]  2 line 2[/]\n[dim]  3 line 3[/]\n[dim]  4 line 4[/]\n[dim]  5 line 5[/]\n\
             [dim]    ...[/]\n\
             [dim] 10 line 10[/]\n[dim] 11 line 11[/]\n[dim] 12 line 12[/]\n[dim] 13 line 13[/]\n\
             [error]-14 line 14[/]\n[success]+14 last[/]"
        );
    }

    #[test]
    fn a_long_diff_collapses_to_its_first_lines() {
        let diff: String = (1..=45).map(|i| format!("+{i} line\n")).collect();
        let lines = diff_lines(&diff, RenderOptions::default());
        assert_eq!(lines.len(), DIFF_PREVIEW_LINES + 1);
        assert_eq!(
            to_markup(&lines[39..]),
            "[success]+40 line[/]\n[dim]… 5 more diff lines[/]"
        );
        let expanded = RenderOptions {
            expanded: true,
            ..RenderOptions::default()
        };
        assert_eq!(diff_lines(&diff, expanded).len(), 45);
    }
}
