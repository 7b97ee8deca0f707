//! The tool calls of one assistant message: parallel or sequential.
//!
//! One vote decides: if the configuration says sequential, or any called tool
//! has [`ExecutionMode::Sequential`], the whole batch runs one call at a time
//! (knowing which calls conflict is hard; waiting is safe). Otherwise preflight
//! runs in call order (hooks may have side effects), execute runs concurrently,
//! and results are reported in call order. In both, a call starts (its
//! `tool_execution_start`) only once `before_tool_call` let it: a blocked call
//! never starts. The exact event order is in
//! [`crate::event`].
//!
//! Concurrent calls are futures polled by the loop's own task
//! (`FuturesUnordered`), not spawned tasks: when the run ends, or its future is
//! dropped, no tool outlives it.

use agent_ai::{ToolCall, ToolResultMessage};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;

use crate::event::{AgentEvent, Emit};
use crate::pipeline::{
    Outcome, Preflight, ToolCallScope, execute_and_finalize, preflight, tool_result_message,
};
use crate::tool::ExecutionMode;
use crate::tool_set::RegisteredTool;

/// The results of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchOutcome {
    /// One result per call, in call order.
    pub results: Vec<ToolResultMessage>,
    /// True when every call asked to stop the loop (`terminate`); a batch
    /// with a failed call never terminates, since error results do not ask.
    pub terminate: bool,
}

/// Runs the calls of one assistant message through the pipeline, emitting
/// the tool events and the tool-result messages.
pub async fn execute_tool_calls(
    scope: &ToolCallScope<'_>,
    calls: &[ToolCall],
    emit: &Emit<'_>,
) -> BatchOutcome {
    let sequential = scope.execution == ExecutionMode::Sequential
        || calls.iter().any(|call| {
            scope
                .tools
                .get(&call.name)
                .is_some_and(|tool| tool.execution_mode() == ExecutionMode::Sequential)
        });
    let outcomes = if sequential {
        run_sequential(scope, calls, emit).await
    } else {
        run_parallel(scope, calls, emit).await
    };
    let terminate =
        !outcomes.is_empty() && outcomes.iter().all(|(_, outcome)| outcome.result.terminate);
    BatchOutcome {
        results: outcomes.into_iter().map(|(message, _)| message).collect(),
        terminate,
    }
}

/// Each call start to finish, its result message right after its end.
async fn run_sequential(
    scope: &ToolCallScope<'_>,
    calls: &[ToolCall],
    emit: &Emit<'_>,
) -> Vec<(ToolResultMessage, Outcome)> {
    let mut done = Vec::with_capacity(calls.len());
    for call in calls {
        let outcome = match start(call, preflight(scope, call).await, emit) {
            Started::Settled(outcome) => outcome,
            Started::Ready { tool, args } => {
                let outcome = execute_and_finalize(scope, call, tool, args, emit).await;
                emit(end_event(call, &outcome));
                outcome
            }
        };
        let message = tool_result_message(call, &outcome);
        emit_result_message(&message, emit);
        done.push((message, outcome));
    }
    done
}

/// Preflight in order, execute concurrently, result messages in call order.
async fn run_parallel(
    scope: &ToolCallScope<'_>,
    calls: &[ToolCall],
    emit: &Emit<'_>,
) -> Vec<(ToolResultMessage, Outcome)> {
    let mut outcomes: Vec<Option<Outcome>> = vec![None; calls.len()];
    let running = FuturesUnordered::new();
    for (index, call) in calls.iter().enumerate() {
        match start(call, preflight(scope, call).await, emit) {
            Started::Settled(outcome) => outcomes[index] = Some(outcome),
            // Not polled until every preflight is done.
            Started::Ready { tool, args } => running.push(async move {
                let outcome = execute_and_finalize(scope, call, tool, args, emit).await;
                (index, outcome)
            }),
        }
    }
    let mut running = running;
    while let Some((index, outcome)) = running.next().await {
        if let Some(call) = calls.get(index) {
            emit(end_event(call, &outcome));
        }
        outcomes[index] = Some(outcome);
    }
    calls
        .iter()
        .zip(outcomes)
        .filter_map(|(call, outcome)| {
            let outcome = outcome?;
            let message = tool_result_message(call, &outcome);
            emit_result_message(&message, emit);
            Some((message, outcome))
        })
        .collect()
}

/// A call after its preflight and its start events.
enum Started<'a> {
    /// Its outcome is known: blocked (never started), or failed before
    /// execute (started and ended).
    Settled(Outcome),
    /// Started; execute `tool` with `args`, then emit its end.
    Ready {
        tool: &'a RegisteredTool,
        args: Value,
    },
}

/// Emits what a call's preflight decides: nothing for a call
/// `before_tool_call` blocked (it never started: the hook's decision, and the
/// error result message, are all a client sees of it), `tool_execution_start`
/// and at once `tool_execution_end` for a call that failed before execute,
/// `tool_execution_start` for a call about to execute.
fn start<'a>(call: &ToolCall, preflight: Preflight<'a>, emit: &Emit<'_>) -> Started<'a> {
    match preflight {
        Preflight::Blocked(outcome) => Started::Settled(outcome),
        Preflight::Immediate(outcome) => {
            emit(start_event(call));
            emit(end_event(call, &outcome));
            Started::Settled(outcome)
        }
        Preflight::Ready { tool, args } => {
            emit(start_event(call));
            Started::Ready { tool, args }
        }
    }
}

fn start_event(call: &ToolCall) -> AgentEvent {
    AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
    }
}

fn end_event(call: &ToolCall, outcome: &Outcome) -> AgentEvent {
    AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: outcome.result.clone(),
        is_error: outcome.is_error,
    }
}

fn emit_result_message(message: &ToolResultMessage, emit: &Emit<'_>) {
    emit(AgentEvent::MessageStart {
        message: message.clone().into(),
    });
    emit(AgentEvent::MessageEnd {
        message: message.clone().into(),
    });
}
