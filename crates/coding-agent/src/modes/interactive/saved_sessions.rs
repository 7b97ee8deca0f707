//! The list `/resume` shows: this directory's newest saved sessions, each
//! with its title and how long ago it was last written to (as Pi's session
//! list shows them), the older ones counted; `/resume TEXT` lists those of
//! any age whose title holds the text.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::session_commands::preview;
use crate::render::{Style, StyledLine};
use crate::session::{has_session_header, session_title};

/// Sessions `/resume` lists.
const RESUME_LIST: usize = 10;

/// One saved session in the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedSession {
    /// Its file.
    pub path: PathBuf,
    /// Its name, else the first line of its first prompt.
    title: String,
    /// When its file was last written.
    modified: SystemTime,
}

/// This directory's newest saved sessions, newest first, and how many
/// older ones there are.
pub fn recent_sessions(dir: &Path) -> (Vec<SavedSession>, usize) {
    let files = session_files(dir);
    let older = files.len().saturating_sub(RESUME_LIST);
    let listed = files
        .into_iter()
        .take(RESUME_LIST)
        .map(|(modified, path)| saved(path, modified))
        .collect();
    (listed, older)
}

/// This directory's saved sessions whose title holds `text` (letters of
/// either case), newest first, at most [`RESUME_LIST`] of them, and how
/// many more match. Every file's title is read: a search is for the
/// session that is not among the newest.
pub fn matching_sessions(dir: &Path, text: &str) -> (Vec<SavedSession>, usize) {
    let text = text.to_lowercase();
    let mut matching = session_files(dir)
        .into_iter()
        .map(|(modified, path)| saved(path, modified))
        .filter(|session| session.title.to_lowercase().contains(&text));
    let listed: Vec<SavedSession> = matching.by_ref().take(RESUME_LIST).collect();
    (listed, matching.count())
}

/// The session files of `dir` with when each was last written, newest first.
fn session_files(dir: &Path) -> Vec<(SystemTime, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Another `.jsonl` in the folder (notes, a log) is no session to
        // list: opening it would only fail.
        .filter(|p| p.extension().is_some_and(|ext| ext == "jsonl") && has_session_header(p))
        .map(|p| {
            let modified = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (modified, p)
        })
        .collect();
    files.sort_by_key(|file| std::cmp::Reverse(file.0));
    files
}

/// The session at `path`, titled.
fn saved(path: PathBuf, modified: SystemTime) -> SavedSession {
    SavedSession {
        title: session_title(&path).unwrap_or_else(|| "(no messages)".to_owned()),
        path,
        modified,
    }
}

/// The sessions `/resume` last listed, so `/resume N` opens the one the
/// user read as N even when files were written since (a prompt saves the
/// current session, which moves it to the top of a new listing).
#[derive(Debug, Default)]
pub struct Listed(Option<Vec<PathBuf>>);

impl Listed {
    /// Remembers `sessions` as listed (none, when a search found none).
    pub fn remember(&mut self, sessions: &[SavedSession]) {
        self.0 = Some(sessions.iter().map(|s| s.path.clone()).collect());
    }

    /// Session `n` (from 1) as last listed; before any listing, as the
    /// sessions of `dir` are listed now.
    pub fn pick(&self, n: usize, dir: &Path) -> Option<PathBuf> {
        let index = n.checked_sub(1)?;
        match &self.0 {
            Some(listed) => listed.get(index).cloned(),
            None => recent_sessions(dir)
                .0
                .into_iter()
                .nth(index)
                .map(|s| s.path),
        }
    }
}

/// The list's lines: a numbered line a session, its age dimmed, then what
/// was left out: `more` older sessions (in `dir`), or `more` matching a
/// `search`. A title is cut as `/fork` cuts a prompt: a long first prompt
/// took a dozen rows (a search still reads the whole title).
pub fn list_lines(
    sessions: &[SavedSession],
    more: usize,
    search: Option<&str>,
    dir: &Path,
    now: SystemTime,
) -> Vec<StyledLine> {
    let mut lines = vec![StyledLine::new(
        "Saved sessions (/resume N opens one, /resume TEXT searches them all):",
        Style::Bold,
    )];
    for (i, session) in sessions.iter().enumerate() {
        lines.push(
            StyledLine::new(format!("{:>2}. ", i + 1), Style::Accent)
                .push(preview(&session.title), Style::Normal)
                .push(format!(" · {}", age(session.modified, now)), Style::Dim),
        );
    }
    // They exist: say how to reach them.
    let left_out = match search {
        _ if more == 0 => return lines,
        Some(_) => format!("… and {more} more matching (a longer search narrows them)"),
        None => format!(
            "… and {more} older (/resume TEXT finds one; `--session ID` opens one, the id ending each file name in {})",
            dir.display()
        ),
    };
    lines.push(StyledLine::new(left_out, Style::Dim));
    lines
}

/// How long before `now` a file was written, as Pi's session list says it:
/// "just now", "5 minutes ago", "2 hours ago", "3 days ago", then the date.
fn age(modified: SystemTime, now: SystemTime) -> String {
    let seconds = now
        .duration_since(modified)
        .map_or(0, |elapsed| elapsed.as_secs());
    let ago = |n: u64, unit: &str| {
        let s = if n == 1 { "" } else { "s" };
        format!("{n} {unit}{s} ago")
    };
    match seconds {
        0..60 => "just now".to_owned(),
        60..3_600 => ago(seconds / 60, "minute"),
        3_600..86_400 => ago(seconds / 3_600, "hour"),
        86_400..604_800 => ago(seconds / 86_400, "day"),
        _ => chrono::DateTime::<chrono::Local>::from(modified)
            .format("%Y-%m-%d")
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const HEADER: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n";

    /// `/resume` lists the newest [`RESUME_LIST`] and counts the rest, so
    /// the user knows they are there (they were never mentioned).
    #[test]
    fn the_sessions_past_the_list_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..RESUME_LIST + 2 {
            std::fs::write(dir.path().join(format!("s{n}.jsonl")), HEADER).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), HEADER).unwrap();
        std::fs::write(dir.path().join("notes.jsonl"), "{\"foo\": 1}\n").unwrap();
        let (listed, older) = recent_sessions(dir.path());
        assert_eq!((listed.len(), older), (RESUME_LIST, 2));
        assert_eq!(recent_sessions(&dir.path().join("none")).1, 0);
    }

    /// `/resume N` opens what the listing the user read numbered N, though
    /// a session written since tops the directory's list now.
    #[test]
    fn a_number_picks_from_the_listing_shown() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, age: u64| {
            let path = dir.path().join(name);
            std::fs::write(&path, HEADER).unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            let modified = SystemTime::now() - Duration::from_secs(age);
            file.set_modified(modified).unwrap();
            path
        };
        let (old, new) = (write("old.jsonl", 600), write("new.jsonl", 60));
        let mut listed = Listed::default();
        assert_eq!(listed.pick(1, dir.path()), Some(new.clone()));
        listed.remember(&recent_sessions(dir.path()).0);
        write("old.jsonl", 0);
        assert_eq!(recent_sessions(dir.path()).0[0].path, old);
        assert_eq!(listed.pick(1, dir.path()), Some(new));
        assert_eq!(listed.pick(2, dir.path()), Some(old));
        assert_eq!(listed.pick(3, dir.path()), None);
        assert_eq!(listed.pick(0, dir.path()), None);
        // A search that found nothing numbered nothing.
        listed.remember(&[]);
        assert_eq!(listed.pick(1, dir.path()), None);
    }

    /// A search reads every session's title, not only the newest ones'.
    #[test]
    fn a_search_finds_sessions_of_any_age_by_their_title() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = |text: &str| {
            format!(
                r#"{{"type":"message","id":"m","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{text}","timestamp":0}}}}"#
            )
        };
        for n in 0..RESUME_LIST + 3 {
            // A title is the first line that says something.
            let text = if n == 0 {
                "\\n  \\nFix the Parser"
            } else {
                "other work"
            };
            let path = dir.path().join(format!("s{n}.jsonl"));
            std::fs::write(&path, format!("{HEADER}{}\n", prompt(text))).unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            let age = Duration::from_secs(60 * (n as u64 + 1));
            file.set_modified(SystemTime::now() - age).unwrap();
        }
        let (found, more) = matching_sessions(dir.path(), "parser");
        let titles: Vec<&str> = found.iter().map(|s| s.title.as_str()).collect();
        assert_eq!((titles, more), (vec!["Fix the Parser"], 0));
        let (found, more) = matching_sessions(dir.path(), "OTHER");
        assert_eq!((found.len(), more), (RESUME_LIST, 2));
        assert_eq!(found[0].path, dir.path().join("s1.jsonl"));
    }

    #[test]
    fn each_session_says_how_long_ago_it_was_written() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let before = |seconds: u64| now - Duration::from_secs(seconds);
        let ages: Vec<String> = [0, 59, 60, 150, 3_600, 7_300, 86_400, 6 * 86_400]
            .map(|seconds| age(before(seconds), now))
            .into();
        assert_eq!(
            ages,
            [
                "just now",
                "just now",
                "1 minute ago",
                "2 minutes ago",
                "1 hour ago",
                "2 hours ago",
                "1 day ago",
                "6 days ago"
            ]
        );
        // A week and more: the local date, whatever the time zone.
        let old = age(before(30 * 86_400), now);
        assert!(old.starts_with("2026-"), "{old}");
        // A clock set back: not "-5 minutes".
        assert_eq!(age(now + Duration::from_secs(300), now), "just now");

        let session = SavedSession {
            path: PathBuf::from("/s/a.jsonl"),
            title: "fix the parser".into(),
            modified: before(7_300),
        };
        let lines = list_lines(&[session], 0, None, Path::new("/s"), now);
        let shown: Vec<String> = lines.iter().map(StyledLine::plain).collect();
        assert_eq!(
            shown,
            [
                "Saved sessions (/resume N opens one, /resume TEXT searches them all):",
                " 1. fix the parser · 2 hours ago"
            ]
        );
    }

    /// A long first prompt filled a dozen rows of the list (Pi's keeps a
    /// session to a line): it is cut as `/fork` cuts its list.
    #[test]
    fn a_long_title_is_cut_to_one_line() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let session = SavedSession {
            path: PathBuf::from("/s/a.jsonl"),
            title: "word ".repeat(400),
            modified: now,
        };
        let lines = list_lines(&[session], 0, None, Path::new("/s"), now);
        let shown = lines[1].plain();
        assert_eq!(
            shown,
            format!(" 1. {} · just now", preview(&"word ".repeat(400)))
        );
        assert!(shown.chars().count() < 100, "{shown}");
    }
}
