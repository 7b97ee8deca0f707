//! The sandbox on the remote host: the helper probes Landlock where it runs,
//! and runs bash there under the session's policy with the remote working
//! directory as the workspace. The permission policy counts on the sandbox
//! only when that kernel enforces it (`docs/remote.md`, "Paths, ~ and the
//! permission policy").

use super::client::Lost;
use super::connection::RemoteHost;
use super::protocol::{Call, RemoteSandbox, Reply};
use crate::sandbox::{Enforced, KernelError, Sandbox, SandboxError, SandboxMode, SandboxRequest};

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

/// What the kernel of `host` enforces, as its helper finds it.
pub async fn probe(host: &RemoteHost) -> Result<Result<Enforced, KernelError>, Lost> {
    match host.call(Call::SandboxProbe, &Default::default()).await? {
        Reply::Sandbox(probed) => Ok(probed),
        other => Err(Lost(format!("the remote helper answered {other:?}"))),
    }
}

/// Decides the sandbox of a session on `host` as [`Sandbox::start`] does
/// locally, against the remote kernel: a mode asked for that it cannot
/// enforce is an error, the default falls back to none and says so.
pub async fn remote_sandbox(
    request: &SandboxRequest,
    host: &RemoteHost,
) -> Result<RemoteSandboxing, RemoteSandboxError> {
    let name = host.authority();
    let probed = if request.mode == Some(SandboxMode::Off) {
        Err(KernelError::Unavailable)
    } else {
        probe(host).await.map_err(|lost| RemoteSandboxError::Lost {
            host: name.clone(),
            lost,
        })?
    };
    let unavailable = probed.as_ref().err().cloned();
    let sandbox = Sandbox::for_remote(request, host.cwd(), probed).map_err(|error| {
        RemoteSandboxError::Unavailable {
            host: name.clone(),
            error,
        }
    })?;
    let status = sandbox.status();
    let commands = (status.mode != SandboxMode::Off).then(|| {
        let mut workspace_roots = vec![host.cwd().to_path_buf()];
        workspace_roots.extend(request.extra_roots_under(Some(host.home())));
        RemoteSandbox {
            mode: status.mode,
            workspace_roots,
            allow_network: request.allow_network,
        }
    });
    let notice = notice(&name, request, &sandbox, unavailable.as_ref());
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
    use std::path::Path;

    use super::*;

    fn said(request: &SandboxRequest, probed: Result<Enforced, KernelError>) -> Option<String> {
        let unavailable = probed.as_ref().err().cloned();
        let sandbox = Sandbox::for_remote(request, Path::new("/srv/app"), probed).unwrap();
        notice("box", request, &sandbox, unavailable.as_ref())
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

    #[test]
    fn a_sandbox_the_remote_kernel_cannot_enforce_counts_for_nothing() {
        let sandbox = Sandbox::for_remote(
            &SandboxRequest::default(),
            Path::new("/srv/app"),
            Err(KernelError::Unavailable),
        )
        .unwrap();
        assert!(!sandbox.status().active);
        let asked = SandboxRequest {
            mode: Some(SandboxMode::WorkspaceWrite),
            ..SandboxRequest::default()
        };
        assert!(
            Sandbox::for_remote(&asked, Path::new("/srv/app"), Err(KernelError::Unavailable))
                .is_err()
        );
    }
}
