//! One tool call through the five steps.
//!
//! ```text
//! find tool -> 1 prepare_arguments -> 2 validate -> 3 before_tool_call   (preflight)
//!           -> 4 execute (progress updates drained while it runs)
//!           -> 5 after_tool_call                                         (finalize)
//! ```
//!
//! The invariant of this module: no `Err` and no panic leaves it. Every step's
//! failure becomes an error result (`isError: true`, the failure's message as the
//! only text block, `details: {}` as Pi's `createErrorToolResult`), which the model
//! reads like any other result and can act on. Preflight failures skip execute
//! and `after_tool_call` (Pi's "immediate" outcomes).
//!
//! Progress updates follow the accepting-updates gate (DEVIATIONS #9): updates a
//! tool sends while `execute` runs are all emitted, with the raw arguments,
//! before the call's `tool_execution_end`; once `execute` has settled the channel
//! is closed and later updates are dropped.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use agent_ai::{AssistantMessage, Content, Message, StopReason, ToolCall, ToolResultMessage};
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::event::{AgentEvent, Emit};
use crate::hooks::{AfterToolCallContext, BeforeToolCall, ToolCallContext, ToolCallHooks};
use crate::tool::{AgentToolResult, ExecutionMode, ToolError, UpdateSink};
use crate::tool_set::{RegisteredTool, ToolSet};

/// Text of a `before_tool_call` block without a reason (Pi's).
pub const BLOCKED_TEXT: &str = "Tool execution was blocked";

/// What the model reads of a call its run stopped: the text Pi's tools
/// answer an abort with (the loop itself uses it for the calls of a run
/// whose future was dropped while they ran).
pub const ABORTED_TEXT: &str = "Operation aborted";

/// The text when a panic carries no message.
const PANIC_WITHOUT_MESSAGE: &str = "Tool panicked";

/// Everything the calls of one batch share.
#[derive(Clone, Copy)]
pub struct ToolCallScope<'a> {
    /// The tools the calls may name.
    pub tools: &'a ToolSet,
    /// `before_tool_call` and `after_tool_call`.
    pub hooks: &'a dyn ToolCallHooks,
    /// `Sequential` forces one call at a time even when no tool asks for it.
    pub execution: ExecutionMode,
    /// The assistant message the calls came from, when a model sent them.
    pub assistant_message: Option<&'a AssistantMessage>,
    /// The conversation so far, shown to the hooks.
    pub messages: &'a [Message],
    /// Cancels every running tool and hook of the batch.
    pub cancel: &'a CancellationToken,
}

/// A result and whether it is an error: what `tool_execution_end` reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) result: AgentToolResult,
    pub(crate) is_error: bool,
}

impl Outcome {
    /// Pi's `createErrorToolResult(message)` with `isError: true`.
    pub(crate) fn error(message: impl Into<String>) -> Self {
        Outcome {
            result: error_result(message),
            is_error: true,
        }
    }

    /// A tool's own failure: its message, and its details when it gave some.
    fn failed(error: ToolError) -> Self {
        let mut outcome = Outcome::error(error.message());
        if let Some(details) = error.details() {
            outcome.result.details = Some(details.clone());
        }
        outcome
    }
}

/// What preflight (steps 1-3) leaves: a block, an immediate outcome, or a call
/// ready to execute.
pub(crate) enum Preflight<'a> {
    /// `before_tool_call` blocked the call: it never starts, so it has no
    /// `tool_execution_start` and no `tool_execution_end`, only its result.
    Blocked(Outcome),
    /// The call failed before execute (unknown tool, bad arguments, a
    /// failing hook): it starts and ends at once.
    Immediate(Outcome),
    /// Execute `tool` with the validated `args`.
    Ready {
        tool: &'a RegisteredTool,
        args: Value,
    },
}

/// Pi's `createErrorToolResult`: the message as the only text, `details: {}`.
pub fn error_result(message: impl Into<String>) -> AgentToolResult {
    AgentToolResult {
        content: vec![Content::text(message)],
        details: Some(Value::Object(serde_json::Map::new())),
        terminate: false,
    }
}

/// Steps 1-3: find the tool, prepare and validate the arguments, ask `before_tool_call`.
pub(crate) async fn preflight<'a>(scope: &ToolCallScope<'a>, call: &ToolCall) -> Preflight<'a> {
    if scope
        .assistant_message
        .is_some_and(|answer| cut_off(answer, call))
    {
        return Preflight::Immediate(Outcome::error(CUT_OFF_TEXT));
    }
    let Some(entry) = scope.tools.entry(&call.name) else {
        return Preflight::Immediate(Outcome::error(format!("Tool {} not found", call.name)));
    };
    let prepared = std::panic::catch_unwind(AssertUnwindSafe(|| {
        entry.tool.prepare_arguments(call.arguments.clone())
    }));
    let prepared = match prepared {
        Ok(Ok(arguments)) => arguments,
        Ok(Err(error)) => return Preflight::Immediate(Outcome::error(error.message())),
        Err(panic) => return Preflight::Immediate(Outcome::error(panic_message(panic))),
    };
    let args = match validate(entry, &prepared) {
        Ok(args) => args,
        Err(outcome) => return Preflight::Immediate(outcome),
    };
    let context = ToolCallContext {
        tool_call: call,
        args: &args,
        assistant_message: scope.assistant_message,
        messages: scope.messages,
    };
    let verdict = AssertUnwindSafe(scope.hooks.before_tool_call(&context, scope.cancel))
        .catch_unwind()
        .await;
    match verdict {
        Ok(Ok(BeforeToolCall::Proceed)) => Preflight::Ready { tool: entry, args },
        Ok(Ok(BeforeToolCall::ProceedWith { args })) => match validate(entry, &args) {
            Ok(args) => Preflight::Ready { tool: entry, args },
            Err(outcome) => Preflight::Immediate(outcome),
        },
        Ok(Ok(BeforeToolCall::Block { reason })) => Preflight::Blocked(Outcome::error(
            reason
                .filter(|reason| !reason.is_empty())
                .unwrap_or_else(|| BLOCKED_TEXT.to_owned()),
        )),
        Ok(Err(error)) => Preflight::Immediate(Outcome::error(error.message())),
        Err(panic) => Preflight::Immediate(Outcome::error(panic_message(panic))),
    }
}

/// What the model reads of a call its answer's length limit cut off.
pub const CUT_OFF_TEXT: &str = "This call was not run: the answer reached its output limit while the call's arguments were being written, so they are incomplete (a file written from them would be cut short). Send the call again with less in it; write a long file in parts.";

/// Whether `call` is the one an answer that stopped at its length limit was
/// writing: its last call. Its arguments were repaired into something that
/// parses, and running them would, say, write a truncated file as a success
/// (Pi runs it). The calls before it were complete.
fn cut_off(answer: &AssistantMessage, call: &ToolCall) -> bool {
    answer.stop_reason == StopReason::Length
        && answer
            .tool_calls()
            .last()
            .is_some_and(|last| last.id == call.id)
}

/// Step 2: the tool's compiled validator (coercions, then its error text).
fn validate(entry: &RegisteredTool, arguments: &Value) -> Result<Value, Outcome> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| entry.validator.validate(arguments))) {
        Ok(Ok(args)) => Ok(args),
        Ok(Err(error)) => Err(Outcome::error(error.to_string())),
        Err(panic) => Err(Outcome::error(panic_message(panic))),
    }
}

/// Steps 4 and 5: execute (draining progress updates while it runs), then
/// `after_tool_call`.
pub(crate) async fn execute_and_finalize(
    scope: &ToolCallScope<'_>,
    call: &ToolCall,
    tool: &RegisteredTool,
    args: Value,
    emit: &Emit<'_>,
) -> Outcome {
    let emit_update = |partial_result: AgentToolResult| {
        emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result,
        });
    };
    let (sink, mut updates) = UpdateSink::channel();
    let execution =
        AssertUnwindSafe(
            tool.tool
                .execute(&call.id, args.clone(), scope.cancel.clone(), sink),
        )
        .catch_unwind();
    tokio::pin!(execution);
    let settled = loop {
        tokio::select! {
            // Polling execute first means an update and the settling can never
            // race: whatever was sent before settling is drained below.
            biased;
            settled = &mut execution => break settled,
            Some(update) = updates.recv() => emit_update(update),
        }
    };
    // The accepting-updates gate: from here on `UpdateSink::send` fails, while
    // everything sent before is still buffered and delivered.
    updates.close();
    while let Ok(update) = updates.try_recv() {
        emit_update(update);
    }
    let executed = match settled {
        Ok(Ok(result)) => Outcome {
            result,
            is_error: false,
        },
        Ok(Err(error)) => Outcome::failed(error),
        Err(panic) => Outcome::error(panic_message(panic)),
    };
    finalize(scope, call, &args, executed).await
}

/// Step 5: `after_tool_call`, applied field by field.
async fn finalize(
    scope: &ToolCallScope<'_>,
    call: &ToolCall,
    args: &Value,
    executed: Outcome,
) -> Outcome {
    let context = AfterToolCallContext {
        call: ToolCallContext {
            tool_call: call,
            args,
            assistant_message: scope.assistant_message,
            messages: scope.messages,
        },
        result: &executed.result,
        is_error: executed.is_error,
    };
    let verdict = AssertUnwindSafe(scope.hooks.after_tool_call(&context, scope.cancel))
        .catch_unwind()
        .await;
    match verdict {
        Ok(Ok(None)) => executed,
        Ok(Ok(Some(changes))) => {
            let Outcome {
                mut result,
                mut is_error,
            } = executed;
            if let Some(content) = changes.content {
                result.content = content;
            }
            if let Some(details) = changes.details {
                result.details = Some(details);
            }
            if let Some(terminate) = changes.terminate {
                result.terminate = terminate;
            }
            if let Some(flag) = changes.is_error {
                is_error = flag;
            }
            Outcome { result, is_error }
        }
        Ok(Err(error)) => Outcome::error(error.message()),
        Err(panic) => Outcome::error(panic_message(panic)),
    }
}

/// All five steps for one call, without events.
pub(crate) async fn run_call(
    scope: &ToolCallScope<'_>,
    call: &ToolCall,
    emit: &Emit<'_>,
) -> Outcome {
    match preflight(scope, call).await {
        Preflight::Blocked(outcome) | Preflight::Immediate(outcome) => outcome,
        Preflight::Ready { tool, args } => {
            execute_and_finalize(scope, call, tool, args, emit).await
        }
    }
}

/// The message the model reads for `call`.
pub(crate) fn tool_result_message(call: &ToolCall, outcome: &Outcome) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: outcome.result.content.clone(),
        details: outcome.result.details.clone(),
        is_error: outcome.is_error,
        timestamp: agent_ai::message::now_millis(),
    }
}

/// Runs ONE tool call through the five steps, without a model and without events.
///
/// For callers that have a call but no conversation, such as the CLI's `tool`
/// command. The hooks see `assistant_message: None` and no messages; progress
/// updates are dropped. Like the loop, it never fails: every failure is a
/// result with `is_error: true`.
pub async fn run_single_tool_call(
    tools: &ToolSet,
    call: &ToolCall,
    hooks: &dyn ToolCallHooks,
    cancel: &CancellationToken,
) -> ToolResultMessage {
    run_single_tool_call_with_updates(tools, call, hooks, cancel, &|_| {}).await
}

/// [`run_single_tool_call`], with the tool's progress updates handed to
/// `on_update` as they come (the MCP server turns them into progress
/// notifications).
pub async fn run_single_tool_call_with_updates(
    tools: &ToolSet,
    call: &ToolCall,
    hooks: &dyn ToolCallHooks,
    cancel: &CancellationToken,
    on_update: &(dyn Fn(&AgentToolResult) + Send + Sync),
) -> ToolResultMessage {
    let scope = ToolCallScope {
        tools,
        hooks,
        execution: ExecutionMode::Sequential,
        assistant_message: None,
        messages: &[],
        cancel,
    };
    let emit = |event: AgentEvent| {
        if let AgentEvent::ToolExecutionUpdate { partial_result, .. } = event {
            on_update(&partial_result);
        }
    };
    let outcome = run_call(&scope, call, &emit).await;
    tool_result_message(call, &outcome)
}

/// The text of a caught panic: its message when it has one.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    panic_text(payload.as_ref())
        .unwrap_or(PANIC_WITHOUT_MESSAGE)
        .to_owned()
}

/// The message a caught panic carries, if it carries one.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}
