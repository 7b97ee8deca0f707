//! Batches of tool calls through the loop: event order in parallel and
//! sequential batches, the accepting-updates gate, hooks, and `terminate`.
//! Pi's reference: `docs/tool-behaviour.md` §2.3-2.4 (with Pi's traces).

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use agent_ai::{Message, ScriptedProvider, ToolResultMessage};
use agent_core::{
    AfterToolCallContext, AgentTool, AgentToolResult, BeforeToolCall, ExecutionMode,
    ToolCallContext, ToolCallHooks, ToolError, ToolResultOverride, UpdateSink, agent_loop,
};
use async_trait::async_trait;
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The model's five calls of Pi's scenario 1: slow A, fast B, invalid C,
/// unknown D, and E which panics.
fn five_calls() -> Vec<agent_ai::AssistantContent> {
    vec![
        call("A", "t", json!({"ms": 60})),
        call("B", "t", json!({"ms": 10})),
        call("C", "t", json!({"ms": "x"})),
        call("D", "nope", json!({"ms": 1})),
        call("E", "t", json!({"ms": 13})),
    ]
}

fn tool_results(messages: &[Message]) -> Vec<ToolResultMessage> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

// Pi's verified trace, with two deliberate differences: the late update of B
// is dropped (DEVIATIONS #9) and E panics instead of throwing.
#[tokio::test(start_paused = true)]
async fn parallel_batch_of_five_runs_in_pis_event_order() {
    let provider = ScriptedProvider::new([reply(five_calls()), reply(vec![text("All done.")])]);
    let tool = Arc::new(SleepTool::new("t"));
    let late = tool.late_accepted.clone();
    let mut context = context(vec![tool]);
    let recorder = Recorder::default();
    let added = agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    // Let the late senders (5 ms after each success) try their luck.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;

    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"; 5]),
            "tool_start(A)",
            "tool_start(B)",
            "tool_start(C)",
            "tool_end(C ERR: Validation failed for tool \"t\":\n  - ms: must be number\n\nReceived arguments:\n{\n  \"ms\": \"x\"\n})",
            "tool_start(D)",
            "tool_end(D ERR: Tool nope not found)",
            "tool_start(E)",
            "tool_update(A: partial A)",
            "tool_update(B: partial B)",
            "tool_update(E: partial E)",
            "tool_end(B ok: done B)",
            "tool_end(E ERR: boom E)",
            "tool_end(A ok: done A)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "message_start(toolResult B)",
            "message_end(toolResult B)",
            "message_start(toolResult C)",
            "message_end(toolResult C)",
            "message_start(toolResult D)",
            "message_end(toolResult D)",
            "message_start(toolResult E)",
            "message_end(toolResult E)",
            "turn_end(5 results)",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(8 messages)",
        ]
    );
    assert_eq!(
        *late.lock().unwrap(),
        [("B".to_owned(), false), ("A".to_owned(), false)],
        "late updates are refused by the closed sink"
    );
    let results = tool_results(&added);
    let summary: Vec<(String, bool, Option<Value>)> = results
        .iter()
        .map(|r| (content_text(&r.content), r.is_error, r.details.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            ("done A".to_owned(), false, Some(json!({"ms": 60.0}))),
            ("done B".to_owned(), false, Some(json!({"ms": 10.0}))),
            (
                "Validation failed for tool \"t\":\n  - ms: must be number\n\nReceived arguments:\n{\n  \"ms\": \"x\"\n}".to_owned(),
                true,
                Some(json!({}))
            ),
            ("Tool nope not found".to_owned(), true, Some(json!({}))),
            ("boom E".to_owned(), true, Some(json!({}))),
        ]
    );
    // The second request carries the five results in call order.
    let second = &provider.requests()[1];
    let ids: Vec<String> = tool_results(&second.messages)
        .into_iter()
        .map(|r| r.tool_call_id)
        .collect();
    assert_eq!(ids, ["A", "B", "C", "D", "E"]);
}

#[tokio::test(start_paused = true)]
async fn one_sequential_tool_makes_the_whole_batch_sequential() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("A", "t", json!({"ms": 20})),
            call("B", "s", json!({"ms": 10})),
        ]),
        reply(vec![text("ok")]),
    ]);
    let parallel: Arc<dyn AgentTool> = Arc::new(SleepTool::new("t"));
    let sequential: Arc<dyn AgentTool> = Arc::new(SleepTool::new("s").sequential());
    let mut context = context(vec![parallel, sequential]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"; 2]),
            "tool_start(A)",
            "tool_update(A: partial A)",
            "tool_end(A ok: done A)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "tool_start(B)",
            "tool_update(B: partial B)",
            "tool_end(B ok: done B)",
            "message_start(toolResult B)",
            "message_end(toolResult B)",
            "turn_end(2 results)",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(5 messages)",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn sequential_config_runs_parallel_tools_one_at_a_time() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("A", "t", json!({"ms": 20})),
            call("B", "t", json!({"ms": 10})),
        ]),
        reply(vec![text("ok")]),
    ]);
    let mut context = context(vec![Arc::new(SleepTool::new("t"))]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_tool_execution(ExecutionMode::Sequential),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    let tool_lines: Vec<String> = recorder
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("tool_") || l.contains("toolResult"))
        .collect();
    assert_eq!(
        tool_lines,
        [
            "tool_start(A)",
            "tool_update(A: partial A)",
            "tool_end(A ok: done A)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "tool_start(B)",
            "tool_update(B: partial B)",
            "tool_end(B ok: done B)",
            "message_start(toolResult B)",
            "message_end(toolResult B)",
        ]
    );
}

/// Blocks calls whose id is listed, with an optional reason.
struct Blocker {
    block: Vec<(&'static str, Option<&'static str>)>,
}

#[async_trait]
impl ToolCallHooks for Blocker {
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        Ok(
            match self.block.iter().find(|(id, _)| *id == call.tool_call.id) {
                Some((_, reason)) => BeforeToolCall::Block {
                    reason: reason.map(str::to_owned),
                },
                None => BeforeToolCall::Proceed,
            },
        )
    }
}

/// DEVIATIONS #22: a call `before_tool_call` blocked never starts, so it has
/// no start and no end event (Pi emits both); its result message is all.
#[tokio::test(start_paused = true)]
async fn a_blocked_call_never_starts_and_only_its_result_message_says_so() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("A", "t", json!({"ms": 20})),
            call("B", "t", json!({"ms": 10})),
        ]),
        reply(vec![text("ok")]),
    ]);
    let mut context = context(vec![Arc::new(SleepTool::new("t"))]);
    let recorder = Recorder::default();
    let hooks = Arc::new(Blocker {
        block: vec![("B", None)],
    });
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_hooks(hooks),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"; 2]),
            "tool_start(A)",
            "tool_update(A: partial A)",
            "tool_end(A ok: done A)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "message_start(toolResult B)",
            "message_end(toolResult B)",
            "turn_end(2 results)",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(5 messages)",
        ]
    );
}

/// DEVIATIONS #22, one call at a time: the blocked call between two that run
/// has no start and no end; the calls around it start and end as usual.
#[tokio::test(start_paused = true)]
async fn a_blocked_call_in_a_sequential_batch_never_starts_either() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("A", "t", json!({"ms": 10})),
            call("B", "t", json!({"ms": 10})),
            call("C", "t", json!({"ms": 10})),
        ]),
        reply(vec![text("ok")]),
    ]);
    let mut context = context(vec![Arc::new(SleepTool::new("t"))]);
    let recorder = Recorder::default();
    let hooks = Arc::new(Blocker {
        block: vec![("B", Some("not B"))],
    });
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider)
            .with_tool_execution(ExecutionMode::Sequential)
            .with_hooks(hooks),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    let lines = recorder.lines();
    let tools: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|line| line.starts_with("tool_") || line.starts_with("message_end(toolResult"))
        .collect();
    assert_eq!(
        tools,
        [
            "tool_start(A)",
            "tool_update(A: partial A)",
            "tool_end(A ok: done A)",
            "message_end(toolResult A)",
            "message_end(toolResult B)",
            "tool_start(C)",
            "tool_update(C: partial C)",
            "tool_end(C ok: done C)",
            "message_end(toolResult C)",
        ]
    );
}

/// `after_tool_call` fails with "after failed".
struct FailingAfter;

#[async_trait]
impl ToolCallHooks for FailingAfter {
    async fn after_tool_call(
        &self,
        _call: &AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        Err(ToolError::new("after failed"))
    }
}

#[tokio::test]
async fn failing_after_hook_becomes_an_error_result_and_the_loop_goes_on() {
    let provider = ScriptedProvider::new([
        reply(vec![call("A", "echo", json!({"value": "hi"}))]),
        reply(vec![text("ok")]),
    ]);
    let mut context = context(vec![Arc::new(EchoTool::new())]);
    let recorder = Recorder::default();
    let added = agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_hooks(Arc::new(FailingAfter)),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"]),
            "tool_start(A)",
            "tool_end(A ERR: after failed)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "turn_end(1 results)",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(4 messages)",
        ]
    );
    let result = &tool_results(&added)[0];
    assert_eq!(
        (result.is_error, result.details.clone()),
        (true, Some(json!({})))
    );
}

/// A tool that sends three updates and returns without ever yielding, then
/// keeps its sink so a hook can try to send after execute settled.
struct Chatty {
    tool: agent_ai::Tool,
    kept_sink: Arc<Mutex<Option<UpdateSink>>>,
}

#[async_trait]
impl AgentTool for Chatty {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Chatty"
    }

    async fn execute(
        &self,
        _id: &str,
        _params: Value,
        _cancel: CancellationToken,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        for n in 1..=3 {
            updates.send(AgentToolResult::text(format!("step {n}")));
        }
        *self.kept_sink.lock().unwrap() = Some(updates);
        Ok(AgentToolResult::text("finished"))
    }
}

/// Sends an update through the kept sink from `after_tool_call`, i.e. after
/// execute has settled, and records whether it was accepted.
struct LateSender {
    kept_sink: Arc<Mutex<Option<UpdateSink>>>,
    accepted: Arc<Mutex<Option<bool>>>,
}

#[async_trait]
impl ToolCallHooks for LateSender {
    async fn after_tool_call(
        &self,
        _call: &AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        let sink = self.kept_sink.lock().unwrap().clone().unwrap();
        *self.accepted.lock().unwrap() = Some(sink.send(AgentToolResult::text("too late")));
        Ok(None)
    }
}

// DEVIATIONS #9: the accepting-updates gate. Updates sent before execute
// settles are all delivered before tool_execution_end; one sent after is dropped.
#[tokio::test]
async fn updates_before_settling_are_delivered_and_later_ones_dropped() {
    let provider = ScriptedProvider::new([
        reply(vec![call("A", "chatty", json!({}))]),
        reply(vec![text("ok")]),
    ]);
    let kept_sink = Arc::new(Mutex::new(None));
    let accepted = Arc::new(Mutex::new(None));
    let tool = Chatty {
        tool: agent_ai::Tool {
            name: "chatty".into(),
            description: "Talks.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        kept_sink: kept_sink.clone(),
    };
    let mut context = context(vec![Arc::new(tool)]);
    let recorder = Recorder::default();
    let hooks = Arc::new(LateSender {
        kept_sink,
        accepted: accepted.clone(),
    });
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_hooks(hooks),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    let tool_lines: Vec<String> = recorder
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("tool_"))
        .collect();
    assert_eq!(
        tool_lines,
        [
            "tool_start(A)",
            "tool_update(A: step 1)",
            "tool_update(A: step 2)",
            "tool_update(A: step 3)",
            "tool_end(A ok: finished)",
        ]
    );
    assert_eq!(*accepted.lock().unwrap(), Some(false));
    // Updates carry the raw arguments of the call.
    let update_args: Vec<Value> = recorder
        .events()
        .into_iter()
        .filter_map(|e| match e {
            agent_core::AgentEvent::ToolExecutionUpdate { args, .. } => Some(args),
            _ => None,
        })
        .collect();
    assert_eq!(update_args, [json!({}), json!({}), json!({})]);
}

/// Sets `terminate` on every result it sees.
struct TerminateAll;

#[async_trait]
impl ToolCallHooks for TerminateAll {
    async fn after_tool_call(
        &self,
        _call: &AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        Ok(Some(ToolResultOverride {
            terminate: Some(true),
            ..ToolResultOverride::default()
        }))
    }
}

fn terminating_echo() -> Arc<dyn AgentTool> {
    let mut tool = EchoTool::new();
    tool.terminate = true;
    Arc::new(tool)
}

#[tokio::test]
async fn batch_where_every_result_terminates_ends_the_run_without_asking_the_model() {
    let provider = ScriptedProvider::new([reply(vec![
        call("A", "echo", json!({"value": "a"})),
        call("B", "echo", json!({"value": "b"})),
    ])]);
    let mut context = context(vec![terminating_echo()]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    let tail: Vec<String> = recorder.lines().into_iter().rev().take(2).collect();
    assert_eq!(tail, ["agent_end(4 messages)", "turn_end(2 results)"]);
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn one_failed_call_keeps_a_terminating_batch_going() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("A", "echo", json!({"value": "a"})),
            call("B", "missing", json!({})),
        ]),
        reply(vec![text("ok")]),
    ]);
    let mut context = context(vec![terminating_echo()]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn after_hook_can_make_a_batch_terminate() {
    let provider = ScriptedProvider::new([reply(vec![
        call("A", "echo", json!({"value": "a"})),
        call("B", "missing", json!({})),
    ])]);
    let mut context = context(vec![Arc::new(EchoTool::new())]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_hooks(Arc::new(TerminateAll)),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    // The unknown tool fails in preflight, which after_tool_call never sees,
    // so only A terminates: the loop asks the model again (and the script is
    // exhausted, which ends the run with an error).
    assert_eq!(provider.requests().len(), 2);

    let provider = ScriptedProvider::new([reply(vec![call("A", "echo", json!({"value": "a"}))])]);
    let mut context = common::context(vec![Arc::new(EchoTool::new())]);
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_hooks(Arc::new(TerminateAll)),
        &CancellationToken::new(),
        &|_| {},
    )
    .await;
    assert_eq!(provider.requests().len(), 1);
}

// A batch may also be run directly, outside a loop.
#[tokio::test]
async fn execute_tool_calls_reports_results_in_call_order() {
    let tools =
        agent_core::ToolSet::new(vec![Arc::new(EchoTool::new()) as Arc<dyn AgentTool>]).unwrap();
    let cancel = CancellationToken::new();
    let scope = agent_core::ToolCallScope {
        tools: &tools,
        hooks: &agent_core::NoHooks,
        execution: ExecutionMode::Parallel,
        assistant_message: None,
        messages: &[],
        cancel: &cancel,
    };
    let calls = [
        tool_call("1", "echo", json!({"value": "one"})),
        tool_call("2", "echo", json!({"value": "two"})),
    ];
    let outcome = agent_core::execute_tool_calls(&scope, &calls, &|_| {}).await;
    let texts: Vec<String> = outcome
        .results
        .iter()
        .map(|r| content_text(&r.content))
        .collect();
    assert_eq!(texts, ["echoed: one", "echoed: two"]);
    assert!(!outcome.terminate);
}
