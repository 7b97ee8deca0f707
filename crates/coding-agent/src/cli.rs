//! The command line.
//!
//! `coding-agent [OPTIONS] -p PROMPT...` (or `--mode json PROMPT...`, or
//! `--mode rpc`) runs the agent: flags and settings pick the model
//! ([`coding_agent::settings`]), the tools and the system prompt
//! ([`coding_agent::prompt`]) and the session file ([`coding_agent::session`]),
//! then a mode ([`coding_agent::modes`]) runs. Exit status: 0 on success, 1
//! when the run ended in error, 2 for a usage error (no key, unknown provider,
//! bad flags), 130 after Ctrl-C (or SIGTERM or SIGHUP), which aborts the run.
//!
//! With no prompt and no `-p`/`--mode`, in a terminal, the interactive UI
//! runs ([`coding_agent::modes::interactive`]).
//!
//! `coding-agent tool NAME ARGS_JSON [--cwd DIR]` runs one tool call the way
//! the agent loop runs it and prints the result as one JSON object, so tools
//! can be tried, scripted and compared with Pi from a shell. Exit status: 0
//! whenever a result was printed, including a failed tool (a tool error is
//! data for the model, not a crash); 2 for a usage error (bad JSON, missing
//! arguments, a bad `--cwd`); 1 if the result cannot be written.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agent_ai::{Content, ToolCall};
use agent_core::{AgentTool, NoHooks, ToolSet, run_single_tool_call};
use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use coding_agent::remote::{RemoteHost, RemoteOperations, remote_tool};

use crate::remote_flags::RemoteArgs;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use agent_ai::message::now_millis;
use coding_agent::definition::ContextFactory;
use coding_agent::modes::agent_session::{default_tool_names, select_tools};
use coding_agent::modes::interactive::{InteractiveOptions, ModelCatalog, run_interactive};
use coding_agent::modes::print::EXIT_INTERRUPTED;
use coding_agent::modes::{
    AgentSession, PrintFormat, RpcEnd, SessionOptions, run_print, run_rpc_until,
};
use coding_agent::prompt::{
    PromptInputs, build_system_prompt, discover_prompt_file, load_context_files,
    resolve_prompt_input,
};
use coding_agent::session::{SessionManager, iso_timestamp, session_dir};
use coding_agent::settings::{
    ModelError, ModelFlags, SETTINGS_FILE, Settings, SettingsError, agent_dir, provider_for,
    resolve_model,
};
use coding_agent::tools::{BUILTIN_TOOL_NAMES, builtin_tool};
use coding_agent::{ToolContext, ToolDefinition, wrap_tool_definition};

/// What stderr says once Ctrl-C has cancelled the call.
const INTERRUPTED: &str =
    "coding-agent: interrupted, cancelling the call (Ctrl-C again to exit now)";

/// What stderr says once Ctrl-C has aborted a run in print or JSON mode.
const RUN_INTERRUPTED: &str =
    "coding-agent: interrupted, aborting the run (Ctrl-C again to exit now)";

/// What stderr says once Ctrl-C has stopped RPC mode.
const RPC_INTERRUPTED: &str =
    "coding-agent: interrupted, aborting the run and bash commands (Ctrl-C again to exit now)";

/// The coding agent.
#[derive(Debug, Parser)]
#[command(
    name = "coding-agent",
    version,
    about,
    args_conflicts_with_subcommands = true,
    after_long_help = ENVIRONMENT_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

/// The environment variables the binary reads, for `--help`.
const ENVIRONMENT_HELP: &str = "\
Environment:
  OPENAI_API_KEY, ANTHROPIC_API_KEY
          Keys of the built-in providers (a provider in settings.json may name another variable)
  CODING_AGENT_DIR
          settings.json, sessions/, and the global AGENTS.md, SYSTEM.md, APPEND_SYSTEM.md
          [default: ~/.coding-agent]
  CODING_AGENT_LOG
          Which warnings and logs are shown (stderr; the transcript in the interactive mode),
          e.g. error, info, agent_ai=debug [default: warn]";

/// How the agent runs: `text` (with `-p`), `json` or `rpc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ModeArg {
    /// Print the final answer
    Text,
    /// Print every event as a JSON line
    Json,
    /// JSON commands on stdin, responses and events on stdout
    Rpc,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Provider: openai, anthropic, or one defined in settings.json
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Model id (or PROVIDER/ID)
    #[arg(long, value_name = "ID")]
    model: Option<String>,
    /// Base URL of the provider's API (an OpenAI-compatible endpoint for an unknown provider)
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// API key [default: the provider's environment variable, OPENAI_API_KEY or ANTHROPIC_API_KEY]
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Never turn a tool call a model wrote as JSON text into a real call
    #[arg(long)]
    no_text_tool_calls: bool,
    /// Non-interactive: run the prompts, print the final answer, exit
    #[arg(short = 'p', long)]
    print: bool,
    /// Output mode
    #[arg(long, value_enum, value_name = "MODE")]
    mode: Option<ModeArg>,
    /// Comma-separated tools to enable [default: read,bash,edit,write,grep,find,ls]
    #[arg(short = 't', long, value_delimiter = ',', value_name = "TOOLS")]
    tools: Option<Vec<String>>,
    /// Enable no tools
    #[arg(long, conflicts_with = "tools")]
    no_tools: bool,
    /// System prompt, as text or a file to read [default: the coding assistant prompt]
    #[arg(long, value_name = "TEXT|FILE")]
    system_prompt: Option<String>,
    /// Text (or a file's contents) appended to the system prompt; repeatable
    #[arg(long, value_name = "TEXT|FILE")]
    append_system_prompt: Vec<String>,
    /// Leave AGENTS.md / CLAUDE.md out of the system prompt
    #[arg(long)]
    no_context_files: bool,
    /// Continue the most recent session of this directory
    #[arg(short = 'c', long = "continue")]
    continue_session: bool,
    /// Use this session file
    #[arg(long, value_name = "FILE", conflicts_with = "continue_session")]
    session: Option<PathBuf>,
    /// Directory sessions are saved in and looked up [default: $CODING_AGENT_DIR/sessions/--<cwd>--]
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Save no session
    #[arg(long, conflicts_with_all = ["session", "continue_session"])]
    no_session: bool,
    /// Prompts, run one after another
    #[arg(value_name = "PROMPT")]
    messages: Vec<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one tool call and print its result as JSON:
    /// {"isError": bool, "content": [...], "details": ...}
    Tool(ToolArgs),
    /// The helper `--remote` starts on the remote host (framed calls on stdin and stdout)
    #[command(hide = true)]
    RemoteHelper,
}

#[derive(Debug, Args)]
struct ToolArgs {
    /// The tool to call (read, bash, edit, write, grep, find, ls)
    name: String,
    /// The call's arguments as JSON, or `-` to read them from standard input
    args_json: String,
    /// Directory relative paths resolve against [default: the current directory]
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// The command line was wrong; reported on stderr with exit status 2.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error("ARGS_JSON is not valid JSON: {0}")]
    BadJson(serde_json::Error),
    #[error("cannot read ARGS_JSON from standard input: {0}")]
    Stdin(std::io::Error),
    #[error("--cwd {}: {reason}", path.display())]
    BadCwd { path: PathBuf, reason: String },
    #[error(
        "nothing to do: pass a prompt with -p PROMPT or --mode json PROMPT, use --mode rpc, or run with no arguments in a terminal"
    )]
    NoPrompt,
    #[error("--mode rpc reads its prompts from standard input, not the command line")]
    RpcWithPrompt,
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
}

/// What `coding-agent tool` prints: the parts of the tool-result message a
/// caller needs, with `details` always present (`null` when the tool gave none).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolOutput<'a> {
    is_error: bool,
    content: &'a [Content],
    details: &'a Option<Value>,
}

/// Parses the command line, runs it and turns the outcome into the exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            eprintln!("coding-agent: {err:#}");
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cli.command {
        Some(Command::Tool(args)) => runtime.block_on(tool_command(args)).map(|()| 0),
        Some(Command::RemoteHelper) => runtime
            .block_on(coding_agent::remote::helper::serve_stdio())
            .map(|()| 0)
            .context("remote helper"),
        None => runtime.block_on(agent_command(cli.run)),
    }
}

/// Runs the agent in the mode the flags ask for; returns the exit status.
async fn agent_command(args: RunArgs) -> anyhow::Result<u8> {
    let mode = match (args.mode, args.print) {
        (Some(ModeArg::Rpc), _) => ModeArg::Rpc,
        (Some(ModeArg::Json), _) => ModeArg::Json,
        _ => ModeArg::Text,
    };
    // No -p, no --mode, no prompt, in a terminal: the interactive UI.
    let interactive = args.mode.is_none()
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
    match mode {
        ModeArg::Rpc if !args.messages.is_empty() => return Err(UsageError::RpcWithPrompt.into()),
        ModeArg::Text | ModeArg::Json if args.messages.is_empty() && !interactive => {
            return Err(UsageError::NoPrompt.into());
        }
        _ => {}
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let agent_dir = agent_dir();
    let settings = Settings::load(&agent_dir, &cwd).map_err(UsageError::from)?;
    let flags = ModelFlags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        api_key: args.api_key.clone(),
        no_text_tool_calls: args.no_text_tool_calls,
    };
    let env = |name: &str| std::env::var(name).ok();
    let resolved = resolve_model(&flags, &settings, &agent_dir.join(SETTINGS_FILE), &env)
        .map_err(UsageError::from)?;
    let provider = provider_for(&resolved).map_err(UsageError::from)?;
    let start_provider = resolved.model.provider.clone();

    let tool_names = match (&args.tools, args.no_tools) {
        (_, true) => Vec::new(),
        (Some(names), false) => names.iter().map(|n| n.trim().to_owned()).collect(),
        (None, false) => default_tool_names(),
    };
    let (tools, unknown) = select_tools(&tool_names);
    for name in unknown {
        eprintln!(
            "Warning: Unknown tool \"{name}\". Valid tools: {}",
            BUILTIN_TOOL_NAMES.join(", ")
        );
    }
    let system_prompt = system_prompt(&args, &agent_dir, &cwd, &tools);
    let session = open_session(&args, &agent_dir, &cwd)?;
    let options = SessionOptions {
        provider,
        model: resolved.model,
        cwd,
        tools,
        system_prompt,
        session,
    };
    if interactive {
        let session_dir = (!args.no_session).then(|| {
            args.session_dir
                .clone()
                .unwrap_or_else(|| session_dir(&agent_dir, &options.cwd))
        });
        let models = ModelCatalog {
            settings,
            settings_path: agent_dir.join(SETTINGS_FILE),
            flags,
            start_provider,
        };
        return run_interactive(
            options,
            InteractiveOptions {
                session_dir,
                models,
                warnings,
            },
        )
        .await;
    }
    let session = AgentSession::new(options).context("a built-in tool's schema")?;

    match mode {
        ModeArg::Rpc => {
            let stop = cancel_on_ctrl_c(RPC_INTERRUPTED);
            let stdin = tokio::io::stdin();
            match run_rpc_until(session, stdin, tokio::io::stdout(), &stop).await? {
                RpcEnd::InputClosed => Ok(0),
                // Everything is written and every command has ended. Exit
                // now: the runtime's shutdown would wait for the blocking
                // read of stdin, which the client may never end.
                RpcEnd::Stopped => std::process::exit(EXIT_INTERRUPTED.into()),
            }
        }
        ModeArg::Text | ModeArg::Json => {
            let format = if mode == ModeArg::Json {
                PrintFormat::Json
            } else {
                PrintFormat::Text
            };
            let interrupt = cancel_on_ctrl_c(RUN_INTERRUPTED);
            let mut stdout = std::io::stdout();
            let mut stderr = std::io::stderr();
            let status = run_print(
                &session,
                &args.messages,
                format,
                &mut stdout,
                &mut stderr,
                &interrupt,
            )
            .await?;
            Ok(status)
        }
    }
}

/// The system prompt: `--system-prompt` (or a discovered `SYSTEM.md`) or the
/// default text, `--append-system-prompt` (or `APPEND_SYSTEM.md`), context
/// files unless `--no-context-files`, today's date and the cwd.
fn system_prompt(
    args: &RunArgs,
    agent_dir: &Path,
    cwd: &Path,
    tools: &[Arc<dyn ToolDefinition>],
) -> String {
    let discovered = |name: &str| {
        discover_prompt_file(name, agent_dir, cwd).map(|path| path.to_string_lossy().into_owned())
    };
    let custom_prompt = args
        .system_prompt
        .clone()
        .or_else(|| discovered("SYSTEM.md"))
        .map(|input| resolve_prompt_input(&input));
    let append_inputs = if args.append_system_prompt.is_empty() {
        discovered("APPEND_SYSTEM.md").into_iter().collect()
    } else {
        args.append_system_prompt.clone()
    };
    let context_files = if args.no_context_files {
        Vec::new()
    } else {
        load_context_files(agent_dir, cwd)
    };
    let today = iso_timestamp(now_millis());
    build_system_prompt(&PromptInputs {
        custom_prompt,
        append: append_inputs
            .iter()
            .map(|input| resolve_prompt_input(input))
            .collect(),
        tools: tools.to_vec(),
        context_files,
        date: today.get(..10).unwrap_or_default().to_owned(),
        cwd: cwd.to_path_buf(),
    })
}

/// The session the flags ask for: none, a given file, the latest of this
/// directory, or a new one.
fn open_session(args: &RunArgs, agent_dir: &Path, cwd: &Path) -> anyhow::Result<SessionManager> {
    if args.no_session {
        return Ok(SessionManager::in_memory(cwd));
    }
    let dir = args
        .session_dir
        .clone()
        .unwrap_or_else(|| session_dir(agent_dir, cwd));
    Ok(match &args.session {
        Some(file) => SessionManager::open(file, cwd)?,
        None if args.continue_session => SessionManager::continue_recent(cwd, &dir)?,
        None => SessionManager::create(cwd, &dir),
    })
}

async fn tool_command(args: ToolArgs) -> anyhow::Result<()> {
    crate::logging::to_stderr();
    // Installed first, so Ctrl-C while the arguments are still being read also
    // cancels the call instead of killing the process.
    let cancel = cancel_on_ctrl_c(INTERRUPTED);
    let remote = args.remote.connect(args.cwd.as_deref()).await?;
    let cwd = match &remote {
        Some(host) => host.cwd().to_path_buf(),
        None => working_directory(args.cwd.as_deref())?,
    };
    let arguments = read_arguments(&args.args_json).await?;

    let tools =
        ToolSet::new(builtin_agent_tools(cwd, remote)).context("a built-in tool's schema")?;
    let call = ToolCall {
        id: "call_cli".into(),
        name: args.name,
        arguments,
        thought_signature: None,
        recovered_from_text: None,
    };
    // The same five steps the agent loop runs, with no hooks.
    let message = run_single_tool_call(&tools, &call, &NoHooks, &cancel).await;

    let output = ToolOutput {
        is_error: message.is_error,
        content: &message.content,
        details: &message.details,
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &output).context("cannot write the result")?;
    writeln!(stdout).context("cannot write the result")?;
    stdout.flush().context("cannot write the result")
}

/// A token cancelled by the first Ctrl-C, or SIGTERM or SIGHUP (a supervisor
/// stopping the agent, a closed terminal), so running tools are cancelled and
/// their processes killed rather than left behind. The signals are watched
/// from this call on, so one that comes early is not fatal. `notice` goes to
/// stderr before the cancellation takes effect, so it comes before anything
/// the cancelled run prints. A second signal exits at once (130, as a shell
/// reports an interrupt) in case a tool ignores cancellation.
fn cancel_on_ctrl_c(notice: &'static str) -> CancellationToken {
    use tokio::signal::unix::{SignalKind, signal};
    let cancel = CancellationToken::new();
    let watched = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    );
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = watched else {
        tracing::warn!("cannot watch for Ctrl-C: it will end the process without cleanup");
        return cancel;
    };
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        let mut interrupted = false;
        loop {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
                _ = hangup.recv() => {}
            }
            if interrupted {
                std::process::exit(130);
            }
            interrupted = true;
            eprintln!("{notice}");
            on_interrupt.cancel();
        }
    });
    cancel
}

/// `--cwd` made absolute (symlinks kept, as Pi keeps `process.cwd()`), or the
/// current directory.
fn working_directory(cwd: Option<&Path>) -> anyhow::Result<PathBuf> {
    let Some(path) = cwd else {
        return std::env::current_dir().context("cannot read the current directory");
    };
    let bad = |reason: String| UsageError::BadCwd {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(std::path::absolute(path).map_err(|e| bad(e.to_string()))?),
        Ok(_) => Err(bad("not a directory".into()).into()),
        Err(e) => Err(bad(e.to_string()).into()),
    }
}

/// ARGS_JSON parsed, read from standard input when it is `-`. Any JSON value
/// is accepted: a non-object is the model's mistake, which validation reports.
async fn read_arguments(args_json: &str) -> anyhow::Result<Value> {
    let text = if args_json == "-" {
        tokio::task::spawn_blocking(|| {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map(|_| text)
        })
        .await?
        .map_err(UsageError::Stdin)?
    } else {
        args_json.to_owned()
    };
    Ok(serde_json::from_str(&text).map_err(UsageError::BadJson)?)
}

/// The built-in tools present in this build, as the loop sees them, each
/// executing in `cwd`, on `remote` when given.
fn builtin_agent_tools(cwd: PathBuf, remote: Option<Arc<RemoteHost>>) -> Vec<Arc<dyn AgentTool>> {
    let ctx_factory: ContextFactory = Arc::new(move |cancel| ToolContext {
        cancel,
        ..ToolContext::new(cwd.clone())
    });
    BUILTIN_TOOL_NAMES
        .iter()
        .filter_map(|name| tool_on(name, remote.as_ref()))
        .map(|definition| wrap_tool_definition(definition, ctx_factory.clone()))
        .collect()
}

/// The built-in tool `name`, acting on `remote` when given, else locally.
fn tool_on(name: &str, remote: Option<&Arc<RemoteHost>>) -> Option<Arc<dyn ToolDefinition>> {
    match remote {
        Some(host) => remote_tool(name, &RemoteOperations::new(Arc::clone(host))),
        None => builtin_tool(name),
    }
}
