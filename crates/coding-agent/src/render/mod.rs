//! Styled lines: what a tool's renderers produce for a terminal.
//!
//! Styles are semantic (a theme maps them to colours), so no terminal crate is
//! needed to describe a rendering and none leaks into the lower layers. The
//! interactive mode turns [`StyledLine`]s into its widgets and wraps long
//! lines itself; renderers never wrap.
//!
//! The submodules hold what the tools' renderers share: reading arguments that
//! may still be streaming ([`call`]), bounded previews of long texts
//! ([`preview`]) and result bodies ([`result`]); [`ToolRenderers`] picks the
//! renderer of a call by its tool's name. A renderer only one tool
//! uses lives in that tool's folder (edit's coloured diff:
//! [`diff_view`](crate::tools::edit::diff_view)).

use std::time::Duration;

pub mod call;
pub mod generic;
pub mod preview;
mod renderers;
pub mod result;

pub use renderers::ToolRenderers;

/// The role of a span of text; the terminal theme picks the colour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Style {
    /// Ordinary text.
    #[default]
    Normal,
    /// Less important text (paths, counts).
    Dim,
    /// Headings and tool names.
    Bold,
    /// Highlights such as the tool's main argument.
    Accent,
    /// Added lines, success.
    Success,
    /// Removed lines, failures.
    Error,
    /// Notices such as truncation.
    Warning,
}

impl Style {
    /// The style's name in [`to_markup`]; `None` for [`Style::Normal`], which
    /// is left unmarked.
    fn markup_name(self) -> Option<&'static str> {
        match self {
            Style::Normal => None,
            Style::Dim => Some("dim"),
            Style::Bold => Some("bold"),
            Style::Accent => Some("accent"),
            Style::Success => Some("success"),
            Style::Error => Some("error"),
            Style::Warning => Some("warning"),
        }
    }
}

/// A run of text in one style.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Span {
    /// The text (no newlines).
    pub text: String,
    /// Its style.
    pub style: Style,
}

/// One terminal line made of spans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StyledLine {
    /// The spans, left to right.
    pub spans: Vec<Span>,
}

impl StyledLine {
    /// A line of one span.
    pub fn new(text: impl Into<String>, style: Style) -> Self {
        StyledLine {
            spans: vec![Span {
                text: text.into(),
                style,
            }],
        }
    }

    /// Appends a span.
    #[must_use]
    pub fn push(mut self, text: impl Into<String>, style: Style) -> Self {
        self.spans.push(Span {
            text: text.into(),
            style,
        });
        self
    }

    /// The line without styles.
    pub fn plain(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }
}

/// How a tool's call or result is to be rendered. Made by the interactive
/// mode for every redraw; renderers are pure functions of it and the data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// The user asked to see everything; otherwise long texts show a bounded
    /// preview and a count of what is hidden.
    pub expanded: bool,
    /// For `render_result`: a progress update of a tool still running (bash's
    /// live output). For `render_call`: the arguments are still streaming.
    pub is_partial: bool,
    /// Columns available; collapsed previews cut longer lines so a huge line
    /// stays cheap. 0 means unknown (nothing is cut).
    pub width: u16,
    /// How long the call has run (while partial) or ran (when done), when the
    /// caller measured it.
    pub elapsed: Option<Duration>,
}

/// The lines in a compact text form: one text line per styled line, each
/// styled span as `[style]text[/]`, normal spans bare, e.g.
/// `[bold]read[/] [accent]src/main.rs[/][dim]:10-20[/]`. For tests (a whole
/// rendering compares as one string) and for debugging.
pub fn to_markup(lines: &[StyledLine]) -> String {
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        for span in &line.spans {
            match span.style.markup_name() {
                Some(name) => {
                    out.push('[');
                    out.push_str(name);
                    out.push(']');
                    out.push_str(&span.text);
                    out.push_str("[/]");
                }
                None => out.push_str(&span.text),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_marks_styled_spans_and_leaves_normal_ones_bare() {
        let lines = vec![
            StyledLine::new("read", Style::Bold)
                .push(" ", Style::Normal)
                .push("src/main.rs", Style::Accent)
                .push(":10-20", Style::Dim),
            StyledLine::new("+1 added", Style::Success),
            StyledLine::default(),
            StyledLine::new("-2 removed", Style::Error).push("!", Style::Warning),
        ];
        assert_eq!(
            to_markup(&lines),
            "[bold]read[/] [accent]src/main.rs[/][dim]:10-20[/]\n[success]+1 added[/]\n\n[error]-2 removed[/][warning]![/]"
        );
    }
}
