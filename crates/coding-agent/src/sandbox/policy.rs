//! What the sandbox allows: the mode, the directories commands may write, and
//! whether TCP is open. The kernel applies the same [`SandboxPolicy`] to bash
//! and to the writes of the in-process `write` and `edit` tools (see
//! [`super::kernel`], [`super::files`]), which [`SandboxPolicy::check_write`]
//! checks first, for a refusal that names the roots.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::support::fs_error::FsError;
use crate::support::paths::{Whose, follow_links};

/// How much the sandbox lets commands change (`--sandbox`, setting `sandbox.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox: commands run with the user's full rights.
    Off,
    /// Reads anywhere; writes only to `/dev/null`-like devices.
    ReadOnly,
    /// Reads anywhere; writes under the workspace roots, the temp
    /// directories and `/dev/null`-like devices.
    #[default]
    WorkspaceWrite,
}

impl SandboxMode {
    /// The name users type and read.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }

    /// How much the mode takes away: `read-only` is stricter than
    /// `workspace-write`, which is stricter than `off`.
    pub fn strictness(self) -> u8 {
        match self {
            SandboxMode::Off => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Devices any sandboxed command may open for writing: they store nothing,
/// and shells and build tools write to them all the time.
pub const WRITABLE_DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The system's shared scratch folders: `/tmp`, and `/dev/shm` (POSIX
/// shared memory and semaphores, which Python's `multiprocessing` needs).
const SYSTEM_TEMP_DIRS: [&str; 2] = ["/tmp", "/dev/shm"];

/// Scratch directories a `workspace-write` sandbox adds to the workspace
/// roots: `$TMPDIR` (or `/tmp`), `/tmp` and `/dev/shm`.
pub fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![std::env::temp_dir()];
    for dir in SYSTEM_TEMP_DIRS {
        let dir = PathBuf::from(dir);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// What a sandboxed command may do besides reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxPolicy {
    /// How much commands may change.
    pub mode: SandboxMode,
    /// Directories (and everything under them) writable in `workspace-write`
    /// mode, used as given; [`SandboxPolicy::for_workspace`] adds the temp
    /// directories to the workspace roots. Missing ones are skipped.
    pub writable_roots: Vec<PathBuf>,
    /// TCP connect and bind are allowed (they are refused otherwise, where
    /// the kernel can refuse them).
    pub allow_network: bool,
}

/// A directory the sandbox was asked to make writable and does not, because
/// it holds too much (see [`too_broad`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    /// The directory, resolved.
    pub dir: PathBuf,
    /// What it is: [`too_broad`]'s answer (owned when it came from a remote
    /// host, in its [`Grant`]).
    pub why: Cow<'static, str>,
    /// It came from `$TMPDIR`, not from the workspace or `writableRoots`.
    pub temp: bool,
}

/// What a policy lets commands write, as the host that enforces it works it
/// out: its home folder and `$TMPDIR` decide what is too broad and which
/// temp directory is writable. With `--remote` that host is the remote one,
/// whose helper sends this: worked out on this machine instead, a session
/// in the remote home was told the sandbox was simply on while the helper
/// had left the home out (and every write in bash failed), and the roots
/// named this machine's `$TMPDIR`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The directories writes are limited to
    /// ([`SandboxPolicy::effective_roots`]).
    pub roots: Vec<PathBuf>,
    /// The directories asked for and left out as too broad.
    pub left_out: Vec<LeftOut>,
}

/// Why `dir` (resolved) is too broad to be a writable root, or `None`: the
/// root of the file system, the home folder `home` (resolved), or a folder
/// above it. Started in `/` (a container's usual working directory), the
/// sandbox made everything writable and said nothing (`touch /etc/x` ran);
/// started in `~`, `echo x >> ~/.bashrc` did, and `TMPDIR=/` had the same
/// effect as `/`. A sandbox around such a folder contains nothing worth
/// the name, so the folder is left out, and the start notice says so.
pub fn too_broad(dir: &Path, home: Option<&Path>) -> Option<&'static str> {
    if dir == Path::new("/") {
        Some("the root of the file system")
    } else if home == Some(dir) {
        Some("your home folder")
    } else if home.is_some_and(|home| home.starts_with(dir)) {
        Some("a folder above your home folder")
    } else {
        None
    }
}

impl SandboxPolicy {
    /// The policy for a session working in `workspace_roots`: in
    /// `workspace-write` mode those and the [`temp_dirs`] are writable,
    /// except any that is [`too_broad`]; network off.
    ///
    /// The roots are resolved now, once: a command must not be able to move
    /// a root by replacing it (or a folder above it) with a link, which
    /// resolving them again for each command would follow
    /// ([`SandboxPolicy::effective_roots`]).
    pub fn for_workspace(mode: SandboxMode, workspace_roots: &[PathBuf]) -> Self {
        Self::for_workspace_saying(mode, workspace_roots).0
    }

    /// [`SandboxPolicy::for_workspace`], and what it grants on this host
    /// (the roots, and the directories it left out as too broad), for the
    /// start notice.
    pub fn for_workspace_saying(mode: SandboxMode, workspace_roots: &[PathBuf]) -> (Self, Grant) {
        let home = crate::support::paths::home_dir();
        let home = home.map(|home| home.canonicalize().unwrap_or(home));
        let (policy, left_out) =
            Self::granting(mode, workspace_roots, temp_dirs(), home.as_deref());
        let grant = Grant {
            roots: policy.effective_roots(),
            left_out,
        };
        (policy, grant)
    }

    /// [`SandboxPolicy::for_workspace_saying`] with the temp directories and
    /// the home folder (resolved) given.
    fn granting(
        mode: SandboxMode,
        workspace_roots: &[PathBuf],
        temp_dirs: Vec<PathBuf>,
        home: Option<&Path>,
    ) -> (Self, Vec<LeftOut>) {
        let mut writable_roots = Vec::new();
        let mut left_out = Vec::new();
        if mode == SandboxMode::WorkspaceWrite {
            let asked = workspace_roots.iter().map(|root| (root.clone(), false));
            let temp = temp_dirs.into_iter().map(|dir| (dir, true));
            for (root, temp) in asked.chain(temp) {
                // `/tmp` and `/dev/shm` are what the system gives every
                // user to scratch in: a home folder inside them is a
                // throwaway one (CI's, a test's), and without them commands
                // have nowhere to scratch. What is judged is what the user
                // named: the workspace, `writableRoots`, `$TMPDIR`.
                let system = temp && SYSTEM_TEMP_DIRS.iter().any(|dir| root == Path::new(dir));
                let root = root.canonicalize().unwrap_or(root);
                let too_broad = if system { None } else { too_broad(&root, home) };
                match too_broad {
                    None => writable_roots.push(root),
                    Some(why) if !left_out.iter().any(|seen: &LeftOut| seen.dir == root) => {
                        left_out.push(LeftOut {
                            dir: root,
                            why: why.into(),
                            temp,
                        });
                    }
                    Some(_) => {}
                }
            }
            writable_roots.dedup();
        }
        let policy = SandboxPolicy {
            mode,
            writable_roots,
            allow_network: false,
        };
        (policy, left_out)
    }

    /// The same policy with TCP allowed or not.
    pub fn with_network(mut self, allow: bool) -> Self {
        self.allow_network = allow;
        self
    }

    /// The directories writes are limited to, in `workspace-write` mode
    /// (none otherwise): the roots that exist and are still where they are
    /// named. A root that now resolves elsewhere is left out, not followed:
    /// a command that replaced its workspace (or a folder above it) with a
    /// link to `/` would otherwise have made `/` writable for the next one.
    /// The kernel's rules check this again on what they open
    /// ([`super::kernel`]).
    pub fn effective_roots(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let mut roots: Vec<PathBuf> = self
            .writable_roots
            .iter()
            .filter(|root| root.canonicalize().is_ok_and(|now| now == **root))
            .cloned()
            .collect();
        roots.dedup();
        roots
    }

    /// Whether a write to `path` (absolute) stays inside the sandbox. The path
    /// is resolved as the kernel would: symlinks in its existing part are
    /// followed, so a link inside a root that points outside is outside.
    pub fn permits_write(&self, path: &Path) -> bool {
        self.check_write(path, "open").is_ok()
    }

    /// `Ok` when a write to `path` is allowed, else the error the model
    /// reads: the denial, or, for a path whose links cannot be followed
    /// (which may lead anywhere, so it is refused), the file system's own
    /// error (`ENOTDIR` for `file/x`, `ENAMETOOLONG`): a write would mostly
    /// meet it too, and the model must not be told to ask for the sandbox
    /// to be turned off for a mistake in its path. `syscall` is what the
    /// write does to `path` (`open`, `mkdir`), which that error names as
    /// Node would.
    pub fn check_write(&self, path: &Path, syscall: &str) -> Result<(), FsError> {
        if self.mode == SandboxMode::Off {
            return Ok(());
        }
        let resolved = match follow_links(path, Whose::This) {
            Ok(resolved) => resolved,
            Err(Some(error)) => return Err(FsError::new(&error, syscall, path)),
            Err(None) => return Err(self.denial(path)),
        };
        let inside = WRITABLE_DEVICES
            .iter()
            .any(|device| resolved == Path::new(device))
            || self
                .effective_roots()
                .iter()
                .any(|root| resolved.starts_with(root));
        if inside {
            Ok(())
        } else {
            Err(self.denial(path))
        }
    }

    /// The refusal of a write to `path` outside the sandbox.
    fn denial(&self, path: &Path) -> FsError {
        FsError {
            code: Some("EACCES"),
            message: format!(
                "{}: {}. {}",
                self.denial_reason(false),
                path.display(),
                WHAT_TO_DO
            ),
        }
    }

    /// The notice a sandboxed bash command that failed with a permission
    /// error gets at the end of its output. Unlike a write the agent
    /// refused itself, the error may be the file's own (a script without
    /// `+x`, another user's file), so it says how to tell the two apart.
    pub fn bash_denial_notice(&self) -> String {
        format!(
            "{}. If what was refused is outside those places (or is the network), {}; inside them, it is the file's own permissions (a script without +x, another user's file)",
            self.denial_reason(true),
            IF_SANDBOX
        )
    }

    /// `Permission denied (sandbox: writes are limited to ...)`, with the
    /// network's state when `with_network`.
    fn denial_reason(&self, with_network: bool) -> String {
        let read_only = if self.mode == SandboxMode::ReadOnly {
            "read-only, "
        } else {
            ""
        };
        let writes = writes_limited_to(&self.effective_roots());
        let network = if with_network && !self.allow_network {
            "; network (TCP) is off"
        } else {
            ""
        };
        format!("Permission denied (sandbox: {read_only}{writes}{network})")
    }
}

/// `writes are limited to /w, /tmp and /dev/null-like devices`: what a
/// sandbox with writable `roots` lets commands write.
pub fn writes_limited_to(roots: &[PathBuf]) -> String {
    const DEVICES: &str = "/dev/null-like devices";
    if roots.is_empty() {
        return format!("writes are limited to {DEVICES}");
    }
    let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    format!("writes are limited to {} and {DEVICES}", roots.join(", "))
}

/// What the model should do after the sandbox refused a write or edit: not
/// retry, ask, naming what lets a file be written there (the network,
/// which it named too, has nothing to do with writing a file).
const WHAT_TO_DO: &str = "This is the sandbox, not file permissions: retrying or working around it fails the same way. Tell the user what you need and why; they can allow writes there (add the folder to sandbox.writableRoots in their settings, or run with --sandbox off)";

/// [`WHAT_TO_DO`] for a bash command, where the sandbox is one cause of a
/// permission error among others.
const IF_SANDBOX: &str = "it is the sandbox: retrying or working around it fails the same way. Tell the user what you need and why; they can allow it (--sandbox off, or --allow-network for the network)";

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(dir: &Path) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec![dir.join("work")],
            allow_network: false,
        }
    }

    #[test]
    fn a_link_to_a_file_not_yet_there_is_judged_by_where_it_points() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let policy = workspace(dir.path());
        let link = |name: &str, target: &Path| {
            std::os::unix::fs::symlink(target, work.join(name)).unwrap();
            work.join(name)
        };
        // Out of the workspace, directly, through a chain, or below a
        // linked directory that does not exist yet.
        assert!(!policy.permits_write(&link("out", &dir.path().join("created.txt"))));
        let chain = link("chain", &work.join("out"));
        assert!(!policy.permits_write(&chain));
        let linked_dir = link("dir", &dir.path().join("new-dir"));
        assert!(!policy.permits_write(&linked_dir.join("sub/file.txt")));
        // Within it, relative or absolute.
        assert!(policy.permits_write(&link("in", Path::new("new.txt"))));
        assert!(policy.permits_write(&link("in-abs", &work.join("sub/new.txt"))));
        // A loop is left to the write, which fails (ELOOP).
        let a = link("a", &work.join("b"));
        link("b", &work.join("a"));
        let _ = policy.permits_write(&a);
    }

    #[test]
    fn writes_inside_a_root_are_permitted_even_to_new_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let policy = workspace(dir.path());
        assert!(policy.permits_write(&dir.path().join("work/a/b/new.txt")));
        assert!(policy.permits_write(&dir.path().join("work")));
        assert!(!policy.permits_write(&dir.path().join("elsewhere.txt")));
        assert!(!policy.permits_write(&dir.path().join("work/../escape.txt")));
        assert!(!policy.permits_write(&dir.path().join("workshop/x")));
    }

    #[test]
    fn a_symlink_out_of_a_root_is_outside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), dir.path().join("work/link"))
            .unwrap();
        let policy = workspace(dir.path());
        assert!(!policy.permits_write(&dir.path().join("work/link/file")));
        // `..` after the link goes up from where it leads, as in the kernel.
        assert!(!policy.permits_write(&dir.path().join("work/link/../escape.txt")));
        std::os::unix::fs::symlink("sub", dir.path().join("work/inner")).unwrap();
        std::fs::create_dir(dir.path().join("work/sub")).unwrap();
        assert!(policy.permits_write(&dir.path().join("work/inner/../kept.txt")));
    }

    #[test]
    fn devices_are_writable_in_every_mode_and_everything_when_off() {
        let read_only = SandboxPolicy::for_workspace(SandboxMode::ReadOnly, &[PathBuf::from("/")]);
        assert!(read_only.writable_roots.is_empty());
        assert!(read_only.permits_write(Path::new("/dev/null")));
        assert!(!read_only.permits_write(&std::env::temp_dir().join("x")));
        let off = SandboxPolicy::for_workspace(SandboxMode::Off, &[]);
        assert!(off.permits_write(Path::new("/etc/passwd")));
    }

    #[test]
    fn workspace_write_adds_the_temp_directories() {
        let policy =
            SandboxPolicy::for_workspace(SandboxMode::WorkspaceWrite, &[PathBuf::from("/w")]);
        let mut expected = vec![PathBuf::from("/w")];
        expected.extend(temp_dirs());
        assert_eq!(policy.writable_roots, expected);
        assert!(policy.permits_write(&std::env::temp_dir().join("scratch")));
    }

    /// Started in `/` (a container's usual working directory) or in `~`,
    /// or with `TMPDIR=/`, the sandbox let commands write everything, or
    /// every dotfile, and said nothing.
    #[test]
    fn the_root_the_home_folder_and_the_folders_above_it_are_never_writable() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home/me");
        let project = home.join("project");
        let scratch = base.join("scratch");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir(&scratch).unwrap();
        let asked = [
            PathBuf::from("/"),
            home.clone(),
            base.join("home"),
            project.clone(),
        ];
        let temp = vec![home.clone(), scratch.clone(), PathBuf::from("/")];
        let (policy, left_out) =
            SandboxPolicy::granting(SandboxMode::WorkspaceWrite, &asked, temp, Some(&home));
        assert_eq!(policy.writable_roots, [project.clone(), scratch]);
        let not_granted = |dir: &Path, why: &'static str| LeftOut {
            dir: dir.to_path_buf(),
            why: why.into(),
            temp: false,
        };
        assert_eq!(
            left_out,
            [
                not_granted(Path::new("/"), "the root of the file system"),
                not_granted(&home, "your home folder"),
                not_granted(&base.join("home"), "a folder above your home folder"),
            ]
        );
        assert!(!policy.permits_write(Path::new("/etc/x")));
        assert!(!policy.permits_write(&home.join(".bashrc")));
        assert!(policy.permits_write(&project.join("x")));

        // `/tmp` and `/dev/shm` stay, a home folder inside `/tmp` (as
        // here) notwithstanding; `TMPDIR=/` does not, home or none.
        let system = ["/tmp", "/dev/shm"].map(PathBuf::from);
        let (policy, left_out) = SandboxPolicy::granting(
            SandboxMode::WorkspaceWrite,
            std::slice::from_ref(&project),
            [PathBuf::from("/")]
                .into_iter()
                .chain(system.clone())
                .collect(),
            Some(&home),
        );
        assert_eq!(
            (policy.writable_roots, left_out),
            (
                [vec![project], system.to_vec()].concat(),
                vec![LeftOut {
                    dir: PathBuf::from("/"),
                    why: "the root of the file system".into(),
                    temp: true,
                }]
            )
        );
    }

    #[test]
    fn denials_name_the_roots_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let root = dir.path().canonicalize().unwrap().join("work");
        let policy = workspace(dir.path());
        assert_eq!(
            policy
                .check_write(Path::new("/etc/x"), "open")
                .map_err(|e| e.message),
            Err(format!(
                "Permission denied (sandbox: writes are limited to {} and /dev/null-like devices): /etc/x. This is the sandbox, not file permissions: retrying or working around it fails the same way. Tell the user what you need and why; they can allow writes there (add the folder to sandbox.writableRoots in their settings, or run with --sandbox off)",
                root.display()
            ))
        );
        // A path that cannot be followed for a reason of its own is refused
        // with that reason, not blamed on the sandbox.
        std::fs::write(root.join("afile"), "x").unwrap();
        let under_a_file = root.join("afile/a/sub.txt");
        let refused = policy.check_write(&under_a_file, "open").unwrap_err();
        assert_eq!(
            (refused.code, refused.message),
            (
                Some("ENOTDIR"),
                format!(
                    "ENOTDIR: not a directory, open '{}'",
                    under_a_file.display()
                )
            )
        );
        let parent = under_a_file.parent().unwrap();
        let refused = policy.check_write(parent, "mkdir").unwrap_err();
        assert_eq!(
            refused.message,
            format!("ENOTDIR: not a directory, mkdir '{}'", parent.display())
        );
        assert_eq!(
            policy.bash_denial_notice(),
            format!(
                "Permission denied (sandbox: writes are limited to {} and /dev/null-like devices; network (TCP) is off). If what was refused is outside those places (or is the network), {IF_SANDBOX}; inside them, it is the file's own permissions (a script without +x, another user's file)",
                root.display()
            )
        );
        let read_only = SandboxPolicy::for_workspace(SandboxMode::ReadOnly, &[]).with_network(true);
        assert!(
            read_only.bash_denial_notice().starts_with(
                "Permission denied (sandbox: read-only, writes are limited to /dev/null-like devices). If what was refused"
            ),
            "{}",
            read_only.bash_denial_notice()
        );
    }

    #[test]
    fn modes_order_by_strictness() {
        assert!(SandboxMode::ReadOnly.strictness() > SandboxMode::WorkspaceWrite.strictness());
        assert!(SandboxMode::WorkspaceWrite.strictness() > SandboxMode::Off.strictness());
    }
}
