//! The one place semantic styles become terminal colours.

use ratatui::style::{Color, Modifier, Style as TermStyle};
use ratatui::text::{Line, Span};

use crate::render::{Style, StyledLine};

/// The terminal style of a semantic [`Style`].
pub fn term_style(style: Style) -> TermStyle {
    match style {
        Style::Normal => TermStyle::default(),
        Style::Dim => TermStyle::default().fg(Color::DarkGray),
        Style::Bold => TermStyle::default().add_modifier(Modifier::BOLD),
        Style::Accent => TermStyle::default().fg(Color::Cyan),
        Style::Success => TermStyle::default().fg(Color::Green),
        Style::Error => TermStyle::default().fg(Color::Red),
        Style::Warning => TermStyle::default().fg(Color::Yellow),
    }
}

/// A styled line as a ratatui line.
pub fn to_line(line: &StyledLine) -> Line<'static> {
    Line::from(
        line.spans
            .iter()
            .map(|span| Span::styled(span.text.clone(), term_style(span.style)))
            .collect::<Vec<_>>(),
    )
}
