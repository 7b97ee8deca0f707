//! Events the agent loop emits, and the one place their order is written down.
//!
//! # Order of events
//!
//! A run (`agent_loop`, or [`crate::Agent::prompt`]):
//!
//! ```text
//! agent_start
//! turn_start
//!   message_start(prompt) message_end(prompt)            for each prompt (none for continue)
//!   message_start(m) message_end(m)                       for each steering message already queued
//!   message_start(assistant) message_update* message_end(assistant)
//!   [tool calls, see below]
//! turn_end{assistant, tool results in call order}
//! turn_start                                              next turn, when there were tool calls
//!   message_start(m) message_end(m)                       for each steering or follow-up message taken
//!   ...                                                   (same as above)
//! turn_end
//! agent_end{every message the run added}
//! ```
//!
//! A turn whose assistant message has `stopReason` `error` or `aborted` ends the
//! run at once: `turn_end` (with no tool results) then `agent_end`. The run also
//! ends after a turn when `should_stop_after_turn` says so, and when a turn had
//! no tool calls (or its batch terminated) and no steering or follow-up message
//! is queued. A provider stream that ends without `Start` still gets its
//! `message_start` just before `message_end`.
//!
//! Tool calls of one assistant message, **sequential** batch (config says so, or
//! any called tool has [`crate::ExecutionMode::Sequential`]), for each call in order:
//!
//! ```text
//! [preflight: find, prepare, validate, before_tool_call]
//! tool_execution_start  tool_execution_update*  tool_execution_end
//! message_start(toolResult)  message_end(toolResult)
//! ```
//!
//! **Parallel** batch (the default):
//!
//! 1. For each call in order: preflight (find, prepare, validate,
//!    `before_tool_call`), then `tool_execution_start`. A call that failed
//!    there gets its `tool_execution_end` right after its start.
//! 2. The remaining calls execute concurrently; `tool_execution_update`s
//!    interleave; each call's `tool_execution_end` comes when its
//!    `after_tool_call` is done, so in completion order.
//! 3. When all have settled: `message_start`/`message_end` of every tool result,
//!    in call order.
//!
//! In both, a call that `before_tool_call` **blocked** never starts: it has no
//! `tool_execution_start` and no `tool_execution_end`, only its error result
//! message (Pi emits a start and an end for it; `docs/DEVIATIONS.md`). Whatever
//! the hook itself reports (an approval asked, a decision) therefore comes
//! before the call's start.
//!
//! In both, every `tool_execution_update` of a call comes before its
//! `tool_execution_end`, and none after it (updates sent once execute has
//! settled are dropped: DEVIATIONS #9). Updates and starts carry the raw
//! arguments the model sent, not the prepared ones.
//!
//! An [`crate::Agent`] run whose future is dropped stops where it is and
//! emits nothing more, with one exception: when tools were running, the
//! model's calls get error results `Operation aborted`, each with its
//! `message_start` and `message_end`, so the history does not end with
//! unanswered calls. Their `tool_execution_end`, the `turn_end` and the
//! `agent_end` never come.

use agent_ai::{AssistantMessageEvent, Message, ToolResultMessage};
use serde_json::Value;

use crate::tool::AgentToolResult;

/// Where the loop sends its events; called from the loop's own task, in order.
///
/// Keep it cheap (push to a channel or a buffer): the loop waits for it.
pub type Emit<'a> = dyn Fn(AgentEvent) + Send + Sync + 'a;

/// One event of an agent run, in the order described in the [module docs](self).
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
    /// A streaming assistant message changed. The message so far is the
    /// event's [`AssistantMessageEvent::message`], shared with the provider
    /// rather than copied for every delta (see [`AssistantMessageEvent`]).
    MessageUpdate {
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
