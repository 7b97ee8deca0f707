//! `coding-agent policy check TOOL ARGS_JSON`: the permission policy's
//! verdict on one call, as one JSON object; nothing runs.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use coding_agent::guard::{self, GuardFlags, Mode, SandboxFacts};
use coding_agent::settings::{Settings, agent_dir};

use super::UsageError;
use super::remote::{RemoteArgs, policy_places};
use super::sandbox::{SandboxArgs, start_remote_sandbox, start_sandbox};
use super::tool::{read_arguments, working_directory};

#[derive(Debug, Subcommand)]
pub(super) enum PolicyCommand {
    /// Print the policy's verdict on one call as JSON:
    /// {"decision": "allow"|"ask"|"deny", "reason": "...", "rule": "..."|null}
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(super) struct CheckArgs {
    /// The tool (read, bash, edit, write, grep, find, ls, mcp__server__tool, ...)
    tool: String,
    /// The call's arguments as JSON, or `-` to read them from standard input
    args_json: String,
    /// The workspace the call is judged in [default: the current directory]
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    guard: GuardArgs,
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Judge the call as the tools on a remote host would make it: paths
    /// against the remote directory (`--cwd` names it) and home
    #[command(flatten)]
    remote: RemoteArgs,
}

/// The permission flags of every command that runs tools.
#[derive(Debug, Args, Default)]
pub(super) struct GuardArgs {
    /// Permission mode: default, auto, plan or bypass [default: settings' defaultMode, else default]
    #[arg(long, value_name = "MODE")]
    permission_mode: Option<Mode>,
    /// Allow rule, e.g. 'bash(cargo test:*)' (repeatable)
    #[arg(long = "allow", value_name = "RULE")]
    allow: Vec<String>,
    /// Deny rule, e.g. 'write(/etc/**)' (repeatable)
    #[arg(long = "deny", value_name = "RULE")]
    deny: Vec<String>,
    /// Trust this project: its .coding-agent/settings.json may loosen the policy
    #[arg(long)]
    trust: bool,
}

impl GuardArgs {
    /// The flags as the guard takes them.
    pub(super) fn flags(&self) -> GuardFlags {
        GuardFlags {
            mode: self.permission_mode,
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            trust: self.trust,
        }
    }
}

pub(super) async fn run(command: PolicyCommand) -> anyhow::Result<()> {
    let PolicyCommand::Check(args) = command;
    // The policy's notices and what reading the settings warns of are
    // warnings like a session's, which CODING_AGENT_LOG filters.
    crate::logging::to_stderr();
    // With --remote (or the settings' `remote`, as a session has it),
    // --cwd names the remote directory; settings and trust stay those of
    // the local directory, as in a session.
    let settings_remote = Settings::global_remote(&agent_dir()).map_err(UsageError::from)?;
    let remote = args
        .remote
        .connect(args.cwd.as_deref(), settings_remote.as_ref())
        .await?;
    let local_dir = if remote.is_some() {
        None
    } else {
        args.cwd.as_deref()
    };
    let cwd = working_directory(local_dir)?;
    let arguments = read_arguments(&args.args_json).await?;
    let agent_dir = agent_dir();
    let setup = guard::config::load_in(
        &agent_dir,
        &cwd,
        policy_places(&cwd, remote.as_deref()),
        &args.guard.flags(),
        SandboxFacts::default(),
    )
    .map_err(UsageError::Guard)?;
    for notice in &setup.notices {
        tracing::warn!("{notice}");
    }
    // The sandbox a session here would get, for `auto` (bypass has none;
    // remote bash has the remote kernel's).
    let facts = if setup.policy.mode() == Mode::Bypass {
        SandboxFacts::default()
    } else {
        let trusted = guard::project_trusted(&agent_dir, &cwd, &args.guard.flags());
        let settings = Settings::load(&agent_dir, &cwd, trusted).map_err(UsageError::from)?;
        let sandbox = match &remote {
            Some(host) => {
                start_remote_sandbox(&args.sandbox, &settings.sandbox, host)
                    .await?
                    .0
            }
            None => start_sandbox(&args.sandbox, &settings.sandbox, &cwd)?,
        };
        guard::sandbox_facts(sandbox.status())
    };
    let verdict = setup
        .policy
        .with_sandbox(facts)
        .check(&args.tool, &arguments);
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &verdict).context("cannot write the verdict")?;
    writeln!(stdout).context("cannot write the verdict")
}
