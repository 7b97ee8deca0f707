//! The multi-line input editor: a text with a cursor, submitted history
//! (Up/Down at the first/last line), and large pastes kept as a one-line
//! marker that is expanded when the text is taken.

/// Pastes with more lines than this show as a marker.
const PASTE_MARKER_LINES: usize = 10;

/// The text being typed.
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    /// Cursor line.
    row: usize,
    /// Cursor column, in characters.
    col: usize,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh text.
    browsing: Option<usize>,
    /// The text being typed before history browsing started.
    draft: String,
    /// Large pastes, by marker.
    pastes: Vec<(String, String)>,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
            pastes: Vec::new(),
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

    /// True when nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
    }

    /// Empties the editor (history kept).
    pub fn clear(&mut self) {
        self.set_text("");
        self.pastes.clear();
        self.browsing = None;
    }

    /// The text with paste markers expanded, trimmed; the editor is emptied
    /// and the text joins the history. `None` when only blanks were typed.
    pub fn take(&mut self) -> Option<String> {
        let typed = self.text();
        let mut text = typed.clone();
        for (marker, content) in &self.pastes {
            text = text.replacen(marker.as_str(), content, 1);
        }
        self.clear();
        let text = text.trim().to_owned();
        if text.is_empty() {
            return None;
        }
        if self.history.last() != Some(&typed) {
            self.history.push(typed);
        }
        Some(text)
    }

    fn byte_index(&self) -> usize {
        let line = &self.lines[self.row];
        line.char_indices()
            .nth(self.col)
            .map_or(line.len(), |(i, _)| i)
    }

    /// Types a character.
    pub fn insert_char(&mut self, c: char) {
        let at = self.byte_index();
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    /// Types a text that may span lines.
    pub fn insert_str(&mut self, text: &str) {
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            for c in part.chars().filter(|&c| c != '\r') {
                self.insert_char(c);
            }
        }
    }

    /// A paste: large ones become a marker such as `[paste #1 +42 lines]`.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines > PASTE_MARKER_LINES {
            let marker = format!("[paste #{} +{lines} lines]", self.pastes.len() + 1);
            self.insert_str(&marker);
            self.pastes.push((marker, text));
        } else {
            self.insert_str(&text);
        }
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        let at = self.byte_index();
        let rest = self.lines[self.row].split_off(at);
        self.row += 1;
        self.lines.insert(self.row, rest);
        self.col = 0;
    }

    /// Deletes the character before the cursor (joining lines at a line start).
    pub fn backspace(&mut self) {
        if self.col > 0 {
            self.col -= 1;
            let at = self.byte_index();
            self.lines[self.row].remove(at);
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            let at = self.byte_index();
            self.lines[self.row].remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Moves left, to the previous line's end at a line start.
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    /// Moves right, to the next line's start at a line end.
    pub fn right(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the line's start.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// To the line's end.
    pub fn end(&mut self) {
        self.col = self.lines[self.row].chars().count();
    }

    /// Up a line, or to the previous history entry from the first line.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let next = match self.browsing {
            None if !self.history.is_empty() => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(i) if i > 0 => i - 1,
            _ => return,
        };
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.set_text(&entry);
    }

    /// Down a line, or to the next history entry (then the draft) from the last line.
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let entry = self.history[i + 1].clone();
            self.set_text(&entry);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// The word before the cursor (back to a space), for completion.
    pub fn word_before_cursor(&self) -> &str {
        let line = &self.lines[self.row];
        let end = self.byte_index();
        let start = line[..end].rfind(' ').map_or(0, |i| i + 1);
        &line[start..end]
    }

    /// Replaces the word before the cursor with `replacement`.
    pub fn replace_word_before_cursor(&mut self, replacement: &str) {
        let word_chars = self.word_before_cursor().chars().count();
        for _ in 0..word_chars {
            self.backspace();
        }
        self.insert_str(replacement);
    }
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
        assert_eq!(editor.take(), Some(format!("see {}", expected.trim())));
    }
}
