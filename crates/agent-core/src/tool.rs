//! The tool as the loop knows it.

use agent_ai::{Content, Tool};
use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Whether a tool may run alongside others in the same batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExecutionMode {
    /// Execute concurrently with the other calls of the batch (the default).
    #[default]
    Parallel,
    /// Run the whole batch one call at a time when this tool is in it.
    Sequential,
}

/// What a tool returns: content for the model, details for UIs and logs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentToolResult {
    /// What the model reads (text and images).
    pub content: Vec<Content>,
    /// Structured data for UIs and logs; never sent to the model.
    pub details: Option<Value>,
    /// Asks the loop to stop after this batch (only if every result of the batch asks).
    pub terminate: bool,
}

impl AgentToolResult {
    /// A result with one text block and no details.
    pub fn text(text: impl Into<String>) -> Self {
        AgentToolResult {
            content: vec![Content::text(text)],
            details: None,
            terminate: false,
        }
    }

    /// Sets `details`.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// A tool failed. The message is the whole text the model reads, so write it
/// for the model: what went wrong and what to do next. `details` is what a UI
/// or a hook reads about the failure (an exit code, a path), never the model;
/// without any, the error result carries `details: {}` as Pi's does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    message: String,
    details: Option<Value>,
}

impl ToolError {
    /// An error with this text.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            details: None,
        }
    }

    /// Sets `details`.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The text the model will read.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The structured data about the failure, when the tool gave some.
    pub fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::new(message)
    }
}

/// A progress update: a partial result while the tool still runs.
pub type ToolUpdate = AgentToolResult;

/// Where a running tool sends progress updates.
///
/// Cheap to clone and never blocks. Once the tool's `execute` has settled the
/// sink is closed and further updates are dropped (the accepting-updates gate):
/// a tool cannot report progress after it has ended.
#[derive(Debug, Clone)]
pub struct UpdateSink {
    sender: Option<mpsc::UnboundedSender<ToolUpdate>>,
}

impl UpdateSink {
    /// A sink and the receiving end the loop drains.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ToolUpdate>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (
            UpdateSink {
                sender: Some(sender),
            },
            receiver,
        )
    }

    /// A sink that drops everything (for calling a tool outside the loop).
    pub fn discard() -> Self {
        UpdateSink { sender: None }
    }

    /// Sends an update; returns false when nobody accepts updates any more.
    pub fn send(&self, update: ToolUpdate) -> bool {
        self.sender
            .as_ref()
            .is_some_and(|sender| sender.send(update).is_ok())
    }
}

/// A tool the agent loop can run.
///
/// `execute` should return `Err` on failure rather than encode the failure in
/// `content`; the loop turns the error into a tool result with `isError: true`.
#[async_trait]
pub trait AgentTool: Send + Sync {
    /// Name, description and parameter schema, as the model sees them.
    fn tool(&self) -> &Tool;

    /// A short human label for UIs.
    fn label(&self) -> &str;

    /// Whether this tool may share a batch with others.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }

    /// A compatibility shim run before schema validation, for argument shapes
    /// models are known to send (for example an array sent as a JSON string).
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(arguments)
    }

    /// Runs the tool with validated `params`. Must return promptly once `cancel` fires.
    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError>;
}
