//! Events the agent loop emits.

use agent_ai::{AssistantMessageEvent, Message, ToolResultMessage};
use serde_json::Value;

use crate::tool::AgentToolResult;

/// One event of an agent run.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// The run started.
    AgentStart,
    /// The run ended; `messages` are all messages it added.
    AgentEnd {
        /// Prompts, assistant messages, tool results and injected messages, in order.
        messages: Vec<Message>,
    },
    /// A turn (one model response and its tool calls) started.
    TurnStart,
    /// A turn ended.
    TurnEnd {
        /// The assistant message of the turn.
        message: Message,
        /// The results of its tool calls, in call order.
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message started (a prompt, a streaming assistant message, a tool result).
    MessageStart {
        /// The message so far.
        message: Message,
    },
    /// A streaming assistant message changed.
    MessageUpdate {
        /// The message so far.
        message: Message,
        /// The provider event behind the change.
        assistant_message_event: Box<AssistantMessageEvent>,
    },
    /// A message is complete.
    MessageEnd {
        /// The final message.
        message: Message,
    },
    /// A tool call started its pipeline.
    ToolExecutionStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The raw arguments the model sent.
        args: Value,
    },
    /// A running tool reported progress.
    ToolExecutionUpdate {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The raw arguments the model sent.
        args: Value,
        /// The partial result.
        partial_result: AgentToolResult,
    },
    /// A tool call finished its pipeline.
    ToolExecutionEnd {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The final result.
        result: AgentToolResult,
        /// True when any step failed.
        is_error: bool,
    },
}
