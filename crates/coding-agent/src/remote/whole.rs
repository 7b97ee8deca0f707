//! Tools the helper runs whole: `read` and `ls`.
//!
//! Both only look, report no progress, and ask their Operations several
//! things in a row (read: access, the first bytes, the line window of a
//! longer file; ls: a stat per entry). Run method by method, each question would be a
//! round trip; so the helper runs the local tool itself, next to the files,
//! and sends its result back: one round trip per call, and the answer is the
//! local tool's by construction (`docs/remote.md`, "Parallel batches").
//!
//! The other tools stay on [`RemoteOperations`](super::RemoteOperations):
//! write and edit go through this machine's per-file mutation queue, bash
//! streams progress, and grep and find are one helper call already.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use agent_ai::{Content, Model, Tool};
use agent_core::{AgentToolResult, ExecutionMode, ToolError};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::connection::RemoteHost;
use super::protocol::{Call, Reply};
use crate::definition::{ToolContext, ToolDefinition, ToolFailure};
use crate::render::{RenderOptions, StyledLine};
use crate::support::cancel::ABORTED;

/// The tools the helper runs whole.
pub const WHOLE_TOOLS: &[&str] = &["read", "ls"];

/// A call of a whole tool: what its local `execute` gets.
#[derive(Debug, Serialize, Deserialize)]
pub struct ToolCall {
    /// One of [`WHOLE_TOOLS`].
    pub name: String,
    /// The arguments, already prepared and validated on this machine.
    pub params: Value,
    /// The remote working directory.
    pub cwd: PathBuf,
    /// The model, when known (read tells a model without image input that
    /// the image is left out).
    pub model: Option<Model>,
}

/// A whole tool's answer across the wire: its result, or its error.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToolAnswer {
    /// The tool's result.
    Done {
        /// What the model reads.
        content: Vec<Content>,
        /// What UIs read.
        details: Option<Value>,
    },
    /// The tool's error.
    Failed {
        /// What the model reads.
        message: String,
        /// What UIs read.
        details: Option<Value>,
    },
}

impl From<Result<AgentToolResult, ToolError>> for ToolAnswer {
    fn from(outcome: Result<AgentToolResult, ToolError>) -> Self {
        match outcome {
            Ok(result) => ToolAnswer::Done {
                content: result.content,
                details: result.details,
            },
            Err(error) => ToolAnswer::Failed {
                message: error.message().to_owned(),
                details: error.details().cloned(),
            },
        }
    }
}

impl From<ToolAnswer> for Result<AgentToolResult, ToolError> {
    fn from(answer: ToolAnswer) -> Self {
        match answer {
            ToolAnswer::Done { content, details } => Ok(AgentToolResult {
                content,
                details,
                terminate: false,
            }),
            ToolAnswer::Failed { message, details } => Err(ToolFailure { message, details }.into()),
        }
    }
}

/// A built-in tool that the helper on `host` runs whole. Its schema, prompt
/// text and renderers are the local tool's; the local tool never runs.
pub struct WholeTool {
    local: Arc<dyn ToolDefinition>,
    host: Arc<RemoteHost>,
}

impl WholeTool {
    /// The tool `name` on `host`; `None` unless it is one of [`WHOLE_TOOLS`].
    pub fn new(name: &str, host: Arc<RemoteHost>) -> Option<Self> {
        let local = local_whole_tool(name)?;
        Some(WholeTool { local, host })
    }
}

/// The local tool `name` when it is one of [`WHOLE_TOOLS`]. Made once per
/// process: making a tool builds its JSON schema, which would otherwise
/// cost the helper more than the read itself on every call.
fn local_whole_tool(name: &str) -> Option<Arc<dyn ToolDefinition>> {
    static TOOLS: LazyLock<Vec<Arc<dyn ToolDefinition>>> = LazyLock::new(|| {
        WHOLE_TOOLS
            .iter()
            .filter_map(|name| crate::tools::builtin_tool(name))
            .collect()
    });
    TOOLS.iter().find(|tool| tool.tool().name == name).cloned()
}

#[async_trait]
impl ToolDefinition for WholeTool {
    fn tool(&self) -> &Tool {
        self.local.tool()
    }

    fn label(&self) -> &str {
        self.local.label()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        self.local.prompt_snippet()
    }

    fn prompt_guidelines(&self) -> &[&str] {
        self.local.prompt_guidelines()
    }

    fn execution_mode(&self) -> ExecutionMode {
        self.local.execution_mode()
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        self.local.prepare_arguments(arguments)
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<AgentToolResult, ToolError> {
        // As `Typed` answers a call cancelled before it starts.
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new(ABORTED));
        }
        let call = Call::Tool(ToolCall {
            name: self.local.tool().name.clone(),
            params,
            cwd: ctx.cwd,
            model: ctx.model,
        });
        // A cancellation reaches the helper, whose tool answers it.
        match self.host.call(call, &ctx.cancel).await {
            Ok(Reply::Tool(answer)) => answer.into(),
            Ok(other) => Err(ToolError::new(super::ops::unexpected(&other))),
            // Stopped while waiting for a connection, it says the local
            // tool's words for a stop; lost, ssh's.
            Err(error) => Err(ToolError::new(error.to_string())),
        }
    }

    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        self.local.render_call(args, options)
    }

    fn render_result(
        &self,
        result: &AgentToolResult,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        self.local.render_result(result, is_error, options)
    }
}

/// The helper's side: runs the local tool of `call` with `cancel`. The
/// helper calls it on a thread of its whole-call pool (`remote/pool.rs`),
/// where the tool's file steps run inline
/// ([`block_on_inline`](crate::support::blocking::block_on_inline)) instead
/// of hopping to the blocking pool one by one.
pub async fn run_whole(call: ToolCall, cancel: CancellationToken) -> Reply {
    let Some(tool) = local_whole_tool(&call.name) else {
        return Reply::Refused(format!("'{}' is not a tool the helper runs", call.name));
    };
    let ctx = ToolContext {
        cancel,
        model: call.model,
        ..ToolContext::new(call.cwd)
    };
    Reply::Tool(tool.execute(call.params, ctx).await.into())
}
