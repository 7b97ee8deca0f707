//! Tab completion: file names under the cwd for an `@path` word (a
//! `/command` has the command menu, `command_menu.rs`).

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
}
