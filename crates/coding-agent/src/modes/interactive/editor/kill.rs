//! Kills and yanks, as in Emacs, readline and Pi's editor: what Ctrl+U,
//! Ctrl+K, Ctrl+W and Alt+D delete goes into a ring, Ctrl+Y puts the newest
//! back, and Alt+Y right after a yank swaps it for the one before. Kills one
//! after another make one entry, in the order the text stood.

use super::{Editor, LastEdit, Pos, words};

/// Entries the ring keeps; older ones go.
const KILLS_KEPT: usize = 100;

/// Which side of the newest entry a kill that follows another joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Deleted backward: it stood before the entry's text.
    Before,
    /// Deleted forward: it stood after.
    After,
}

/// Killed texts, newest last.
#[derive(Debug, Clone, Default)]
pub(super) struct KillRing {
    entries: Vec<String>,
}

impl KillRing {
    fn push(&mut self, text: String, join: bool, side: Side) {
        match self.entries.last_mut() {
            Some(newest) if join => match side {
                Side::Before => newest.insert_str(0, &text),
                Side::After => newest.push_str(&text),
            },
            _ => {
                self.entries.push(text);
                if self.entries.len() > KILLS_KEPT {
                    self.entries.remove(0);
                }
            }
        }
    }

    fn newest(&self) -> Option<&str> {
        self.entries.last().map(String::as_str)
    }

    /// The newest entry goes to the back; the one before it is newest.
    fn rotate(&mut self) {
        if let Some(newest) = self.entries.pop() {
            self.entries.insert(0, newest);
        }
    }
}

impl Editor {
    /// Ctrl+U: deletes from the line's start to the cursor; at a line
    /// start, the line break before it.
    pub fn kill_to_line_start(&mut self) {
        self.kill_back(|_, _| 0);
    }

    /// Ctrl+K: deletes from the cursor to the line's end; at a line end,
    /// the line break after it.
    pub fn kill_to_line_end(&mut self) {
        self.kill_forward(|line, _| line.chars().count());
    }

    /// Ctrl+W, Alt+Backspace: deletes the word before the cursor.
    pub fn kill_word_before(&mut self) {
        self.kill_back(words::start_before);
    }

    /// Alt+D, Alt+Delete: deletes the word after the cursor.
    pub fn kill_word_after(&mut self) {
        self.kill_forward(words::end_after);
    }

    /// Kills from the column `start` gives (for the cursor's line and
    /// column) to the cursor; at a line start, the line break before it.
    fn kill_back(&mut self, start: impl FnOnce(&str, usize) -> usize) {
        let from = match (self.row, self.col) {
            (0, 0) => return self.moved(),
            (row, 0) => (row - 1, self.char_count(row - 1)),
            (row, col) => (row, start(&self.lines[row], col)),
        };
        self.kill(from, (self.row, self.col), Side::Before);
    }

    /// Kills from the cursor to the column `end` gives; at a line end, the
    /// line break after it.
    fn kill_forward(&mut self, end: impl FnOnce(&str, usize) -> usize) {
        let to = if self.col < self.char_count(self.row) {
            (self.row, end(&self.lines[self.row], self.col))
        } else if self.row + 1 < self.lines.len() {
            (self.row + 1, 0)
        } else {
            return self.moved();
        };
        self.kill((self.row, self.col), to, Side::After);
    }

    /// Ctrl+Y: types the newest kill at the cursor.
    pub fn yank(&mut self) {
        let Some(text) = self.kills.newest().map(str::to_owned) else {
            return self.moved();
        };
        self.edit(LastEdit::Yank);
        self.put_str(&text);
    }

    /// Alt+Y, right after a yank: puts the kill before it in its place.
    pub fn yank_pop(&mut self) {
        if self.last != LastEdit::Yank || self.kills.entries.len() < 2 {
            return self.moved();
        }
        let Some(before) = self.undo.last().cloned() else {
            return self.moved();
        };
        self.kills.rotate();
        self.restore(before);
        let text = self.kills.newest().unwrap_or_default().to_owned();
        self.put_str(&text);
    }

    /// Deletes from `from` to `to` (`from` first) into the ring; a paste
    /// marker either end cuts into goes whole.
    fn kill(&mut self, (from_row, from_col): Pos, (to_row, to_col): Pos, side: Side) {
        let join = self.last == LastEdit::Kill;
        self.edit(LastEdit::Kill);
        let from = (
            from_row,
            self.marker_around(from_row, from_col)
                .map_or(from_col, |m| m.0),
        );
        let to = (
            to_row,
            self.marker_around(to_row, to_col).map_or(to_col, |m| m.1),
        );
        let text = self.remove_span(from, to);
        self.kills.push(text, join, side);
    }
}
