//! The multi-line input editor: a text with a cursor, submitted history
//! (Up/Down at the first/last line), large pastes kept as a one-line marker
//! that is expanded when the text is taken, and the editing keys of a shell
//! line (`keys.rs`): word moves, kills into a ring that Ctrl+Y yanks back
//! (`kill.rs`), and undo.

mod keys;
mod kill;
mod words;

use kill::KillRing;
use unicode_segmentation::UnicodeSegmentation;

/// Pastes with more lines than this show as a marker.
const PASTE_MARKER_LINES: usize = 10;

/// Pastes longer than this (in characters) show as a marker too, as in Pi:
/// a minified line or a log pasted whole is not to be edited by hand.
const PASTE_MARKER_CHARS: usize = 1000;

/// Undo steps kept; older ones go.
const UNDO_KEPT: usize = 200;

/// A text as it was typed: large pastes as their markers, and what each
/// marker stands for. A history entry keeps both, so a recalled prompt
/// sends its pastes again, not their markers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Typed {
    text: String,
    pastes: Vec<(String, String)>,
}

/// The text being typed.
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    /// Cursor line.
    row: usize,
    /// Cursor column, in characters.
    col: usize,
    history: Vec<Typed>,
    /// Position while browsing history; `None` when editing a fresh text.
    browsing: Option<usize>,
    /// The text being typed before history browsing started.
    draft: Typed,
    /// Large pastes, by marker.
    pastes: Vec<(String, String)>,
    /// The states to go back to, newest last (Ctrl+-).
    undo: Vec<Snapshot>,
    /// What the last key did: typing coalesces into one undo step, kills
    /// into one ring entry, and only a yank can be followed by a yank-pop.
    last: LastEdit,
    /// What Ctrl+U, Ctrl+K and the word kills took.
    kills: KillRing,
    /// Ctrl+] (`Some(true)`) or Ctrl+Alt+] (`Some(false)`) was pressed: the
    /// next character typed is looked for, forwards or backwards.
    jump: Option<bool>,
}

/// A place in the text: (line, character column).
type Pos = (usize, usize);

/// The text and cursor, as undo restores them.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    lines: Vec<String>,
    row: usize,
    col: usize,
}

/// The kind of the last edit, for what the next one does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LastEdit {
    /// Anything else (a move, a deletion, an undo).
    Other,
    /// Characters of a word typed one after another: one undo step.
    Typing,
    /// A kill: the next kill joins the same ring entry.
    Kill,
    /// A yank: a yank-pop may put another kill in place of what it put
    /// in (the state before it is the newest undo step).
    Yank,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: Typed::default(),
            pastes: Vec::new(),
            undo: Vec::new(),
            last: LastEdit::Other,
            kills: KillRing::default(),
            jump: None,
        }
    }
}

impl Editor {
    /// The lines, for drawing.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor as (line, character column).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// The text as typed (paste markers not expanded).
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The text with each paste marker replaced by what was pasted: what
    /// is sent, and what an external editor (Ctrl+G) gets to edit.
    pub fn expanded_text(&self) -> String {
        let mut text = self.text();
        for (marker, content) in &self.pastes {
            text = text.replacen(marker.as_str(), content, 1);
        }
        text
    }

    /// True when nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text (an external editor's, a recalled message); the
    /// cursor goes to its end. Undo brings the old text back.
    pub fn set_text(&mut self, text: &str) {
        self.edit(LastEdit::Other);
        self.load(text);
    }

    /// Empties the editor (history and kills kept); undo brings the text
    /// back, so a Ctrl+C in the wrong place loses nothing.
    pub fn clear(&mut self) {
        if !self.is_empty() {
            self.edit(LastEdit::Other);
        }
        self.load("");
        self.browsing = None;
    }

    /// The text with paste markers expanded, trimmed; the editor is emptied
    /// and the text joins the history. `None` when only blanks were typed.
    pub fn take(&mut self) -> Option<String> {
        let typed = self.text();
        let text = self.expanded_text();
        self.load("");
        self.browsing = None;
        self.undo.clear();
        self.last = LastEdit::Other;
        let text = text.trim().to_owned();
        if text.is_empty() {
            return None;
        }
        let typed = Typed {
            text: typed,
            pastes: std::mem::take(&mut self.pastes),
        };
        if self.history.last() != Some(&typed) {
            self.history.push(typed);
        }
        Some(text)
    }

    /// Adds `text` to the history as if it had been sent (a loaded
    /// session's prompts).
    pub fn remember(&mut self, text: &str) {
        let text = text.trim();
        if !text.is_empty() && self.history.last().map(|t| t.text.as_str()) != Some(text) {
            self.history.push(Typed {
                text: text.to_owned(),
                pastes: Vec::new(),
            });
        }
    }

    /// Sets the text without an undo step; the cursor goes to its end.
    fn load(&mut self, text: &str) {
        self.lines = showable(text).split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.char_count(self.row);
    }

    /// True while Up/Down walk the history (until the text is edited).
    pub fn browsing_history(&self) -> bool {
        self.browsing.is_some()
    }

    /// Starts an edit of kind `kind`: the state before it becomes an undo
    /// step, except while a word is being typed. An edited history entry
    /// is a new text: Up starts from the newest entry again.
    fn edit(&mut self, kind: LastEdit) {
        self.browsing = None;
        if !(kind == LastEdit::Typing && self.last == LastEdit::Typing) {
            let snapshot = self.snapshot();
            if self.undo.last() != Some(&snapshot) {
                self.undo.push(snapshot);
                if self.undo.len() > UNDO_KEPT {
                    self.undo.remove(0);
                }
            }
        }
        self.last = kind;
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            lines: self.lines.clone(),
            row: self.row,
            col: self.col,
        }
    }

    fn restore(&mut self, snapshot: Snapshot) {
        self.lines = snapshot.lines;
        self.row = snapshot.row;
        self.col = snapshot.col;
    }

    /// Goes back to before the last edit (a typed word counts as one).
    pub fn undo(&mut self) {
        if let Some(snapshot) = self.undo.pop() {
            self.restore(snapshot);
            self.browsing = None;
        }
        self.last = LastEdit::Other;
    }

    /// A move: the next typing or kill starts afresh.
    fn moved(&mut self) {
        self.last = LastEdit::Other;
    }

    fn char_count(&self, row: usize) -> usize {
        self.lines[row].chars().count()
    }

    fn byte_index(&self) -> usize {
        byte_at(&self.lines[self.row], self.col)
    }

    /// Types a character; whitespace ends the word being typed (a word
    /// and the space after it are two undo steps, as in fish and Pi).
    pub fn insert_char(&mut self, c: char) {
        if c.is_whitespace() {
            self.edit(LastEdit::Other);
            self.last = LastEdit::Typing;
        } else {
            self.edit(LastEdit::Typing);
        }
        self.put_char(c);
    }

    fn put_char(&mut self, c: char) {
        let at = self.byte_index();
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    /// Types a text that may span lines, as one undo step.
    pub fn insert_str(&mut self, text: &str) {
        self.edit(LastEdit::Other);
        self.put_str(text);
    }

    /// Puts `text` in at the cursor, each line at once (a character at a
    /// time, each finding its place from the line's start, took seconds
    /// for a long line).
    fn put_str(&mut self, text: &str) {
        let text = showable(text);
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.split_line();
            }
            let at = self.byte_index();
            self.lines[self.row].insert_str(at, part);
            self.col += part.chars().count();
        }
    }

    /// A paste: large ones become a marker such as `[paste #1 +42 lines]`
    /// or `[paste #2 5000 chars]`, kept as pasted; a small one is typed in
    /// as the editor can show it (see `showable`).
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        let chars = text.chars().count();
        let size = if lines > PASTE_MARKER_LINES {
            format!("+{lines} lines")
        } else if chars > PASTE_MARKER_CHARS {
            format!("{chars} chars")
        } else {
            return self.insert_str(&text);
        };
        let marker = format!("[paste #{} {size}]", self.pastes.len() + 1);
        self.insert_str(&marker);
        self.pastes.push((marker, text));
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        self.edit(LastEdit::Other);
        self.split_line();
    }

    fn split_line(&mut self) {
        let at = self.byte_index();
        let rest = self.lines[self.row].split_off(at);
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    /// Deletes the character before the cursor (joining lines at a line
    /// start): what Left steps over, so a paste marker goes whole (a
    /// broken one would send its own text instead of the paste).
    pub fn backspace(&mut self) {
        if self.col == 0 && self.row == 0 {
            return self.moved();
        }
        self.edit(LastEdit::Other);
        let end = (self.row, self.col);
        self.left();
        self.remove_span((self.row, self.col), end);
    }

    /// Deletes the character under the cursor (joining the next line at a
    /// line end): what Right steps over.
    pub fn delete(&mut self) {
        if self.col == self.char_count(self.row) && self.row + 1 == self.lines.len() {
            return self.moved();
        }
        self.edit(LastEdit::Other);
        let start = (self.row, self.col);
        self.right();
        self.remove_span(start, (self.row, self.col));
    }

    /// Removes the text from `from` to `to`, returns it and leaves the
    /// cursor at `from`.
    fn remove_span(&mut self, (from_row, from_col): Pos, (to_row, to_col): Pos) -> String {
        let start = byte_at(&self.lines[from_row], from_col);
        let end = byte_at(&self.lines[to_row], to_col);
        let removed = if from_row == to_row {
            self.lines[from_row].drain(start..end).collect()
        } else {
            let mut removed = self.lines[from_row].split_off(start);
            for line in self.lines.drain(from_row + 1..to_row) {
                removed.push('\n');
                removed.push_str(&line);
            }
            let last = self.lines.remove(from_row + 1);
            removed.push('\n');
            removed.push_str(&last[..end]);
            self.lines[from_row].push_str(&last[end..]);
            removed
        };
        self.row = from_row;
        self.col = from_col;
        removed
    }

    /// Moves left, to the previous line's end at a line start.
    pub fn left(&mut self) {
        self.moved();
        if self.col > 0 {
            self.col -= self
                .marker_before()
                .unwrap_or_else(|| self.grapheme_before());
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.char_count(self.row);
        }
    }

    /// Moves right, to the next line's start at a line end.
    pub fn right(&mut self) {
        self.moved();
        if self.col < self.char_count(self.row) {
            self.col += self.marker_after().unwrap_or_else(|| self.grapheme_after());
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the line's start.
    pub fn home(&mut self) {
        self.moved();
        self.col = 0;
    }

    /// To the line's end.
    pub fn end(&mut self) {
        self.moved();
        self.col = self.char_count(self.row);
    }

    /// Up a line; on the first line, the previous history entry when the
    /// editor is empty, already showing history or at the line's start,
    /// else the line's start (so Up in the middle of a text never swaps it
    /// for history at once).
    pub fn up(&mut self) {
        self.moved();
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.char_count(self.row));
            self.out_of_marker();
            return;
        }
        if !(self.is_empty() || self.browsing.is_some() || self.col == 0) {
            self.col = 0;
            return;
        }
        let next = match self.browsing {
            None if !self.history.is_empty() => {
                self.edit(LastEdit::Other);
                self.draft = Typed {
                    text: self.text(),
                    pastes: self.pastes.clone(),
                };
                self.history.len() - 1
            }
            Some(i) if i > 0 => i - 1,
            _ => return,
        };
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.show(entry);
    }

    /// Shows `typed` with its pastes behind their markers again.
    fn show(&mut self, typed: Typed) {
        self.load(&typed.text);
        self.pastes = typed.pastes;
    }

    /// Down a line; on the last line, the next history entry (then the
    /// draft) while showing history, else the line's end.
    pub fn down(&mut self) {
        self.moved();
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.char_count(self.row));
            self.out_of_marker();
            return;
        }
        let Some(i) = self.browsing else {
            self.col = self.char_count(self.row);
            return;
        };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let entry = self.history[i + 1].clone();
            self.show(entry);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.show(draft);
        }
    }

    /// The length, in characters, of the paste marker that ends at the
    /// cursor, if one does: moves and deletions take it as one unit.
    fn marker_before(&self) -> Option<usize> {
        let before = &self.lines[self.row][..self.byte_index()];
        self.pastes
            .iter()
            .find(|(marker, _)| before.ends_with(marker.as_str()))
            .map(|(marker, _)| marker.chars().count())
    }

    /// The characters of the one symbol before the cursor: an accented
    /// letter written with a combining mark, a flag, a family emoji are
    /// each several characters a step moves over (and a deletion takes)
    /// whole.
    fn grapheme_before(&self) -> usize {
        let before = &self.lines[self.row][..self.byte_index()];
        before
            .graphemes(true)
            .next_back()
            .map_or(1, |symbol| symbol.chars().count())
    }

    /// The characters of the one symbol after the cursor.
    fn grapheme_after(&self) -> usize {
        let after = &self.lines[self.row][self.byte_index()..];
        after
            .graphemes(true)
            .next()
            .map_or(1, |symbol| symbol.chars().count())
    }

    /// The length of the paste marker that starts at the cursor, if one does.
    fn marker_after(&self) -> Option<usize> {
        let after = &self.lines[self.row][self.byte_index()..];
        self.pastes
            .iter()
            .find(|(marker, _)| after.starts_with(marker.as_str()))
            .map(|(marker, _)| marker.chars().count())
    }

    /// The columns (start, end) of the paste marker that column `col` of
    /// line `row` stands inside (not at either end of), if any.
    fn marker_around(&self, row: usize, col: usize) -> Option<(usize, usize)> {
        let line = &self.lines[row];
        let at = byte_at(line, col);
        self.pastes.iter().find_map(|(marker, _)| {
            let (start, found) = line
                .match_indices(marker.as_str())
                .find(|(start, found)| *start < at && at < start + found.len())?;
            let start = line[..start].chars().count();
            Some((start, start + found.chars().count()))
        })
    }

    /// Moves the cursor to the start of the paste marker it stands in, if
    /// any (Up/Down keep the column, which may fall inside one; so may a
    /// word move).
    fn out_of_marker(&mut self) {
        if let Some((start, _)) = self.marker_around(self.row, self.col) {
            self.col = start;
        }
    }

    /// The word before the cursor, for completion: back to a space, or
    /// back to an open `@"` (a quoted path holds spaces).
    pub fn word_before_cursor(&self) -> &str {
        let line = &self.lines[self.row];
        let end = self.byte_index();
        let before = &line[..end];
        if let Some(open) = before.rfind("@\"")
            && !before[open + 2..].contains('"')
        {
            return &before[open..];
        }
        let start = before.rfind(' ').map_or(0, |i| i + 1);
        &before[start..]
    }

    /// Replaces the word before the cursor with `replacement`, as one undo
    /// step.
    pub fn replace_word_before_cursor(&mut self, replacement: &str) {
        self.edit(LastEdit::Other);
        let word_chars = self.word_before_cursor().chars().count();
        self.remove_span((self.row, self.col - word_chars), (self.row, self.col));
        self.put_str(replacement);
    }
}

/// `text` as the editor can show it: a tab is four spaces (the terminal
/// would move to its next tab stop where the editor counts one column), and
/// the other control characters go (an escape sequence would restyle the
/// terminal or move its cursor; a bell or a backspace would leave stale
/// cells). Line ends stay.
fn showable(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| c.is_control() && c != '\n';
    if !text.contains(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => shown.push_str("    "),
            c if hidden(c) => {}
            c => shown.push(c),
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// The byte offset of character column `col` in `line` (its length past
/// the end).
fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_edits_across_lines_and_takes_trimmed_text() {
        let mut editor = Editor::default();
        editor.insert_str("hello");
        editor.newline();
        editor.insert_str("world");
        editor.home();
        editor.backspace();
        assert_eq!(editor.text(), "helloworld");
        editor.newline();
        editor.insert_char(' ');
        assert_eq!(editor.take().as_deref(), Some("hello\n world"));
        assert!(editor.is_empty());
    }

    #[test]
    fn editor_history_walks_back_and_returns_to_the_draft() {
        let mut editor = Editor::default();
        editor.insert_str("first");
        editor.take();
        editor.insert_str("second");
        editor.take();
        editor.insert_str("dra");
        editor.up();
        assert_eq!(
            editor.cursor(),
            (0, 0),
            "mid-line, Up goes to the line's start first"
        );
        assert_eq!(editor.text(), "dra");
        editor.up();
        assert_eq!(editor.text(), "second");
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.down();
        editor.down();
        assert_eq!(editor.text(), "dra");
    }

    #[test]
    fn editor_keeps_a_large_paste_as_a_marker_until_taken() {
        let mut editor = Editor::default();
        let pasted: String = (1..=12).map(|i| format!("line {i}\r\n")).collect();
        editor.insert_str("see ");
        editor.paste(&pasted);
        assert_eq!(editor.text(), "see [paste #1 +12 lines]");
        let expected: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        // What Ctrl+G's editor gets: the paste, which a marker cannot show.
        assert_eq!(editor.expanded_text(), format!("see {expected}"));
        assert_eq!(editor.take(), Some(format!("see {}", expected.trim())));
        // Recalled from the history, it sends the paste again, not its
        // marker; the draft keeps its own paste meanwhile.
        editor.up();
        assert_eq!(editor.text(), "see [paste #1 +12 lines]");
        assert_eq!(editor.take(), Some(format!("see {}", expected.trim())));
        editor.insert_str("and ");
        editor.paste(&pasted.replace("line", "row"));
        editor.up();
        editor.up();
        editor.down();
        let rows: String = (1..=12).map(|i| format!("row {i}\n")).collect();
        assert_eq!(editor.take(), Some(format!("and {}", rows.trim())));
    }

    #[test]
    fn a_long_pasted_line_is_a_marker_and_is_sent_whole() {
        let mut editor = Editor::default();
        let line = "x".repeat(200_000);
        editor.paste(&line);
        assert_eq!(editor.text(), "[paste #1 200000 chars]");
        assert_eq!(editor.take(), Some(line));
        let short = "y".repeat(PASTE_MARKER_CHARS);
        editor.paste(&short);
        assert_eq!(editor.text(), short);
    }

    #[test]
    fn pasted_control_characters_are_not_sent_to_the_terminal() {
        let mut editor = Editor::default();
        editor.paste("a\tb\x1b[31mc\x07d\x08e\r\nf");
        assert_eq!(editor.lines(), ["a    b[31mcde", "f"]);
        assert_eq!(editor.cursor(), (1, 1));
        // Kept as pasted behind a marker: it is not drawn.
        let mut editor = Editor::default();
        let code = "\tindented\n".repeat(11);
        editor.paste(&code);
        assert_eq!(editor.take(), Some(code.trim().to_owned()));
    }

    #[test]
    fn steps_and_deletions_take_a_symbol_of_several_characters_whole() {
        let mut editor = Editor::default();
        editor.insert_str("ae\u{301}b");
        editor.left();
        editor.backspace();
        assert_eq!(editor.text(), "ab");
        let mut editor = Editor::default();
        editor.insert_str("\u{1F1EB}\u{1F1F7}x\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}");
        editor.backspace();
        assert_eq!(editor.text(), "\u{1F1EB}\u{1F1F7}x");
        editor.left();
        editor.backspace();
        assert_eq!(editor.text(), "x");
        editor.home();
        editor.insert_str("e\u{301}");
        editor.home();
        editor.right();
        assert_eq!(editor.cursor(), (0, 2));
        editor.delete();
        assert_eq!(editor.text(), "e\u{301}");
    }
}
