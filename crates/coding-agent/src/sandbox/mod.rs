//! The sandbox: what bash, `write` and `edit` may change, enforced by the
//! kernel (Linux Landlock) for bash and by the tools' Operations for the
//! in-process tools. See `docs/permissions.md` ("Sandbox") for what it does
//! and does not contain.
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
pub use self::policy::{SandboxMode, SandboxPolicy};
pub use self::settings::SandboxSettings;

use crate::definition::ToolDefinition;
use crate::definition::Typed;
use crate::tools::bash::BashTool;
use crate::tools::bash::ops::{BashOperations, LocalBashOperations};
use crate::tools::write::ops::LocalFileOperations;
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
}

impl SandboxStatus {
    /// What to tell the user once at start, when the sandbox is missing or
    /// partial; `None` when it is fully on or was turned off on purpose.
    pub fn notice(&self, requested: &SandboxRequest) -> Option<String> {
        let network_uncontained = !requested.allow_network && self.network_allowed;
        match (self.mode, self.abi) {
            (SandboxMode::Off, None) if requested.mode.is_none() => Some(format!(
                "Sandbox: off: {}; bash runs with your full rights",
                KernelError::Unavailable
            )),
            (SandboxMode::Off, _) => None,
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
    /// The user asked for a sandbox the kernel cannot enforce: refusing is
    /// safer than running without it.
    #[error(
        "--sandbox {mode}: {reason}. Use --sandbox off (or \"sandbox\": {{\"mode\": \"off\"}} in settings.json) to run without it"
    )]
    Unavailable {
        /// The mode asked for.
        mode: SandboxMode,
        /// Why the kernel cannot.
        reason: KernelError,
    },
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
    /// kernel answered `probed` (the remote helper's [`kernel::probe`]).
    /// Its status is what the permission policy counts on; the remote helper
    /// applies the policy there (`docs/remote.md`), so its own bash
    /// operations are not for these commands.
    pub fn for_remote(
        request: &SandboxRequest,
        workspace_root: &Path,
        probed: Result<Enforced, KernelError>,
    ) -> Result<Self, SandboxError> {
        let asked = request.mode.unwrap_or_default() != SandboxMode::Off;
        Self::decide(
            request,
            workspace_root,
            PathBuf::new(),
            asked.then_some(probed),
        )
    }

    /// [`Sandbox::start`] once the kernel has answered (`None`: not asked).
    fn decide(
        request: &SandboxRequest,
        workspace_root: &Path,
        helper: PathBuf,
        probed: Option<Result<Enforced, KernelError>>,
    ) -> Result<Self, SandboxError> {
        let asked = request.mode.unwrap_or_default();
        let (mode, enforced) = match probed {
            None => (SandboxMode::Off, None),
            Some(Ok(enforced)) => (asked, Some(enforced)),
            Some(Err(reason)) if request.mode.is_some() => {
                return Err(SandboxError::Unavailable {
                    mode: asked,
                    reason,
                });
            }
            Some(Err(_)) => (SandboxMode::Off, None),
        };
        let mut roots = vec![workspace_root.to_path_buf()];
        roots.extend(request.extra_roots_under(crate::support::paths::home_dir().as_deref()));
        let policy = SandboxPolicy::for_workspace(mode, &roots).with_network(request.allow_network);
        let on = mode != SandboxMode::Off;
        let status = SandboxStatus {
            mode,
            abi: enforced.map(|enforced| enforced.abi),
            active: on && enforced.is_some_and(Enforced::writes_contained),
            network_allowed: !on
                || request.allow_network
                || !enforced.is_some_and(Enforced::network_contained),
            roots: policy.effective_roots(),
        };
        Ok(Sandbox {
            policy,
            helper,
            status,
        })
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
            "write" => Arc::new(Typed::new(WriteTool::new(Arc::new(Sandboxed::new(
                Arc::new(LocalFileOperations),
                policy,
            ))))),
            "edit" => Arc::new(Typed::new(EditTool::new(Arc::new(Sandboxed::new(
                Arc::new(LocalFileOperations),
                policy,
            ))))),
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
        Sandbox::decide(request, Path::new("/"), PathBuf::from("/helper"), probed)
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
                "Sandbox: off: Landlock is not available on this kernel (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter); bash runs with your full rights"
            )
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
            "--sandbox workspace-write: Landlock is not available on this kernel (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter). Use --sandbox off (or \"sandbox\": {\"mode\": \"off\"} in settings.json) to run without it"
        );
    }

    #[test]
    fn a_full_kernel_gives_an_active_sandbox_without_notice() {
        let (status, notice) = by_default(Ok(Enforced { abi: 6 }));
        assert_eq!(status.mode, SandboxMode::WorkspaceWrite);
        assert!(status.active && !status.network_allowed);
        assert_eq!(status.roots[0], PathBuf::from("/"));
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
