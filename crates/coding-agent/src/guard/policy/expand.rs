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
/// (`a{b,c}d` is `abd acd`, nested groups included, `{1..3}` and `{a..c}`
/// sequences too); `text` alone when it has no group (a group needs a
/// comma at its top level or a sequence: `{a}` and `{}` stay as written).
/// `None` past [`MAX_WORDS`] words, or past [`MAX_STEPS`] groups
/// expanded. A loop, not a recursion: `{1..1}` written 20000 times
/// overflowed the stack.
pub fn brace_expansions(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut pending = vec![text.to_owned()];
    let mut steps = 0usize;
    while let Some(text) = pending.pop() {
        steps += 1;
        if steps > MAX_STEPS {
            return None;
        }
        let Some(group) = first_group(&text) else {
            words.push(text);
            continue;
        };
        // Each alternative makes one word at least.
        if words.len() + pending.len() + group.alternatives.len() > MAX_WORDS {
            return None;
        }
        let (before, after) = (&text[..group.open], &text[group.close + 1..]);
        for alternative in group.alternatives.iter().rev() {
            pending.push(format!("{before}{alternative}{after}"));
        }
    }
    (words.len() <= MAX_WORDS).then_some(words)
}

/// The most groups [`brace_expansions`] expands for one word: a written
/// line with [`MAX_WORDS`] words expands fewer (each group of two or more
/// alternatives adds words).
const MAX_STEPS: usize = 4 * MAX_WORDS;

/// A `{...}` that expands: where it opens and closes (byte offsets into
/// the text), and what takes its place in turn.
struct Group {
    open: usize,
    close: usize,
    alternatives: Vec<String>,
}

/// The first brace group of `text` that expands, its braces paired in one
/// pass (each `}` closes the last `{` still open; an unclosed `{` is a
/// character).
fn first_group(text: &str) -> Option<Group> {
    let mut open: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut closed: Vec<(usize, usize, Vec<usize>)> = Vec::new();
    for (at, byte) in text.bytes().enumerate() {
        match byte {
            b'{' => open.push((at, Vec::new())),
            b'}' => {
                if let Some((start, commas)) = open.pop() {
                    closed.push((start, at, commas));
                }
            }
            b',' => {
                if let Some((_, commas)) = open.last_mut() {
                    commas.push(at);
                }
            }
            _ => {}
        }
    }
    closed.sort_by_key(|(start, ..)| *start);
    closed.into_iter().find_map(|(open, close, commas)| {
        let body = &text[open + 1..close];
        // `{a}` stays as written; a group inside it may still expand. A
        // sequence's body is two or three short words, no group.
        let alternatives = if commas.is_empty() {
            (body.len() <= 80 && !body.contains('{'))
                .then(|| sequence(body))
                .flatten()?
        } else {
            let mut start = open + 1;
            let parts = commas.iter().copied().chain([close]).map(|end| {
                let part = text[start..end].to_owned();
                start = end + 1;
                part
            });
            parts.collect()
        };
        Some(Group {
            open,
            close,
            alternatives,
        })
    })
}

/// The words of a sequence group's body: `1..3`, `03..1`, `a..e..2`; at
/// most one more than [`MAX_WORDS`] (the expansion then fails whole).
/// `None` when the body is not a sequence.
fn sequence(body: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = body.split("..").collect();
    let (first, last, step) = match parts.as_slice() {
        [first, last] => (*first, *last, None),
        [first, last, step] => (*first, *last, Some(step.parse::<i64>().ok()?)),
        _ => return None,
    };
    let step = step.map_or(1, i64::unsigned_abs).max(1);
    let numbers = |first: i64, last: i64| -> Vec<i64> {
        let mut values = Vec::new();
        let mut at = first;
        while values.len() <= MAX_WORDS {
            values.push(at);
            if at == last {
                break;
            }
            let next = if first <= last {
                at.saturating_add_unsigned(step)
            } else {
                at.saturating_sub_unsigned(step)
            };
            if (first <= last && next > last) || (first > last && next < last) {
                break;
            }
            at = next;
        }
        values
    };
    if let (Ok(from), Ok(to)) = (first.parse::<i64>(), last.parse::<i64>()) {
        // `{01..10}`: as wide as the wider end, zero-padded.
        let padded = [first, last]
            .iter()
            .any(|end| end.trim_start_matches('-').starts_with('0') && end.len() > 1);
        let width = first.len().max(last.len());
        return Some(
            numbers(from, to)
                .into_iter()
                .map(|n| match padded {
                    true => format!("{n:0width$}"),
                    false => n.to_string(),
                })
                .collect(),
        );
    }
    let (mut a, mut b) = (first.chars(), last.chars());
    match (a.next(), a.next(), b.next(), b.next()) {
        (Some(from), None, Some(to), None) if from.is_ascii() && to.is_ascii() => Some(
            numbers(i64::from(from as u8), i64::from(to as u8))
                .into_iter()
                .filter_map(|n| u8::try_from(n).ok())
                .map(|n| char::from(n).to_string())
                .collect(),
        ),
        _ => None,
    }
}

/// Whether `text` holds a character bash's pathname expansion reads.
pub fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// `pattern` as globset reads it: bash's collating symbols and equivalence
/// classes inside a bracket (`[[.v.]]`, `[[=e=]]`) stand for their one
/// character, which globset does not know.
pub fn globset_pattern(pattern: &str) -> String {
    let mut out = pattern.to_owned();
    for (open, close) in [("[.", ".]"), ("[=", "=]")] {
        while let Some(at) = out.find(open) {
            let inner = at + open.len();
            let Some(end) = out[inner..].find(close).map(|end| inner + end) else {
                break;
            };
            let symbol = out[inner..end].to_owned();
            out.replace_range(at..end + close.len(), &symbol);
        }
    }
    out
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
                let Ok(glob) = globset::GlobBuilder::new(&globset_pattern(&text))
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
        assert_eq!(braces("{a,b"), ["{a,b"]);
        assert_eq!(braces("{/../.{env,}"), ["{/../.env", "{/../."]);
    }

    #[test]
    fn sequences_expand_as_bash_expands_them() {
        assert_eq!(braces("{1..3}"), ["1", "2", "3"]);
        assert_eq!(braces(".e{n..o}v"), [".env", ".eov"]);
        assert_eq!(braces("sr{c..c}"), ["src"]);
        assert_eq!(braces("{3..1}"), ["3", "2", "1"]);
        assert_eq!(braces("{01..03}"), ["01", "02", "03"]);
        assert_eq!(braces("{a..e..2}"), ["a", "c", "e"]);
        assert_eq!(braces("{a..}"), ["{a..}"]);
        assert!(brace_expansions("{1..100000}").is_none());
    }

    #[test]
    fn too_many_brace_words_are_not_listed() {
        assert!(brace_expansions(&"{a,b}".repeat(9)).is_none());
        assert_eq!(brace_expansions(&"{a,b}".repeat(8)).unwrap().len(), 256);
        assert!(brace_expansions(&format!("{{{}}}", "a,".repeat(100_000))).is_none());
    }

    #[test]
    fn a_long_chain_of_groups_is_not_expanded_by_recursion() {
        assert!(brace_expansions(&"{1..1}".repeat(20_000)).is_none());
        assert_eq!(braces(&"{1..1}".repeat(100)), ["1".repeat(100)]);
        assert_eq!(braces(&"{".repeat(20_000)), ["{".repeat(20_000)]);
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
        assert_eq!(matches(".en[[.v.]]"), [".env"]);
        assert_eq!(matches(".[[=e=]]nv"), [".env"]);
        assert_eq!(matches("*/missing"), Vec::<String>::new());
        assert_eq!(matches("src/a.rs"), Vec::<String>::new());
    }
}
