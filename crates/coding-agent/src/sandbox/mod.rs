//! The sandbox: what bash, `write` and `edit` may change, enforced by the
//! kernel (Linux Landlock): for bash through a helper process, for the
//! in-process tools on a thread of each write's own. See
//! `docs/permissions.md` ("Sandbox") for what it does and does not contain.
//!
//! - [`policy`]: the mode, the writable roots, the network switch, and the
//!   check `write`/`edit` apply;
//! - [`kernel`]: the policy as Landlock rules, and the probe;
//! - [`helper`]: the hidden `__sandbox` entry point that restricts itself and
//!   then execs the shell (no `unsafe` needed);
//! - [`bash`], [`files`]: the Operations that run under it;
//! - [`settings`]: the `sandbox` key of `settings.json`.
//!
//! [`Sandbox::start`] puts them together for a session: it probes the
//! kernel once, decides what runs, and says so ([`SandboxStatus::notice`]).

pub mod bash;
pub mod files;
pub mod helper;
pub mod kernel;
pub mod policy;
pub mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use self::bash::SandboxedBashOperations;
pub use self::files::Sandboxed;
pub use self::helper::{HELPER_ARG, run_if_invoked, running_executable};
pub use self::kernel::{ABSTRACT_SOCKETS_CONTAINED_FROM_ABI, Enforced, KernelError};
pub use self::policy::{Grant, LeftOut, SandboxMode, SandboxPolicy};
pub use self::settings::SandboxSettings;

use crate::definition::ToolDefinition;
use crate::definition::Typed;
use crate::tools::bash::BashTool;
use crate::tools::bash::ops::{BashOperations, LocalBashOperations};
use crate::tools::{builtin_tool, edit::EditTool, write::WriteTool};

/// What the user asked for (flags and settings), before the kernel is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxRequest {
    /// `--sandbox` or the setting; `None` = the default (`workspace-write`
    /// where the kernel can enforce it, else off, with a notice).
    pub mode: Option<SandboxMode>,
    /// `--allow-network` or the setting.
    pub allow_network: bool,
    /// Directories writable besides the workspace root and temp directories.
    pub extra_roots: Vec<PathBuf>,
    /// Who asked for `mode`, for what the user is told about it.
    pub asked_by: AskedBy,
}

/// Who asked for a sandbox mode: what the user is told names it, and the
/// way out it names is one that works. A project's `read-only` on a kernel
/// without Landlock stopped the agent with `--sandbox read-only: ...`, a
/// flag the user never gave, and told a user whose own settings already
/// said `off` to write that in their settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AskedBy {
    /// `--sandbox` (or a library's caller).
    #[default]
    Flag,
    /// The user's own settings file.
    Settings,
    /// A project's settings file (this one), which tightened the user's mode.
    Project(PathBuf),
}

impl SandboxRequest {
    /// The extra roots with a leading `~` read as `home` (the machine's the
    /// commands run on): `"writableRoots": ["~/.cache"]` was taken as a
    /// folder named `~` and silently writable nowhere.
    pub fn extra_roots_under(&self, home: Option<&Path>) -> Vec<PathBuf> {
        self.extra_roots
            .iter()
            .map(|root| match home {
                Some(home) => crate::support::paths::expand_home(root, home),
                None => root.clone(),
            })
            .collect()
    }
}

/// What the sandbox of a session is, as the rest of the agent needs to know
/// it (the permission policy's `auto` mode runs bash unasked only when
/// `active`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxStatus {
    /// The mode in effect.
    pub mode: SandboxMode,
    /// The kernel's Landlock ABI as far as the rules use it; `None` when
    /// the kernel has no Landlock (or it was not asked: mode `off`).
    pub abi: Option<u8>,
    /// bash's writes are contained by the kernel (mode on, Landlock ABI 3+).
    pub active: bool,
    /// A sandboxed command can reach the network: allowed, or not
    /// containable here (TCP needs ABI 4; UDP is never contained).
    pub network_allowed: bool,
    /// The directories writes are limited to (empty when off or read-only).
    pub roots: Vec<PathBuf>,
    /// Directories asked to be writable that are not, being too broad
    /// ([`policy::too_broad`]).
    pub left_out: Vec<LeftOut>,
    /// Why the default sandbox fell back to off: the kernel's answer.
    pub unavailable: Option<KernelError>,
}

impl SandboxStatus {
    /// What to tell the user once at start, one line per thing: the sandbox
    /// missing (and why) or partial, a mode a project's settings chose, the
    /// directories left out; `None` when it is fully on as asked, or was
    /// turned off on purpose.
    pub fn notice(&self, requested: &SandboxRequest) -> Option<String> {
        let mut lines: Vec<String> = self.kernel_notice(requested).into_iter().collect();
        if let AskedBy::Project(file) = &requested.asked_by
            && self.mode != SandboxMode::Off
        {
            lines.push(format!(
                "Sandbox: {}, as {} asks (a project's settings may tighten the sandbox): {}. --sandbox on the command line overrides it",
                self.mode,
                file.display(),
                policy::writes_limited_to(&self.roots)
            ));
        }
        lines.extend(self.left_out.iter().map(|left_out| {
            let what = if left_out.temp {
                format!("$TMPDIR ({})", left_out.dir.display())
            } else {
                left_out.dir.display().to_string()
            };
            let fix = if left_out.temp {
                "Set TMPDIR to a folder of its own (such as /tmp)"
            } else {
                "Start the agent in a project folder, or pass --sandbox off to run without the sandbox knowingly"
            };
            format!(
                "Sandbox: {what} is {}: too broad to be writable (a sandbox around it holds nothing back), so it is not; {}. {fix}",
                left_out.why,
                policy::writes_limited_to(&self.roots)
            )
        }));
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// What the kernel could not do: the sandbox off by default (and the
    /// kernel's reason: Landlock missing, or refused as Docker's seccomp
    /// profile refuses it) or partial.
    fn kernel_notice(&self, requested: &SandboxRequest) -> Option<String> {
        let network_uncontained = !requested.allow_network && self.network_allowed;
        match (self.mode, self.abi) {
            (SandboxMode::Off, _) => self
                .unavailable
                .as_ref()
                .map(|reason| format!("Sandbox: off: {reason}; bash runs with your full rights")),
            (_, Some(abi)) if !self.active => Some(format!(
                "Sandbox: partial: Landlock ABI {abi} cannot refuse truncating files (ABI 3, Linux 6.2); network is not contained either"
            )),
            (_, Some(abi)) if network_uncontained => Some(format!(
                "Sandbox: partial: writes are contained, but Landlock ABI {abi} cannot refuse TCP (ABI 4, Linux 6.7); the network stays open"
            )),
            (_, Some(abi)) if abi < ABSTRACT_SOCKETS_CONTAINED_FROM_ABI => Some(format!(
                "Sandbox: partial: writes and TCP are contained, but Landlock ABI {abi} cannot refuse abstract unix sockets (ABI 6, Linux 6.12): commands can reach services listening on them (X11, some D-Bus buses)"
            )),
            _ => None,
        }
    }
}

/// Why a session's sandbox cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The user (or a project's settings) asked for a sandbox the kernel
    /// cannot enforce: refusing is safer than running without it.
    #[error("{}", unavailable(*mode, reason, asked_by))]
    Unavailable {
        /// The mode asked for.
        mode: SandboxMode,
        /// Why the kernel cannot.
        reason: KernelError,
        /// Who asked for it.
        asked_by: AskedBy,
    },
}

/// [`SandboxError::Unavailable`]'s text: who asked for `mode`, why the
/// kernel cannot, and how to run without it. A project's settings cannot
/// loosen the sandbox (nor can the user's settings undo a project's
/// tightening), so for a project's mode the way out is the command line,
/// which wins over every settings file.
fn unavailable(mode: SandboxMode, reason: &KernelError, asked_by: &AskedBy) -> String {
    match asked_by {
        AskedBy::Flag => format!(
            "--sandbox {mode}: {reason}. Use --sandbox off (or \"sandbox\": {{\"mode\": \"off\"}} in settings.json) to run without it"
        ),
        AskedBy::Settings => format!(
            "\"sandbox\": {{\"mode\": \"{mode}\"}} in settings.json: {reason}. Use --sandbox off, or \"mode\": \"off\" there, to run without it"
        ),
        AskedBy::Project(file) => format!(
            "{} asks for the sandbox in {mode} mode: {reason}. A project's settings may only tighten the sandbox, so the agent does not start without it; pass --sandbox off to run this project unsandboxed knowingly (the command line overrides a project's settings)",
            file.display()
        ),
    }
}

/// What a kernel's answer makes of a request.
struct KernelVerdict {
    /// The mode in effect.
    mode: SandboxMode,
    /// What the kernel enforces; `None` when it was not asked or cannot.
    enforced: Option<Enforced>,
    /// Why the default fell back to off.
    unavailable: Option<KernelError>,
}

impl KernelVerdict {
    /// The mode `request` gets from a kernel that answered `probed`
    /// (`None`: not asked): a mode asked for that it cannot enforce is an
    /// error, the default falls back to off.
    fn of(
        request: &SandboxRequest,
        probed: Option<Result<Enforced, KernelError>>,
    ) -> Result<Self, SandboxError> {
        let asked = request.mode.unwrap_or_default();
        let (mode, enforced, unavailable) = match probed {
            None => (SandboxMode::Off, None, None),
            Some(Ok(enforced)) => (asked, Some(enforced), None),
            Some(Err(reason)) if request.mode.is_some() => {
                return Err(SandboxError::Unavailable {
                    mode: asked,
                    reason,
                    asked_by: request.asked_by.clone(),
                });
            }
            Some(Err(reason)) => (SandboxMode::Off, None, Some(reason)),
        };
        Ok(KernelVerdict {
            mode,
            enforced,
            unavailable,
        })
    }
}

/// The sandbox of a session: its policy, the helper that applies it to
/// bash, and its status.
#[derive(Debug, Clone)]
pub struct Sandbox {
    policy: SandboxPolicy,
    helper: PathBuf,
    status: SandboxStatus,
}

impl Sandbox {
    /// Decides the sandbox for a session in `workspace_root`: asks the
    /// kernel what it supports (once), and falls back to off only when the
    /// mode was not asked for explicitly. `helper` is a binary whose `main`
    /// calls [`run_if_invoked`] (the `coding-agent` binary: itself).
    pub fn start(
        request: &SandboxRequest,
        workspace_root: &Path,
        helper: PathBuf,
    ) -> Result<Self, SandboxError> {
        let mode = request.mode.unwrap_or_default();
        let probed = match mode {
            SandboxMode::Off => None,
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => Some(kernel::probe()),
        };
        Self::decide(request, workspace_root, helper, probed)
    }

    /// The sandbox of a session whose commands run on another host, whose
    /// helper answered `probed` (its kernel's [`kernel::probe`]) and
    /// `granted` (what the policy made there lets commands write: that
    /// host's home folder and `$TMPDIR` decide it, not this machine's).
    /// Its status is what the permission policy counts on and what the
    /// start notice says; the remote helper applies the policy there
    /// (`docs/remote.md`), so its own bash operations are not for these
    /// commands.
    pub fn for_remote(
        request: &SandboxRequest,
        probed: Result<Enforced, KernelError>,
        granted: Grant,
    ) -> Result<Self, SandboxError> {
        let asked = request.mode.unwrap_or_default() != SandboxMode::Off;
        let verdict = KernelVerdict::of(request, asked.then_some(probed))?;
        // The helper worked the grant out for the mode asked; a default
        // that fell back to off grants nothing.
        let granted = if verdict.mode == SandboxMode::Off {
            Grant::default()
        } else {
            granted
        };
        let policy = SandboxPolicy {
            mode: verdict.mode,
            writable_roots: granted.roots.clone(),
            allow_network: request.allow_network,
        };
        Ok(Self::granting(verdict, policy, granted, PathBuf::new()))
    }

    /// [`Sandbox::start`] once the kernel has answered (`None`: not asked).
    fn decide(
        request: &SandboxRequest,
        workspace_root: &Path,
        helper: PathBuf,
        probed: Option<Result<Enforced, KernelError>>,
    ) -> Result<Self, SandboxError> {
        let verdict = KernelVerdict::of(request, probed)?;
        let mut roots = vec![workspace_root.to_path_buf()];
        roots.extend(request.extra_roots_under(crate::support::paths::home_dir().as_deref()));
        let (policy, granted) = SandboxPolicy::for_workspace_saying(verdict.mode, &roots);
        let policy = policy.with_network(request.allow_network);
        Ok(Self::granting(verdict, policy, granted, helper))
    }

    /// The sandbox of `policy` (its mode the verdict's), which grants
    /// `granted` on the host that enforces it.
    fn granting(
        verdict: KernelVerdict,
        policy: SandboxPolicy,
        granted: Grant,
        helper: PathBuf,
    ) -> Self {
        let KernelVerdict {
            mode,
            enforced,
            unavailable,
        } = verdict;
        let on = mode != SandboxMode::Off;
        let status = SandboxStatus {
            mode,
            abi: enforced.map(|enforced| enforced.abi),
            active: on && enforced.is_some_and(Enforced::writes_contained),
            network_allowed: !on
                || policy.allow_network
                || !enforced.is_some_and(Enforced::network_contained),
            roots: granted.roots,
            left_out: granted.left_out,
            unavailable,
        };
        Sandbox {
            policy,
            helper,
            status,
        }
    }

    /// No sandbox: every tool runs with the user's rights.
    pub fn off() -> Self {
        Sandbox {
            policy: SandboxPolicy::for_workspace(SandboxMode::Off, &[]).with_network(true),
            helper: PathBuf::new(),
            status: SandboxStatus {
                mode: SandboxMode::Off,
                abi: None,
                active: false,
                network_allowed: true,
                roots: Vec::new(),
                left_out: Vec::new(),
                unavailable: None,
            },
        }
    }

    /// What the sandbox is.
    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    /// The policy commands and file tools run under.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// How bash commands (the tool's and the user's) run here.
    pub fn bash_operations(&self) -> Arc<dyn BashOperations> {
        match self.status.mode {
            SandboxMode::Off => Arc::new(LocalBashOperations::new()),
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => Arc::new(
                SandboxedBashOperations::new(&self.helper, self.policy.clone()),
            ),
        }
    }

    /// The built-in tool called `name`, with bash, `write` and `edit`
    /// confined to the sandbox; `None` for an unknown name.
    pub fn builtin_tool(&self, name: &str) -> Option<Arc<dyn ToolDefinition>> {
        if self.status.mode == SandboxMode::Off {
            return builtin_tool(name);
        }
        let policy = self.policy.clone();
        let tool: Arc<dyn ToolDefinition> = match name {
            "bash" => Arc::new(Typed::new(BashTool::new(self.bash_operations()))),
            "write" => Arc::new(Typed::new(WriteTool::new(Arc::new(Sandboxed::new(policy))))),
            "edit" => Arc::new(Typed::new(EditTool::new(Arc::new(Sandboxed::new(policy))))),
            other => return builtin_tool(other),
        };
        Some(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(
        request: &SandboxRequest,
        probed: Option<Result<Enforced, KernelError>>,
    ) -> Result<Sandbox, SandboxError> {
        decide_in(Path::new(env!("CARGO_MANIFEST_DIR")), request, probed)
    }

    fn decide_in(
        workspace: &Path,
        request: &SandboxRequest,
        probed: Option<Result<Enforced, KernelError>>,
    ) -> Result<Sandbox, SandboxError> {
        Sandbox::decide(request, workspace, PathBuf::from("/helper"), probed)
    }

    /// What the default request gives on a kernel probed as `probed`: the
    /// status and the notice said at start.
    fn by_default(probed: Result<Enforced, KernelError>) -> (SandboxStatus, Option<String>) {
        let request = SandboxRequest::default();
        let status = decide(&request, Some(probed)).unwrap().status().clone();
        let notice = status.notice(&request);
        (status, notice)
    }

    #[test]
    fn the_default_falls_back_to_off_with_a_notice_where_landlock_is_missing() {
        let (status, notice) = by_default(Err(KernelError::Unavailable));
        assert_eq!(status.mode, SandboxMode::Off);
        assert!(!status.active);
        assert_eq!(
            notice.as_deref(),
            Some(
                "Sandbox: off: Landlock is not available (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter and, in a container, a seccomp profile that allows its system calls); bash runs with your full rights"
            )
        );
    }

    /// In Docker, whose seccomp profile refuses the Landlock system calls,
    /// the notice blamed the kernel's version.
    #[test]
    fn the_default_falls_back_to_off_saying_the_kernels_own_reason() {
        let refused = KernelError::Refused("operation not permitted".into());
        let (status, notice) = by_default(Err(refused));
        assert_eq!(status.mode, SandboxMode::Off);
        assert_eq!(
            notice.as_deref(),
            Some(
                "Sandbox: off: Landlock refused the sandbox rules: operation not permitted; bash runs with your full rights"
            )
        );
    }

    /// Started in `/`, the workspace was all of it: `touch /etc/x` ran in
    /// the sandbox, and nothing said so.
    #[test]
    fn a_workspace_at_the_root_is_not_writable_and_the_notice_says_why() {
        let request = SandboxRequest::default();
        let sandbox = decide_in(Path::new("/"), &request, Some(Ok(Enforced { abi: 6 }))).unwrap();
        let status = sandbox.status();
        assert!(status.active);
        assert!(!status.roots.contains(&PathBuf::from("/")));
        assert!(!sandbox.policy().permits_write(Path::new("/etc/x")));
        assert_eq!(
            status.notice(&request),
            Some(format!(
                "Sandbox: / is the root of the file system: too broad to be writable (a sandbox around it holds nothing back), so it is not; {}. Start the agent in a project folder, or pass --sandbox off to run without the sandbox knowingly",
                policy::writes_limited_to(&status.roots)
            ))
        );
    }

    /// A project (even an untrusted one) may tighten the sandbox; the user
    /// hears which file did, and its refusal names that file and a way out
    /// that works (not a flag they never gave, nor a setting they have).
    #[test]
    fn a_mode_a_project_asked_for_names_the_project_file() {
        let file = PathBuf::from("/srv/app/.coding-agent/settings.json");
        let request = SandboxRequest {
            mode: Some(SandboxMode::ReadOnly),
            asked_by: AskedBy::Project(file),
            ..SandboxRequest::default()
        };
        let sandbox = decide(&request, Some(Ok(Enforced { abi: 6 }))).unwrap();
        assert_eq!(
            sandbox.status().notice(&request).as_deref(),
            Some(
                "Sandbox: read-only, as /srv/app/.coding-agent/settings.json asks (a project's settings may tighten the sandbox): writes are limited to /dev/null-like devices. --sandbox on the command line overrides it"
            )
        );
        let error = decide(&request, Some(Err(KernelError::Unavailable))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/srv/app/.coding-agent/settings.json asks for the sandbox in read-only mode: Landlock is not available (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter and, in a container, a seccomp profile that allows its system calls). A project's settings may only tighten the sandbox, so the agent does not start without it; pass --sandbox off to run this project unsandboxed knowingly (the command line overrides a project's settings)"
        );
        let own = SandboxRequest {
            asked_by: AskedBy::Settings,
            ..request
        };
        let error = decide(&own, Some(Err(KernelError::Unavailable))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "\"sandbox\": {\"mode\": \"read-only\"} in settings.json: Landlock is not available (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter and, in a container, a seccomp profile that allows its system calls). Use --sandbox off, or \"mode\": \"off\" there, to run without it"
        );
    }

    #[test]
    fn a_tilde_in_the_writable_roots_is_the_home_directory() {
        let request = SandboxRequest {
            extra_roots: vec![
                "~/.cache".into(),
                "~".into(),
                "~other/x".into(),
                "/srv".into(),
            ],
            ..SandboxRequest::default()
        };
        assert_eq!(
            request.extra_roots_under(Some(Path::new("/home/me"))),
            [
                PathBuf::from("/home/me/.cache"),
                PathBuf::from("/home/me"),
                PathBuf::from("~other/x"),
                PathBuf::from("/srv")
            ]
        );
    }

    #[test]
    fn an_explicit_mode_fails_closed_where_landlock_is_missing() {
        let request = SandboxRequest {
            mode: Some(SandboxMode::WorkspaceWrite),
            ..SandboxRequest::default()
        };
        let error = decide(&request, Some(Err(KernelError::Unavailable))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--sandbox workspace-write: Landlock is not available (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter and, in a container, a seccomp profile that allows its system calls). Use --sandbox off (or \"sandbox\": {\"mode\": \"off\"} in settings.json) to run without it"
        );
    }

    #[test]
    fn a_full_kernel_gives_an_active_sandbox_without_notice() {
        let (status, notice) = by_default(Ok(Enforced { abi: 6 }));
        assert_eq!(status.mode, SandboxMode::WorkspaceWrite);
        assert!(status.active && !status.network_allowed);
        assert_eq!(status.roots[0], Path::new(env!("CARGO_MANIFEST_DIR")));
        assert_eq!(notice, None);
    }

    #[test]
    fn old_kernels_are_partial_and_say_what_is_missing() {
        let (tcp, notice) = by_default(Ok(Enforced { abi: 3 }));
        assert!(tcp.active && tcp.network_allowed);
        assert_eq!(
            notice.as_deref(),
            Some(
                "Sandbox: partial: writes are contained, but Landlock ABI 3 cannot refuse TCP (ABI 4, Linux 6.7); the network stays open"
            )
        );
        let (truncate, notice) = by_default(Ok(Enforced { abi: 2 }));
        assert!(!truncate.active);
        assert_eq!(
            notice.as_deref(),
            Some(
                "Sandbox: partial: Landlock ABI 2 cannot refuse truncating files (ABI 3, Linux 6.2); network is not contained either"
            )
        );
    }

    /// Linux 6.7 to 6.11 (Ubuntu 24.04's 6.8): the abstract sockets scope
    /// is dropped there, which was said nowhere.
    #[test]
    fn a_kernel_without_socket_scoping_says_so() {
        let (status, notice) = by_default(Ok(Enforced { abi: 5 }));
        assert!(status.active && !status.network_allowed);
        assert_eq!(
            notice.as_deref(),
            Some(
                "Sandbox: partial: writes and TCP are contained, but Landlock ABI 5 cannot refuse abstract unix sockets (ABI 6, Linux 6.12): commands can reach services listening on them (X11, some D-Bus buses)"
            )
        );
    }

    #[test]
    fn off_on_purpose_is_silent_and_runs_everything_unconfined() {
        let request = SandboxRequest {
            mode: Some(SandboxMode::Off),
            ..SandboxRequest::default()
        };
        let sandbox = decide(&request, None).unwrap();
        assert_eq!(sandbox.status(), Sandbox::off().status());
        assert_eq!(sandbox.status().notice(&request), None);
    }
}
