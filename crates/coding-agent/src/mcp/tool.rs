//! One MCP server tool as a [`ToolDefinition`], so it goes through the same
//! five steps as a built-in: its validator is compiled from the server's
//! `inputSchema`, the hooks and policy see it by its `mcp__` name, and every
//! failure (a dead server, a timeout, the server's own `isError`) is a tool
//! result the model reads.

use std::sync::Arc;

use agent_ai::Tool;
use agent_core::{AgentToolResult, ToolError};
use async_trait::async_trait;
use rmcp::model::ProgressNotificationParam;
use serde_json::Value;

use super::client::CallError;
use super::content::to_tool_result;
use super::servers::Server;
use crate::definition::{ToolContext, ToolDefinition};
use crate::render::{RenderOptions, StyledLine, generic};
use crate::support::cancel::aborted;
use crate::tools::read::image::note_unsent_images;

/// A tool of an MCP server.
pub struct McpTool {
    server: Arc<Server>,
    /// The tool's name on the server.
    remote: String,
    /// The tool as the model sees it.
    tool: Tool,
    label: String,
}

impl McpTool {
    pub(super) fn new(server: Arc<Server>, remote: String, tool: Tool) -> Self {
        let label = format!("{} {}", server.name(), remote);
        McpTool {
            server,
            remote,
            tool,
            label,
        }
    }

    /// What happens to a server that went away during a call: restarted
    /// (reconnected) on the next call, or, when that was done once already,
    /// nothing more.
    fn comes_back(&self) -> String {
        let again = self.server.words().1;
        if self.server.was_restarted() {
            format!(
                "It was {again} once already and is not {again} again: its tools cannot be used in this session; do the task another way."
            )
        } else {
            format!("It is {again} once on the next call.")
        }
    }
}

#[async_trait]
impl ToolDefinition for McpTool {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        &self.label
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<AgentToolResult, ToolError> {
        let connection = self.server.connection().await.map_err(ToolError::new)?;
        let timeout = self.server.config().tool_timeout;
        let on_progress = |progress: ProgressNotificationParam| {
            ctx.updates
                .send(AgentToolResult::text(progress_text(&progress)));
        };
        let server = self.server.name();
        let outcome = connection
            .call(&self.remote, params, timeout, &ctx.cancel, &on_progress)
            .await;
        // A call that changed the server's tools (it said so before it
        // answered) returns once the new list is offered for the next turn,
        // or once the listing ran out of time (bounded by the tool timeout)
        // or the user aborted: SIGTERM's abort waited for a re-list that
        // never ended.
        tokio::select! {
            () = self.server.refresh() => {}
            () = ctx.cancel.cancelled() => {}
        }
        match outcome {
            Ok(result) => {
                let (server, tool, cancel) = (server.to_owned(), self.remote.clone(), ctx.cancel);
                let mut mapped = tokio::task::spawn_blocking(move || {
                    to_tool_result(result, &server, &tool, &cancel)
                })
                .await
                .map_err(|panicked| ToolError::new(panicked.to_string()))??;
                note_unsent_images(&mut mapped.content, ctx.model.as_ref());
                Ok(mapped)
            }
            Err(CallError::Aborted) => Err(aborted()),
            Err(CallError::Timeout(after)) => Err(ToolError::new(format!(
                "MCP tool \"{}\" of server \"{server}\" timed out after {} s and was cancelled. Try a smaller request, or ask the user to raise \"toolTimeoutSec\" for this server.",
                self.remote,
                after.as_secs_f64()
            ))),
            Err(CallError::Closed(why)) => Err(ToolError::new(format!(
                "MCP server \"{server}\" stopped during the call{why}. {}",
                self.comes_back()
            ))),
            Err(CallError::Unreachable(why)) => {
                // An HTTP status came back: the server is there, and has
                // let this connection go (a restart forgot its session).
                let what = match why.starts_with("HTTP ") {
                    true => "refused this connection",
                    false => "could not be reached",
                };
                Err(ToolError::new(format!(
                    "MCP server \"{server}\" {what} ({why}). {}",
                    self.comes_back()
                )))
            }
            Err(CallError::Answered(why)) => Err(ToolError::new(format!(
                "MCP server \"{server}\" failed the call to \"{}\": {why}",
                self.remote
            ))),
            Err(CallError::Protocol(message)) => Err(ToolError::new(format!(
                "MCP server \"{server}\" rejected the call to \"{}\": {message}",
                self.remote
            ))),
        }
    }

    /// `<server> <tool>` and the arguments, by their names on the server.
    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        vec![generic::mcp_call_line(
            self.server.name(),
            &self.remote,
            args,
            options,
        )]
    }
}

/// A progress notification as an update's text: its message, and how far
/// along it is (`2/5`, or `2` when the total is unknown).
fn progress_text(progress: &ProgressNotificationParam) -> String {
    let count = match progress.total {
        Some(total) => format!("{}/{}", progress.progress, total),
        None => progress.progress.to_string(),
    };
    match &progress.message {
        Some(message) => format!("{message} ({count})"),
        None => format!("progress {count}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{NumberOrString, ProgressToken};

    #[test]
    fn progress_reads_as_message_and_count() {
        let token = ProgressToken(NumberOrString::Number(1));
        let bare = ProgressNotificationParam::new(token.clone(), 2.0);
        assert_eq!(progress_text(&bare), "progress 2");
        let full = ProgressNotificationParam::new(token, 2.0)
            .with_total(5.0)
            .with_message("Step 2 of 5");
        assert_eq!(progress_text(&full), "Step 2 of 5 (2/5)");
    }
}
