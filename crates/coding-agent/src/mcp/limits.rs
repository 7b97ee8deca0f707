//! What of an MCP result one turn can hold. A server's answer has no bound
//! but the transport's (16 MB a message), and whatever the model is shown
//! is sent again with every later request: one large answer (a whole web
//! page, a database dump) would fill the context window for the rest of the
//! session, and an image over a provider's limits would make every later
//! request fail. So the text is kept within the limits every built-in tool
//! keeps to (2000 lines, 50 KB, `support::truncate`), from its start, with a
//! notice saying what was left out; images are fitted as `read` fits them
//! (`tools::read::image`). Claude Code cuts MCP output at 25k tokens; Pi has
//! no MCP.

use agent_ai::Content;
use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::support::truncate::{Limits, format_size, head_or_bytes};
use crate::tools::read::image::{Aborted, Fit, fit_image, pixel_limit, sniff};

/// How much of the server's text the model was shown, when not all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextCut {
    /// Lines shown (a line cut in the middle counts).
    pub shown_lines: usize,
    /// UTF-8 bytes shown.
    pub shown_bytes: usize,
    /// Lines in all the text blocks.
    pub total_lines: usize,
    /// UTF-8 bytes in all the text blocks.
    pub total_bytes: usize,
}

impl TextCut {
    /// The notice after the text shown: what was left out and what to do.
    fn notice(&self) -> String {
        format!(
            "MCP output truncated: showing {} of {} lines ({} of {}). Ask the tool for less \
             (a narrower query, a page or a limit, if it takes one)",
            self.shown_lines,
            self.total_lines,
            format_size(self.shown_bytes),
            format_size(self.total_bytes),
        )
    }
}

/// Keeps the text blocks of `content`, in order, within the tools' limits:
/// the block that crosses them is cut after its last whole line (or, when
/// its first line alone is too long, such as minified JSON, after the bytes
/// that fit), the text blocks after it are left out, and a notice ends the
/// text. Images stay (they are fitted on their own).
pub fn bound_text(content: Vec<Content>) -> (Vec<Content>, Option<TextCut>) {
    let texts = || content.iter().filter_map(Content::as_text);
    let total_lines = texts().map(|text| text.split('\n').count()).sum();
    let total_bytes = texts().map(str::len).sum();
    let limits = Limits::default();
    if total_lines <= limits.max_lines && total_bytes <= limits.max_bytes {
        return (content, None);
    }
    let mut cut = TextCut {
        shown_lines: 0,
        shown_bytes: 0,
        total_lines,
        total_bytes,
    };
    let mut room = Some(limits);
    let mut kept = Vec::with_capacity(content.len() + 1);
    for block in content {
        let Some(text) = block.as_text() else {
            kept.push(block);
            continue;
        };
        let Some(left) = room else { continue };
        let (shown, lines, whole) = head_or_bytes(text, left);
        cut.shown_lines += lines;
        cut.shown_bytes += shown.len();
        room = whole.then(|| Limits {
            max_lines: left.max_lines - lines,
            max_bytes: left.max_bytes - shown.len(),
        });
        if !shown.is_empty() {
            kept.push(Content::text(shown));
        }
    }
    let notice = format!("[{}]", cut.notice());
    match kept.last_mut() {
        Some(Content::Text(last)) => last.text = format!("{}\n\n{notice}", last.text),
        _ => kept.push(Content::text(notice)),
    }
    (kept, Some(cut))
}

/// Base64 as servers send it: standard alphabet, padding optional.
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A server's image (`data` in base64, of the type the server named
/// `mime_type`) as the model can be sent it: within 2000x2000 pixels and
/// 4.5 MB, scaled down when larger, with `read`'s note on how to map
/// coordinates back; or a line saying why it is not shown. The type sent is
/// the one its bytes show. CPU-heavy: call it off the async runtime.
pub fn fitted_image(
    data: &str,
    mime_type: &str,
    cancel: &CancellationToken,
) -> Result<Vec<Content>, Aborted> {
    let not_shown = |what: String, why: &str| {
        Ok(vec![Content::text(format!(
            "[image: {what}, not shown: {why}]"
        ))])
    };
    let Ok(bytes) = LENIENT_BASE64.decode(data) else {
        return not_shown(mime_type.to_owned(), "not valid base64");
    };
    let Some(kind) = sniff(&bytes) else {
        return not_shown(
            format!("{mime_type}, {} bytes", bytes.len()),
            "not a PNG, JPEG, GIF or WebP image",
        );
    };
    match fit_image(&bytes, kind, cancel)? {
        Fit::Image(fitted) => {
            let note = fitted.dimension_note();
            let mut content = vec![Content::image(fitted.data, fitted.mime_type)];
            content.extend(note.map(Content::text));
            Ok(content)
        }
        Fit::TooLarge {
            width,
            height,
            max_pixels,
        } => not_shown(
            format!("{}, {width}x{height} pixels", kind.mime_type()),
            &format!(
                "more than {}",
                pixel_limit(max_pixels, "an image may have to be scaled down")
            ),
        ),
        Fit::NoFit => not_shown(
            format!("{}, {} bytes", kind.mime_type(), bytes.len()),
            "it cannot be decoded, or made small enough to send",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD as PADDED;
    use image::{ImageFormat, RgbImage};
    use std::io::Cursor;

    fn texts(content: &[Content]) -> Vec<&str> {
        content.iter().filter_map(Content::as_text).collect()
    }

    #[test]
    fn text_within_the_limits_is_untouched() {
        let content = vec![Content::text("a\nb"), Content::image("aGk=", "image/png")];
        assert_eq!(bound_text(content.clone()), (content, None));
    }

    #[test]
    fn the_block_crossing_the_limits_is_cut_and_the_later_ones_left_out() {
        let first = "x".repeat(30 * 1024);
        let second = vec!["y".repeat(99); 300].join("\n"); // 29,999 bytes
        let content = vec![
            Content::text(first.clone()),
            Content::image("aGk=", "image/png"),
            Content::text(second),
            Content::text("never shown"),
        ];
        let (kept, cut) = bound_text(content);
        let cut = cut.unwrap();
        // 20 KB were left after the first block: 204 lines of 100 bytes.
        assert_eq!(
            cut,
            TextCut {
                shown_lines: 1 + 204,
                shown_bytes: 30 * 1024 + 204 * 100 - 1,
                total_lines: 1 + 300 + 1,
                total_bytes: 30 * 1024 + 29_999 + 11,
            }
        );
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0], Content::text(first));
        assert_eq!(kept[1], Content::image("aGk=", "image/png"));
        let (shown, notice) = texts(&kept)[1].rsplit_once("\n\n").unwrap();
        assert_eq!(shown.lines().count(), 204);
        assert_eq!(
            notice,
            "[MCP output truncated: showing 205 of 302 lines (49.9KB of 59.3KB). Ask the tool \
             for less (a narrower query, a page or a limit, if it takes one)]"
        );
    }

    #[test]
    fn one_long_line_is_cut_on_a_character_boundary() {
        let line = "é".repeat(40 * 1024); // 80 KB, two bytes a character
        let (kept, cut) = bound_text(vec![Content::text(line)]);
        let cut = cut.unwrap();
        assert_eq!((cut.shown_lines, cut.shown_bytes), (1, 50 * 1024));
        let (shown, _) = texts(&kept)[0].split_once("\n\n[").unwrap();
        assert_eq!(shown, "é".repeat(25 * 1024));
    }

    #[test]
    fn a_notice_follows_an_image_that_ends_the_result() {
        let content = vec![
            Content::text("z\n".repeat(3000)),
            Content::image("aGk=", "image/png"),
        ];
        let (kept, _) = bound_text(content);
        assert_eq!(kept.len(), 3);
        assert!(texts(&kept)[1].starts_with("[MCP output truncated: showing 2000 of 3001 lines"));
    }

    fn png(width: u32, height: u32) -> String {
        let mut bytes = Vec::new();
        RgbImage::new(width, height)
            .write_to(&mut Cursor::new(&mut bytes), ImageFormat::Png)
            .unwrap();
        PADDED.encode(bytes)
    }

    #[test]
    fn an_image_within_the_limits_is_sent_with_the_type_its_bytes_show() {
        let data = png(3, 2);
        let fitted = fitted_image(&data, "image/jpeg", &CancellationToken::new()).unwrap();
        assert_eq!(fitted, vec![Content::image(data, "image/png")]);
    }

    #[test]
    fn a_larger_image_is_scaled_down_with_reads_note() {
        let fitted =
            fitted_image(&png(3000, 1500), "image/png", &CancellationToken::new()).unwrap();
        assert!(matches!(&fitted[0], Content::Image(image) if image.mime_type == "image/png"));
        assert_eq!(
            texts(&fitted),
            [
                "[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"
            ]
        );
    }

    #[test]
    fn what_cannot_be_sent_is_a_line_saying_why() {
        let cancel = CancellationToken::new();
        let line =
            |data: &str, mime: &str| texts(&fitted_image(data, mime, &cancel).unwrap()).concat();
        assert_eq!(
            line("%%%", "image/png"),
            "[image: image/png, not shown: not valid base64]"
        );
        assert_eq!(
            line(&PADDED.encode("<svg/>"), "image/svg+xml"),
            "[image: image/svg+xml, 6 bytes, not shown: not a PNG, JPEG, GIF or WebP image]"
        );
        // Unpadded base64 is read too.
        let unpadded = png(1, 1);
        let unpadded = unpadded.trim_end_matches('=');
        assert!(matches!(
            &fitted_image(unpadded, "image/png", &cancel).unwrap()[0],
            Content::Image(_)
        ));
    }
}
