//! Turning the path a model wrote into the path a tool opens.
//!
//! Models copy paths from many places: they prefix them with `@` (as users type
//! them), use `~`, and paste names with odd spaces. Screenshots taken on macOS
//! carry U+202F before AM/PM and curly apostrophes that a model types as ASCII;
//! `read` tries those spellings before giving up.

use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// The user's home directory (`$HOME`), if set.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The home directory of the machine a tool's files are on: what `~` in a
/// path argument means. A supertrait of every file tool's Operations, so an
/// implementation says it once for all the tools it serves: this machine's
/// `$HOME` by default (`impl HomeDir for LocalLsOperations {}`), the remote
/// user's on a remote.
pub trait HomeDir {
    /// The home directory, when there is one.
    fn home_dir(&self) -> Option<PathBuf> {
        home_dir()
    }
}

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Strips one leading `@`, turns unicode spaces into plain spaces and expands
/// `~` and `~/...` (but not `~user`) to `home`: the home directory of the
/// machine the tool acts on (the remote user's with `--remote`), from the
/// tool's Operations.
pub fn expand_path(path: &str, home: Option<&Path>) -> String {
    let path = path.strip_prefix('@').unwrap_or(path);
    let path: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    match home {
        Some(home) if path == "~" => home.to_string_lossy().into_owned(),
        Some(home) if path.starts_with("~/") => {
            format!("{}{}", home.to_string_lossy(), &path[1..])
        }
        _ => path,
    }
}

/// Resolves `path` against `cwd`. Absolute paths come back as given (not
/// normalised); relative ones are joined to `cwd` with `.` and `..` resolved
/// lexically, as Node's `path.resolve` does. `~` is `home` ([`expand_path`]).
pub fn resolve_to_cwd(path: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = expand_path(path, home);
    let expanded = Path::new(&expanded);
    if expanded.is_absolute() {
        return expanded.to_path_buf();
    }
    normalize_lexically(&cwd.join(expanded))
}

/// The directory an optional `path` argument names (grep, find, ls): absent or
/// empty means the working directory, as in Pi (`path || "."`).
pub fn resolve_dir_arg(path: Option<&str>, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let path = path.filter(|p| !p.is_empty()).unwrap_or(".");
    resolve_to_cwd(path, cwd, home)
}

/// Removes `.` and resolves `..` without touching the file system.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Links followed at most while resolving a path; a longer chain is a loop
/// (the write itself then fails with ELOOP).
const MAX_LINK_HOPS: usize = 40;

/// Where `path` leads on this machine (what a read of it reads, a write to
/// it writes): `.` and `..` applied, its longest existing prefix resolved
/// through symlinks, and a symlink whose target does not exist yet followed
/// to that target (writing through it creates the target: a link made in
/// the workspace to a new file outside it must not let a write out). The
/// rest does not exist yet, so it holds no links. The sandbox and the
/// permission policy judge a path by this.
pub fn where_links_lead(path: &Path) -> PathBuf {
    let mut pending = normalize_lexically(path);
    for _ in 0..MAX_LINK_HOPS {
        let mut existing = pending.as_path();
        let mut rest = Vec::new();
        let followed = loop {
            if let Ok(real) = existing.canonicalize() {
                return rest.iter().rev().fold(real, |acc, part| acc.join(part));
            }
            let dangling = existing
                .symlink_metadata()
                .is_ok_and(|meta| meta.file_type().is_symlink());
            if dangling && let Ok(target) = std::fs::read_link(existing) {
                let base = existing.parent().unwrap_or(Path::new("/")).join(target);
                break rest.iter().rev().fold(base, |acc, part| acc.join(part));
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return pending,
            }
        };
        pending = normalize_lexically(&followed);
    }
    pending
}

/// Like [`resolve_to_cwd`], but when nothing exists at the path, tries the
/// spellings macOS uses in screenshot names: U+202F before AM/PM, NFD, a curly
/// apostrophe, and NFD with a curly apostrophe. Returns the first that exists,
/// or the plain resolved path so the error names what the model asked for.
pub fn resolve_read_path(
    path: &str,
    cwd: &Path,
    home: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> PathBuf {
    let mut candidates = read_path_candidates(path, cwd, home);
    let found = candidates.iter().position(|candidate| exists(candidate));
    candidates.swap_remove(found.unwrap_or(0))
}

/// The spellings [`resolve_read_path`] tries, in its order and without
/// repeats; the first is the plain resolved path. For callers whose
/// existence check is asynchronous (through an Operations trait).
pub fn read_path_candidates(path: &str, cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let resolved = resolve_to_cwd(path, cwd, home);
    let text = resolved.to_string_lossy().into_owned();
    let nfd: String = text.nfd().collect();
    let variants = [
        am_pm_variant(&text),
        nfd.clone(),
        text.replace('\'', "\u{2019}"),
        nfd.replace('\'', "\u{2019}"),
    ];
    let mut candidates = vec![resolved];
    for variant in variants.into_iter().map(PathBuf::from) {
        if !candidates.contains(&variant) {
            candidates.push(variant);
        }
    }
    candidates
}

/// Replaces ` AM.`/` PM.` (any case) with U+202F before the marker.
fn am_pm_variant(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(' ') {
        let after = &rest[pos + 1..];
        let is_marker = after.len() >= 3
            && after.as_bytes()[2] == b'.'
            && matches!(&after[..2].to_ascii_uppercase()[..], "AM" | "PM");
        out.push_str(&rest[..pos]);
        out.push(if is_marker { '\u{202F}' } else { ' ' });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_expands_to_the_home_given() {
        let home = Some(Path::new("/home/remote-user"));
        assert_eq!(expand_path("~", home), "/home/remote-user");
        assert_eq!(
            expand_path("~/Documents/file.txt", home),
            "/home/remote-user/Documents/file.txt"
        );
        assert_eq!(expand_path("~other", home), "~other");
        assert_eq!(expand_path("~/x", None), "~/x");
        assert_eq!(
            resolve_to_cwd("~/x/../y", Path::new("/c"), home),
            Path::new("/home/remote-user/x/../y")
        );
    }

    #[test]
    fn one_leading_at_sign_is_stripped() {
        assert_eq!(expand_path("@@x", None), "@x");
        assert_eq!(expand_path("@src/main.rs", None), "src/main.rs");
    }

    #[test]
    fn unicode_spaces_become_plain_spaces() {
        assert_eq!(expand_path("file\u{00A0}name.txt", None), "file name.txt");
    }

    #[test]
    fn an_absent_or_empty_directory_argument_is_the_cwd() {
        let cwd = Path::new("/some/cwd");
        assert_eq!(resolve_dir_arg(None, cwd, None), Path::new("/some/cwd"));
        assert_eq!(resolve_dir_arg(Some(""), cwd, None), Path::new("/some/cwd"));
        assert_eq!(
            resolve_dir_arg(Some("src"), cwd, None),
            Path::new("/some/cwd/src")
        );
    }

    #[test]
    fn relative_paths_resolve_against_cwd_and_absolute_ones_are_kept_as_given() {
        for (path, cwd, resolved) in [
            (
                "relative/file.txt",
                "/some/cwd",
                "/some/cwd/relative/file.txt",
            ),
            ("../x/./y", "/some/cwd", "/some/x/y"),
            (
                "/absolute/path/file.txt",
                "/some/cwd",
                "/absolute/path/file.txt",
            ),
            ("/a/../b", "/c", "/a/../b"),
        ] {
            assert_eq!(
                resolve_to_cwd(path, Path::new(cwd), None),
                Path::new(resolved),
                "{path}"
            );
        }
    }

    fn read_path_finds(existing: &str, asked: &str) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(existing), "x").unwrap();
        let found = resolve_read_path(asked, dir.path(), None, Path::exists);
        assert_eq!(found, dir.path().join(existing));
    }

    #[test]
    fn read_path_uses_the_file_as_named() {
        read_path_finds("test-file.txt", "test-file.txt");
    }

    #[test]
    fn read_path_finds_the_nfd_spelling() {
        read_path_finds("file\u{0065}\u{0301}.txt", "file\u{00e9}.txt");
    }

    #[test]
    fn read_path_finds_the_curly_apostrophe() {
        read_path_finds("Capture d\u{2019}cran.txt", "Capture d'cran.txt");
        read_path_finds(
            "Capture d\u{2019}\u{00e9}cran.txt",
            "Capture d'\u{00e9}cran.txt",
        );
    }

    #[test]
    fn read_path_finds_the_narrow_space_before_am_pm() {
        read_path_finds(
            "Screenshot 2024-01-01 at 10.00.00\u{202F}AM.png",
            "Screenshot 2024-01-01 at 10.00.00 AM.png",
        );
        read_path_finds(
            "Screenshot 2024-01-01 at 10.00.00\u{202F}pm.png",
            "Screenshot 2024-01-01 at 10.00.00 pm.png",
        );
    }

    #[test]
    fn read_path_candidates_start_with_the_plain_path_and_never_repeat() {
        let cwd = Path::new("/d");
        assert_eq!(
            read_path_candidates("plain.txt", cwd, None),
            [Path::new("/d/plain.txt")]
        );
        assert_eq!(
            read_path_candidates("it's 10.00 AM.png", cwd, None),
            [
                PathBuf::from("/d/it's 10.00 AM.png"),
                PathBuf::from("/d/it's 10.00\u{202F}AM.png"),
                PathBuf::from("/d/it\u{2019}s 10.00 AM.png"),
            ]
        );
    }

    #[test]
    fn missing_read_path_comes_back_resolved() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            resolve_read_path("nope.txt", dir.path(), None, Path::exists),
            dir.path().join("nope.txt")
        );
    }
}
