//! What to run: the mode, the model and its provider, and the tool names, from
//! the flags, the settings files and the environment. Logging is installed
//! here too, as soon as it is known whether warnings go to stderr or to the
//! interactive transcript.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::{Message, Provider, ThinkingLevel};
use anyhow::Context as _;
use coding_agent::app::default_tool_names;
use coding_agent::guard;
use coding_agent::settings::{
    ModelFlags, ResolvedModel, SETTINGS_FILE, Settings, agent_dir, provider_for, resolve_model,
    split_thinking,
};
use coding_agent::warnings::WarningReceiver;

use super::{ModeArg, RunArgs, UsageError};

/// The run the command line asks for, before anything is built.
pub(super) struct Resolved {
    /// `--thinking`, else the level `--model NAME:LEVEL` names.
    pub thinking: Option<ThinkingLevel>,
    /// The non-interactive mode: text unless `--mode` says otherwise.
    pub mode: ModeArg,
    /// No `-p`, no `--mode`, no prompt, in a terminal: the interactive UI.
    pub interactive: bool,
    /// Where logged warnings are received, for the interactive transcript;
    /// `None` when they go to stderr.
    pub warnings: Option<WarningReceiver>,
    /// The prompts of a print or JSON run, stdin and `@path` files in the
    /// first ([`super::input`]); empty otherwise.
    pub prompts: Vec<Message>,
    /// The directory the agent works in.
    pub cwd: PathBuf,
    /// `$CODING_AGENT_DIR`.
    pub agent_dir: PathBuf,
    /// The global and project settings.
    pub settings: Settings,
    /// The model flags as given (the interactive model picker resolves again
    /// from them).
    pub flags: ModelFlags,
    /// The model and its endpoint.
    pub model: ResolvedModel,
    /// The provider that talks to it.
    pub provider: Arc<dyn Provider>,
    /// The built-in tools asked for, by name (unknown names included).
    pub tool_names: Vec<String>,
    /// The MCP tools `--tools` names (`mcp__server`, `mcp__server__tool`):
    /// only those are offered, and none with `--no-tools` or a `--tools`
    /// that names none; `None`: all of them.
    #[cfg(feature = "mcp")]
    pub mcp_tools: Option<Vec<String>>,
}

/// The settings of `cwd` (the project's as far as its trust allows,
/// [`Settings::load`]), the model the flags and settings name, and its
/// provider.
fn settings_and_model(
    args: &RunArgs,
    agent_dir: &Path,
    cwd: &Path,
) -> anyhow::Result<(Settings, ResolvedModel, Arc<dyn Provider>)> {
    let trusted = guard::project_trusted(agent_dir, cwd, &args.guard.flags());
    let settings = Settings::load(agent_dir, cwd, trusted).map_err(UsageError::from)?;
    let (flags, _) = model_flags(args)?;
    let env = |name: &str| std::env::var(name).ok();
    let model = resolve_model(&flags, &settings, &agent_dir.join(SETTINGS_FILE), &env)
        .map_err(UsageError::from)?;
    let provider = provider_for(&model).map_err(UsageError::from)?;
    Ok((settings, model, provider))
}

/// The model flags as given, `--model`'s `:LEVEL` taken off, and that
/// level; a `--model` that names no model (`""`, `fake/`, `:high`) or a
/// level in the wrong case is a usage error.
pub(super) fn model_flags(
    args: &RunArgs,
) -> Result<(ModelFlags, Option<ThinkingLevel>), UsageError> {
    let (model, level) = match args.model.as_deref().map(split_thinking).transpose() {
        Ok(Some((name, level))) => (Some(name.to_owned()), level),
        Ok(None) => (None, None),
        Err(error) => return Err(UsageError::ModelFlag(error)),
    };
    let flags = ModelFlags {
        provider: args.provider.clone(),
        model,
        base_url: args.base_url.clone(),
        api_key: args.api_key.clone(),
        no_text_tool_calls: args.no_text_tool_calls,
    };
    Ok((flags, level))
}

/// Resolves the command line; a usage error (no prompt, no key, an unknown
/// provider) is an [`UsageError`].
pub(super) async fn resolve(args: &RunArgs) -> anyhow::Result<Resolved> {
    let mode = match (args.mode, args.print) {
        (Some(ModeArg::Rpc), _) => ModeArg::Rpc,
        (Some(ModeArg::Json), _) => ModeArg::Json,
        _ => ModeArg::Text,
    };
    // Without the `tui` feature there is no interactive mode: no prompt is
    // then a usage error, as it is when stdin is not a terminal.
    let interactive = cfg!(feature = "tui")
        && args.mode.is_none()
        && !args.print
        && args.messages.is_empty()
        && std::io::IsTerminal::is_terminal(&std::io::stdin())
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let warnings = if interactive {
        Some(crate::logging::to_transcript())
    } else {
        crate::logging::to_stderr();
        None
    };
    if args.resume && !interactive {
        return Err(UsageError::ResumeNotInteractive.into());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let prompts = match mode {
        ModeArg::Rpc if !args.messages.is_empty() => return Err(UsageError::RpcWithPrompt.into()),
        ModeArg::Rpc => Vec::new(),
        _ if interactive => Vec::new(),
        ModeArg::Text | ModeArg::Json => super::input::prompts(&args.messages, &cwd)?,
    };
    if prompts.is_empty() && mode != ModeArg::Rpc && !interactive {
        return Err(UsageError::NoPrompt.into());
    }
    let agent_dir = agent_dir();
    // Before the settings are read: the answer decides which of the
    // project's settings, hooks and servers the session uses (and whether
    // reading them warns that the project is not trusted).
    #[cfg(feature = "tui")]
    if interactive {
        coding_agent::modes::interactive::approval::trust::ask_to_trust(
            &agent_dir,
            &cwd,
            &args.guard.flags(),
        )
        .await?;
    }
    let (settings, model, provider) = settings_and_model(args, &agent_dir, &cwd)?;
    let (flags, model_thinking) = model_flags(args)?;
    let named = match (&args.tools, args.no_tools) {
        (_, true) => Some(Vec::new()),
        // `--tools ""` (no tools, as `--no-tools`) and `read,,bash` name no
        // tool called "".
        (Some(names), false) => Some(
            names
                .iter()
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect::<Vec<_>>(),
        ),
        (None, false) => None,
    };
    // An allowlist holds for the MCP servers' tools too, named as
    // permission rules name them (without MCP, such a name is unknown).
    #[cfg(feature = "mcp")]
    let (mcp_tools, tool_names) = match named {
        Some(names) => {
            let (mcp, builtin) = names.into_iter().partition(|name: &String| {
                name.get(..5)
                    .is_some_and(|prefix| prefix.eq_ignore_ascii_case("mcp__"))
            });
            (Some(mcp), builtin)
        }
        None => (None, default_tool_names()),
    };
    #[cfg(not(feature = "mcp"))]
    let tool_names = named.unwrap_or_else(default_tool_names);
    Ok(Resolved {
        thinking: args.thinking.or(model_thinking),
        mode,
        interactive,
        warnings,
        prompts,
        cwd,
        agent_dir,
        settings,
        flags,
        model,
        provider,
        tool_names,
        #[cfg(feature = "mcp")]
        mcp_tools,
    })
}
