//! What bash makes of one word before the command sees it, as far as the
//! policy needs to know which files it names: brace expansion (`{.env,}` is
//! `.env` and the empty word) and pathname expansion (`.en?` is `.env` when
//! that file exists). A rule on `.env` must hold for every spelling bash
//! turns into `.env`.

use std::path::{Component, Path, PathBuf};

/// More words than a command line written by hand expands to: past this the
/// word is judged as unknown (asked about), not half-listed.
const MAX_WORDS: usize = 256;

/// The words bash's brace expansion makes of `text`, in its order
/// (`a{b,c}d` is `abd acd`, nested groups included); `text` alone when it
/// has no group (a group needs a comma at its top level: `{a}` and `{}` stay
/// as written). Sequences (`{1..3}`) are left as written. `None` past
/// [`MAX_WORDS`] words.
pub fn brace_expansions(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    expand_into(text, &mut words)?;
    Some(words)
}

fn expand_into(text: &str, words: &mut Vec<String>) -> Option<()> {
    let Some(group) = first_group(text) else {
        words.push(text.to_owned());
        return (words.len() <= MAX_WORDS).then_some(());
    };
    let (before, after) = (&text[..group.open], &text[group.close + 1..]);
    let mut start = group.open + 1;
    for end in group.commas.iter().copied().chain([group.close]) {
        expand_into(&format!("{before}{}{after}", &text[start..end]), words)?;
        start = end + 1;
    }
    Some(())
}

/// A `{...}` with commas at its own level: where it opens and closes, and
/// where those commas are (byte offsets into the text).
struct Group {
    open: usize,
    close: usize,
    commas: Vec<usize>,
}

/// The first brace group of `text` that expands.
fn first_group(text: &str) -> Option<Group> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(offset) = text[from..].find('{') {
        let open = from + offset;
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for (at, byte) in bytes.iter().enumerate().skip(open) {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(at);
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(at),
                _ => {}
            }
        }
        match close {
            Some(close) if !commas.is_empty() => {
                return Some(Group {
                    open,
                    close,
                    commas,
                });
            }
            // `{a}` stays as written; a group inside it may still expand.
            Some(_) => from = open + 1,
            None => return None,
        }
    }
    None
}

/// Whether `text` holds a character bash's pathname expansion reads.
pub fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// The existing paths the absolute `pattern` matches on this machine, as
/// bash's pathname expansion finds them: component by component, a `*`,
/// `?` or `[...]` never crossing a `/`, a name starting with `.` matched
/// only by a component starting with `.`. Empty when nothing matches (bash
/// then passes the word as written); at most [`MAX_WORDS`] paths.
pub fn glob_matches(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::new()];
    let mut globbed = false;
    for part in pattern.components() {
        let text = part.as_os_str().to_string_lossy();
        let next: Vec<PathBuf> = match part {
            Component::Normal(_) if has_glob(&text) => {
                globbed = true;
                let Ok(glob) = globset::GlobBuilder::new(&text)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                else {
                    return Vec::new();
                };
                let matcher = glob.compile_matcher();
                let dotted = text.starts_with('.');
                found
                    .iter()
                    .flat_map(|dir| {
                        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .map(|entry| entry.file_name())
                            .filter(|name| {
                                let name = Path::new(name);
                                (dotted || !name.to_string_lossy().starts_with('.'))
                                    && matcher.is_match(name)
                            })
                            .map(|name| dir.join(name))
                            .collect();
                        names.sort();
                        names
                    })
                    .take(MAX_WORDS)
                    .collect()
            }
            // After a pattern, only names that exist match (`*/key`).
            _ if globbed => found
                .iter()
                .map(|dir| dir.join(part))
                .filter(|path| path.symlink_metadata().is_ok())
                .collect(),
            _ => found.iter().map(|dir| dir.join(part)).collect(),
        };
        found = next;
        if found.is_empty() {
            break;
        }
    }
    if globbed { found } else { Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn braces(text: &str) -> Vec<String> {
        brace_expansions(text).unwrap()
    }

    #[test]
    fn brace_groups_expand_as_bash_expands_them() {
        assert_eq!(braces("{.env,}"), [".env", ""]);
        assert_eq!(braces("a{b,c}d"), ["abd", "acd"]);
        assert_eq!(braces("{x,/}"), ["x", "/"]);
        assert_eq!(braces("~{,}"), ["~", "~"]);
        assert_eq!(braces("{a,b{c,d}}e"), ["ae", "bce", "bde"]);
        assert_eq!(braces("{a}{b,c}"), ["{a}b", "{a}c"]);
        assert_eq!(braces("{1..3}"), ["{1..3}"]);
        assert_eq!(braces("{a,b"), ["{a,b"]);
    }

    #[test]
    fn too_many_brace_words_are_not_listed() {
        assert!(brace_expansions(&"{a,b}".repeat(9)).is_none());
        assert_eq!(brace_expansions(&"{a,b}".repeat(8)).unwrap().len(), 256);
    }

    #[test]
    fn patterns_match_existing_names_as_bash_matches_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for name in [".env", "env", "secret/key", "src/a.rs", ".ssh/id_rsa"] {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let matches = |pattern: &str| -> Vec<String> {
            glob_matches(&root.join(pattern))
                .iter()
                .map(|path| path.strip_prefix(&root).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(matches(".en?"), [".env"]);
        assert_eq!(matches("?nv"), ["env"]);
        assert_eq!(matches("sec*/key"), ["secret/key"]);
        assert_eq!(matches(".ss?/id_rsa"), [".ssh/id_rsa"]);
        assert_eq!(matches(".[e]nv"), [".env"]);
        assert_eq!(matches("*/missing"), Vec::<String>::new());
        assert_eq!(matches("src/a.rs"), Vec::<String>::new());
    }
}
