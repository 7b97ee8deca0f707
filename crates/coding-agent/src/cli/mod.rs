//! The command line.
//!
//! `coding-agent [OPTIONS] -p PROMPT...` (or `--mode json PROMPT...`, or
//! `--mode rpc`) runs the agent: flags and settings pick the model
//! ([`coding_agent::settings`]), the tools and the system prompt
//! ([`coding_agent::prompt`]) and the session file ([`coding_agent::session`]),
//! then a mode ([`coding_agent::modes`]) runs. Exit status: 0 on success, 1
//! when the run ended in error, 2 for a usage error (no key, unknown provider,
//! bad flags). Ctrl-C (or SIGTERM or SIGHUP) aborts the run; once it is saved
//! the process ends by that signal, as a shell expects of an interrupted
//! child (RPC mode exits 130 instead: see `dispatch.rs`).
//!
//! With no prompt and no `-p`/`--mode`, in a terminal, the interactive UI
//! runs ([`coding_agent::modes::interactive`]).
//!
//! `coding-agent tool NAME ARGS_JSON [--cwd DIR]` runs one tool call the way
//! the agent loop runs it and prints the result as one JSON object, so tools
//! can be tried, scripted and compared with Pi from a shell. Exit status: 0
//! whenever a result was printed, including a failed tool (a tool error is
//! data for the model, not a crash); 2 for a usage error (bad JSON, missing
//! arguments, a bad `--cwd`); 1 if the result cannot be written. Ctrl-C
//! cancels the call, prints its result, then ends the process by the signal.
//!
//! `coding-agent policy check TOOL ARGS_JSON` prints the permission policy's
//! verdict on one call and runs nothing (`docs/permissions.md`).
//!
//! `coding-agent mcp serve [--cwd DIR] [--tools LIST] [--permission-mode M] [--sandbox M]` offers the built-in
//! tools to MCP clients over stdio ([`coding_agent::mcp::serve`]).

mod build;
mod dispatch;
mod input;
mod instructions;
#[cfg(feature = "mcp")]
mod mcp;
mod policy;
mod remote;
mod resolve;
mod sandbox;
mod standalone;
mod tool;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use coding_agent::sandbox::SandboxError;
use coding_agent::settings::{ModelError, SettingsError};
use tokio_util::sync::CancellationToken;

use self::sandbox::SandboxArgs;

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
          e.g. error, info, agent_ai=debug [default: warn]
  CODING_AGENT_REMOTE_CACHE
          With --remote: the directory on the remote host the helper is cached in,
          absolute or ~/... (the remote home)
          [default: the remote.cacheDir setting, else ~/.cache/coding-agent there]";

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
    /// Model id (or PROVIDER/ID); a `:LEVEL` after it sets the thinking level, as --thinking does
    #[arg(long, value_name = "ID[:LEVEL]")]
    model: Option<String>,
    /// The models Ctrl+P and RPC cycle_model go through, comma-separated, as /model names them [default: enabledModels of settings.json, else every model with its key]
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    models: Vec<String>,
    /// Base URL of the provider's API (an OpenAI-compatible endpoint for an unknown provider)
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// API key [default: the provider's environment variable, OPENAI_API_KEY or ANTHROPIC_API_KEY]
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Never turn a tool call a model wrote as JSON text into a real call
    #[arg(long)]
    no_text_tool_calls: bool,
    /// Thinking level: off, minimal, low, medium, high, xhigh (clamped to what the model supports) [default: defaultThinkingLevel of settings.json, else medium]
    #[arg(long, value_name = "LEVEL")]
    thinking: Option<agent_ai::ThinkingLevel>,
    /// Non-interactive: run the prompts, print the final answer, exit
    #[arg(short = 'p', long)]
    print: bool,
    /// Output mode
    #[arg(long, value_enum, value_name = "MODE")]
    mode: Option<ModeArg>,
    /// Comma-separated tools to enable; MCP servers' tools only as named here (mcp__SERVER, mcp__SERVER__TOOL) [default: read,bash,edit,write,grep,find,ls and every MCP tool]
    #[arg(short = 't', long, value_delimiter = ',', value_name = "TOOLS")]
    tools: Option<Vec<String>>,
    /// Enable no tools (no MCP server is started either)
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
    /// Load no prompt templates ($CODING_AGENT_DIR/prompts/*.md, .coding-agent/prompts/*.md: `/name args` in a prompt)
    #[arg(long)]
    no_prompt_templates: bool,
    /// A skill to load: a SKILL.md, a Markdown file or a folder of skills (repeatable; loaded with --no-skills too)
    #[arg(long = "skill", value_name = "PATH")]
    skills: Vec<String>,
    /// Look for no skills in $CODING_AGENT_DIR/skills, ~/.agents/skills, the project's or the `skills` setting
    #[arg(long)]
    no_skills: bool,
    /// Continue the most recent session of this directory
    #[arg(short = 'c', long = "continue")]
    continue_session: bool,
    /// Use this session file, or the session of the directory with this id (or id prefix)
    #[arg(long, value_name = "FILE|ID", conflicts_with = "continue_session")]
    session: Option<PathBuf>,
    /// Go on in a new session holding a copy of this one (a file, or an id as for --session); the original is left as it was
    #[arg(long, value_name = "FILE|ID", conflicts_with_all = ["session", "continue_session"])]
    fork: Option<PathBuf>,
    /// Interactive mode: start with the list of this directory's sessions (/resume N opens one)
    #[arg(short = 'r', long, conflicts_with_all = ["session", "continue_session", "fork"])]
    resume: bool,
    /// List the models the settings and keys allow (those whose name contains SEARCH), then exit
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    list_models: Option<String>,
    /// Write a session (a file, or an id as for --session) as one HTML page, to OUT or coding-agent-session-<its file name>.html, then exit
    // It runs nothing: a prompt or a session to run beside it was ignored
    // without a word.
    #[arg(
        long,
        value_names = ["FILE|ID", "OUT"],
        num_args = 1..=2,
        conflicts_with_all = ["messages", "print", "mode", "continue_session", "session", "fork", "resume", "no_session"]
    )]
    export: Option<Vec<PathBuf>>,
    /// Directory sessions are saved in and looked up [default: $CODING_AGENT_DIR/sessions/--<cwd>--]
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Save no session
    #[arg(long, conflicts_with_all = ["session", "continue_session", "fork", "resume"])]
    no_session: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    guard: policy::GuardArgs,
    /// Prompts, run one after another; `@path` adds a file to the first (text, or an image
    /// attached), and so does text piped on stdin
    #[arg(value_name = "PROMPT")]
    messages: Vec<String>,
    #[command(flatten)]
    remote: remote::RemoteArgs,
    #[cfg(feature = "mcp")]
    #[command(flatten)]
    mcp: mcp::McpArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one tool call and print its result as JSON:
    /// {"isError": bool, "content": [...], "details": ...}
    Tool(ToolArgs),
    /// Judge tool calls without running them (a dry run of the permission policy)
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// The helper `--remote` starts on the remote host (framed calls on stdin and stdout)
    #[command(hide = true)]
    RemoteHelper,
    /// The Model Context Protocol: serve the built-in tools to MCP clients
    #[cfg(feature = "mcp")]
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
}

#[derive(Debug, Args)]
struct ToolArgs {
    /// The tool to call (read, bash, edit, write, grep, find, ls)
    name: String,
    /// The call's arguments as JSON, or `-` to read them from standard input
    args_json: String,
    /// Directory relative paths resolve against, and the sandbox's workspace root [default: the current directory]
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Judge the call by the permission policy of this mode first (flags only, no settings; a call that needs approval is refused) [default: the call runs as given]
    #[arg(long, value_name = "MODE")]
    permission_mode: Option<coding_agent::guard::Mode>,
    #[command(flatten)]
    remote: remote::RemoteArgs,
}

/// The command line was wrong; reported on stderr with exit status 2.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    #[error("ARGS_JSON is not valid JSON: {0}")]
    BadJson(serde_json::Error),
    #[error("cannot read standard input: {0}")]
    Stdin(std::io::Error),
    #[error(
        "standard input is larger than 16 MiB: save it to a file and name the file in the prompt"
    )]
    StdinTooLarge,
    #[error(
        "standard input is not text (UTF-8): save it to a file and name the file in the prompt"
    )]
    StdinNotText,
    #[error("@{}: {reason}", path.display())]
    File { path: PathBuf, reason: String },
    /// A prompt after the first holds nothing: it would be sent as an
    /// empty user message of its own, which Anthropic's API refuses (400)
    /// after the prompts before it have run. `position` counts the
    /// prompts, from 1 (`@path` arguments are files, not prompts).
    #[error(
        "prompt {position} is blank: each prompt after the first is sent to the model as a message of its own; give it words, or leave it out"
    )]
    BlankPrompt { position: usize },
    #[error("--export {}: {reason}", path.display())]
    ExportSource { path: PathBuf, reason: String },
    #[error("--cwd {}: {reason}", path.display())]
    BadCwd { path: PathBuf, reason: String },
    #[error(
        "nothing to do: pass a prompt with -p PROMPT or --mode json PROMPT, use --mode rpc, or run with no arguments in a terminal"
    )]
    NoPrompt,
    #[error("--mode rpc reads its prompts from standard input, not the command line")]
    RpcWithPrompt,
    #[error(
        "--resume lists the sessions in the interactive mode (no prompt, no -p or --mode, in a terminal); elsewhere use --continue or --session ID"
    )]
    ResumeNotInteractive,
    /// `--session` or `--fork` named no session that can be opened: an id
    /// that names no one session, a file that is not a session, a
    /// directory.
    #[error(transparent)]
    Session(coding_agent::session::SessionError),
    /// `--session-dir` names something sessions cannot be saved in: each
    /// save failed after the model had answered (`session file afile/…:
    /// File exists`).
    #[error("--session-dir {}: {reason}", path.display())]
    SessionDir { path: PathBuf, reason: String },
    /// `--remote` (or the `remote.target` setting) names no host.
    #[error(transparent)]
    RemoteTarget(#[from] coding_agent::remote::target::TargetError),
    #[error("--ssh-config and --ssh-option need --remote")]
    SshWithoutRemote,
    #[cfg(feature = "mcp")]
    #[error("--tools: {0}")]
    Tools(String),
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    McpConfig(#[from] coding_agent::mcp::config::ConfigError),
    /// `--model` names no model, or a level in the wrong case.
    #[error("--model: {0}")]
    ModelFlag(ModelError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    RemoteSandbox(#[from] coding_agent::remote::sandbox::RemoteSandboxError),
    #[error(transparent)]
    Guard(coding_agent::guard::config::GuardConfigError),
}

/// Parses the command line, runs it and turns the outcome into the exit
/// status, or ends the process by the signal that stopped the run.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let status = match run(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) => {
            tell(format_args!("coding-agent: {err:#}"));
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    };
    // The run has cleaned up (tools killed, session saved, the runtime shut
    // down): now the signal may end the process.
    if let Some(signal) = caught_signal() {
        end_by_signal(signal);
    }
    status
}

/// Writes `line` to stderr, or nothing when stderr is gone (`2>/dev/full`,
/// `2>&1 | head -1` once `head` has quit): `eprintln!` panicked there, with
/// status 101 instead of the run's.
fn tell(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = match cli.command {
        Some(Command::Tool(args)) => runtime.block_on(tool::tool_command(args)).map(|()| 0),
        Some(Command::Policy(command)) => runtime.block_on(policy::run(command)).map(|()| 0),
        Some(Command::RemoteHelper) => {
            let served = runtime.block_on(coding_agent::remote::helper::serve_stdio());
            // Exit without waiting for the runtime: a read blocked in the
            // kernel would keep the helper alive on the remote forever.
            std::process::exit(i32::from(served.is_err()))
        }
        #[cfg(feature = "mcp")]
        Some(Command::Mcp(command)) => runtime.block_on(mcp::mcp_command(command)).map(|()| 0),
        None => runtime.block_on(agent_command(cli.run)),
    };
    // File work runs on blocking threads; one stuck in the kernel (a read of
    // a FIFO nobody writes to, a hung network mount) after its call was
    // cancelled must not keep the process alive. The rest (an atomic write
    // finishing) gets a moment.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    result
}

/// How long the end of a run waits for file work still under way.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs the agent in the mode the flags ask for; returns the exit status:
/// what to run is resolved from the flags, settings and environment, the
/// session is built from that, and the chosen mode runs it.
async fn agent_command(args: RunArgs) -> anyhow::Result<u8> {
    if args.list_models.is_some() || args.export.is_some() {
        // What they read may warn (a session file's cut line): the user
        // must hear of it.
        crate::logging::to_stderr();
    }
    if let Some(search) = &args.list_models {
        let search = Some(search.as_str()).filter(|search| !search.is_empty());
        return standalone::list_models(&args, search).await;
    }
    if let Some(paths) = &args.export {
        let out = paths.get(1).map(PathBuf::as_path);
        return standalone::export(&args, &paths[0], out);
    }
    let mut resolved = resolve::resolve(&args).await?;
    let remote = args
        .remote
        .connect(None, resolved.settings.remote.as_ref())
        .await?;
    let prompts = std::mem::take(&mut resolved.prompts);
    let built = build::build(&args, resolved, remote).await?;
    dispatch::dispatch(&prompts, built).await
}

/// The signal [`cancel_on_ctrl_c`] caught (0 for none), for [`main`] to end
/// the process by once the run has cleaned up.
static CAUGHT_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The signal that stopped the run, if one did.
fn caught_signal() -> Option<i32> {
    Some(CAUGHT_SIGNAL.load(Ordering::SeqCst)).filter(|&signal| signal != 0)
}

/// Ends the process by `signal`: its default disposition restored, then the
/// signal raised again. A shell goes on with a loop (`for p in ...; do
/// coding-agent -p "$p"; done`) after a child that exited, even with 130; it
/// stops only when the child was killed by SIGINT, so Ctrl-C could not stop
/// such a loop.
fn end_by_signal(signal: i32) {
    // Fails only for a signal it does not know, which none of ours is.
    let _ = signal_hook::low_level::emulate_default_handler(signal);
}

/// A token cancelled by the first Ctrl-C, or SIGTERM or SIGHUP (a supervisor
/// stopping the agent, a closed terminal), so running tools are cancelled and
/// their processes killed rather than left behind; [`main`] then ends the
/// process by that signal. The signals are watched from this call on, so one
/// that comes early is not fatal. What happened and what is `doing` about it
/// goes to stderr before the cancellation takes effect, so it comes before
/// anything the cancelled run prints. A second signal ends the process at
/// once, by that signal, in case a tool ignores cancellation.
fn cancel_on_ctrl_c(doing: &'static str) -> CancellationToken {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
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
        loop {
            let (what, caught) = tokio::select! {
                _ = interrupt.recv() => ("interrupted", SIGINT),
                _ = terminate.recv() => ("terminated (SIGTERM)", SIGTERM),
                _ = hangup.recv() => ("hung up (SIGHUP)", SIGHUP),
            };
            if CAUGHT_SIGNAL.swap(caught, Ordering::SeqCst) != 0 {
                end_by_signal(caught);
            }
            let again = match caught {
                SIGINT => "Ctrl-C again to exit now",
                _ => "a second signal exits now",
            };
            tell(format_args!("coding-agent: {what}, {doing} ({again})"));
            on_interrupt.cancel();
        }
    });
    cancel
}
