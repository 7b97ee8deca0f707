//! Removing terminal escape sequences from command output, chunk by chunk.
//!
//! Models read colour codes, cursor moves and window titles as noise that costs
//! tokens (DEVIATIONS #7: Pi passes them through). Output arrives in pieces, so a
//! sequence may be split across chunks; [`AnsiStripper`] keeps its state
//! between calls.
//!
//! Recognised: CSI (`ESC [` or U+009B, parameters, intermediates, a final byte),
//! OSC (`ESC ]` or U+009D) and the string sequences DCS/SOS/PM/APC (`ESC P`,
//! `ESC X`, `ESC ^`, `ESC _`) up to BEL or ST, and the other two- and
//! three-character escapes (`ESC ( B`, `ESC =`, `ESC 7`, ...).
//! A malformed sequence ends at the first character that cannot belong to it,
//! and that character is kept; a newline always ends a sequence, so a stray ESC
//! can never swallow the rest of the output.
//!
//! The other control characters go too, but for tab, newline and carriage
//! return, with the interlinear annotation marks U+FFF9 to U+FFFB: what Pi's
//! `sanitizeBinaryOutput` drops from a user's `!command`. A binary's bells
//! and backspaces reached the model, the RPC client and the session file as
//! `\u0007` and the like, meaning nothing to any of them.
//!
//! A NUL is shown as [`NUL_SHOWN`] (␀) instead of dropped: it separates the
//! names of `find -print0`, `git ls-files -z` and the arguments of
//! `/proc/PID/cmdline`, and dropping it glued them into one wrong name
//! (`cat/proc/self/cmdline`); a stream of them (`head -c 100M /dev/zero`)
//! read as `(no output)`.

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
const C1_CSI: char = '\u{9b}';
const C1_OSC: char = '\u{9d}';
const C1_ST: char = '\u{9c}';

/// What a NUL in the output is shown as: U+2400, SYMBOL FOR NULL.
pub const NUL_SHOWN: char = '\u{2400}';

/// Where the stripper is inside a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Plain text.
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and one or more intermediate characters (`ESC ( B`).
    EscapeIntermediate,
    /// Inside a CSI sequence, before its final character.
    Csi,
    /// Inside an OSC or DCS/SOS/PM/APC string, before its terminator.
    String,
    /// After ESC inside a string: `\` ends it (ST).
    StringEscape,
}

/// A streaming remover of escape sequences; feed it text in any pieces.
#[derive(Debug, Default)]
pub struct AnsiStripper {
    state: State,
}

impl AnsiStripper {
    /// A stripper outside any sequence.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `text` without its escape sequences and control characters
    /// to `out`, each NUL as [`NUL_SHOWN`].
    pub fn strip_into(&mut self, text: &str, out: &mut String) {
        if self.state == State::Ground && text.chars().all(is_plain) {
            out.push_str(text);
            return;
        }
        for c in text.chars() {
            self.step(c, out);
        }
    }

    fn step(&mut self, c: char, out: &mut String) {
        self.state = match (self.state, c) {
            (_, '\n') => {
                out.push('\n');
                State::Ground
            }
            (State::Ground, ESC) => State::Escape,
            (State::Ground, C1_CSI) => State::Csi,
            (State::Ground, C1_OSC) => State::String,
            (State::Ground, '\0') => {
                out.push(NUL_SHOWN);
                State::Ground
            }
            (State::Ground, c) => {
                if is_plain(c) {
                    out.push(c);
                }
                State::Ground
            }
            (State::Escape, '[') => State::Csi,
            (State::Escape, ']' | 'P' | 'X' | '^' | '_') => State::String,
            (State::Escape | State::EscapeIntermediate, ' '..='/') => State::EscapeIntermediate,
            (State::Escape | State::EscapeIntermediate, '0'..='~') => State::Ground,
            (State::Csi, ' '..='?') => State::Csi,
            (State::Csi, '@'..='~') => State::Ground,
            (State::String, BEL | C1_ST) => State::Ground,
            (State::String, ESC) => State::StringEscape,
            (State::String, _) => State::String,
            (State::StringEscape, '\\') => State::Ground,
            (State::StringEscape, _) => State::String,
            // Not part of a well-formed sequence: the sequence ends here and
            // the character is read again as plain text (it may start a new one).
            (State::Escape | State::EscapeIntermediate | State::Csi, c) => {
                self.state = State::Ground;
                self.step(c, out);
                return;
            }
        };
    }
}

/// Whether `c` stands in the text as it is: not a control character (tab,
/// newline and carriage return are text) and not an interlinear annotation
/// mark.
fn is_plain(c: char) -> bool {
    !matches!(c, '\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | C1_CSI | C1_OSC | '\u{fff9}'..='\u{fffb}')
}

/// `text` without escape sequences (for a whole string at once).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    AnsiStripper::new().strip_into(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pieces` fed one after another to one stripper, as output arrives.
    fn strip_in_pieces(pieces: &[&str]) -> String {
        let mut stripper = AnsiStripper::new();
        let mut out = String::new();
        for piece in pieces {
            stripper.strip_into(piece, &mut out);
        }
        out
    }

    #[test]
    fn colour_codes_are_removed() {
        assert_eq!(strip_ansi("\x1b[31mred\x1b[0m\n"), "red\n");
        assert_eq!(strip_ansi("\x1b[1;38;5;208mbold\x1b[m"), "bold");
        assert_eq!(strip_ansi("\u{9b}32mgreen"), "green");
    }

    #[test]
    fn cursor_and_erase_sequences_are_removed() {
        assert_eq!(strip_ansi("50%\x1b[K\r\x1b[2K100%\x1b[?25h"), "50%\r100%");
    }

    #[test]
    fn osc_titles_and_hyperlinks_are_removed() {
        assert_eq!(strip_ansi("\x1b]0;title\x07text"), "text");
        assert_eq!(
            strip_ansi("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\"),
            "link"
        );
        assert_eq!(strip_ansi("\x1bPq#0;2;0;0;0\x1b\\after"), "after");
    }

    #[test]
    fn short_escapes_are_removed() {
        assert_eq!(strip_ansi("\x1b(Bplain\x1b=\x1b7x\x1b8"), "plainx");
    }

    #[test]
    fn sequences_split_across_chunks_are_removed() {
        assert_eq!(
            strip_in_pieces(&["a\x1b", "[3", "1mb\x1b]0;ti", "tle\x1b", "\\c"]),
            "abc"
        );
    }

    #[test]
    fn a_malformed_sequence_keeps_the_character_that_ends_it() {
        assert_eq!(strip_ansi("\x1b[12éx"), "éx");
        assert_eq!(strip_ansi("a\x1b\nb"), "a\nb");
        assert_eq!(strip_ansi("\x1b]unterminated\nnext line"), "\nnext line");
    }

    #[test]
    fn control_characters_but_tab_newline_and_return_are_removed() {
        assert_eq!(strip_ansi("a\x01b\x07c\x08d\x7fe"), "abcd\x7fe");
        assert_eq!(
            strip_ansi("\x0b\x0c\x1f\u{fff9}x\u{fffb}\u{fffc}"),
            "x\u{fffc}"
        );
        assert_eq!(
            strip_in_pieces(&["one\x01", "\x02two\r\n", "\tthree"]),
            "onetwo\r\n\tthree"
        );
    }

    /// `find -print0` gave `aa/ba/b/upa/x.txt`: the names, glued together.
    #[test]
    fn a_nul_is_shown_as_a_separator_not_dropped() {
        assert_eq!(
            strip_ansi("a\0a/b\0\x1b[1mc\0"),
            "a\u{2400}a/b\u{2400}c\u{2400}"
        );
        assert_eq!(strip_ansi("\x1b[3\0x"), "\u{2400}x");
    }

    #[test]
    fn text_without_escapes_is_unchanged() {
        assert_eq!(strip_ansi("héllo 世\r\n\ttab"), "héllo 世\r\n\ttab");
    }
}
