//! Tab completion: file names under the cwd for an `@path` word (a
//! `/command` has the command menu, `command_menu.rs`). A path holding a
//! space is written `@"my notes.txt"`, so that the model (and the next Tab)
//! can tell it from a path followed by a word.

use std::path::Path;

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

/// Tab on the `@` word `word` (`@src/ma`, `@"my no`): the word to put in
/// its place, when it can be extended, and the names to list when several
/// match.
pub fn complete_at_word(cwd: &Path, word: &str) -> Option<(Option<String>, Vec<String>)> {
    let (partial, quoted) = match word.strip_prefix("@\"") {
        Some(partial) => (partial, true),
        None => (word.strip_prefix('@')?, false),
    };
    let completion = complete_path(cwd, partial);
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
    Some((replacement, completion.candidates))
}

/// Completes `partial` (relative to `cwd`, or absolute, or `~/`): the
/// entries of its directory whose names start with its last component;
/// hidden ones only when that starts with a dot.
pub fn complete_path(cwd: &Path, partial: &str) -> Completion {
    let (dir, prefix) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    let base = if let Some(rest) = dir.strip_prefix("~/") {
        std::env::var_os("HOME").map_or_else(|| cwd.join(dir), |h| Path::new(&h).join(rest))
    } else {
        cwd.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Completion::default();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            Some(if is_dir { format!("{name}/") } else { name })
        })
        .collect();
    names.sort();
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

    #[test]
    fn completion_extends_one_match_and_lists_several() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/modes")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/mod_a.rs"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
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
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("my docs")).unwrap();
        std::fs::write(dir.path().join("my docs/read me.txt"), "").unwrap();
        std::fs::write(dir.path().join("plain.txt"), "").unwrap();
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
