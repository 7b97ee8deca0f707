//! The sandbox on the remote host: the helper probes Landlock where it runs,
//! and runs bash there under the session's policy with the remote working
//! directory as the workspace. The permission policy counts on the sandbox
//! only when that kernel enforces it (`docs/remote.md`, "Paths, ~ and the
//! permission policy").

use super::client::Lost;
use super::connection::RemoteHost;
use super::protocol::{Call, Probed, RemoteSandbox, Reply};
use crate::sandbox::{Grant, KernelError, Sandbox, SandboxError, SandboxMode, SandboxRequest};

/// A session's sandbox on a remote host.
#[derive(Debug)]
pub struct RemoteSandboxing {
    /// Its status, for the permission policy.
    pub sandbox: Sandbox,
    /// What the helper runs bash under; `None`: unconfined.
    pub commands: Option<RemoteSandbox>,
    /// What to tell the user once at start.
    pub notice: Option<String>,
}

/// Why a remote session's sandbox cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RemoteSandboxError {
    /// The helper could not be asked.
    #[error("cannot ask {host} whether it can sandbox commands: {lost}")]
    Lost {
        /// `[user@]host[:port]`.
        host: String,
        /// Why.
        lost: Lost,
    },
    /// A mode asked for that the remote kernel cannot enforce.
    #[error("{error} (on {host})")]
    Unavailable {
        /// `[user@]host[:port]`.
        host: String,
        /// The local wording.
        error: SandboxError,
    },
}

/// What the kernel of `host` enforces, and what `sandbox`'s policy grants
/// there, as its helper finds them.
pub async fn probe(host: &RemoteHost, sandbox: &RemoteSandbox) -> Result<Probed, Lost> {
    match host.ask(Call::SandboxProbe(sandbox.clone())).await? {
        Reply::Sandbox(probed) => Ok(probed),
        other => Err(Lost(format!("the remote helper answered {other:?}"))),
    }
}

/// Decides the sandbox of a session on `host` as [`Sandbox::start`] does
/// locally, against the remote kernel: a mode asked for that it cannot
/// enforce is an error, the default falls back to none and says so. What
/// it lets commands write (and leaves out as too broad) is worked out by
/// the helper, with the remote home folder and `$TMPDIR`.
pub async fn remote_sandbox(
    request: &SandboxRequest,
    host: &RemoteHost,
) -> Result<RemoteSandboxing, RemoteSandboxError> {
    let name = host.authority();
    let mut workspace_roots = vec![host.cwd().to_path_buf()];
    workspace_roots.extend(request.extra_roots_under(Some(host.home())));
    let asked = RemoteSandbox {
        mode: request.mode.unwrap_or_default(),
        workspace_roots,
        allow_network: request.allow_network,
    };
    let probed = if asked.mode == SandboxMode::Off {
        Probed {
            kernel: Err(KernelError::Unavailable),
            granted: Grant::default(),
        }
    } else {
        probe(host, &asked)
            .await
            .map_err(|lost| RemoteSandboxError::Lost {
                host: name.clone(),
                lost,
            })?
    };
    decided(&name, request, asked, probed)
}

/// The sandbox of a session on `host` whose helper answered `probed` to
/// the probe of `asked`.
fn decided(
    host: &str,
    request: &SandboxRequest,
    asked: RemoteSandbox,
    probed: Probed,
) -> Result<RemoteSandboxing, RemoteSandboxError> {
    let unavailable = probed.kernel.as_ref().err().cloned();
    let sandbox = Sandbox::for_remote(request, probed.kernel, probed.granted).map_err(|error| {
        RemoteSandboxError::Unavailable {
            host: host.to_owned(),
            error,
        }
    })?;
    let commands = (sandbox.status().mode != SandboxMode::Off).then_some(asked);
    let notice = notice(host, request, &sandbox, unavailable.as_ref());
    Ok(RemoteSandboxing {
        sandbox,
        commands,
        notice,
    })
}

/// What to tell the user about the sandbox on `host`: on, partial, or not
/// available there and why; nothing when it was turned off on purpose.
fn notice(
    host: &str,
    request: &SandboxRequest,
    sandbox: &Sandbox,
    unavailable: Option<&KernelError>,
) -> Option<String> {
    let status = sandbox.status();
    match (unavailable, status.mode) {
        (Some(reason), _) if request.mode.is_none() => Some(format!(
            "Sandbox: not available on {host}: {reason}; bash runs there with the remote user's full rights"
        )),
        (_, SandboxMode::Off) => None,
        _ => Some(match status.notice(request) {
            Some(partial) => format!("{partial} (on {host})"),
            None => format!(
                "Sandbox: on {host}: bash runs there under Landlock ({})",
                status.mode
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::sandbox::{Enforced, LeftOut};

    /// The session's sandbox in `workspace` on `box`, whose helper answered
    /// `kernel` and `granted`.
    fn decide_in(
        workspace: &str,
        request: &SandboxRequest,
        kernel: Result<Enforced, KernelError>,
        granted: Grant,
    ) -> Result<RemoteSandboxing, RemoteSandboxError> {
        let asked = RemoteSandbox {
            mode: request.mode.unwrap_or_default(),
            workspace_roots: vec![workspace.into()],
            allow_network: request.allow_network,
        };
        decided("box", request, asked, Probed { kernel, granted })
    }

    /// What a helper grants a session in `/srv/app`.
    fn in_srv_app() -> Grant {
        Grant {
            roots: ["/srv/app", "/tmp", "/dev/shm"].map(PathBuf::from).to_vec(),
            left_out: Vec::new(),
        }
    }

    fn said(request: &SandboxRequest, kernel: Result<Enforced, KernelError>) -> Option<String> {
        decide_in("/srv/app", request, kernel, in_srv_app())
            .unwrap()
            .notice
    }

    #[test]
    fn the_notice_says_whether_the_remote_host_sandboxes() {
        let default = SandboxRequest::default();
        assert_eq!(
            said(&default, Ok(Enforced { abi: 6 })).as_deref(),
            Some("Sandbox: on box: bash runs there under Landlock (workspace-write)")
        );
        assert_eq!(
            said(&default, Err(KernelError::Unavailable)).as_deref(),
            Some(
                "Sandbox: not available on box: Landlock is not available (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter and, in a container, a seccomp profile that allows its system calls); bash runs there with the remote user's full rights"
            )
        );
        let off = SandboxRequest {
            mode: Some(SandboxMode::Off),
            ..SandboxRequest::default()
        };
        assert_eq!(said(&off, Err(KernelError::Unavailable)), None);
    }

    /// Started in the remote user's home (`--remote box:~`), the helper
    /// left the home out (every write in bash failed) while the notice,
    /// worked out with this machine's home and `$TMPDIR`, said the sandbox
    /// was simply on; and a remote directory that happened to be this
    /// machine's home was called "your home folder". What the session is
    /// told, and what its status says is writable, is the remote's answer.
    #[test]
    fn the_notice_and_the_roots_are_what_the_remote_host_grants() {
        let remote_home = "/home/someone-remote";
        let granted = Grant {
            roots: ["/var/tmp/remote", "/tmp", "/dev/shm"]
                .map(PathBuf::from)
                .to_vec(),
            left_out: vec![LeftOut {
                dir: remote_home.into(),
                why: "your home folder".into(),
                temp: false,
            }],
        };
        let request = SandboxRequest::default();
        let in_home = decide_in(
            remote_home,
            &request,
            Ok(Enforced { abi: 6 }),
            granted.clone(),
        )
        .unwrap();
        let status = in_home.sandbox.status();
        assert!(status.active);
        assert_eq!(
            (&status.roots, &status.left_out),
            (&granted.roots, &granted.left_out)
        );
        assert_eq!(
            in_home.notice.as_deref(),
            Some(
                "Sandbox: /home/someone-remote is your home folder: too broad to be writable (a sandbox around it holds nothing back), so it is not; writes are limited to /var/tmp/remote, /tmp, /dev/shm and /dev/null-like devices. Start the agent in a project folder, or pass --sandbox off to run without the sandbox knowingly (on box)"
            )
        );
        assert_eq!(
            in_home.commands.map(|commands| commands.workspace_roots),
            Some(vec![PathBuf::from(remote_home)])
        );

        // This machine's home is a project folder like any other there.
        let Some(local_home) = crate::support::paths::home_dir() else {
            return;
        };
        let mut granted = in_srv_app();
        granted.roots[0].clone_from(&local_home);
        let local_home = local_home.to_string_lossy();
        let there = decide_in(&local_home, &request, Ok(Enforced { abi: 6 }), granted).unwrap();
        assert_eq!(
            there.notice.as_deref(),
            Some("Sandbox: on box: bash runs there under Landlock (workspace-write)")
        );
    }

    #[test]
    fn a_sandbox_the_remote_kernel_cannot_enforce_counts_for_nothing() {
        let fallen_back = decide_in(
            "/srv/app",
            &SandboxRequest::default(),
            Err(KernelError::Unavailable),
            in_srv_app(),
        )
        .unwrap();
        let status = fallen_back.sandbox.status();
        assert!(!status.active);
        assert!(status.roots.is_empty(), "{status:?}");
        assert_eq!(fallen_back.commands, None);
        let asked = SandboxRequest {
            mode: Some(SandboxMode::WorkspaceWrite),
            ..SandboxRequest::default()
        };
        assert!(
            decide_in(
                "/srv/app",
                &asked,
                Err(KernelError::Unavailable),
                in_srv_app()
            )
            .is_err()
        );
    }
}
