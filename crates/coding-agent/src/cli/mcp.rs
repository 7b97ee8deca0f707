//! `coding-agent mcp serve`: the built-in tools over MCP on stdio.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use coding_agent::mcp::serve::{ToolServer, builtin_tool_set};

use super::UsageError;
use super::tool::working_directory;

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
}

/// Runs an `mcp` subcommand until its client goes away.
pub(super) async fn mcp_command(command: McpCommand) -> anyhow::Result<()> {
    let McpCommand::Serve(args) = command;
    // Stdout carries the protocol; warnings go to stderr.
    crate::logging::to_stderr();
    let cwd = working_directory(args.cwd.as_deref())?;
    let tools = builtin_tool_set(args.tools.as_deref(), cwd)
        .map_err(|e| UsageError::Tools(e.to_string()))?;
    ToolServer::new(tools).serve_stdio().await
}
