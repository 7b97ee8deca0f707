//! Styled lines: what a tool's renderers produce for a terminal.
//!
//! Styles are semantic (a theme maps them to colours), so no terminal crate is
//! needed to describe a rendering and none leaks into the lower layers.

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
