//! Tab completion: file names under the cwd for an `@path` word (a
//! `/command` has the command menu, `command_menu.rs`). A path holding a
//! space is written `@"my notes.txt"`, so that the model (and the next Tab)
//! can tell it from a path followed by a word. With `--remote` the names
//! are the remote host's, listed through its [`LsOperations`] (the files
//! here would be files the tools cannot reach).

use std::path::{Path, PathBuf};

use crate::tools::ls::ops::LsOperations;

/// Most candidates listed.
const MAX_CANDIDATES: usize = 20;

/// What Tab does with a partial path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The path to put in place of the partial one (without the `@`), when
    /// it can be extended: the one match (a directory ends in `/`, a file in a
    /// space) or the matches' common prefix.
    pub replacement: Option<String>,
    /// The matching names when there are several (directories end in `/`).
    pub candidates: Vec<String>,
}

/// What Tab puts in place of the `@` word and the names it lists: the word
/// to put instead, when it can be extended, and the names when several
/// match.
pub type AtCompletion = (Option<String>, Vec<String>);

/// Tab on the `@` word `word` (`@src/ma`, `@"my no`), against this
/// machine's files.
pub fn complete_at_word(cwd: &Path, word: &str) -> Option<AtCompletion> {
    let (partial, quoted) = at_partial(word)?;
    Some(as_at_word(complete_path(cwd, partial), quoted))
}

/// [`complete_at_word`] against the files `files` lists (another host's).
pub async fn complete_at_word_with(
    files: &dyn LsOperations,
    cwd: &Path,
    word: &str,
) -> Option<AtCompletion> {
    let (partial, quoted) = at_partial(word)?;
    let completion = complete_path_with(files, cwd, partial).await;
    Some(as_at_word(completion, quoted))
}

/// The partial path of an `@` word, and whether it is quoted (`@"my no`).
fn at_partial(word: &str) -> Option<(&str, bool)> {
    match word.strip_prefix("@\"") {
        Some(partial) => Some((partial, true)),
        None => Some((word.strip_prefix('@')?, false)),
    }
}

/// `completion` written as an `@` word again.
fn as_at_word(completion: Completion, quoted: bool) -> AtCompletion {
    let replacement = completion.replacement.map(|path| {
        // A name holding a quote cannot be quoted this way: as typed.
        if (!quoted && !path.trim_end().contains(' ')) || path.contains('"') {
            return format!("@{path}");
        }
        // A file is done: its quote closes. A folder or a shared beginning
        // goes on: its quote stays open for the next Tab.
        match path.strip_suffix(' ') {
            Some(done) => format!("@\"{done}\" "),
            None => format!("@\"{path}"),
        }
    });
    (replacement, completion.candidates)
}

/// `partial` as the folder to list (relative to `cwd`, or absolute, or
/// under `home` for `~/`), what it holds before that (as typed), and the
/// beginning of the name to complete.
fn split<'a>(cwd: &Path, home: Option<PathBuf>, partial: &'a str) -> (PathBuf, &'a str, &'a str) {
    let (dir, prefix) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    let base = match (dir.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(dir),
    };
    (base, dir, prefix)
}

/// Whether an entry named `name` completes `prefix`: hidden ones only when
/// it starts with a dot.
fn completes(name: &str, prefix: &str) -> bool {
    name.starts_with(prefix) && (!name.starts_with('.') || prefix.starts_with('.'))
}

/// Completes `partial` (relative to `cwd`, or absolute, or `~/`): the
/// entries of its directory whose names start with its last component;
/// hidden ones only when that starts with a dot.
pub fn complete_path(cwd: &Path, partial: &str) -> Completion {
    let (base, dir, prefix) = split(cwd, crate::support::paths::home_dir(), partial);
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Completion::default();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !completes(&name, prefix) {
                return None;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            Some(if is_dir { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
    complete_among(dir, prefix, names)
}

/// [`complete_path`] through `files`: one listing, then a stat of each
/// match when there are few enough to list (to mark folders), all at once,
/// so another host costs a round trip or two, not one per entry.
async fn complete_path_with(files: &dyn LsOperations, cwd: &Path, partial: &str) -> Completion {
    let (base, dir, prefix) = split(cwd, files.home_dir(), partial);
    let Ok(entries) = files.read_dir(&base).await else {
        return Completion::default();
    };
    let mut names: Vec<String> = entries
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .filter(|name| completes(name, prefix))
        .collect();
    names.sort();
    if names.len() <= MAX_CANDIDATES {
        let paths: Vec<PathBuf> = names.iter().map(|name| base.join(name)).collect();
        let kinds = futures::future::join_all(paths.iter().map(|path| files.stat(path))).await;
        for (name, kind) in names.iter_mut().zip(kinds) {
            if kind.is_ok_and(|kind| kind.is_directory) {
                name.push('/');
            }
        }
    }
    complete_among(dir, prefix, names)
}

/// The completion of `prefix` (after `dir`) among `names`, sorted, that all
/// start with it: one extends it (a directory ends in `/`, anything else
/// in a space), several extend it to what they share and are listed.
fn complete_among(dir: &str, prefix: &str, mut names: Vec<String>) -> Completion {
    match names.as_slice() {
        [] => Completion::default(),
        [one] => {
            let end = if one.ends_with('/') { "" } else { " " };
            Completion {
                replacement: Some(format!("{dir}{one}{end}")),
                candidates: Vec::new(),
            }
        }
        [first, rest @ ..] => {
            let common: String = rest.iter().fold(first.clone(), |common, name| {
                common
                    .chars()
                    .zip(name.chars())
                    .take_while(|(a, b)| a == b)
                    .map(|(a, _)| a)
                    .collect()
            });
            names.truncate(MAX_CANDIDATES);
            Completion {
                replacement: (common.len() > prefix.len()).then(|| format!("{dir}{common}")),
                candidates: names,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary folder holding `paths`: empty files, or folders where a
    /// path ends in `/`.
    fn folder_with(paths: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for path in paths {
            let full = dir.path().join(path);
            if path.ends_with('/') {
                std::fs::create_dir_all(full).unwrap();
            } else {
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::fs::write(full, "").unwrap();
            }
        }
        dir
    }

    #[test]
    fn completion_extends_one_match_and_lists_several() {
        let dir = folder_with(&["src/modes/", "src/main.rs", "src/mod_a.rs", ".hidden"]);
        assert_eq!(
            complete_path(dir.path(), "sr"),
            Completion {
                replacement: Some("src/".into()),
                candidates: vec![],
            }
        );
        assert_eq!(
            complete_path(dir.path(), "src/m"),
            Completion {
                replacement: None,
                candidates: vec!["main.rs".into(), "mod_a.rs".into(), "modes/".into()],
            }
        );
        assert_eq!(
            complete_path(dir.path(), "src/mo"),
            Completion {
                replacement: Some("src/mod".into()),
                candidates: vec!["mod_a.rs".into(), "modes/".into()],
            }
        );
        assert_eq!(
            complete_path(dir.path(), "src/main").replacement.as_deref(),
            Some("src/main.rs ")
        );
        assert_eq!(
            complete_path(dir.path(), "").replacement.as_deref(),
            Some("src/")
        );
    }

    /// A path holding a space is quoted, and a quoted one goes on being
    /// completed; the quote closes on a file.
    #[test]
    fn paths_with_spaces_are_quoted_and_completed_inside_quotes() {
        let dir = folder_with(&["my docs/read me.txt", "plain.txt"]);
        let replaced = |word: &str| complete_at_word(dir.path(), word).and_then(|(r, _)| r);
        assert_eq!(replaced("@my").as_deref(), Some("@\"my docs/"));
        assert_eq!(
            replaced("@\"my docs/re").as_deref(),
            Some("@\"my docs/read me.txt\" ")
        );
        assert_eq!(replaced("@pl").as_deref(), Some("@plain.txt "));
        assert_eq!(replaced("@\"pl").as_deref(), Some("@\"plain.txt\" "));
        assert_eq!(complete_at_word(dir.path(), "my"), None);
        // A name holding a quote is left unquoted: `@"say "hi".txt"` would
        // not say where the path ends.
        std::fs::write(dir.path().join("say \"hi\".txt"), "").unwrap();
        assert_eq!(replaced("@sa").as_deref(), Some("@say \"hi\".txt "));
    }
}
