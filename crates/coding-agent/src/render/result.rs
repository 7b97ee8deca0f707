//! Result bodies the tools share: errors, plain text with its notice, image
//! placeholders, and the counted lists of grep, find and ls.

use std::borrow::Cow;

use agent_ai::{Content, ImageContent};
use agent_core::AgentToolResult;

use super::preview::{count, head_lines, notice_line, split_notice};
use super::{RenderOptions, Style, StyledLine};
use crate::support::truncate::format_size;

/// Lines of text results shown before the view is expanded.
pub const TEXT_PREVIEW_LINES: usize = 10;

/// A one-line stand-in for an image: `[image: image/png, 12.3KB]`, the size
/// being that of the decoded bytes, worked out from the base64 length.
pub fn image_placeholder(image: &ImageContent) -> StyledLine {
    let data = image.data.as_bytes();
    let padding = data.iter().rev().take(2).filter(|b| **b == b'=').count();
    let bytes = (data.len() / 4 * 3).saturating_sub(padding);
    StyledLine::new(
        format!("[image: {}, {}]", image.mime_type, format_size(bytes)),
        Style::Dim,
    )
}

/// An error as the model read it, in the error style (its first lines while
/// collapsed).
pub fn error_lines(result: &AgentToolResult, options: RenderOptions) -> Vec<StyledLine> {
    block_lines(result, |text| {
        head_lines(text, TEXT_PREVIEW_LINES, Style::Error, options)
    })
}

/// Each block of `result`: its texts through `text`, its images as
/// placeholders.
fn block_lines(
    result: &AgentToolResult,
    text: impl Fn(&str) -> Vec<StyledLine>,
) -> Vec<StyledLine> {
    let mut lines = Vec::new();
    for content in &result.content {
        match content {
            Content::Text(block) => lines.extend(text(&block.text)),
            Content::Image(image) => lines.push(image_placeholder(image)),
        }
    }
    lines
}

/// A text as a preview of its body in `style` and its notice, if any, in the
/// warning style (shown even when the preview hides the end of the text).
pub fn text_lines(
    text: &str,
    collapsed: usize,
    style: Style,
    options: RenderOptions,
) -> Vec<StyledLine> {
    let (body, notice) = split_notice(text);
    let mut lines = head_lines(body, collapsed, style, options);
    lines.extend(notice.map(notice_line));
    lines
}

/// A successful result block by block: texts previewed with their notices,
/// images as placeholders.
pub fn content_lines(result: &AgentToolResult, options: RenderOptions) -> Vec<StyledLine> {
    block_lines(result, |text| {
        text_lines(text, TEXT_PREVIEW_LINES, Style::Normal, options)
    })
}

/// How a list tool (grep, find, ls) words its results.
#[derive(Debug, Clone, Copy)]
pub struct ListKind {
    /// One item ("match").
    pub singular: &'static str,
    /// Several items ("matches").
    pub plural: &'static str,
    /// The whole text the tool answers with when it found nothing.
    pub empty: &'static str,
    /// Whether a line of the list is an item (grep's context lines are not).
    pub is_item: fn(&str) -> bool,
}

/// The text of a result's text blocks, joined by newlines (borrowed when
/// there is one block, as for every built-in tool).
pub fn joined_text(result: &AgentToolResult) -> Cow<'_, str> {
    let mut texts = result.content.iter().filter_map(Content::as_text);
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first}\n{second}");
            for text in texts {
                joined.push('\n');
                joined.push_str(text);
            }
            Cow::Owned(joined)
        }
    }
}

/// A list result: a dim count of its items, its first lines (all when
/// expanded) and its notice; the tool's "nothing found" text dim; errors red.
pub fn list_lines(
    result: &AgentToolResult,
    is_error: bool,
    kind: ListKind,
    options: RenderOptions,
) -> Vec<StyledLine> {
    if is_error {
        return error_lines(result, options);
    }
    let text = joined_text(result);
    if text == kind.empty {
        return vec![StyledLine::new(text, Style::Dim)];
    }
    let (body, notice) = split_notice(&text);
    let items = body.lines().filter(|line| (kind.is_item)(line)).count();
    let mut lines = vec![StyledLine::new(
        count(items, kind.singular, kind.plural),
        Style::Dim,
    )];
    lines.extend(head_lines(body, TEXT_PREVIEW_LINES, Style::Normal, options));
    lines.extend(notice.map(notice_line));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::to_markup;

    #[test]
    fn text_blocks_join_with_newlines_and_images_are_skipped() {
        let result = AgentToolResult {
            content: vec![
                Content::text("a"),
                Content::image("aGk=", "image/png"),
                Content::text("b"),
                Content::text("c"),
            ],
            details: None,
            terminate: false,
        };
        assert_eq!(joined_text(&result), "a\nb\nc");
        assert_eq!(joined_text(&AgentToolResult::text("only")), "only");
        assert_eq!(joined_text(&AgentToolResult::default()), "");
    }

    #[test]
    fn image_placeholders_give_the_decoded_size() {
        let image = |data: &str| ImageContent {
            data: data.into(),
            mime_type: "image/png".into(),
        };
        assert_eq!(
            to_markup(&[image_placeholder(&image("aGk="))]),
            "[dim][image: image/png, 2B][/]"
        );
        assert_eq!(
            to_markup(&[image_placeholder(&image("aA=="))]),
            "[dim][image: image/png, 1B][/]"
        );
        assert_eq!(
            image_placeholder(&image(&"A".repeat(16_800))).plain(),
            "[image: image/png, 12.3KB]"
        );
    }

    #[test]
    fn a_notice_shows_even_when_the_preview_hides_the_end() {
        let text = format!(
            "{}\n\n[Showing lines 1-12 of 99. Use offset=13 to continue.]",
            (1..=12)
                .map(|i| format!("line {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert_eq!(
            to_markup(&text_lines(
                &text,
                2,
                Style::Normal,
                RenderOptions::default()
            )),
            "line 1\nline 2\n[dim]… 10 more lines[/]\n[warning][Showing lines 1-12 of 99. Use offset=13 to continue.][/]"
        );
    }
}
