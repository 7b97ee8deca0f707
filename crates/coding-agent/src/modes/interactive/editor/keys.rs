//! The editing keys, bound as Pi's editor binds them by default (readline's
//! and Emacs' before it), so hands used to a shell work here too. Keys the
//! app itself takes (Enter to send, Ctrl+C, Ctrl+D on an empty editor, Tab,
//! PageUp/PageDown) never reach these.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::Editor;

impl Editor {
    /// Applies `key`; false when it is not an editing key.
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        use KeyCode::{Backspace, Char, Delete, Down, End, Enter, Home, Left, Right, Up};
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        // After Ctrl+]: a character is the one to jump to; any other key
        // ends the wait and does what it does.
        if let Some(forward) = self.jump.take()
            && let (Char(target), false, false) = (key.code, ctrl, alt)
        {
            self.jump_to(target, forward);
            return true;
        }
        match (key.code, ctrl, alt) {
            (Char(c), false, false) => self.insert_char(c),
            // Enter reaches the editor only with Shift or Alt: a new line.
            (Enter, ..) | (Char('j'), true, false) => self.newline(),
            (Left, true, _) | (Left, _, true) | (Char('b'), false, true) => self.word_left(),
            (Right, true, _) | (Right, _, true) | (Char('f'), false, true) => self.word_right(),
            (Left, ..) | (Char('b'), true, false) => self.left(),
            (Right, ..) | (Char('f'), true, false) => self.right(),
            (Home, ..) | (Char('a'), true, false) => self.home(),
            (End, ..) | (Char('e'), true, false) => self.end(),
            (Up, ..) => self.up(),
            (Down, ..) => self.down(),
            (Backspace, true, _) | (Backspace, _, true) | (Char('w'), true, false) => {
                self.kill_word_before();
            }
            (Delete, true, _) | (Delete, _, true) | (Char('d'), false, true) => {
                self.kill_word_after();
            }
            (Backspace, ..) | (Char('h'), true, false) => self.backspace(),
            (Delete, ..) | (Char('d'), true, false) => self.delete(),
            (Char('u'), true, false) => self.kill_to_line_start(),
            (Char('k'), true, false) => self.kill_to_line_end(),
            (Char('y'), true, false) => self.yank(),
            (Char('y'), false, true) => self.yank_pop(),
            // Ctrl+-; a legacy terminal sends it as Ctrl+_ (0x1f), which
            // crossterm reads as Ctrl+7.
            (Char('-' | '_' | '7'), true, false) => self.undo(),
            // Ctrl+] (0x1d, read as Ctrl+5 from a legacy terminal), with Alt
            // backwards: jump to the next character typed.
            (Char(']' | '5'), true, alt) => self.jump = Some(!alt),
            _ => return false,
        }
        true
    }

    /// Alt+Left, Ctrl+Left, Alt+B: to the start of the word before the
    /// cursor (the previous line's end at a line start).
    pub fn word_left(&mut self) {
        if self.col == 0 {
            return self.left();
        }
        self.moved();
        self.col = match self.marker_before() {
            Some(len) => self.col - len,
            None => super::words::start_before(&self.lines[self.row], self.col),
        };
        self.out_of_marker();
    }

    /// The cursor goes to the next `target` after it (`forward`) or the
    /// last one before it, across lines; where there is none, it stays.
    fn jump_to(&mut self, target: char, forward: bool) {
        let in_row = |row: usize| {
            let line = &self.lines[row];
            line.chars()
                .enumerate()
                .filter(move |&(_, c)| c == target)
                .map(move |(col, _)| (row, col))
        };
        let found = if forward {
            (self.row..self.lines.len())
                .flat_map(in_row)
                .find(|&at| at > (self.row, self.col))
        } else {
            (0..=self.row)
                .rev()
                .flat_map(|row| in_row(row).collect::<Vec<_>>().into_iter().rev())
                .find(|&at| at < (self.row, self.col))
        };
        if let Some((row, col)) = found {
            self.moved();
            (self.row, self.col) = (row, col);
            self.out_of_marker();
        }
    }

    /// Alt+Right, Ctrl+Right, Alt+F: to the end of the word after the
    /// cursor (the next line's start at a line end).
    pub fn word_right(&mut self) {
        if self.col == self.char_count(self.row) {
            return self.right();
        }
        self.moved();
        self.col = match self.marker_after() {
            Some(len) => self.col + len,
            None => super::words::end_after(&self.lines[self.row], self.col),
        };
        self.out_of_marker();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys written as in the docs: `ctrl+w`, `alt+b`, `left`, or text to type.
    fn press(editor: &mut Editor, keys: &[&str]) {
        for key in keys {
            let (modifiers, name) = match key.split_once('+') {
                Some(("ctrl", name)) if name.starts_with("alt+") => {
                    (KeyModifiers::CONTROL | KeyModifiers::ALT, &name[4..])
                }
                Some(("ctrl", name)) => (KeyModifiers::CONTROL, name),
                Some(("alt", name)) => (KeyModifiers::ALT, name),
                _ => (KeyModifiers::NONE, *key),
            };
            let code = match name {
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "up" => KeyCode::Up,
                "backspace" => KeyCode::Backspace,
                "delete" => KeyCode::Delete,
                "enter" => KeyCode::Enter,
                "home" => KeyCode::Home,
                one if one.chars().count() == 1 => KeyCode::Char(one.chars().next().unwrap()),
                text => {
                    text.chars().for_each(|c| {
                        assert!(editor.handle_key(KeyEvent::from(KeyCode::Char(c))));
                    });
                    continue;
                }
            };
            assert!(
                editor.handle_key(KeyEvent::new(code, modifiers)),
                "{key} is an editing key"
            );
        }
    }

    /// The text with `|` at the cursor.
    fn shown(editor: &Editor) -> String {
        let (row, col) = editor.cursor();
        let mut lines = editor.lines().to_vec();
        let at = super::super::byte_at(&lines[row], col);
        lines[row].insert(at, '|');
        lines.join("\n")
    }

    /// Presses each step's keys in turn; after each step the text, with `|`
    /// at the cursor, is the one given.
    fn steps(editor: &mut Editor, steps: &[(&[&str], &str)]) {
        for (keys, want) in steps {
            press(editor, keys);
            assert_eq!(shown(editor), *want, "after {keys:?}");
        }
    }

    #[test]
    fn word_moves_stop_at_words_and_punctuation() {
        steps(
            &mut Editor::default(),
            &[
                (&["cargo test --lib", "alt+b"], "cargo test --|lib"),
                (&["ctrl+left", "alt+left"], "cargo |test --lib"),
                (&["alt+f", "ctrl+right"], "cargo test --|lib"),
                (
                    &["ctrl+a", "ctrl+f", "ctrl+e", "ctrl+b"],
                    "cargo test --li|b",
                ),
            ],
        );
    }

    #[test]
    fn ctrl_bracket_jumps_to_the_next_character_typed_and_with_alt_back() {
        steps(
            &mut Editor::default(),
            &[
                (
                    &["let x = f(a);", "enter", "g(b)", "ctrl+a", "up"],
                    "|let x = f(a);\ng(b)",
                ),
                (&["ctrl+]", "("], "let x = f|(a);\ng(b)"),
                // Across lines; the jump does not type the character.
                (&["ctrl+]", "("], "let x = f(a);\ng|(b)"),
                (&["ctrl+alt+]", "x"], "let |x = f(a);\ng(b)"),
                // Not there: the cursor stays. A legacy terminal's Ctrl+] is Ctrl+5.
                (&["ctrl+5", "z"], "let |x = f(a);\ng(b)"),
                // Another key ends the wait and does its own work.
                (&["ctrl+]", "ctrl+e", "!"], "let x = f(a);!|\ng(b)"),
            ],
        );
    }

    #[test]
    fn kills_go_into_the_ring_and_come_back_with_yank() {
        let mut editor = Editor::default();
        steps(
            &mut editor,
            &[
                // `-` is a word of its own.
                (&["git commit -m wip", "ctrl+w", "ctrl+w"], "git commit -|"),
                (&["alt+backspace"], "git commit |"),
                // Three kills in a row, yanked as one.
                (&["ctrl+y"], "git commit -m wip|"),
                (&["ctrl+a", "alt+d"], "| commit -m wip"),
            ],
        );
        press(&mut editor, &["ctrl+e", "ctrl+u"]);
        assert!(editor.is_empty());
        // Yank, then Alt+Y walks back through older kills in place.
        steps(
            &mut editor,
            &[
                (&["ctrl+y"], " commit -m wip|"),
                (&["alt+y"], "git|"),
                (&["alt+y"], "-m wip|"),
                // Alt+Y only right after a yank.
                (&["left", "alt+y"], "-m wi|p"),
            ],
        );
    }

    #[test]
    fn line_kills_at_a_line_boundary_take_the_line_break() {
        steps(
            &mut Editor::default(),
            &[
                (&["one", "alt+enter", "two", "ctrl+a", "ctrl+u"], "one|two"),
                (&["ctrl+k", "ctrl+k"], "one|"),
                // The break and the rest, as one kill.
                (&["ctrl+a", "ctrl+y"], "\ntwo|one"),
            ],
        );
    }

    #[test]
    fn ctrl_d_and_ctrl_h_delete_a_character_and_alt_letters_type_nothing() {
        let mut editor = Editor::default();
        press(
            &mut editor,
            &["abc", "ctrl+a", "ctrl+d", "ctrl+e", "ctrl+h"],
        );
        assert_eq!(shown(&editor), "b|");
        assert!(!editor.handle_key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::ALT)));
        assert_eq!(shown(&editor), "b|");
    }

    #[test]
    fn undo_takes_back_a_typed_word_then_each_edit() {
        let mut editor = Editor::default();
        steps(
            &mut editor,
            &[
                (&["hello world", "ctrl+w", "again"], "hello again|"),
                // The word typed at once.
                (&["ctrl+-"], "hello |"),
                // The kill, as Ctrl+_ from a legacy terminal.
                (&["ctrl+7"], "hello world|"),
                (&["ctrl+_"], "hello|"),
            ],
        );
        press(&mut editor, &["ctrl+-", "ctrl+-"]);
        assert!(editor.is_empty(), "nothing left to undo stays empty");
    }

    #[test]
    fn a_paste_marker_is_one_unit_for_moves_and_deletions_so_the_paste_is_never_lost() {
        let pasted: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let mut editor = Editor::default();
        press(&mut editor, &["see "]);
        editor.paste(&pasted);
        steps(
            &mut editor,
            &[
                (&[" end"], "see [paste #1 +12 lines] end|"),
                // The second kill took the marker whole.
                (&["ctrl+w", "ctrl+w"], "see |"),
                (&["ctrl+-", "ctrl+-"], "see [paste #1 +12 lines] end|"),
                // Over the marker in one step.
                (&["alt+b", "left", "left"], "see |[paste #1 +12 lines] end"),
                (&["right", "backspace"], "see | end"),
                (&["ctrl+-", "left", "delete"], "see | end"),
            ],
        );
        press(&mut editor, &["ctrl+-"]);
        assert_eq!(editor.take(), Some(format!("see {pasted} end")));
    }

    #[test]
    fn any_sequence_of_keys_keeps_the_cursor_in_the_text_and_never_panics() {
        let mut next = crate::support::seeded::xorshift();
        let codes = [
            KeyCode::Char('a'),
            KeyCode::Char('é'),
            KeyCode::Char('日'),
            KeyCode::Char(' '),
            KeyCode::Char('.'),
            KeyCode::Enter,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::Backspace,
            KeyCode::Delete,
            KeyCode::Char('w'),
            KeyCode::Char('d'),
            KeyCode::Char('u'),
            KeyCode::Char('k'),
            KeyCode::Char('y'),
            KeyCode::Char('b'),
            KeyCode::Char('f'),
            KeyCode::Char('-'),
            KeyCode::Char(']'),
        ];
        let modifiers = [KeyModifiers::NONE, KeyModifiers::CONTROL, KeyModifiers::ALT];
        let big_paste: String = (1..=11).map(|i| format!("p{i}\n")).collect();
        let mut editor = Editor::default();
        for step in 0..20_000 {
            match next(40) {
                0 => editor.paste(&big_paste),
                1 => {
                    editor.take();
                }
                2 => editor.clear(),
                _ => {
                    let key = KeyEvent::new(codes[next(codes.len())], modifiers[next(3)]);
                    editor.handle_key(key);
                }
            }
            let (row, col) = editor.cursor();
            assert!(row < editor.lines().len(), "step {step}: row {row}");
            assert!(
                col <= editor.lines()[row].chars().count(),
                "step {step}: col {col} in {:?}",
                editor.lines()[row]
            );
        }
    }

    #[test]
    fn a_cleared_text_comes_back_with_undo_but_a_sent_one_does_not() {
        let mut editor = Editor::default();
        press(&mut editor, &["a long prompt"]);
        editor.clear();
        press(&mut editor, &["ctrl+-"]);
        assert_eq!(shown(&editor), "a long prompt|");
        assert_eq!(editor.take().as_deref(), Some("a long prompt"));
        press(&mut editor, &["ctrl+-"]);
        assert!(editor.is_empty());
    }
}
