//! The command menu: while the prompt is a lone `/word`, the commands it
//! begins (built-ins, prompt templates, skills), each with what it does,
//! stand above the editor; after `/model `, the models. Up/Down choose, Tab
//! puts the chosen one in the prompt, Enter sends it (on a lone `/`, only
//! once the arrows chose it), Esc puts the menu away until the text
//! changes. A newcomer sees what there is by typing `/`, as in Pi.

use crate::render::{Style, StyledLine};

/// Rows the menu takes at the most; the chosen entry is always among them.
pub const MENU_ROWS: usize = 8;

/// One entry of the menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuEntry {
    /// What the prompt becomes when it is chosen: `/model`, or
    /// `/model openai/gpt-4o`.
    pub name: String,
    /// What the menu shows of it: the command, or the argument.
    pub label: String,
    /// What it does, in a few words.
    pub description: String,
}

/// The menu's own state: which entry is chosen, for which typed text.
#[derive(Debug, Clone, Default)]
pub struct CommandMenu {
    /// The text the choice was made for; another text starts over at the
    /// first entry.
    typed: String,
    chosen: usize,
    /// Esc put the menu away for this text.
    dismissed: Option<String>,
}

/// The commands `typed` begins, when it is a lone `/word`: an exact match
/// first, then by name.
pub fn matching<'a>(
    typed: &str,
    commands: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<MenuEntry> {
    let is_word = typed.starts_with('/') && !typed.contains(char::is_whitespace);
    if !is_word {
        return Vec::new();
    }
    let mut entries: Vec<MenuEntry> = commands
        .into_iter()
        .filter(|(name, _)| name.starts_with(typed))
        .map(|(name, description)| MenuEntry {
            name: name.to_owned(),
            label: name.to_owned(),
            description: description.to_owned(),
        })
        .collect();
    entries.sort_by(|a, b| (a.name != typed, &a.name).cmp(&(b.name != typed, &b.name)));
    entries.dedup_by(|a, b| a.name == b.name);
    entries
}

/// The values of `command`'s argument that the word typed after it
/// begins (`/model op` -> the models starting `op`), in the order given;
/// none when the prompt is not `command`, a space and one word. A word that
/// is none of the values comes first, as typed, so Enter sends what was
/// typed unless another entry is chosen (`openai/gpt-4` must not become
/// `openai/gpt-4o`); an exact value comes first too.
pub fn argument_matching<'a>(
    typed: &str,
    command: &str,
    values: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<MenuEntry> {
    let Some(word) = typed
        .strip_prefix(command)
        .and_then(|rest| rest.strip_prefix(' '))
        .filter(|word| !word.contains(char::is_whitespace))
    else {
        return Vec::new();
    };
    let mut entries: Vec<MenuEntry> = values
        .into_iter()
        .filter(|(value, _)| value.starts_with(word))
        .map(|(value, description)| MenuEntry {
            name: format!("{command} {value}"),
            label: value.to_owned(),
            description: description.to_owned(),
        })
        .collect();
    if let Some(exact) = entries.iter().position(|entry| entry.label == word) {
        let entry = entries.remove(exact);
        entries.insert(0, entry);
    } else if !word.is_empty() && !entries.is_empty() {
        entries.insert(
            0,
            MenuEntry {
                name: typed.to_owned(),
                label: word.to_owned(),
                description: "as typed".to_owned(),
            },
        );
    }
    entries
}

impl CommandMenu {
    /// True when the menu shows for `typed` (given its entries).
    pub fn is_open(&self, typed: &str, entries: &[MenuEntry]) -> bool {
        !entries.is_empty() && self.dismissed.as_deref() != Some(typed)
    }

    /// The chosen entry's index for `typed`.
    pub fn chosen(&self, typed: &str, entries: &[MenuEntry]) -> usize {
        if self.typed == typed {
            self.chosen.min(entries.len().saturating_sub(1))
        } else {
            0
        }
    }

    /// Up (`-1`) or Down (`1`), wrapping around.
    pub fn step(&mut self, typed: &str, entries: &[MenuEntry], by: isize) {
        let count = entries.len().max(1);
        let chosen = self.chosen(typed, entries);
        self.chosen = (chosen + count).saturating_add_signed(by) % count;
        typed.clone_into(&mut self.typed);
    }

    /// True when Enter on `typed` sends the chosen entry: unless it is a
    /// lone `/` whose entry no arrow chose. There the first entry is only
    /// first by name (`/compact`), and Enter on it compacted a long session
    /// unasked (Pi sends it; see `docs/DEVIATIONS.md`).
    pub fn enter_sends(&self, typed: &str) -> bool {
        typed != "/" || self.typed == typed
    }

    /// Esc: no menu until the text changes.
    pub fn dismiss(&mut self, typed: &str) {
        self.dismissed = Some(typed.to_owned());
    }

    /// The rows to draw at `width` columns (none while closed): a window
    /// of [`MENU_ROWS`] around the chosen entry, names aligned,
    /// descriptions dimmed.
    pub fn rows(&self, typed: &str, entries: &[MenuEntry], width: u16) -> Vec<StyledLine> {
        if !self.is_open(typed, entries) {
            return Vec::new();
        }
        let chosen = self.chosen(typed, entries);
        let first = (chosen + 1).saturating_sub(MENU_ROWS);
        let width = usize::from(width);
        let longest = |text: fn(&MenuEntry) -> &str| {
            let lengths = entries.iter().map(|e| text(e).chars().count());
            lengths.max().unwrap_or(0)
        };
        // The names take what the descriptions leave, and at least half the
        // width: a long name (a served model's file path) is cut in its
        // middle rather than pushing every description off the screen.
        let room_left = width.saturating_sub(4 + longest(|e| &e.description));
        let name_width = longest(|e| &e.label).min(room_left.max(width / 2));
        entries
            .iter()
            .enumerate()
            .skip(first)
            .take(MENU_ROWS)
            .map(|(i, entry)| {
                let (mark, style) = if i == chosen {
                    ("→ ", Style::Accent)
                } else {
                    ("  ", Style::Normal)
                };
                let label = cut_middle(&entry.label, name_width);
                let name = format!("{mark}{label:<name_width$}  ");
                let room = width.saturating_sub(name.chars().count());
                let description = cut(&entry.description, room);
                StyledLine::new(name, style).push(description, Style::Dim)
            })
            .collect()
    }
}

/// `text` in at most `room` characters, an ellipsis ending what was cut.
fn cut(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    if room > 0 {
        cut.push('…');
    }
    cut
}

/// `text` in at most `room` characters: its start and its end (a path's
/// file name) around an ellipsis.
fn cut_middle(text: &str, room: usize) -> String {
    let length = text.chars().count();
    if length <= room {
        return text.to_owned();
    }
    let Some(kept) = room.checked_sub(1) else {
        return String::new();
    };
    let head = kept / 3;
    let tail = kept - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(length - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: [(&str, &str); 4] = [
        ("/resume", "resume a session"),
        ("/reload", "read the files again"),
        ("/review", "review a file"),
        ("/new", "start a new session"),
    ];

    fn names(entries: &[MenuEntry]) -> Vec<&str> {
        entries.iter().map(|e| e.name.as_str()).collect()
    }

    fn plain(rows: &[StyledLine]) -> Vec<String> {
        rows.iter().map(StyledLine::plain).collect()
    }

    #[test]
    fn a_lone_slash_word_matches_by_prefix_with_an_exact_match_first() {
        assert_eq!(
            names(&matching("/re", COMMANDS)),
            ["/reload", "/resume", "/review"]
        );
        assert_eq!(
            names(&matching(
                "/review",
                COMMANDS.into_iter().chain([("/review-pr", "")])
            )),
            ["/review", "/review-pr"]
        );
        assert!(matching("/resume 2", COMMANDS).is_empty());
        assert!(matching("/usr/bin", COMMANDS).is_empty());
        assert!(matching("re", COMMANDS).is_empty());
    }

    #[test]
    fn after_a_command_and_a_space_its_values_match_the_word_typed() {
        let models = [
            ("openai/gpt-4o", "current"),
            ("anthropic/claude", ""),
            ("openai/o3", ""),
        ];
        let found = argument_matching("/model op", "/model", models);
        let shown: Vec<(&str, &str)> = found
            .iter()
            .map(|e| (e.name.as_str(), e.label.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("/model op", "op"),
                ("/model openai/gpt-4o", "openai/gpt-4o"),
                ("/model openai/o3", "openai/o3")
            ],
            "what was typed first: Enter sends it unless another is chosen"
        );
        let exact = argument_matching("/model openai/o3", "/model", models);
        assert_eq!(exact[0].label, "openai/o3");
        assert_eq!(exact.len(), 1);
        assert_eq!(argument_matching("/model ", "/model", models).len(), 3);
        assert!(argument_matching("/model", "/model", models).is_empty());
        assert!(argument_matching("/model a b", "/model", models).is_empty());
        assert!(argument_matching("/models x", "/model", models).is_empty());
    }

    #[test]
    fn the_choice_wraps_and_starts_over_when_the_text_changes() {
        let entries = matching("/re", COMMANDS);
        let mut menu = CommandMenu::default();
        menu.step("/re", &entries, -1);
        assert_eq!(menu.chosen("/re", &entries), 2);
        menu.step("/re", &entries, 1);
        assert_eq!(menu.chosen("/re", &entries), 0);
        menu.step("/re", &entries, 1);
        assert_eq!(menu.chosen("/re", &entries), 1);
        assert_eq!(menu.chosen("/rel", &matching("/rel", COMMANDS)), 0);
        menu.dismiss("/re");
        assert!(!menu.is_open("/re", &entries));
        assert!(menu.is_open("/r", &matching("/r", COMMANDS)));
    }

    #[test]
    fn rows_mark_the_choice_align_the_names_and_cut_descriptions_at_the_width() {
        let entries = matching("/", COMMANDS);
        let mut menu = CommandMenu::default();
        menu.step("/", &entries, 1);
        assert_eq!(
            plain(&menu.rows("/", &entries, 24)),
            [
                "  /new     start a new…",
                "→ /reload  read the fil…",
                "  /resume  resume a ses…",
                "  /review  review a file",
            ]
        );
    }

    #[test]
    fn a_name_too_long_for_half_the_width_is_cut_in_its_middle() {
        let entries = [
            MenuEntry {
                name: "/model local/m".into(),
                label: "local/m".into(),
                description: "current".into(),
            },
            MenuEntry {
                name: "/model local//models/qwen2.5-coder-q4.gguf".into(),
                label: "local//models/qwen2.5-coder-q4.gguf".into(),
                description: "served by local".into(),
            },
        ];
        assert_eq!(
            plain(&CommandMenu::default().rows("/model ", &entries, 40)),
            [
                "→ local/m                current",
                "  local/…-coder-q4.gguf  served by local",
            ]
        );
        assert_eq!(cut_middle("abcdefghij", 4), "a…ij");
        assert_eq!(cut_middle("abc", 3), "abc");
        assert_eq!(cut_middle("abc", 0), "");
    }
}
