//! Text as `edit` matches it, with a way back to the original bytes.
//!
//! `edit` matches `oldText` against a normalised form of the file: line
//! endings become `\n`, and when an exact match fails, Pi's
//! `normalizeForFuzzyMatch` also applies (NFKC, trailing whitespace stripped
//! per line, smart quotes, dashes and unicode spaces made ASCII). Pi then
//! writes the whole normalised file back. We replace only the matched spans
//! (DEVIATIONS #2), so a [`TextView`] keeps, beside the normalised text, a map
//! of segments from normalised positions back to original byte ranges.

use std::borrow::Cow;
use std::ops::Range;

use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

/// Pi's `normalizeForFuzzyMatch`, applied to a whole text: NFKC, then
/// trailing whitespace stripped from every line, then smart single and double
/// quotes, unicode dashes and unicode spaces replaced by their ASCII forms.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc.split('\n').map(trim_end_js).collect();
    trimmed.join("\n").chars().map(ascii_lookalike).collect()
}

/// Pi's `normalizeToLF`: `\r\n` and then any lone `\r` become `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The file's bytes as `edit` reads them (lossy UTF-8, as Node's decoder),
/// with line endings normalised to `\n`; borrowed when that changes nothing.
pub fn lf_text(bytes: &[u8]) -> Cow<'_, str> {
    match String::from_utf8_lossy(bytes) {
        Cow::Borrowed(text) if !text.contains('\r') => Cow::Borrowed(text),
        text => Cow::Owned(normalize_to_lf(&text)),
    }
}

/// How far a [`TextView`] normalises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalization {
    /// Line endings only (`\r\n` and `\r` become `\n`): exact matching.
    LineEndings,
    /// Line endings, then [`normalize_for_fuzzy_match`]: fuzzy matching.
    Fuzzy,
}

/// A piece of the original and the normalised text it became. The segments
/// of a view tile both texts in order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    orig: Range<usize>,
    norm: Range<usize>,
    /// The normalised text is the original bytes unchanged, so positions
    /// inside map one to one.
    identity: bool,
}

/// Which edges of a match also take the whitespace next to it that
/// normalisation stripped from the end of a line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StrippedEdges {
    /// The match takes the stripped whitespace just before it.
    pub start: bool,
    /// The match takes the stripped whitespace just after it.
    pub end: bool,
}

impl StrippedEdges {
    /// The edges where `old_text` (line endings `\n`) itself reaches into
    /// stripped whitespace: where its first or last line ends in whitespace
    /// that [`normalize_for_fuzzy_match`] strips. `"\t\nc: 2"` matches from
    /// the line break of a whitespace-only line, so it covers that line's
    /// spaces, whatever they are: left behind, they were glued in front of
    /// the new text and indented it too far. `"c-z"` does not cover the
    /// trailing spaces of `"c\u{2014}z  "`: they stay, as after an exact match.
    pub fn reached_by(old_text: &str) -> Self {
        let first = old_text.split('\n').next().unwrap_or_default();
        let last = old_text.rsplit('\n').next().unwrap_or_default();
        StrippedEdges {
            start: ends_in_stripped_whitespace(first),
            end: ends_in_stripped_whitespace(last),
        }
    }
}

/// Whether normalising `line` strips whitespace from its end (NFKC first,
/// as Pi: a compatibility character may become a space).
fn ends_in_stripped_whitespace(line: &str) -> bool {
    let nfkc: String = line.nfkc().collect();
    trim_end_js(&nfkc).len() < nfkc.len()
}

/// Where a match in normalised text lies in the original bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginalSpan {
    /// The original bytes the match covers.
    pub range: Range<usize>,
    /// Normalised text of the part of `range` before the match. Non-empty only
    /// when the match starts inside a character that normalised into several
    /// (a ligature): that character is replaced as a whole, and this keeps
    /// what of it the match did not cover.
    pub prefix: String,
    /// Like `prefix`, for the part of `range` after the match.
    pub suffix: String,
}

/// Normalised text plus the map back to the original bytes.
#[derive(Debug, Clone)]
pub struct TextView {
    text: String,
    segments: Vec<Segment>,
    orig_len: usize,
}

impl TextView {
    /// Decodes `original` as lossy UTF-8 (each invalid sequence reads as
    /// U+FFFD, as in Node) and normalises it.
    pub fn new(original: &[u8], normalization: Normalization) -> Self {
        let mut builder = Builder {
            view: TextView {
                text: String::with_capacity(original.len()),
                segments: Vec::new(),
                orig_len: original.len(),
            },
            normalization,
            line: Vec::new(),
        };
        for unit in units(original) {
            if unit.ch == '\n' {
                builder.finish_line();
                builder.push_segment(unit.orig, "\n", unit.verbatim);
            } else {
                builder.line.push(unit);
            }
        }
        builder.finish_line();
        builder.view
    }

    /// The normalised text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Maps the match `norm` (a range of [`TextView::text`] on character
    /// boundaries) to the original bytes. Characters that normalised to
    /// nothing (a line's stripped trailing whitespace) right at an edge of
    /// the match are inside the span where `stripped` says so, else outside.
    pub fn original_span(&self, norm: Range<usize>, stripped: StrippedEdges) -> OriginalSpan {
        let segments = &self.segments;
        let first = segments.partition_point(|s| s.norm.end <= norm.start);
        let Some(start_segment) = segments.get(first) else {
            return OriginalSpan {
                range: self.orig_len..self.orig_len,
                prefix: String::new(),
                suffix: String::new(),
            };
        };
        let (mut start, prefix) = if start_segment.identity {
            (
                start_segment.orig.start + (norm.start - start_segment.norm.start),
                "",
            )
        } else {
            (
                start_segment.orig.start,
                &self.text[start_segment.norm.start..norm.start],
            )
        };
        if stripped.start && start_segment.norm.start == norm.start {
            let before = segments[..first].iter().rev();
            if let Some(s) = before.take_while(|s| s.norm.is_empty()).last() {
                start = s.orig.start;
            }
        }
        let last = if norm.is_empty() {
            first
        } else {
            segments.partition_point(|s| s.norm.end < norm.end)
        };
        let end_segment = segments.get(last).unwrap_or(start_segment);
        let (mut end, suffix) = if end_segment.identity {
            (
                end_segment.orig.start + (norm.end - end_segment.norm.start),
                "",
            )
        } else {
            (
                end_segment.orig.end,
                &self.text[norm.end..end_segment.norm.end],
            )
        };
        if stripped.end && end_segment.norm.end == norm.end {
            let after = segments.get(last + 1..).unwrap_or_default().iter();
            if let Some(s) = after.take_while(|s| s.norm.is_empty()).last() {
                end = s.orig.end;
            }
        }
        OriginalSpan {
            range: start..end,
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
        }
    }
}

/// One character of the original and the bytes it came from.
#[derive(Debug, Clone)]
struct Unit {
    orig: Range<usize>,
    ch: char,
    /// The original bytes are exactly `ch` in UTF-8 (false for line endings
    /// other than `\n` and for invalid UTF-8 read as U+FFFD).
    verbatim: bool,
}

/// The characters of `bytes`, with `\r\n` and lone `\r` read as one `\n`,
/// one at a time: a unit is several times the size of its character, so a
/// file's worth of them would take many times the file's size.
fn units(bytes: &[u8]) -> impl Iterator<Item = Unit> + '_ {
    let mut offset = 0;
    bytes.utf8_chunks().flat_map(move |chunk| {
        let start = offset;
        offset += chunk.valid().len() + chunk.invalid().len();
        let mut valid = chunk.valid().char_indices().peekable();
        let characters = std::iter::from_fn(move || {
            let (i, ch) = valid.next()?;
            let at = start + i;
            Some(if ch == '\r' {
                let len = if valid.next_if(|&(_, next)| next == '\n').is_some() {
                    2
                } else {
                    1
                };
                Unit {
                    orig: at..at + len,
                    ch: '\n',
                    verbatim: false,
                }
            } else {
                Unit {
                    orig: at..at + ch.len_utf8(),
                    ch,
                    verbatim: true,
                }
            })
        });
        let invalid = (!chunk.invalid().is_empty()).then(|| {
            let at = start + chunk.valid().len();
            Unit {
                orig: at..at + chunk.invalid().len(),
                ch: char::REPLACEMENT_CHARACTER,
                verbatim: false,
            }
        });
        characters.chain(invalid)
    })
}

struct Builder {
    view: TextView,
    normalization: Normalization,
    line: Vec<Unit>,
}

impl Builder {
    fn push_segment(&mut self, orig: Range<usize>, norm: &str, identity: bool) {
        let start = self.view.text.len();
        self.view.text.push_str(norm);
        let end = self.view.text.len();
        if identity
            && let Some(last) = self.view.segments.last_mut()
            && last.identity
        {
            last.orig.end = orig.end;
            last.norm.end = end;
            return;
        }
        self.view.segments.push(Segment {
            orig,
            norm: start..end,
            identity,
        });
    }

    /// Emits the segments of the line collected so far (without its ending).
    fn finish_line(&mut self) {
        let mut line = std::mem::take(&mut self.line);
        self.emit_line(&line);
        // The next line reuses the buffer.
        line.clear();
        self.line = line;
    }

    fn emit_line(&mut self, line: &[Unit]) {
        if line.is_empty() {
            return;
        }
        if self.normalization == Normalization::LineEndings {
            for unit in line {
                let mut buf = [0; 4];
                self.push_segment(
                    unit.orig.clone(),
                    unit.ch.encode_utf8(&mut buf),
                    unit.verbatim,
                );
            }
            return;
        }
        if line.iter().all(|u| u.verbatim && u.ch.is_ascii()) {
            // ASCII normalises to itself (NFKC and the look-alikes leave it
            // alone): only its trailing whitespace goes. Most lines of most
            // files take this way, a segment each.
            let text: String = line.iter().map(|u| u.ch).collect();
            let keep = trim_end_js(&text).len();
            if let Some(last_kept) = keep.checked_sub(1) {
                let orig = line[0].orig.start..line[last_kept].orig.end;
                self.push_segment(orig, &text[..keep], true);
            }
            for unit in &line[keep..] {
                self.push_segment(unit.orig.clone(), "", false);
            }
            return;
        }
        let mut chunks = fuzzy_chunks(line);
        let total: String = chunks.iter().map(|c| c.norm.as_str()).collect();
        let keep = trim_end_js(&total).len();
        let mut at = 0;
        for chunk in &mut chunks {
            let end = at + chunk.norm.len();
            if end > keep {
                chunk.norm.truncate(keep.saturating_sub(at));
                chunk.identity = false;
            }
            at = end;
        }
        for chunk in chunks {
            self.push_segment(chunk.orig, &chunk.norm, chunk.identity);
        }
    }
}

/// A run of original characters normalised together.
struct Chunk {
    orig: Range<usize>,
    norm: String,
    identity: bool,
}

/// Splits a line into the smallest runs that NFKC normalises independently,
/// and normalises each (before trailing whitespace is stripped). If the
/// pieces do not add up to the normalised line (a composition this splitting
/// did not foresee), the whole line is one run: correct, only coarser.
fn fuzzy_chunks(line: &[Unit]) -> Vec<Chunk> {
    let mut groups: Vec<&[Unit]> = Vec::new();
    let mut start = 0;
    for i in 1..line.len() {
        if is_normalization_boundary(line[i].ch) {
            groups.push(&line[start..i]);
            start = i;
        }
    }
    groups.push(&line[start..]);
    let chunks: Vec<Chunk> = groups.into_iter().map(chunk_of).collect();
    let pieces: String = chunks.iter().map(|c| c.norm.as_str()).collect();
    if pieces == normalize_units(line) {
        chunks
    } else {
        vec![chunk_of(line)]
    }
}

fn chunk_of(units: &[Unit]) -> Chunk {
    let norm = normalize_units(units);
    let identity = matches!(units, [only] if only.verbatim && norm.chars().eq([only.ch]));
    Chunk {
        orig: units.first().map_or(0, |u| u.orig.start)..units.last().map_or(0, |u| u.orig.end),
        norm,
        identity,
    }
}

/// NFKC, then the ASCII look-alikes (trimming is done per line afterwards:
/// it commutes with these one-for-one replacements).
fn normalize_units(units: &[Unit]) -> String {
    units
        .iter()
        .map(|u| u.ch)
        .nfkc()
        .map(ascii_lookalike)
        .collect()
}

/// Whether NFKC never combines `ch` with what precedes it: `ch` and the first
/// character of its compatibility decomposition are starters that do not
/// compose with a previous character.
fn is_normalization_boundary(ch: char) -> bool {
    let mut first = None;
    decompose_compatible(ch, |d| {
        first.get_or_insert(d);
    });
    let first = first.unwrap_or(ch);
    [ch, first].into_iter().all(|c| {
        canonical_combining_class(c) == 0 && is_nfc_quick(std::iter::once(c)) != IsNormalized::Maybe
    })
}

/// Smart quotes, unicode dashes and unicode spaces to ASCII (Pi's steps 3-6).
fn ascii_lookalike(ch: char) -> char {
    match ch {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// JavaScript's `trimEnd`: its whitespace set differs from Rust's (it has
/// U+FEFF, and not U+0085).
fn trim_end_js(text: &str) -> &str {
    text.trim_end_matches(|c: char| {
        matches!(
            c,
            '\t' | '\n' | '\u{B}' | '\u{C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200A}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202F}'
                    | '\u{205F}'
                    | '\u{3000}'
                    | '\u{FEFF}'
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fuzzy(text: &str) -> TextView {
        TextView::new(text.as_bytes(), Normalization::Fuzzy)
    }

    /// The original text the match `norm` of `view` (made from `text`) covers.
    fn original<'a>(text: &'a str, view: &TextView, norm: Range<usize>) -> &'a str {
        &text[view.original_span(norm, StrippedEdges::default()).range]
    }

    #[test]
    fn normalization_follows_pis_steps() {
        assert_eq!(
            normalize_for_fuzzy_match(
                "keep\u{2019}s  \nconsole.log(\u{2018}hi\u{2019});\n\u{201C}q\u{201D} 1\u{2013}5\u{00A0}x\u{3000}\n"
            ),
            "keep's\nconsole.log('hi');\n\"q\" 1-5 x\n"
        );
        assert_eq!(
            normalize_for_fuzzy_match("ＡＢＣ１２３\ncafe\u{0301}\n"),
            "ABC123\ncaf\u{e9}\n"
        );
    }

    #[test]
    fn view_text_equals_pis_normalization_of_the_lf_text() {
        for text in [
            "plain ascii   \nline two\n",
            "keep \u{201C}this\u{201D}   \r\ntarget \u{2013} here\r\nnbsp\u{a0}space\r\n",
            "\u{4F60}\u{597D}\u{FF0C}\u{4E16}\u{754C}\n\u{4F60}\u{597D}\u{FF08}\u{4E16}\u{754C}\u{FF09}\n",
            "cafe\u{0301} \u{FB01}x \u{3000}\n\u{1100}\u{1161}\u{11A8} \u{1100}\u{FFC2}\n",
            "tab\t\u{FEFF}\nlone\rcr\n",
        ] {
            assert_eq!(
                fuzzy(text).text(),
                normalize_for_fuzzy_match(&normalize_to_lf(text)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn invalid_utf8_reads_as_replacement_characters() {
        let view = TextView::new(b"a\xff\xfeb\r\n", Normalization::LineEndings);
        assert_eq!(view.text(), "a\u{FFFD}\u{FFFD}b\n");
        assert_eq!(
            view.original_span(4..7, StrippedEdges::default()).range,
            2..3
        );
    }

    #[test]
    fn spans_map_back_around_changed_characters() {
        let text = "keep \u{201C}this\u{201D}   \ntarget \u{2013} here\n";
        let view = fuzzy(text);
        assert_eq!(view.text(), "keep \"this\"\ntarget - here\n");
        let at = view.text().find("target - here").unwrap();
        let span = view.original_span(at..at + "target - here".len(), StrippedEdges::default());
        assert_eq!(&text[span.range.clone()], "target \u{2013} here");
        assert_eq!((span.prefix.as_str(), span.suffix.as_str()), ("", ""));
        // A match ending at a line's end stops before the stripped spaces.
        assert_eq!(
            original(text, &view, 0.."keep \"this\"".len()),
            "keep \u{201C}this\u{201D}"
        );
        // A match over the line break takes the stripped spaces with it.
        assert_eq!(
            original(text, &view, 0.."keep \"this\"\n".len()),
            "keep \u{201C}this\u{201D}   \n"
        );
    }

    #[test]
    fn an_ascii_line_maps_back_around_its_stripped_whitespace() {
        let text = "plain ascii \t \nline two\n";
        let view = fuzzy(text);
        assert_eq!(view.text(), "plain ascii\nline two\n");
        assert_eq!(original(text, &view, 6..11), "ascii");
        assert_eq!(original(text, &view, 6..13), "ascii \t \nl");
        let at = view.text().find("two").unwrap();
        assert_eq!(original(text, &view, at..at + 3), "two");
    }

    #[test]
    fn old_text_reaches_into_stripped_whitespace_at_its_first_and_last_line() {
        let reach = |start, end| StrippedEdges { start, end };
        assert_eq!(StrippedEdges::reached_by("\t\nc: 2"), reach(true, false));
        assert_eq!(StrippedEdges::reached_by("b: 1\n  "), reach(false, true));
        assert_eq!(StrippedEdges::reached_by("x \n y\t"), reach(true, true));
        assert_eq!(StrippedEdges::reached_by("a \nb\n"), reach(true, false));
        assert_eq!(StrippedEdges::reached_by("a\n \nb"), reach(false, false));
        // NFKC first: U+3000 is stripped, U+00A8 becomes " \u{308}" and is not.
        assert_eq!(StrippedEdges::reached_by("a\u{3000}"), reach(true, true));
        assert_eq!(StrippedEdges::reached_by("a\u{a8}"), reach(false, false));
    }

    #[test]
    fn a_span_takes_the_stripped_whitespace_at_the_edges_asked_for() {
        let text = "a  \n \t \r\nb\u{3000}\n";
        let view = fuzzy(text);
        assert_eq!(view.text(), "a\n\nb\n");
        let span = |norm: Range<usize>, start, end| {
            &text[view.original_span(norm, StrippedEdges { start, end }).range]
        };
        // "\nb" from the break of the whitespace-only line.
        assert_eq!(span(2..4, false, false), "\r\nb");
        assert_eq!(span(2..4, true, false), " \t \r\nb");
        // "a\n" up to the whitespace-only line, and "b" before its U+3000.
        assert_eq!(span(0..2, false, true), "a  \n \t ");
        assert_eq!(span(3..4, false, true), "b\u{3000}");
        // "a\n\nb": the whitespace inside is covered anyway.
        assert_eq!(span(0..4, false, false), "a  \n \t \r\nb");
        // An edge inside a line is not next to stripped whitespace.
        assert_eq!(span(3..4, true, false), "b");
    }

    #[test]
    fn crlf_maps_back_to_both_bytes() {
        let text = "one\r\ntwo\r\nthree\r\n";
        let view = TextView::new(text.as_bytes(), Normalization::LineEndings);
        assert_eq!(view.text(), "one\ntwo\nthree\n");
        assert_eq!(original(text, &view, 0..8), "one\r\ntwo\r\n");
    }

    #[test]
    fn a_match_inside_a_ligature_keeps_the_uncovered_part() {
        let text = "\u{FB01}x";
        let view = fuzzy(text);
        assert_eq!(view.text(), "fix");
        let span = view.original_span(1..3, StrippedEdges::default());
        assert_eq!(
            span,
            OriginalSpan {
                range: 0..text.len(),
                prefix: "f".into(),
                suffix: String::new(),
            }
        );
    }

    #[test]
    fn a_combining_mark_stays_with_its_base() {
        let text = "cafe\u{0301}!";
        let view = fuzzy(text);
        assert_eq!(view.text(), "caf\u{e9}!");
        assert_eq!(original(text, &view, 0.."caf\u{e9}".len()), "cafe\u{0301}");
    }
}
