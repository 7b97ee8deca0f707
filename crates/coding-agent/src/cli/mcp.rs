//! MCP on the command line: the servers a run starts (`"mcpServers"` in the
//! settings, the project's `.mcp.json`, `--mcp-config`), and `coding-agent
//! mcp serve`, the built-in tools over MCP on stdio.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use coding_agent::guard::Mode;
use coding_agent::guard::policy::{Places, Rule};
use coding_agent::mcp::McpServers;
use coding_agent::mcp::config::{load, project_files};
use coding_agent::mcp::serve::ToolServer;
use coding_agent::sandbox::SandboxSettings;
use coding_agent::settings::SETTINGS_FILE;
use coding_agent::support::mcp_names::server_part;
use coding_agent::tools::tool_set_from;

use super::UsageError;
use super::sandbox::{bypass_sandbox, start_sandbox};
use super::tool::{flag_guard, working_directory};

/// The MCP servers of a run.
#[derive(Debug, Args)]
pub(super) struct McpArgs {
    /// A JSON file with "mcpServers" (Claude Code's shape) whose servers start with the session; repeatable
    #[arg(long = "mcp-config", value_name = "FILE")]
    mcp_config: Vec<PathBuf>,
}

/// The run's MCP servers (`None` when none are configured), started in
/// parallel unless `in_background`: then they are returned not started yet,
/// and the interactive mode starts them while its screen is up, RPC while it
/// serves commands ([`McpServers::start_all`]). A server that fails is said once (stderr, or
/// the interactive transcript) and the run goes on without it; so are a
/// project's servers left unstarted because the project is not trusted. A
/// configuration file that cannot be read or parsed is a usage error naming
/// it. With `only` (`--tools`), only the tools it names are offered, and a
/// server none of whose tools it names is not started (said once too); a
/// name that matches no configured server is warned about here, one that
/// matches no tool of its server once the server has listed its tools
/// ([`McpServers::tool_definitions`]).
pub(super) async fn start_servers(
    args: &McpArgs,
    agent_dir: &Path,
    cwd: &Path,
    project_trusted: bool,
    only: Option<&[String]>,
    in_background: bool,
) -> Result<Option<McpServers>, UsageError> {
    let (mut configs, untrusted) = load(
        &agent_dir.join(SETTINGS_FILE),
        &project_files(agent_dir, cwd),
        &args.mcp_config,
        project_trusted,
    )?;
    if !untrusted.is_empty() {
        tracing::warn!("{}", untrusted_notice(&untrusted));
    }
    let only = only
        .map(|names| {
            let places = Places::for_cwd(cwd);
            names
                .iter()
                .map(|name| Rule::parse(name, &places))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| UsageError::Tools(error.to_string()))
        })
        .transpose()?;
    if let Some(rules) = &only {
        // `--tools mcp__nosrv` offered nothing, and said only that the
        // servers it did not name were not started.
        let known: Vec<String> = configs
            .iter()
            .map(|config| &config.name)
            .chain(&untrusted)
            .cloned()
            .collect();
        for rule in rules {
            if !known
                .iter()
                .any(|name| rule.names_mcp_server(&server_part(name)))
            {
                tracing::warn!("{}", unknown_server_notice(&rule.text, &known));
            }
        }
        let (named, unnamed): (Vec<_>, Vec<_>) = configs.into_iter().partition(|config| {
            let part = server_part(&config.name);
            rules.iter().any(|rule| rule.names_mcp_server(&part))
        });
        if !unnamed.is_empty() {
            let names: Vec<String> = unnamed.into_iter().map(|config| config.name).collect();
            tracing::warn!("{}", unnamed_notice(&names));
        }
        configs = named;
    }
    if configs.is_empty() {
        return Ok(None);
    }
    let mut servers = McpServers::configure(configs, cwd);
    if let Some(rules) = only {
        servers = servers.offer_only(rules);
    }
    if !in_background {
        for failure in servers.start_all().await {
            tracing::warn!("{failure}");
        }
    }
    Ok(Some(servers))
}

/// What the user reads about the name `rule` in `--tools`, which matches
/// none of the servers `configured`: as for an unknown built-in name.
fn unknown_server_notice(rule: &str, configured: &[String]) -> String {
    if configured.is_empty() {
        return format!("Unknown tool \"{rule}\" in --tools: no MCP server is configured");
    }
    format!(
        "Unknown tool \"{rule}\" in --tools: it names none of the MCP servers configured ({})",
        quoted_list(configured)
    )
}

/// What the user reads about the servers `--tools` (or `--no-tools`)
/// names no tool of.
fn unnamed_notice(names: &[String]) -> String {
    let theirs = if names.len() == 1 {
        "its tools"
    } else {
        "theirs"
    };
    format!(
        "MCP: the {} not started: the tools enabled (--tools, --no-tools) include none of {theirs} (name mcp__SERVER, or mcp__SERVER__TOOL, in --tools)",
        servers_are(names)
    )
}

/// What the user reads about a project's servers that were not started.
fn untrusted_notice(names: &[String]) -> String {
    format!(
        "MCP: the project's {} not started: the project is not trusted (trust it with --trust)",
        servers_are(names)
    )
}

/// `server "a" is` or `servers "a", "b" are`.
fn servers_are(names: &[String]) -> String {
    match names {
        [name] => format!("server \"{name}\" is"),
        _ => format!("servers {} are", quoted_list(names)),
    }
}

/// `"a", "b"`.
fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("\"{name}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Subcommand)]
pub(super) enum McpCommand {
    /// Serve the built-in tools over stdio (MCP), each call through the agent's pipeline
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    /// Directory relative paths resolve against [default: the current directory]
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Comma-separated tools to serve [default: read,bash,edit,write,grep,find,ls]
    #[arg(short = 't', long, value_delimiter = ',', value_name = "TOOLS")]
    tools: Option<Vec<String>>,
    /// Judge each call by this permission mode's policy (no settings rules); a call that would
    /// ask is refused, since an MCP client cannot answer [default: no policy]
    #[arg(long, value_name = "MODE")]
    permission_mode: Option<coding_agent::guard::Mode>,
    #[command(flatten)]
    sandbox: super::sandbox::SandboxArgs,
}

/// Runs an `mcp` subcommand until its client goes away.
pub(super) async fn mcp_command(command: McpCommand) -> anyhow::Result<()> {
    let McpCommand::Serve(args) = command;
    // Stdout carries the protocol; warnings go to stderr.
    crate::logging::to_stderr();
    let cwd = working_directory(args.cwd.as_deref())?;
    // As `coding-agent tool` runs a call: sandboxed as the flags say (no
    // settings), unless bypass mode asks for nothing to be.
    let sandbox = match args.permission_mode {
        Some(Mode::Bypass) => bypass_sandbox(&args.sandbox),
        _ => start_sandbox(&args.sandbox, &SandboxSettings::default(), &cwd)?,
    };
    let tools = tool_set_from(args.tools.as_deref(), cwd.clone(), |name| {
        sandbox.builtin_tool(name)
    })
    .map_err(|e| UsageError::Tools(e.to_string()))?;
    let mut server = ToolServer::new(tools);
    if let Some(mode) = args.permission_mode {
        let guard = flag_guard(mode, Places::for_cwd(&cwd), &sandbox).map_err(UsageError::Guard)?;
        server = server.with_hooks(Arc::new(guard));
    }
    server.serve_stdio(super::cancel_on_ctrl_c(STOPPING)).await
}

/// What `mcp serve` does when a signal stops it (stderr says it).
const STOPPING: &str = "stopping the MCP server; the calls in flight are cancelled";
