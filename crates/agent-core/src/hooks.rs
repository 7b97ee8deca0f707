//! The product's two chances to intervene in a tool call: `before_tool_call`
//! (step 3, may block the call) and `after_tool_call` (step 5, may rewrite the
//! result).

use agent_ai::{AssistantMessage, Content, Message, ToolCall};
use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{AgentToolResult, ToolError};

/// What a hook knows about the call it is looking at.
#[derive(Debug, Clone, Copy)]
pub struct ToolCallContext<'a> {
    /// The call exactly as the model sent it (raw, unprepared arguments).
    pub tool_call: &'a ToolCall,
    /// The arguments after `prepare_arguments` and validation (with Pi's coercions).
    pub args: &'a Value,
    /// The assistant message holding the call; `None` when the call did not
    /// come from a model (see [`crate::run_single_tool_call`]).
    pub assistant_message: Option<&'a AssistantMessage>,
    /// The conversation so far (the assistant message included).
    pub messages: &'a [Message],
}

/// What `after_tool_call` knows: the call and how it went.
#[derive(Debug, Clone, Copy)]
pub struct AfterToolCallContext<'a> {
    /// The call and its arguments.
    pub call: ToolCallContext<'a>,
    /// The tool's result, or the error result made from its failure.
    pub result: &'a AgentToolResult,
    /// True when execute failed (returned `Err` or panicked).
    pub is_error: bool,
}

/// The verdict of `before_tool_call`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BeforeToolCall {
    /// Run the tool.
    #[default]
    Proceed,
    /// Run the tool with `args` instead of the model's arguments (a command
    /// hook's `updatedInput`). They are validated again with the tool's
    /// schema; invalid ones fail the call with the validator's text, as the
    /// model's own would, so a hook cannot hand a tool what it never accepts.
    ProceedWith {
        /// The arguments the tool sees (and `after_tool_call` is shown).
        args: Value,
    },
    /// Do not run it; the model reads `reason`, or `Tool execution was blocked`
    /// when there is none.
    Block {
        /// Why, written for the model.
        reason: Option<String>,
    },
}

/// Field-by-field changes `after_tool_call` makes to a result; `None` keeps
/// the field as the tool left it (Pi's `r.field ?? result.field`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResultOverride {
    /// Replaces the content the model reads.
    pub content: Option<Vec<Content>>,
    /// Replaces the details.
    pub details: Option<Value>,
    /// Replaces the error flag.
    pub is_error: Option<bool>,
    /// Replaces the stop-after-batch request.
    pub terminate: Option<bool>,
}

/// Hooks around every tool call.
///
/// Both default to doing nothing. An `Err` (or a panic) from either hook becomes
/// the call's result with `isError: true` and its message as the text; it never
/// ends the run. Hooks of a parallel batch's `before_tool_call` run one call at a
/// time in call order (they may have side effects); `after_tool_call` runs
/// concurrently, right after each call's execute settles.
#[async_trait]
pub trait ToolCallHooks: Send + Sync {
    /// Step 3: runs after validation, before execute. Return
    /// [`BeforeToolCall::Block`] to refuse the call (for example a dangerous command).
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        let _ = (call, cancel);
        Ok(BeforeToolCall::Proceed)
    }

    /// Step 5: runs after execute settled (successfully or not). Return an
    /// override to change the result.
    async fn after_tool_call(
        &self,
        call: &AfterToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        let _ = (call, cancel);
        Ok(None)
    }
}

/// Hooks that never intervene.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl ToolCallHooks for NoHooks {}
