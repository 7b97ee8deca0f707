//! Applying `edit`'s replacements to a file's bytes (Pi's
//! `applyEditsToNormalizedContent`, `docs/tool-behaviour.md` §4.3), with Pi's checks, in Pi's
//! order, with Pi's texts.
//!
//! Where we differ: Pi normalises the file (line endings always; with fuzzy
//! matching also quotes, dashes, spaces, trailing whitespace and NFKC) and
//! writes the normalised file back. We match in the same normalised text, so
//! the same edits succeed and fail, but then replace only the matched spans
//! of the original bytes (DEVIATIONS #2). Everything else stays byte for
//! byte: a BOM, line endings (also in a file that mixes them), smart quotes
//! and trailing spaces outside the edits, even invalid UTF-8.

use std::fmt;

use super::diff::{CONTEXT_LINES, LineDiff, generate_diff_string};
use super::fuzzy::{
    Normalization, StrippedEdges, TextView, lf_text, normalize_for_fuzzy_match, normalize_to_lf,
};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One replacement as the model sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// Text to find; must be unique in the file.
    pub old_text: String,
    /// Text to put in its place.
    pub new_text: String,
}

/// The file after the edits, and the diff reported to UIs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The new file contents.
    pub content: Vec<u8>,
    /// The diff between the old and new text, line endings as `\n`.
    pub diff: LineDiff,
}

/// Why the edits could not be applied. `Display` is Pi's text; `total` picks
/// between its single-edit and multi-edit wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// An `oldText` is empty.
    EmptyOldText {
        /// Which edit.
        index: usize,
        /// How many edits the call had.
        total: usize,
    },
    /// An `oldText` is not in the file.
    NotFound {
        /// Which edit.
        index: usize,
        /// How many edits the call had.
        total: usize,
    },
    /// An `oldText` is in the file more than once.
    Ambiguous {
        /// Which edit.
        index: usize,
        /// How many edits the call had.
        total: usize,
        /// How many times (counted in normalised text).
        occurrences: usize,
    },
    /// Two edits cover overlapping text.
    Overlap {
        /// The earlier of the two in the file.
        first: usize,
        /// The later one.
        second: usize,
    },
    /// The edits leave the file as it was.
    NoChange {
        /// How many edits the call had.
        total: usize,
    },
}

impl ApplyError {
    /// Pi's text for this error on the file the model called `path`.
    pub fn message(&self, path: &str) -> String {
        DisplayWithPath { error: self, path }.to_string()
    }
}

struct DisplayWithPath<'a> {
    error: &'a ApplyError,
    path: &'a str,
}

impl fmt::Display for DisplayWithPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path;
        match *self.error {
            ApplyError::EmptyOldText { total: 1, .. } => {
                write!(f, "oldText must not be empty in {path}.")
            }
            ApplyError::EmptyOldText { index, .. } => {
                write!(f, "edits[{index}].oldText must not be empty in {path}.")
            }
            ApplyError::NotFound { total: 1, .. } => write!(
                f,
                "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
            ),
            ApplyError::NotFound { index, .. } => write!(
                f,
                "Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines."
            ),
            ApplyError::Ambiguous {
                total: 1,
                occurrences,
                ..
            } => write!(
                f,
                "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
            ),
            ApplyError::Ambiguous {
                index, occurrences, ..
            } => write!(
                f,
                "Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
            ),
            ApplyError::Overlap { first, second } => write!(
                f,
                "edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions."
            ),
            ApplyError::NoChange { total: 1 } => write!(
                f,
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            ),
            ApplyError::NoChange { .. } => write!(
                f,
                "No changes made to {path}. The replacements produced identical content."
            ),
        }
    }
}

/// A located edit: where in the normalised text, and with what.
struct Located {
    index: usize,
    start: usize,
    len: usize,
}

/// Applies all `edits` to `original`, or none of them.
///
/// Every edit is matched against the original file, not against the result
/// of earlier edits. Checks run in Pi's order: empty `oldText` (all edits),
/// then per edit not-found before ambiguous, then overlap, then no change.
pub fn apply_edits(original: &[u8], edits: &[Replacement]) -> Result<Applied, ApplyError> {
    let total = edits.len();
    let (bom, body) = match original.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => (&[][..], original),
    };
    let ending = line_ending(body);
    let edits: Vec<Replacement> = edits
        .iter()
        .map(|e| Replacement {
            old_text: normalize_to_lf(&e.old_text),
            new_text: normalize_to_lf(&e.new_text),
        })
        .collect();
    if let Some(index) = edits.iter().position(|e| e.old_text.is_empty()) {
        return Err(ApplyError::EmptyOldText { index, total });
    }

    let exact = TextView::new(body, Normalization::LineEndings);
    let fuzzy = TextView::new(body, Normalization::Fuzzy);
    let fuzzy_olds: Vec<String> = edits
        .iter()
        .map(|e| normalize_for_fuzzy_match(&e.old_text))
        .collect();
    // Pi's rule: if any edit only matches after normalisation, all edits are
    // matched in normalised text.
    let needs_fuzzy = edits.iter().zip(&fuzzy_olds).any(|(edit, fuzzy_old)| {
        !exact.text().contains(&edit.old_text) && fuzzy.text().contains(fuzzy_old.as_str())
    });
    let base = if needs_fuzzy { &fuzzy } else { &exact };

    let mut located = Vec::with_capacity(total);
    for (index, (edit, fuzzy_old)) in edits.iter().zip(&fuzzy_olds).enumerate() {
        let found = match base.text().find(&edit.old_text) {
            Some(start) => Some((start, edit.old_text.len())),
            None if needs_fuzzy => base
                .text()
                .find(fuzzy_old.as_str())
                .map(|start| (start, fuzzy_old.len())),
            None => None,
        };
        let Some((start, len)) = found else {
            return Err(ApplyError::NotFound { index, total });
        };
        let occurrences = count_occurrences(fuzzy.text(), fuzzy_old);
        if occurrences > 1 {
            return Err(ApplyError::Ambiguous {
                index,
                total,
                occurrences,
            });
        }
        located.push(Located { index, start, len });
    }
    located.sort_by_key(|l| l.start);
    for pair in located.windows(2) {
        if pair[0].start + pair[0].len > pair[1].start {
            return Err(ApplyError::Overlap {
                first: pair[0].index,
                second: pair[1].index,
            });
        }
    }

    // Back to the original bytes. A match that starts or ends inside a
    // character that normalised to several takes the whole character, and
    // a line's stripped trailing whitespace at an edge goes with the match
    // where the oldText reached into it (as Pi's normalised file has none
    // there), so two edits that were disjoint in normalised text can meet.
    let mut spans = Vec::with_capacity(total);
    for l in &located {
        let stripped = StrippedEdges::reached_by(&edits[l.index].old_text);
        let span = base.original_span(l.start..l.start + l.len, stripped);
        let new_text = match ending {
            "\n" => edits[l.index].new_text.clone(),
            ending => edits[l.index].new_text.replace('\n', ending),
        };
        let replacement = format!("{}{new_text}{}", span.prefix, span.suffix);
        spans.push((l.index, span.range, replacement));
    }
    for pair in spans.windows(2) {
        if pair[0].1.end > pair[1].1.start {
            return Err(ApplyError::Overlap {
                first: pair[0].0,
                second: pair[1].0,
            });
        }
    }

    let mut content = Vec::with_capacity(original.len());
    content.extend_from_slice(bom);
    let mut at = 0;
    for (_, range, replacement) in &spans {
        content.extend_from_slice(&body[at..range.start]);
        content.extend_from_slice(replacement.as_bytes());
        at = range.end;
    }
    content.extend_from_slice(&body[at..]);
    let new_body = &content[bom.len()..];
    if new_body == body {
        return Err(ApplyError::NoChange { total });
    }

    let diff = generate_diff_string(exact.text(), &lf_text(new_body), CONTEXT_LINES);
    Ok(Applied { content, diff })
}

/// The ending new text is written with: Pi's rule (CRLF when the first `\n`
/// follows a `\r`, else LF), and for a file whose lines end in a lone `\r`
/// (old Mac files: no `\n` at all) that `\r`, so an edit there does not
/// leave it with mixed endings (Pi rewrites the whole file with LF; only the
/// edited spans change here, DEVIATIONS #17). A stray `\r` before the first
/// `\n` (a progress line captured from a terminal) is not a line ending.
fn line_ending(body: &[u8]) -> &'static str {
    match body.iter().position(|&b| b == b'\n') {
        Some(at) if at > 0 && body[at - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
        None if body.contains(&b'\r') => "\r",
        None => "\n",
    }
}

/// Pi's `split(needle).length - 1`, including JavaScript's answer for an
/// empty needle (one split per UTF-16 unit).
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() {
        haystack.encode_utf16().count().saturating_sub(1)
    } else {
        haystack.matches(needle).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Replacement {
        Replacement {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    fn apply(file: &str, edits: &[Replacement]) -> Result<String, String> {
        apply_edits(file.as_bytes(), edits)
            .map(|a| String::from_utf8(a.content).unwrap())
            .map_err(|e| e.message("p.txt"))
    }

    #[test]
    fn edits_apply_all_or_nothing() {
        assert_eq!(
            apply("foo foo foo", &[edit("foo foo foo", "b"), edit("zzz", "bar")]),
            Err("Could not find edits[1] in p.txt. The oldText must match exactly including all whitespace and newlines.".into())
        );
    }

    #[test]
    fn empty_old_text_is_checked_before_anything_else() {
        assert_eq!(
            apply("abc", &[edit("zzz", "b"), edit("", "bar")]),
            Err("edits[1].oldText must not be empty in p.txt.".into())
        );
    }

    #[test]
    fn fuzzy_matching_keeps_every_byte_outside_the_match() {
        // DEVIATIONS #2: Pi would also rewrite line 1 and 3 in normalised form.
        assert_eq!(
            apply(
                "keep\u{2019}s  \nconsole.log(\u{2018}hello\u{2019});\nother \u{201C}q\u{201D}   \n",
                &[edit("console.log('hello');", "console.log('world');")]
            ),
            Ok("keep\u{2019}s  \nconsole.log('world');\nother \u{201C}q\u{201D}   \n".into())
        );
    }

    #[test]
    fn fuzzy_match_takes_the_stripped_whitespace_its_old_text_reaches_into() {
        // An oldText whose first or last line ends in whitespace that is not
        // in the file as written matches only after that whitespace is
        // stripped. The file's own stripped whitespace on that line goes with
        // the match: left outside, it was glued in front of the new text and
        // indented `return x` 8 spaces too far. Each result is Pi's.
        // (file, oldText, newText, the file after the edit)
        #[rustfmt::skip]
        let cases = [
            // Starts with a whitespace-only line (12 spaces; the file has 8).
            ("def f():\n    x = 1\n        \n    return x\n", "            \n    return x", "    return x",
             "def f():\n    x = 1\n    return x\n"),
            ("a:\n  b: 1\n   \nc: 2\n", "\t\nc: 2", "c: 3", "a:\n  b: 1\nc: 3\n"),
            // Ends with a whitespace-only line.
            ("def f():\n    x = 1\n        \n    return x\n", "    x = 1\n            ", "    x = 2",
             "def f():\n    x = 2\n    return x\n"),
            ("a:\n  b: 1\n   \nc: 2\n", "b: 1\n\t", "b: 2", "a:\n  b: 2\nc: 2\n"),
            // Ends in trailing whitespace other than the file's.
            ("x = \u{201C}1\u{201D}   \ny\n", "x = \"1\"\t", "x = \"2\"", "x = \"2\"\ny\n"),
            // Across CRLF line endings.
            ("a\r\n  \r\nb\r\n", "\t\nb", "B", "a\r\nB\r\n"),
        ];
        for (file, old, new, edited) in cases {
            assert_eq!(
                apply(file, &[edit(old, new)]),
                Ok(edited.into()),
                "{file:?} {old:?}"
            );
        }
    }

    #[test]
    fn fuzzy_match_leaves_stripped_whitespace_its_old_text_does_not_reach() {
        // DEVIATIONS #2: Pi strips these trailing spaces too (it writes the
        // whole file normalised), "C-Z\n" and "A\n\n\"B\"\n"; the oldTexts did
        // not mention them, so they stay, as they would after an exact match.
        assert_eq!(
            apply("c\u{2014}z  \n", &[edit("c-z", "C-Z")]),
            Ok("C-Z  \n".into())
        );
        assert_eq!(
            apply(
                "a\n  \n\u{201C}b\u{201D}\n",
                &[edit("a\n", "A\n"), edit("\"b\"", "\"B\"")]
            ),
            Ok("A\n  \n\"B\"\n".into())
        );
    }

    #[test]
    fn exact_match_inside_a_whitespace_run_replaces_just_those_bytes() {
        // oldText "    \n..." is in the file as written (the last 4 of the 8
        // spaces), so nothing is normalised and, as in Pi, the 4 spaces
        // before the match stay in front of the new text.
        assert_eq!(
            apply(
                "def f():\n    x = 1\n        \n    return x\n",
                &[edit("    \n    return x", "    return x")]
            ),
            Ok("def f():\n    x = 1\n        return x\n".into())
        );
        assert_eq!(
            apply("a:\n  b: 1\n   \nc: 2\n", &[edit("  \nc: 2", "c: 3")]),
            Ok("a:\n  b: 1\n c: 3\n".into())
        );
    }

    #[test]
    fn mixed_line_endings_outside_the_edit_stay_as_they_are() {
        // (file, oldText, newText, the file after the edit)
        #[rustfmt::skip]
        let cases = [
            // The first line ends in \n, so new text is written with \n; the
            // CRLF lines that were not edited keep their \r\n (Pi would make
            // every line end in \n).
            ("a\nb\r\nc\r\n", "b\nc", "B\nC", "a\nB\nC\r\n"),
            ("a\r\nb\nc\r\n", "c", "x\ny", "a\r\nb\nx\r\ny\r\n"),
            // A file of lone \r endings gets \r in the new text too (it was
            // left half \r, half \n).
            ("a\rb\rc\r", "b\nc", "B\nC", "a\rB\rC\r"),
            // A stray \r before the first \n is not how lines end there.
            ("10%\r100%\nb\nc\n", "b\nc", "B\nB2\nC", "10%\r100%\nB\nB2\nC\n"),
            ("a\rb\r\nc\r\nd\r\n", "d", "D1\nD2", "a\rb\r\nc\r\nD1\r\nD2\r\n"),
        ];
        for (file, old, new, edited) in cases {
            assert_eq!(
                apply(file, &[edit(old, new)]),
                Ok(edited.into()),
                "{file:?}"
            );
        }
    }

    #[test]
    fn invalid_utf8_outside_the_edit_survives() {
        let applied = apply_edits(b"\xff\xfe head\nbody\n", &[edit("body", "BODY")]).unwrap();
        assert_eq!(applied.content, b"\xff\xfe head\nBODY\n");
    }

    #[test]
    fn fuzzy_replacement_equal_to_the_normalised_text_still_changes_the_file() {
        // In Pi this is "No changes made": its comparison is between
        // normalised texts. The bytes do change here (the en dash goes).
        assert_eq!(
            apply("a \u{2013} b\n", &[edit("a - b", "a - b")]),
            Ok("a - b\n".into())
        );
    }

    #[test]
    fn identical_replacement_is_no_change() {
        assert_eq!(
            apply("x\ny\n", &[edit("x", "x"), edit("y", "y")]),
            Err("No changes made to p.txt. The replacements produced identical content.".into())
        );
    }
}
