//! The flags that send every tool call to a remote host over SSH, shared by
//! the agent modes and `coding-agent tool`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use coding_agent::guard::policy::Places;
use coding_agent::remote::{RemoteHost, RemoteOptions, RemoteSettings, RemoteTarget};

use super::UsageError;

/// `--remote`, `--ssh-config`, `--ssh-option`.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// Run every tool on this host over SSH: [ssh://][user@]host[:port][/abs/path] or host:/abs/path
    #[arg(long, value_name = "TARGET")]
    pub remote: Option<String>,
    /// ssh configuration file for --remote (ssh -F)
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// ssh option for --remote, KEY=VALUE (ssh -o); repeatable
    #[arg(long, value_name = "KEY=VALUE")]
    pub ssh_option: Vec<String>,
}

impl RemoteArgs {
    /// Connects to the host the flags (else `settings`) name, if any; `dir`
    /// (a `--cwd`) replaces the target's directory. Fails, at start, with
    /// ssh's message; flags that name no host, or do not go together, are
    /// a usage error (exit 2, as any other mistake on the command line).
    pub async fn connect(
        &self,
        dir: Option<&Path>,
        settings: Option<&RemoteSettings>,
    ) -> anyhow::Result<Option<Arc<RemoteHost>>> {
        let defaults = settings.cloned().unwrap_or_default();
        let Some(value) = self.remote.clone().or(defaults.target) else {
            if self.ssh_config.is_some() || !self.ssh_option.is_empty() {
                return Err(UsageError::SshWithoutRemote.into());
            }
            return Ok(None);
        };
        let mut target = RemoteTarget::parse(&value).map_err(UsageError::from)?;
        if let Some(dir) = dir {
            if !dir.is_absolute() {
                return Err(UsageError::BadCwd {
                    path: dir.to_path_buf(),
                    reason: "with --remote, give the remote directory as an absolute path".into(),
                }
                .into());
            }
            target.dir = Some(dir.to_path_buf());
        }
        let ssh_options = if self.ssh_option.is_empty() {
            defaults.ssh_options
        } else {
            self.ssh_option.clone()
        };
        let options = RemoteOptions {
            ssh_config: self.ssh_config.clone().or(defaults.ssh_config),
            ssh_options,
            cache_dir: std::env::var_os("CODING_AGENT_REMOTE_CACHE")
                .map(PathBuf::from)
                .or(defaults.cache_dir),
            ..RemoteOptions::new(target)
        };
        let host = RemoteHost::connect(options)
            .await
            .with_context(|| format!("--remote {value}"))?;
        Ok(Some(Arc::new(host)))
    }
}

/// Where the permission policy judges paths: the tools' working directory
/// and home on the machine they act on, the remote host's with `--remote`
/// (writing to `<remote dir>/x` is inside the workspace there), else `cwd`
/// and this machine's `$HOME`.
pub fn policy_places(cwd: &Path, remote: Option<&RemoteHost>) -> Places {
    match remote {
        Some(host) => Places::at(host.cwd(), Some(host.home())),
        None => Places::for_cwd(cwd),
    }
}
