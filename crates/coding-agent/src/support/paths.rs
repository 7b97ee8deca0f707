//! Turning the path a model wrote into the path a tool opens.
//!
//! Models copy paths from many places: they prefix them with `@` (as users type
//! them), use `~`, and paste names with odd spaces. Screenshots taken on macOS
//! carry U+202F before AM/PM and curly apostrophes that a model types as ASCII;
//! `read` tries those spellings before giving up.

use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// The user's home directory: `$HOME`, else (unset, empty or relative, as
/// under cron, systemd units and some containers) the user's entry in the
/// password database, as Node's `os.homedir()` gives Pi: without it, `~/x`
/// would be a folder named `~` in the working directory. `None` when
/// neither names one.
pub fn home_dir() -> Option<PathBuf> {
    home_from_env(std::env::var_os("HOME")).or_else(home_from_passwd)
}

/// `$HOME` (as `var` holds it) when it names a home: an absolute path. An
/// empty or relative one is a folder of whatever the working directory is:
/// with `HOME=` the agent directory became the repository's own
/// `.coding-agent`, whose settings then applied as the user's, untrusted.
fn home_from_env(var: Option<std::ffi::OsString>) -> Option<PathBuf> {
    var.map(PathBuf::from).filter(|home| home.is_absolute())
}

#[cfg(unix)]
fn home_from_passwd() -> Option<PathBuf> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::current()).ok()??;
    user.dir.is_absolute().then_some(user.dir)
}

#[cfg(not(unix))]
fn home_from_passwd() -> Option<PathBuf> {
    None
}

/// The home directory of the machine a tool's files are on: what `~` in a
/// path argument means. A supertrait of every file tool's Operations, so an
/// implementation says it once for all the tools it serves: this machine's
/// `$HOME` by default (`impl HomeDir for LocalLsOperations {}`), the remote
/// user's on a remote. Operations whose files are not this machine's (in
/// memory, in a container) must name their own: the default sent `~/a.txt`
/// to an in-memory store as `/root/a.txt`.
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
    expand_tilde(&path, home)
}

/// `~` and `~/...` (but not `~user`) under `home`.
fn expand_tilde(path: &str, home: Option<&Path>) -> String {
    match home {
        Some(home) if path == "~" => home.to_string_lossy().into_owned(),
        Some(home) if path.starts_with("~/") => {
            format!("{}{}", home.to_string_lossy(), &path[1..])
        }
        _ => path.to_owned(),
    }
}

/// `~` and `~/...` (but not `~user`) of a path from the settings or the
/// environment, under `home`; any other path as given. Unlike
/// [`expand_path`] nothing else of the path changes: it is the user's own.
pub fn expand_home(path: &Path, home: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) if rest.as_os_str().is_empty() => home.to_path_buf(),
        Ok(rest) => home.join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// [`expand_home`] with this machine's user's home: a path this user
/// configured (an ssh config file, an MCP server's `cwd`), as given when the
/// home is unknown.
pub fn expand_own_home(path: &Path) -> PathBuf {
    match home_dir() {
        Some(home) => expand_home(path, &home),
        None => path.to_path_buf(),
    }
}

/// Resolves `path` against `cwd`. Absolute paths come back as given (not
/// normalised); relative ones are joined to `cwd` with `.` and `..` resolved
/// lexically, as Node's `path.resolve` does. `~` is `home` ([`expand_path`]).
pub fn resolve_to_cwd(path: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    resolve_expanded(&expand_path(path, home), cwd)
}

/// An expanded path against `cwd`, as [`resolve_to_cwd`] resolves it.
fn resolve_expanded(expanded: &str, cwd: &Path) -> PathBuf {
    let expanded = Path::new(expanded);
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
///
/// What Operations over files without links (a map in memory) key and
/// check their paths by: an absolute path reaches them as the model wrote
/// it, and `/mem/proj/../../etc/passwd` passes `starts_with("/mem/proj")`
/// until normalised. Where links exist, `..` after a link goes up from
/// where it leads, which only [`where_links_lead`] tells.
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
/// it writes), resolved as the kernel does: component by component from the
/// root, each symlink followed where it stands, so `..` after a link goes up
/// from where the link leads (`ws/link/../x` with `link -> /srv/sub` is
/// `/srv/x`, not `ws/x`: `..` must not be applied first). A symlink whose
/// target does not exist yet is followed to that target (writing through it
/// creates the target: a link made in the workspace to a new file outside
/// it must not let a write out). From the first component that does not
/// exist on, the rest holds no links and is taken as written (`..` there
/// fails in the kernel; lexically it stays put). The sandbox and the
/// permission policy judge a path by this.
///
/// `None` when it cannot be told: a part that cannot be examined for a
/// reason other than not existing (a path past `PATH_MAX` built through
/// links, a directory that may not be searched), which the kernel may well
/// get through; or, for `another` process (the policy judging what bash
/// will open), a link into `/proc` or `/dev`, whose `self` and `fd` are the
/// process that opens them, not this one. Either way: refuse, or ask.
pub fn where_links_lead(path: &Path, whose: Whose) -> Option<PathBuf> {
    follow_links(path, whose).ok()
}

/// [`where_links_lead`], with why it cannot be told: the file system's
/// error (`ENOTDIR` for `file/x`, `ENAMETOOLONG`, `EACCES` on a folder that
/// may not be searched), which a write there would mostly meet as well;
/// `None` for a link into `/proc` or `/dev` that `another` process opens.
pub fn follow_links(path: &Path, whose: Whose) -> Result<PathBuf, Option<std::io::Error>> {
    use std::collections::VecDeque;
    use std::ffi::OsString;

    if !path.is_absolute() {
        return Ok(normalize_lexically(path));
    }
    // The components still to walk, owned: a link's target joins them.
    let parts = |path: &Path| -> Vec<OsString> {
        path.components()
            .map(|part| part.as_os_str().to_os_string())
            .collect()
    };
    let mut todo: VecDeque<OsString> = parts(path).into();
    let mut resolved = PathBuf::from("/");
    let mut exists = true;
    let mut hops = 0;
    while let Some(part) = todo.pop_front() {
        if part == "/" {
            resolved = PathBuf::from("/");
        } else if part == ".." {
            resolved.pop();
        } else if part != "." {
            let next = resolved.join(&part);
            let meta = if exists {
                match next.symlink_metadata() {
                    Ok(meta) => Some(meta),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
                    Err(error) => return Err(Some(error)),
                }
            } else {
                None
            };
            exists = meta.is_some();
            let is_link = meta.is_some_and(|meta| meta.file_type().is_symlink());
            if is_link
                && whose == Whose::Another
                && (next.starts_with("/proc") || next.starts_with("/dev"))
            {
                return Err(None);
            }
            let target = if is_link {
                Some(std::fs::read_link(&next).map_err(Some)?)
            } else {
                None
            };
            match target {
                Some(target) if hops < MAX_LINK_HOPS => {
                    hops += 1;
                    for part in parts(&target).into_iter().rev() {
                        todo.push_front(part);
                    }
                }
                // Not a link, or one more than the kernel follows (ELOOP):
                // judged as written.
                _ => resolved = next,
            }
        }
    }
    Ok(resolved)
}

/// Which process will open a path [`where_links_lead`] judges: `/proc/self`
/// and `/dev/fd` mean that process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// This one (the write and edit tools).
    This,
    /// Another (a bash command).
    Another,
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
    // Last, the name as written, unicode spaces kept: a file whose name
    // really holds one (a no-break space) is found too, which Pi's read
    // cannot open.
    let as_written = expand_tilde(path.strip_prefix('@').unwrap_or(path), home);
    let mut candidates = vec![resolved];
    for variant in variants
        .into_iter()
        .map(PathBuf::from)
        .chain([resolve_expanded(&as_written, cwd)])
    {
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

    /// `HOME=` and `HOME=.` name the working directory, not a home.
    #[test]
    fn only_an_absolute_home_variable_names_the_home() {
        let home = |var: &str| home_from_env(Some(var.into()));
        assert_eq!(home("/home/me"), Some(PathBuf::from("/home/me")));
        assert_eq!(home(""), None);
        assert_eq!(home("."), None);
        assert_eq!(home("me"), None);
        assert_eq!(home_from_env(None), None);
    }

    #[test]
    fn a_configured_path_expands_its_tilde_only() {
        let home = Path::new("/home/me");
        let expand = |path: &str| expand_home(Path::new(path), home);
        assert_eq!(expand("~"), Path::new("/home/me"));
        assert_eq!(expand("~/.cache/x"), Path::new("/home/me/.cache/x"));
        assert_eq!(expand("~other/x"), Path::new("~other/x"));
        assert_eq!(expand("/srv/@x"), Path::new("/srv/@x"));
        assert_eq!(expand("rel/~"), Path::new("rel/~"));
    }

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
    fn links_are_followed_where_they_stand_and_dot_dot_after_one_goes_up_from_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws/src")).unwrap();
        std::fs::create_dir_all(root.join("far/sub")).unwrap();
        std::os::unix::fs::symlink(root.join("far/sub"), root.join("ws/out")).unwrap();
        std::os::unix::fs::symlink("src", root.join("ws/inner")).unwrap();
        std::os::unix::fs::symlink("../far/new.txt", root.join("ws/dangling")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("ws/loop")).unwrap();
        let leads = |path: &str| where_links_lead(&root.join(path), Whose::This).unwrap();
        assert_eq!(leads("ws/out/../pwn.txt"), root.join("far/pwn.txt"));
        assert_eq!(leads("ws/out/./x/../y"), root.join("far/sub/y"));
        assert_eq!(leads("ws/inner/../a.rs"), root.join("ws/a.rs"));
        assert_eq!(leads("ws/dangling"), root.join("far/new.txt"));
        // Below what does not exist, `..` is taken as written.
        assert_eq!(leads("ws/new/../b.rs"), root.join("ws/b.rs"));
        // A loop is given up on, as the kernel does (the write fails).
        assert_eq!(leads("ws/loop"), root.join("ws/loop"));
        assert_eq!(
            where_links_lead(Path::new("a/../b"), Whose::This),
            Some(PathBuf::from("b"))
        );
    }

    /// What cannot be examined is not taken as absent: a path built past
    /// PATH_MAX through links (the kernel follows each link from where it
    /// stands, so it never builds that string), or one through a link into
    /// `/proc` judged for another process, whose `self` is not ours.
    #[test]
    fn what_cannot_be_examined_cannot_be_told() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        // Two links, each to 15 levels of 200-byte names, made step by step
        // (no single path to them fits PATH_MAX).
        let levels = |c: &str| vec![c.repeat(200); 15].join("/");
        let script = format!(
            "mkdir -p {a} && ln -s {a} one && cd {a} && mkdir -p {b} && ln -s {b} two",
            a = levels("a"),
            b = levels("b")
        );
        let made = std::process::Command::new("sh")
            .args(["-c", &script])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(made.success());
        let long = root.join("one/two/x");
        assert_eq!(where_links_lead(&long, Whose::This), None);
        std::os::unix::fs::symlink("/proc/self/cwd", root.join("here")).unwrap();
        assert_eq!(where_links_lead(&root.join("here/x"), Whose::Another), None);
        assert!(where_links_lead(&root.join("here/x"), Whose::This).is_some());
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

    /// A name that really holds a no-break space is read under it, after
    /// the spellings Pi tries (which map it to a plain space).
    #[test]
    fn a_name_holding_a_unicode_space_is_read_as_written_last() {
        let cwd = Path::new("/d");
        assert_eq!(
            read_path_candidates("@my\u{00A0}file.txt", cwd, None),
            [
                PathBuf::from("/d/my file.txt"),
                PathBuf::from("/d/my\u{00A0}file.txt")
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("my\u{00A0}file.txt");
        std::fs::write(&real, "x").unwrap();
        assert_eq!(
            resolve_read_path("my\u{00A0}file.txt", dir.path(), None, Path::exists),
            real
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
