//! What a resolved run is made of: its tools, its system prompt and its
//! session file, put together as the options of an agent session (and, for
//! the interactive UI, what its model picker and session list need).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coding_agent::app::ModelCatalog;
use coding_agent::app::{SessionOptions, select_tools_from};
use coding_agent::guard::policy::Places;
use coding_agent::guard::{self, Approver, Guard, Mode, NoApprover, RuleFiles, SandboxFacts};
use coding_agent::hooks::CommandHooks;
use coding_agent::hooks::load::load as load_hooks;
#[cfg(feature = "tui")]
use coding_agent::modes::interactive::InteractiveOptions;
#[cfg(feature = "tui")]
use coding_agent::modes::interactive::approval::InteractiveApprover;
use coding_agent::remote::{RemoteHost, RemoteOperations, remote_tool};
use coding_agent::sandbox::Sandbox;
use coding_agent::session::{SessionError, SessionManager, find_session_by_id, session_dir};
use coding_agent::settings::{
    ModelFlags, SETTINGS_FILE, project_settings_file, provider_for, resolve_model,
};
use coding_agent::thinking::ThinkingOptions;
use coding_agent::tools::BUILTIN_TOOL_NAMES;

use super::instructions::InstructionSources;
use super::resolve::Resolved;
use super::sandbox::{bypass_sandbox, start_remote_sandbox, start_sandbox};
use super::{ModeArg, RunArgs, UsageError};

/// A run ready to dispatch.
pub(super) struct Built {
    /// The non-interactive mode.
    pub mode: ModeArg,
    /// The agent session's parts.
    pub options: SessionOptions,
    /// Set when the interactive UI runs.
    #[cfg(feature = "tui")]
    pub interactive: Option<InteractiveOptions>,
    /// What bash, write and edit (and RPC's user bash) run under.
    pub sandbox: Sandbox,
    /// The Operations of the host the tools act on, with `--remote` (its
    /// bash sandboxed there when the remote kernel can).
    pub remote: Option<RemoteOperations>,
    /// Retry and compaction settings (the interactive UI reads its own).
    pub recovery: coding_agent::recovery::RecoverySettings,
    /// What RPC `set_model`, `cycle_model` and `get_available_models` choose from.
    pub models: ModelCatalog,
    /// An OpenAI-compatible endpoint to ask for its context window, when
    /// settings do not give one (llama.cpp's `/props`).
    pub probe_url: Option<String>,
    /// The MCP servers started for the run, whose tools the session offers.
    #[cfg(feature = "mcp")]
    pub mcp: Option<coding_agent::mcp::McpServers>,
}

/// Builds the run: unknown tool names are warned about on stderr (as Pi does)
/// and left out. With `remote`, the tools, their working directory and the
/// project's context files are the remote host's; the session and settings
/// stay local (keyed by the local directory).
pub(super) async fn build(
    args: &RunArgs,
    mut resolved: Resolved,
    remote: Option<Arc<RemoteHost>>,
) -> anyhow::Result<Built> {
    let session = open_session(args, &resolved.agent_dir, &resolved.cwd)?;
    let tools_host = remote.as_ref().map(|host| host.tools_host());
    restore_session_model(args, &mut resolved, &session);
    let cwd = resolved.cwd;
    let agent_dir = resolved.agent_dir;
    let start_provider = resolved.model.model.provider.clone();
    let recovery = resolved.settings.recovery(&start_provider);
    let probe_url = resolved.settings.window_probe_url(&resolved.model);
    let guard_flags = args.guard.flags();
    let places = super::remote::policy_places(&cwd, remote.as_deref());
    let permissions = guard::config::load_in(
        &agent_dir,
        &cwd,
        places.clone(),
        &guard_flags,
        SandboxFacts::default(),
    )
    .map_err(UsageError::Guard)?;
    for notice in &permissions.notices {
        tracing::warn!("{notice}");
    }
    // bypass runs nothing asked and nothing sandboxed (its warning says so);
    // remote bash is sandboxed by the remote kernel, when it can.
    let (sandbox, remote_commands) = match &remote {
        _ if permissions.policy.mode() == Mode::Bypass => (bypass_sandbox(&args.sandbox), None),
        Some(host) => start_remote_sandbox(&args.sandbox, &resolved.settings.sandbox, host).await?,
        None => (
            start_sandbox(&args.sandbox, &resolved.settings.sandbox, &cwd)?,
            None,
        ),
    };
    let remote_ops = remote
        .as_ref()
        .map(|host| RemoteOperations::new(Arc::clone(host)).with_sandbox(remote_commands));
    let (tools, unknown) = match &remote_ops {
        Some(ops) => select_tools_from(&resolved.tool_names, |name| remote_tool(name, ops)),
        None => select_tools_from(&resolved.tool_names, |name| sandbox.builtin_tool(name)),
    };
    for name in unknown {
        tracing::warn!(
            "Unknown tool \"{name}\". Valid tools: {}",
            BUILTIN_TOOL_NAMES.join(", ")
        );
    }
    let tool_cwd = remote
        .as_ref()
        .map_or_else(|| cwd.clone(), |host| host.cwd().to_path_buf());
    let project_trusted = guard::project_trusted(&agent_dir, &cwd, &guard_flags);
    let sources = InstructionSources::new(
        args,
        &resolved.settings,
        &agent_dir,
        &cwd,
        &tools,
        remote_ops.clone(),
        project_trusted,
    );
    let instructions = sources.load().await;
    #[cfg(feature = "mcp")]
    let mcp = super::mcp::start_servers(
        &args.mcp,
        &agent_dir,
        &cwd,
        project_trusted,
        resolved.mcp_tools.as_deref(),
        // The interactive UI and RPC take input while the servers start.
        (cfg!(feature = "tui") && resolved.interactive) || resolved.mode == ModeArg::Rpc,
    )
    .await?;
    let cycle = if args.models.is_empty() {
        resolved.settings.enabled_models.clone().unwrap_or_default()
    } else {
        args.models
            .iter()
            .map(|name| name.trim().to_owned())
            .collect()
    };
    let models = ModelCatalog {
        cycle,
        settings: resolved.settings,
        settings_path: agent_dir.join(SETTINGS_FILE),
        flags: resolved.flags,
        start_provider,
    };
    #[cfg(feature = "tui")]
    let saved_in = if args.no_session {
        None
    } else {
        Some(sessions_dir(args, &agent_dir, &cwd)?)
    };
    #[cfg(feature = "tui")]
    let interactive = resolved.interactive.then(|| InteractiveOptions {
        session_dir: saved_in,
        models: models.clone(),
        warnings: resolved.warnings,
        remote_host: remote.as_ref().map(|host| host.authority()),
        // Asked of the server when the run starts (`cli/dispatch.rs`).
        served_window: None,
        approvals: None,
        // The shell the tools use, set in `cli/dispatch.rs`.
        user_bash: None,
        // Where the tools act, set in `cli/dispatch.rs`.
        files: None,
        list_sessions: args.resume,
        #[cfg(feature = "mcp")]
        mcp: mcp.clone(),
        reload: Some({
            let sources = sources.clone();
            Arc::new(move || {
                let sources = sources.clone();
                Box::pin(async move { sources.load().await })
            })
        }),
    });
    #[cfg(not(feature = "tui"))]
    let _ = (resolved.interactive, resolved.warnings);
    let hooks = command_hooks(&agent_dir, &cwd, project_trusted, &places)?;
    if let (Some(hooks), Some(ops)) = (&hooks, &remote_ops) {
        // Agent hooks judge the files the agent's calls act on.
        hooks.set_project_tools(|name| remote_tool(name, ops), tool_cwd.clone())?;
    }
    let guard = Arc::new(
        Guard::new(
            permissions
                .policy
                .with_sandbox(guard::sandbox_facts(sandbox.status())),
            hooks.clone(),
            initial_approver(),
            RuleFiles {
                project: project_settings_file(&agent_dir, &cwd).filter(|_| project_trusted),
                global: agent_dir.join(SETTINGS_FILE),
            },
        )
        .with_approval_timeout(permissions.approval_timeout),
    );
    // The interactive UI asks in a prompt over the transcript.
    #[cfg(feature = "tui")]
    let interactive = interactive.map(|mut options| {
        let (approver, inbox) = InteractiveApprover::channel();
        guard.set_approver(Arc::new(approver));
        options.approvals = Some(inbox);
        options
    });
    let options = SessionOptions {
        provider: resolved.provider,
        model: resolved.model.model,
        cwd: tool_cwd,
        tools,
        system_prompt: instructions.system_prompt,
        session,
        hooks,
        guard: Some(guard),
        thinking: ThinkingOptions {
            explicit: resolved.thinking,
            default: models.settings.default_thinking_level,
        },
        prompt_templates: instructions.prompt_templates,
        tools_host,
    };
    Ok(Built {
        mode: resolved.mode,
        options,
        #[cfg(feature = "tui")]
        interactive,
        sandbox,
        remote: remote_ops,
        recovery,
        probe_url,
        models,
        #[cfg(feature = "mcp")]
        mcp,
    })
}

/// Who is asked when a call needs approval, until the mode puts in its own
/// ([`Guard::set_approver`]): the interactive UI a prompt over the
/// transcript (`modes/interactive/approval/`, set in [`build`]), RPC its
/// client (`modes/rpc/approval.rs`, set when RPC starts); print and JSON
/// modes keep this one, which refuses and says which rule would allow the
/// call.
fn initial_approver() -> Arc<dyn Approver> {
    Arc::new(NoApprover::new())
}

/// The command hooks of the settings (`None` when there are none), their
/// notices logged. A project's own hooks run only in a trusted project
/// ([`guard::project_trusted`]), so a cloned repository runs none of its own.
fn command_hooks(
    agent_dir: &Path,
    cwd: &Path,
    project_trusted: bool,
    places: &Places,
) -> Result<Option<Arc<CommandHooks>>, UsageError> {
    let loaded = load_hooks(agent_dir, cwd, project_trusted, places)?;
    for notice in &loaded.notices {
        tracing::warn!("{notice}");
    }
    Ok((!loaded.config.is_empty())
        .then(|| Arc::new(CommandHooks::new(loaded.config, cwd.to_path_buf()))))
}

/// The session the flags ask for: none, a given file, the latest of this
/// directory, or a new one.
/// A resumed session goes on with the model it used last, as Pi restores it,
/// unless the command line names one (`--model`, `--provider`,
/// `--base-url`): a session held on a local model must not quietly move to
/// the paid default. One that cannot be used now (its provider gone from the
/// settings, its key unset) is said, and the run goes on with the default.
fn restore_session_model(args: &RunArgs, resolved: &mut Resolved, session: &SessionManager) {
    if args.model.is_some() || args.provider.is_some() || args.base_url.is_some() {
        return;
    }
    let Some((provider, id)) = session.model() else {
        return;
    };
    let current = &resolved.model.model;
    if (current.provider.as_str(), current.id.as_str()) == (provider.as_str(), id.as_str()) {
        return;
    }
    // `--api-key` is the key of the provider the flags and settings chose:
    // another provider's server must not get it.
    let same_provider = provider == current.provider;
    let flags = ModelFlags {
        provider: Some(provider.clone()),
        model: Some(id.clone()),
        api_key: resolved.flags.api_key.clone().filter(|_| same_provider),
        ..resolved.flags.clone()
    };
    let env = |name: &str| std::env::var(name).ok();
    let settings_path = resolved.agent_dir.join(SETTINGS_FILE);
    let restored = resolve_model(&flags, &resolved.settings, &settings_path, &env)
        .and_then(|model| Ok((provider_for(&model)?, model)));
    match restored {
        Ok((provider, model)) => {
            resolved.provider = provider;
            resolved.model = model;
        }
        Err(error) => tracing::warn!(
            "the session last used {provider}/{id}, which cannot be used now ({error}); going on with {}/{}",
            current.provider,
            current.id
        ),
    }
}

fn open_session(args: &RunArgs, agent_dir: &Path, cwd: &Path) -> anyhow::Result<SessionManager> {
    if args.no_session {
        return Ok(SessionManager::in_memory(cwd));
    }
    let dir = sessions_dir(args, agent_dir, cwd)?;
    Ok(match (&args.session, &args.fork) {
        (Some(file), _) => {
            let path = session_path(file, &dir)?;
            SessionManager::open(&path, cwd).map_err(|error| named_session_error(error, &path))?
        }
        (None, Some(file)) => {
            let path = session_path(file, &dir)?;
            SessionManager::fork_from(&path, cwd, &dir)
                .map_err(|error| named_session_error(error, &path))?
        }
        _ if args.continue_session => SessionManager::continue_recent(cwd, &dir)?,
        _ => SessionManager::create(cwd, &dir),
    })
}

/// Why the session file `--session` or `--fork` names cannot be used: the
/// command line's mistake (exit 2, as for an id that names no session)
/// when it is about that file (not a session, a directory, unreadable);
/// a failure to write the fork's copy elsewhere is not.
fn named_session_error(error: SessionError, named: &Path) -> anyhow::Error {
    match &error {
        SessionError::Io { path, .. } if path != named => error.into(),
        _ => UsageError::Session(error).into(),
    }
}

/// Where sessions are saved and looked up: `--session-dir`, else the cwd's
/// folder in the agent directory. A `--session-dir` that exists and is not
/// a directory (or cannot be looked at) is refused before the run: every
/// save of the run failed once the model had answered (`cannot save the
/// session: session file afile/…jsonl: File exists`), and the answer was
/// lost with exit status 0.
pub(super) fn sessions_dir(
    args: &RunArgs,
    agent_dir: &Path,
    cwd: &Path,
) -> Result<PathBuf, UsageError> {
    let Some(dir) = &args.session_dir else {
        return Ok(session_dir(agent_dir, cwd));
    };
    let reason = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(dir.clone()),
        Ok(_) => "not a directory".to_owned(),
        // Made at the first save.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(dir.clone()),
        Err(error) => error.to_string(),
    };
    Err(UsageError::SessionDir {
        path: dir.clone(),
        reason,
    })
}

/// The file `--session` or `--fork` names: a file that exists, a path (it
/// has a `/` or ends in `.jsonl`: a new session is saved there), else the
/// id (or the start of one) of a session in `dir`, as Pi reads it. A typo
/// (`--session zzzz`) is an error naming it; it started an empty session
/// saved as `./zzzz`.
pub(super) fn session_path(given: &Path, dir: &Path) -> Result<PathBuf, UsageError> {
    let text = given.to_string_lossy();
    let a_path = given.exists() || text.contains('/') || text.ends_with(".jsonl");
    if !a_path {
        return find_session_by_id(dir, &text).map_err(UsageError::Session);
    }
    Ok(given.to_path_buf())
}
