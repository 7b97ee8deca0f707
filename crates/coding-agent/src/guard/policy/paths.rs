//! Paths as the policy sees them: resolved against the workspace, compared
//! lexically (a path about to be written or deleted may not exist yet), and
//! sorted into the places that matter: the protected roots, the workspace,
//! block devices. The file tools' paths are judged where their links lead
//! too ([`Places::seen_as`]: read, never written).

use std::path::{Path, PathBuf};

/// What `~name` names ([`Places::protected_word`]).
pub const USERS_HOME: &str = "a user's home directory (`~name`)";

/// Where the policy is asked from: the paths every decision is relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The workspace roots: writes inside them are ordinary, and they must
    /// not be deleted whole. The first is the working directory.
    pub roots: Vec<PathBuf>,
    /// The user's home directory (`~`, `$HOME`).
    pub home: Option<PathBuf>,
    /// Where a command line's `cd` has moved the commands after it; `None`:
    /// the first root.
    moved_to: Option<PathBuf>,
    /// Where the home folder's links lead, on this machine, when that is
    /// elsewhere: with `HOME` a link, `.bashrc` written from the folder it
    /// leads to was "inside the workspace" (the home folder is no
    /// workspace), and deleting that folder was no deletion of home.
    resolved_home: Option<PathBuf>,
    /// The paths judged are on this machine, so where their links lead can
    /// be looked up ([`Places::seen_as`]).
    local: bool,
}

impl Places {
    /// Places for a session in `cwd`, with home from `$HOME`. A `cwd` named
    /// through a link (`--cwd ~/proj` with `proj` a link) has its real path
    /// as a root too: paths are judged where their links lead, and a file
    /// in the workspace must not be "outside" it for that.
    pub fn for_cwd(cwd: &Path) -> Self {
        Self::on_this_machine(cwd, crate::support::paths::home_dir().as_deref())
    }

    /// [`Places::for_cwd`] with `home` given (tests, embedders whose user's
    /// home is not `$HOME`).
    pub fn on_this_machine(cwd: &Path, home: Option<&Path>) -> Self {
        let mut places = Self::at(cwd, home);
        if let Ok(real) = cwd.canonicalize()
            && !places.roots.contains(&real)
        {
            places.roots.push(real);
        }
        let resolved_home = places
            .home
            .as_deref()
            .and_then(|home| home.canonicalize().ok())
            .filter(|real| places.home.as_ref() != Some(real));
        Self {
            local: true,
            resolved_home,
            ..places
        }
    }

    /// Places for tools acting in `cwd` on a machine whose home is `home`:
    /// with `--remote`, the remote directory and the remote user's home,
    /// since the paths judged are paths on that host.
    pub fn at(cwd: &Path, home: Option<&Path>) -> Self {
        Self {
            roots: vec![normalize(cwd)],
            home: home.map(normalize),
            resolved_home: None,
            moved_to: None,
            local: false,
        }
    }

    /// `path` (absolute, as the tool or the kernel will open it: not
    /// normalised) normalised and, on this machine, where its links lead
    /// when that is elsewhere: a rule on `secret/**` must hold for a link to
    /// `secret` too, and a write through a link in the workspace lands where
    /// the link points, `link/../x` included (the kernel applies that `..`
    /// after following the link). With `--remote` the paths are the remote
    /// host's, judged as written; so are `/proc` and `/dev` (their `self` and
    /// `fd` are the process that opens them: `> /dev/stderr` is bash's).
    /// `Err` with the path as written when where it leads cannot be told
    /// ([`where_links_lead`](crate::support::paths::where_links_lead)).
    ///
    /// A process's `root` and `cwd` under `/proc` are links to the file
    /// system's root and the working directory, for whichever process opens
    /// them: `/proc/self/root/ws/.env` is `ws/.env` and `/proc/self/cwd/x`
    /// is `x` in the working directory (bash's, or the agent's for the file
    /// tools, so both), judged as well as the path written. Another
    /// process's `cwd` cannot be told (`Err`).
    pub fn seen_as(&self, path: &Path) -> Result<Vec<PathBuf>, PathBuf> {
        use crate::support::paths::{Whose, where_links_lead};
        let written = normalize(path);
        if climbs_out_of_a_link_in_proc(path) {
            return Err(path.to_path_buf());
        }
        if let Some(leads) = self.through_proc(&written) {
            let mut seen = vec![written.clone()];
            for path in leads.ok_or_else(|| written.clone())? {
                seen.extend(self.seen_as(&path)?);
            }
            return Ok(seen);
        }
        let as_written = written.starts_with("/proc") || written.starts_with("/dev");
        if !self.local || as_written {
            return Ok(vec![written]);
        }
        let real = where_links_lead(path, Whose::Another).ok_or_else(|| written.clone())?;
        Ok(if real == written {
            vec![written]
        } else {
            vec![written, real]
        })
    }

    /// Where a path through a process's `root` or `cwd` link under `/proc`
    /// (`/proc/self/root/...`, `/proc/thread-self/cwd/...`,
    /// `/proc/1/task/1/root/...`) leads: `None` for any other path, `Some(None)`
    /// when it cannot be told (another process's `cwd`, a folder entered
    /// through a descriptor: `/dev/fd/3/x`).
    fn through_proc(&self, written: &Path) -> Option<Option<Vec<PathBuf>>> {
        if let Ok(fd) = written.strip_prefix("/dev/fd") {
            return (fd.components().count() > 1).then_some(None);
        }
        let inside = written.strip_prefix("/proc").ok()?;
        let parts: Vec<&std::ffi::OsStr> = inside.iter().collect();
        let (process, link, rest) = match parts.as_slice() {
            [process, task, _, link, rest @ ..] if *task == "task" => (process, link, rest),
            [process, link, rest @ ..] => (process, link, rest),
            _ => return None,
        };
        let rest: PathBuf = rest.iter().collect();
        let own = *process == "self" || *process == "thread-self";
        // A descriptor open on a folder (`3<dir`) leads into it.
        if *link == "fd" && rest.components().count() > 1 {
            return Some(None);
        }
        if *link == "root" {
            Some(Some(vec![Path::new("/").join(rest)]))
        } else if *link == "cwd" && own {
            let mut dirs = vec![self.cwd().join(&rest)];
            if self.local
                && let Ok(agent) = std::env::current_dir()
            {
                dirs.push(agent.join(&rest));
            }
            Some(Some(dirs))
        } else if *link == "cwd" {
            Some(None)
        } else {
            None
        }
    }

    /// The root of the git repository the working directory is in, on this
    /// machine: git reads `REV:path` from there, wherever it is run.
    pub fn repository_root(&self) -> Option<PathBuf> {
        if !self.local {
            return None;
        }
        self.cwd()
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .map(Path::to_path_buf)
    }

    /// The paths `arg` names when bash runs it, each as the kernel will
    /// open it (joined to the working directory, not normalised): one per
    /// brace expansion, and a pattern's matches on this machine in its
    /// place (the pattern itself when nothing matches, as bash leaves it).
    /// `None` when part of the word is known only at run time.
    pub fn named_by(&self, arg: &super::shell::Arg) -> Option<Vec<PathBuf>> {
        use super::expand::{glob_matches, has_glob};
        let mut named = Vec::new();
        for text in arg.expansions()? {
            let joined = self.joined(&text);
            let matches = match arg.pattern && self.local && has_glob(&text) {
                true => glob_matches(&joined),
                false => Vec::new(),
            };
            if matches.is_empty() {
                named.push(joined);
            } else {
                named.extend(matches);
            }
        }
        Some(named)
    }

    /// [`Places::protected_target`] for every word bash makes of `arg`;
    /// `None` when none is protected, or the word is known only at run time.
    ///
    /// A part known only at run time may be empty (`rm -rf .$E` is `rm -rf
    /// .` then, and `rm -rf "$DIR"/*` is `rm -rf /*`: the classic wipe by
    /// an unset variable), as deny rules read it; a brace expansion too
    /// large to list is taken for protected.
    pub fn protected_word(&self, arg: &super::shell::Arg) -> Option<&'static str> {
        use super::expand::brace_expansions;
        // `~name` is the home folder of the user `name`, who may well be
        // the user running it (`rm -rf ~root` as root); so may a folder of
        // the directory stack (`~+1`, unknown: `~?`).
        let after_users_home = users_home_named(&arg.text)
            .map(|(_, rest)| rest)
            .or_else(|| arg.text.strip_prefix("~?"));
        if let Some(rest) = after_users_home
            && self.protected_target(&format!("~{rest}")) == Some("the home directory")
        {
            return Some(USERS_HOME);
        }
        let texts = match arg.expansions() {
            Some(texts) => texts,
            None if arg.braces => return Some("what a brace expansion of too many words names"),
            None => brace_expansions(&arg.without_unknowns())?,
        };
        // An empty word is no operand (`rm -rf $E` with `$E` empty).
        texts
            .iter()
            .filter(|text| !text.is_empty())
            .find_map(|text| {
                self.protected_target(text).or_else(|| {
                    super::expand::has_glob(text)
                        .then(|| self.protected_matching(text))
                        .flatten()
                })
            })
    }

    /// What a pattern (`/tmp/proj?`, `~/pr*`) names among the protected
    /// places: the file system root, the home directory and the workspace
    /// roots, and the folders holding them.
    fn protected_matching(&self, pattern: &str) -> Option<&'static str> {
        let pattern = self.resolve(pattern);
        let glob =
            globset::GlobBuilder::new(&super::expand::globset_pattern(&pattern.to_string_lossy()))
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .ok()?
                .compile_matcher();
        self.roots
            .iter()
            .map(PathBuf::as_path)
            .chain(self.homes())
            .flat_map(|place| place.ancestors())
            .find(|place| glob.is_match(place))
            .and_then(|place| self.protected(place))
    }

    /// The same places for the commands after `cd dir` (`dir` as written):
    /// relative paths resolve in `dir`, the workspace stays where it is.
    pub fn moved(&self, dir: &str) -> Self {
        Self {
            moved_to: Some(self.resolve(dir)),
            ..self.clone()
        }
    }

    /// The same places after `cd -P dir`: where `dir`'s links lead, as bash
    /// goes there physically; `None` when that cannot be told (or with
    /// `--remote`, whose links this machine cannot see).
    pub fn moved_physically(&self, dir: &str) -> Option<Self> {
        use crate::support::paths::{Whose, where_links_lead};
        if !self.local {
            return None;
        }
        let real = where_links_lead(&self.joined(dir), Whose::Another)?;
        Some(Self {
            moved_to: Some(real),
            ..self.clone()
        })
    }

    /// The working directory: the first root, or where a `cd` moved to.
    pub fn cwd(&self) -> &Path {
        match &self.moved_to {
            Some(dir) => dir,
            None => self.roots.first().map_or(Path::new("/"), PathBuf::as_path),
        }
    }

    /// `text` as an absolute, normalised path: `~` is home, relative paths
    /// are under the working directory.
    pub fn resolve(&self, text: &str) -> PathBuf {
        normalize(&self.joined(text))
    }

    /// `text` as the kernel opens it from the working directory: `~` is
    /// home, `~name` the user `name`'s home when it can be looked up
    /// ([`Places::users_home`]), relative paths are joined to the working
    /// directory, and `..` is left for [`Places::seen_as`] (after a link it
    /// goes up from where the link leads).
    pub fn joined(&self, text: &str) -> PathBuf {
        let users_home = || {
            let (name, rest) = users_home_named(text)?;
            Some(self.users_home(name)?.join(rest.trim_start_matches('/')))
        };
        let expanded = match (text.strip_prefix('~'), &self.home) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                home.join(rest.trim_start_matches('/'))
            }
            _ => users_home().unwrap_or_else(|| PathBuf::from(text)),
        };
        if expanded.is_absolute() {
            expanded
        } else {
            self.cwd().join(expanded)
        }
    }

    /// The home folder of the user `name` (`~name`), from this machine's
    /// password database; `None` when there is no such user, or with
    /// `--remote`: the paths are another host's, whose users this machine
    /// does not know. Bash leaves a `~name` it cannot look up as it is, but
    /// the user may exist where (and when) it runs, so such a word is
    /// unknown to the policy.
    pub fn users_home(&self, name: &str) -> Option<PathBuf> {
        if !self.local {
            return None;
        }
        let user = nix::unistd::User::from_name(name).ok().flatten()?;
        Some(normalize(&user.dir))
    }

    /// True when `path` is inside (or is) a workspace root. A root that is
    /// `/`, the home folder or above it holds nothing: started there, every
    /// write was "inside the workspace" (`/etc/cron.d/x`, `~/.bashrc` ran
    /// unasked), and the sandbox leaves such a folder out of its roots too
    /// ([`too_broad`](crate::sandbox::policy::too_broad)).
    pub fn in_workspace(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|root| path.starts_with(root) && self.too_broad(root).is_none())
    }

    /// Why the workspace root `root` holds nothing ([`Places::in_workspace`]):
    /// it is `/`, the home folder or a folder above it.
    pub fn too_broad(&self, root: &Path) -> Option<&'static str> {
        use crate::sandbox::policy::too_broad;
        let mut homes = self.homes().peekable();
        match homes.peek() {
            None => too_broad(root, None),
            Some(_) => homes.find_map(|home| too_broad(root, Some(home))),
        }
    }

    /// The home folder as named, and where its links lead when elsewhere.
    fn homes(&self) -> impl Iterator<Item = &Path> {
        self.home
            .iter()
            .chain(&self.resolved_home)
            .map(PathBuf::as_path)
    }

    /// What deleting or overwriting `path` whole would destroy, if it is the
    /// file system root, the home directory, a workspace root or a directory
    /// holding one of them; `None` for anything else.
    pub fn protected(&self, path: &Path) -> Option<&'static str> {
        if path == Path::new("/") {
            return Some("the file system root");
        }
        if self.homes().any(|home| home.starts_with(path)) {
            return Some("the home directory");
        }
        if self.roots.iter().any(|root| root.starts_with(path)) {
            return Some("a workspace root");
        }
        None
    }

    /// What `path` configures, when it is where a workspace keeps what the
    /// agent or git reads as instructions: the project's settings (rules,
    /// hooks, MCP servers, skills, prompts), its MCP servers file, its
    /// `.agents/skills` (loaded into later sessions), and any `.git` in it,
    /// a nested repository's or a submodule's too (their config and hooks
    /// run programs on `git status`). A write there changes what later
    /// commands and sessions do.
    pub fn configuration(&self, path: &Path) -> Option<&'static str> {
        self.roots.iter().find_map(|root| {
            let inside = path.strip_prefix(root).ok()?;
            let mut parts = inside.components().map(|part| part.as_os_str());
            let first = parts.next()?;
            if first == crate::settings::PROJECT_CONFIG_DIR {
                Some("the project's agent configuration (its settings, hooks, prompts, skills)")
            } else if first == ".mcp.json" {
                Some("the project's MCP servers")
            } else if first == ".agents" && parts.next().is_none_or(|second| second == "skills") {
                Some("the project's skills")
            } else if inside.components().any(|part| part.as_os_str() == ".git") {
                Some("the repository's git configuration or hooks")
            } else {
                None
            }
        })
    }

    /// What [`Places::configuration`] says of a path bash may expand a
    /// pattern to (`.gi?/config`, `.*/settings.json`): the first part under
    /// a root is a pattern that matches one of those names. A pattern
    /// matches a leading dot only with a dot of its own, as bash's does.
    pub fn configuration_matching(&self, pattern: &Path) -> Option<&'static str> {
        self.roots.iter().find_map(|root| {
            let inside = pattern.strip_prefix(root).ok()?;
            let first = inside.components().next()?.as_os_str().to_str()?;
            if !first.starts_with('.') {
                return None;
            }
            let glob = globset::Glob::new(first).ok()?.compile_matcher();
            [crate::settings::PROJECT_CONFIG_DIR, ".mcp.json", ".git"]
                .into_iter()
                .find(|name| glob.is_match(name))
                .and_then(|name| self.configuration(&root.join(name)))
        })
    }

    /// Like [`Places::protected`] for a target as written: `dir/*` (and
    /// `dir/.*`) empties `dir`, so it counts as `dir`. Judged as written and
    /// where its links lead: the folders on the way always (`up/proj` with
    /// `up` a link above the workspace), the target itself when it is
    /// emptied or named with a trailing `/` (`rm -r link/` deletes what
    /// the link leads to, `/proc/self/cwd/` included).
    pub fn protected_target(&self, text: &str) -> Option<&'static str> {
        let trimmed = text.trim_end_matches('/');
        let (whole, through) = match trimmed.rsplit_once('/') {
            Some((parent, last)) if is_everything_glob(last) => {
                (if parent.is_empty() { "/" } else { parent }, true)
            }
            None if is_everything_glob(trimmed) => (".", true),
            _ => (text, text.len() > 1 && text.ends_with('/')),
        };
        let whole = if whole.is_empty() { "/" } else { whole };
        if let Some(place) = self.protected(&self.resolve(whole)) {
            return Some(place);
        }
        if climbs_out_of_a_link_in_proc(&self.joined(whole)) {
            return Some(
                "a folder reached by `..` from a link in /proc or /dev, which cannot be told",
            );
        }
        let joined = normalize(&self.joined(whole));
        let seen = match (through, joined.parent(), joined.file_name()) {
            (true, ..) => self.seen_as(&joined),
            (false, Some(parent), Some(name)) => self
                .seen_as(parent)
                .map(|dirs| dirs.into_iter().map(|dir| dir.join(name)).collect()),
            _ => return None,
        };
        seen.ok()?.iter().find_map(|path| self.protected(path))
    }
}

/// For a word starting with `~name` (`~root/.ssh`), the user's name and
/// the rest (`/.ssh`): as bash reads a tilde prefix, a login name of
/// portable file name characters up to the first `/`.
pub fn users_home_named(text: &str) -> Option<(&str, &str)> {
    let after = text.strip_prefix('~')?;
    let (name, rest) = after.split_at(after.find('/').unwrap_or(after.len()));
    let portable = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    (!name.is_empty() && !name.starts_with('-') && name.chars().all(portable))
        .then_some((name, rest))
}

/// Whether `path` goes up (`..`) from somewhere under `/proc` or `/dev`:
/// the kernel follows the link it climbs out of first (`/proc/self/cwd/..`
/// is the working directory's parent), so the text alone cannot tell where
/// it leads.
pub(super) fn climbs_out_of_a_link_in_proc(path: &Path) -> bool {
    (path.starts_with("/proc") || path.starts_with("/dev"))
        && path
            .components()
            .any(|part| part == std::path::Component::ParentDir)
}

/// Whether `path` goes into a folder through an open descriptor
/// (`/dev/fd/3/.env` with `3<.`, `/proc/self/fd/3/x`), or up from a link
/// in `/proc` or `/dev`: no one needs such a spelling, and where it leads
/// depends on what the process has open.
pub(super) fn only_a_process_can_tell(path: &Path) -> bool {
    let through_descriptor = |fds: &Path| fds.components().count() > 1;
    climbs_out_of_a_link_in_proc(path)
        || path.strip_prefix("/dev/fd").is_ok_and(through_descriptor)
        || path.strip_prefix("/proc").is_ok_and(|inside| {
            let parts: Vec<_> = inside.iter().collect();
            let fd = parts.iter().position(|part| *part == "fd");
            fd.is_some_and(|at| at <= 3 && parts.len() > at + 2)
        })
}

/// `*`, `.*`, `?*`, `**`: a last component that matches every entry.
fn is_everything_glob(component: &str) -> bool {
    !component.is_empty()
        && component.contains('*')
        && component.chars().all(|c| matches!(c, '*' | '.' | '?'))
}

/// `.` and `..` removed lexically (`/..` stays `/`, an empty path is `.`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = crate::support::paths::normalize_lexically(path);
    if out.as_os_str().is_empty() {
        out.push(if path.is_absolute() { "/" } else { "." });
    }
    out
}

/// True for a device under `/dev` that holds data (a disk, a partition, memory),
/// as opposed to the harmless ones a command may write to.
pub fn is_block_device(path: &Path) -> bool {
    const HARMLESS: [&str; 9] = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/stdin",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
    ];
    path.starts_with("/dev")
        && path != Path::new("/dev")
        && !HARMLESS.iter().any(|h| path == Path::new(h))
        && !path.starts_with("/dev/fd")
        && !path.starts_with("/dev/shm")
        && !path.starts_with("/dev/pts")
        && !path.starts_with("/dev/mqueue")
        && network_device(path).is_none()
}

/// True for the devices whose writes go nowhere or to the terminal
/// (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`,
/// `/dev/tty`); `output` adds standard output and error (`/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/1`, `/dev/fd/2`: bash's own, for a redirection,
/// not the agent's). Anything else under `/dev` is a file (`/dev/shm`), a
/// descriptor open on any file (`/dev/stdin`, `/dev/fd/5`, `/dev/pts/0`),
/// a disk, or bash's network connection.
pub fn is_harmless_device(path: &Path, output: bool) -> bool {
    const SINKS: [&str; 6] = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
    ];
    const OUTPUT: [&str; 4] = ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2"];
    SINKS.iter().any(|sink| path == Path::new(sink))
        || (output && OUTPUT.iter().any(|out| path == Path::new(out)))
}

/// For bash's network redirections, `/dev/tcp/HOST/PORT` and
/// `/dev/udp/HOST/PORT` (no such files exist: bash opens a connection),
/// the protocol, host and port.
pub fn network_device(path: &Path) -> Option<(&str, String)> {
    let text = path.to_str()?;
    let (protocol, rest) = text
        .strip_prefix("/dev/tcp/")
        .map(|rest| ("TCP", rest))
        .or_else(|| text.strip_prefix("/dev/udp/").map(|rest| ("UDP", rest)))?;
    Some((protocol, rest.replace('/', " port ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places::at(Path::new("/home/u/project"), Some(Path::new("/home/u")))
    }

    #[test]
    fn targets_that_would_remove_a_protected_place() {
        let p = places();
        let cases: [(Option<&str>, &[&str]); 4] = [
            (Some("the file system root"), &["/", "/*", "//", "/.."]),
            (
                Some("the home directory"),
                &["~", "~/", "~/*", "/home", ".."],
            ),
            (
                Some("a workspace root"),
                &[".", "*", "./", "/home/u/project/"],
            ),
            (None, &["build", "~/project/target", "/tmp/x", "~/*.txt"]),
        ];
        for (expected, targets) in cases {
            for target in targets {
                assert_eq!(p.protected_target(target), expected, "{target}");
            }
        }
    }

    #[test]
    fn devices_that_hold_data_are_told_apart_from_harmless_ones() {
        assert!(is_block_device(Path::new("/dev/sda")));
        assert!(is_block_device(Path::new("/dev/nvme0n1p1")));
        assert!(!is_block_device(Path::new("/dev/null")));
        assert!(!is_block_device(Path::new("/dev/fd/2")));
        assert!(is_harmless_device(Path::new("/dev/stderr"), true));
        assert!(!is_harmless_device(Path::new("/dev/stderr"), false));
        assert!(!is_harmless_device(Path::new("/etc/passwd"), true));
        for path in [
            "/dev/shm/x",
            "/dev/pts/0",
            "/dev/stdin",
            "/dev/fd/5",
            "/dev/tcp/h/1",
        ] {
            assert!(!is_harmless_device(Path::new(path), true), "{path}");
        }
        for path in [
            "/dev/tcp/h/80",
            "/dev/udp/h/53",
            "/dev/mqueue/q",
            "/dev/shm/x",
        ] {
            assert!(!is_block_device(Path::new(path)), "{path}");
        }
    }
}
