//! `--sandbox` and `--allow-network`, and the sandbox they and the settings
//! ask for (see `docs/permissions.md`).

use std::path::Path;

use anyhow::Context as _;
use clap::Args;
use coding_agent::remote::RemoteHost;
use coding_agent::remote::protocol::RemoteSandbox;
use coding_agent::remote::sandbox::remote_sandbox;
use coding_agent::sandbox::{Sandbox, SandboxMode, SandboxSettings};

use super::UsageError;

/// What bash (and write, edit) may change.
#[derive(Debug, Args)]
pub(super) struct SandboxArgs {
    /// Sandbox for bash, write and edit [default: workspace-write where the kernel has Landlock]
    #[arg(long, value_enum, value_name = "MODE")]
    sandbox: Option<SandboxMode>,
    /// Let sandboxed commands use the network (TCP is refused otherwise)
    #[arg(long)]
    allow_network: bool,
}

/// The sandbox bash, write and edit run under in `workspace_root`: the flags
/// over the settings, the kernel asked once, and what is missing or partial
/// said once (stderr, or the interactive transcript). A mode asked for that
/// the kernel cannot enforce is a usage error.
pub(super) fn start_sandbox(
    flags: &SandboxArgs,
    settings: &SandboxSettings,
    workspace_root: &Path,
) -> anyhow::Result<Sandbox> {
    let request = settings.request(flags.sandbox, flags.allow_network);
    let helper = coding_agent::sandbox::running_executable()
        .context("cannot find this program, which bash commands run through to be sandboxed")?;
    let sandbox = Sandbox::start(&request, workspace_root, helper).map_err(UsageError::from)?;
    if let Some(notice) = sandbox.status().notice(&request) {
        tracing::warn!("{notice}");
    }
    Ok(sandbox)
}

/// The sandbox of permission mode bypass: none, as its warning says. A
/// `--sandbox` other than `off` given with it is dropped, and said so:
/// `--sandbox read-only --permission-mode bypass` ran bash unsandboxed with
/// only the general warning, which did not name the flag it overrode.
pub(super) fn bypass_sandbox(flags: &SandboxArgs) -> Sandbox {
    if let Some(mode) = flags.sandbox.filter(|mode| *mode != SandboxMode::Off) {
        tracing::warn!(
            "--sandbox {} is ignored: permission mode bypass runs bash without a sandbox (use --permission-mode auto or default to keep it)",
            mode.as_str()
        );
    }
    Sandbox::off()
}

/// The sandbox of a session whose tools run on `host`, decided as
/// [`start_sandbox`] decides it but against the remote kernel (its helper
/// probes Landlock there), and what bash runs under there.
pub(super) async fn start_remote_sandbox(
    flags: &SandboxArgs,
    settings: &SandboxSettings,
    host: &RemoteHost,
) -> anyhow::Result<(Sandbox, Option<RemoteSandbox>)> {
    let request = settings.request(flags.sandbox, flags.allow_network);
    let sandboxing = remote_sandbox(&request, host)
        .await
        .map_err(UsageError::from)?;
    if let Some(notice) = &sandboxing.notice {
        tracing::warn!("{notice}");
    }
    Ok((sandboxing.sandbox, sandboxing.commands))
}
