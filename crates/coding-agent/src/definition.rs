//! `ToolDefinition`, the context it executes in, and the wrapper that turns it
//! into an [`AgentTool`] the loop can run.

use std::path::PathBuf;
use std::sync::Arc;

use agent_ai::{Model, Tool};
use agent_core::{AgentTool, AgentToolResult, ExecutionMode, ToolError, UpdateSink};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::render::{RenderOptions, Style, StyledLine, call, preview, result};

/// What a tool may ask of the user interface, when there is one.
#[async_trait]
pub trait UiHandle: Send + Sync {
    /// Shows a short message to the user.
    fn notify(&self, message: &str);
    /// Asks the user a yes/no question.
    async fn confirm(&self, question: &str) -> bool;
}

/// Everything a tool's `execute` gets besides its arguments. Made per call.
#[derive(Clone)]
pub struct ToolContext {
    /// Directory relative paths resolve against.
    pub cwd: PathBuf,
    /// Fires when the call is cancelled; long work must stop promptly.
    pub cancel: CancellationToken,
    /// The model the agent is talking to, when known (read checks image support).
    pub model: Option<Model>,
    /// The user interface, absent in print, json and tool modes.
    pub ui: Option<Arc<dyn UiHandle>>,
}

impl ToolContext {
    /// A context with only a working directory.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            model: None,
            ui: None,
        }
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("model", &self.model)
            .field("has_ui", &self.ui.is_some())
            .finish_non_exhaustive()
    }
}

/// A tool as the product knows it.
///
/// Compared with [`AgentTool`], `execute` also gets a [`ToolContext`], and the
/// definition carries what the product shows around the tool: a one-line
/// snippet for the system prompt's tool list, guidelines, and renderers.
#[async_trait]
pub trait ToolDefinition: Send + Sync {
    /// Name, description and parameter schema, as the model sees them.
    fn tool(&self) -> &Tool;

    /// A short human label for UIs.
    fn label(&self) -> &str;

    /// One line for "Available tools:" in the system prompt; tools without one
    /// are left out of that list.
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }

    /// Bullets appended to the system prompt's guidelines while the tool is active.
    fn prompt_guidelines(&self) -> &[&str] {
        &[]
    }

    /// Whether this tool may share a batch with others.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }

    /// Compatibility shim run before schema validation.
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(arguments)
    }

    /// Runs the tool.
    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        ctx: ToolContext,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError>;

    /// How a call shows in a terminal. `args` is the JSON parsed so far, so
    /// while the call streams any field may be missing or partial
    /// (`options.is_partial`). By default: the tool name and its arguments.
    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        let args = args.to_string();
        vec![
            call::header(&self.tool().name)
                .push(" ", Style::Normal)
                .push(preview::clip(&args, options), Style::Dim),
        ]
    }

    /// How a result shows in a terminal, for progress updates
    /// (`options.is_partial`) as for the final result. By default: the first
    /// lines of its text and any notice, images as placeholders; errors in
    /// the error style.
    fn render_result(
        &self,
        result: &AgentToolResult,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        if is_error {
            result::error_lines(result, options)
        } else {
            result::content_lines(result, options)
        }
    }
}

/// Deserializes validated arguments into a tool's argument struct.
///
/// Validation already ran, so a failure here means the struct and its schema
/// disagree; the error still reaches the model rather than panicking.
pub fn parse_args<T: DeserializeOwned>(tool: &str, params: Value) -> Result<T, ToolError> {
    serde_json::from_value(params)
        .map_err(|e| ToolError::new(format!("Invalid arguments for tool \"{tool}\": {e}")))
}

/// Makes a [`ToolContext`] for one call, given the call's cancellation token.
pub type ContextFactory = Arc<dyn Fn(CancellationToken) -> ToolContext + Send + Sync>;

/// Turns a [`ToolDefinition`] into an [`AgentTool`]. `ctx_factory` runs once per
/// call, so every call sees the current cwd, model and UI; the loop never sees
/// the context.
pub fn wrap_tool_definition(
    definition: Arc<dyn ToolDefinition>,
    ctx_factory: ContextFactory,
) -> Arc<dyn AgentTool> {
    Arc::new(WrappedTool {
        definition,
        ctx_factory,
    })
}

struct WrappedTool {
    definition: Arc<dyn ToolDefinition>,
    ctx_factory: ContextFactory,
}

#[async_trait]
impl AgentTool for WrappedTool {
    fn tool(&self) -> &Tool {
        self.definition.tool()
    }

    fn label(&self) -> &str {
        self.definition.label()
    }

    fn execution_mode(&self) -> ExecutionMode {
        self.definition.execution_mode()
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        self.definition.prepare_arguments(arguments)
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        let ctx = (self.ctx_factory)(cancel);
        self.definition
            .execute(tool_call_id, params, ctx, updates)
            .await
    }
}
