//! Cancelling a run (`docs/tool-behaviour.md` §2.5): every running tool and the
//! provider stream see it, the run ends with `stopReason: aborted`, and no
//! tool outlives the run.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_ai::testing::ScriptedResponse;
use agent_ai::{Message, ScriptedProvider, StopReason};
use agent_core::{
    Agent, AgentEvents, AgentTool, AgentToolResult, LoopConfig, ToolError, UpdateSink,
};
use async_trait::async_trait;
use common::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Sets a flag when dropped: proves a tool's future is gone.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Holds a clone of `held` while it runs and reports that it started. With
/// `honours_cancel` it returns `Operation aborted` once cancelled; without, it
/// never returns.
struct Waiter {
    tool: agent_ai::Tool,
    held: Arc<()>,
    started: mpsc::UnboundedSender<String>,
    dropped: Arc<AtomicBool>,
    honours_cancel: bool,
}

impl Waiter {
    fn new(honours_cancel: bool) -> (Self, mpsc::UnboundedReceiver<String>) {
        let (started, receiver) = mpsc::unbounded_channel();
        let waiter = Waiter {
            tool: agent_ai::Tool {
                name: "wait".into(),
                description: "Waits.".into(),
                parameters: json!({"type": "object"}),
            },
            held: Arc::new(()),
            started,
            dropped: Arc::default(),
            honours_cancel,
        };
        (waiter, receiver)
    }
}

#[async_trait]
impl AgentTool for Waiter {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Wait"
    }

    async fn execute(
        &self,
        id: &str,
        _params: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        let _held = self.held.clone();
        let _flag = DropFlag(self.dropped.clone());
        self.started.send(id.to_owned()).unwrap();
        if self.honours_cancel {
            cancel.cancelled().await;
            Err(ToolError::new("Operation aborted"))
        } else {
            std::future::pending().await
        }
    }
}

fn drain(events: &mut AgentEvents) -> Vec<String> {
    let mut lines = Vec::new();
    while let Some(event) = events.try_recv() {
        lines.push(compact(&event));
    }
    lines
}

fn agent_with(provider: &ScriptedProvider, tool: Arc<dyn AgentTool>) -> Agent {
    let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()));
    Agent::new(config, context(vec![tool]))
}

#[tokio::test]
async fn abort_mid_execute_ends_the_run_aborted_with_no_tool_left_running() {
    let provider = ScriptedProvider::new([
        reply(vec![call("A", "wait", json!({}))]),
        reply(vec![text("never streamed")]),
    ]);
    let (waiter, mut started) = Waiter::new(true);
    let held = waiter.held.clone();
    let agent = agent_with(&provider, Arc::new(waiter));
    let mut events = agent.subscribe();
    // The run's future is Send: it can be spawned like any other task.
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    assert_eq!(started.recv().await.unwrap(), "A");
    assert_eq!(
        Arc::strong_count(&held),
        3,
        "the running tool holds a clone"
    );
    agent.abort();
    let added = run.await.unwrap().unwrap();

    assert_eq!(
        Arc::strong_count(&held),
        2,
        "only the tool and the test hold it"
    );
    assert!(!agent.is_running());
    assert_eq!(
        drain(&mut events),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"]),
            "tool_start(A)",
            "tool_end(A ERR: Operation aborted)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "turn_end(1 results)",
            "turn_start",
            "message_start(assistant)",
            "message_end(assistant)",
            "turn_end(0 results)",
            "agent_end(4 messages)",
        ]
    );
    let Some(Message::Assistant(last)) = added.last() else {
        panic!("expected the assistant message last");
    };
    assert_eq!(
        (last.stop_reason, last.error_message.as_deref()),
        (StopReason::Aborted, Some("Request was aborted"))
    );
}

#[tokio::test]
async fn abort_reaches_every_tool_of_a_parallel_batch() {
    let provider = ScriptedProvider::new([reply(vec![
        call("A", "wait", json!({})),
        call("B", "wait", json!({})),
        call("C", "wait", json!({})),
    ])]);
    let (waiter, mut started) = Waiter::new(true);
    let held = waiter.held.clone();
    let agent = agent_with(&provider, Arc::new(waiter));
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    let mut ids = vec![];
    for _ in 0..3 {
        ids.push(started.recv().await.unwrap());
    }
    assert_eq!(ids, ["A", "B", "C"]);
    assert_eq!(Arc::strong_count(&held), 5);
    agent.abort();
    let added = run.await.unwrap().unwrap();
    let results: Vec<(String, String, bool)> = added
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => {
                Some((r.tool_call_id.clone(), content_text(&r.content), r.is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("A".to_owned(), "Operation aborted".to_owned(), true),
            ("B".to_owned(), "Operation aborted".to_owned(), true),
            ("C".to_owned(), "Operation aborted".to_owned(), true),
        ]
    );
    assert_eq!(Arc::strong_count(&held), 2);
}

#[tokio::test]
async fn abort_while_the_model_streams_ends_the_run_aborted() {
    let provider = ScriptedProvider::new([ScriptedResponse::Hang]);
    let (waiter, _started) = Waiter::new(true);
    let agent = agent_with(&provider, Arc::new(waiter));
    let mut events = agent.subscribe();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    // Wait until the request reached the provider.
    while provider.requests().is_empty() {
        tokio::task::yield_now().await;
    }
    agent.abort();
    let added = run.await.unwrap().unwrap();
    assert_eq!(drain(&mut events), ANSWERED_GO);
    let Some(Message::Assistant(last)) = added.last() else {
        panic!("expected the assistant message last");
    };
    assert_eq!(last.stop_reason, StopReason::Aborted);
}

// A tool that ignores cancellation still cannot outlive its run: it is a
// future of the run's own task, so dropping the run drops it.
#[tokio::test(start_paused = true)]
async fn dropping_a_run_drops_its_running_tools() {
    let provider = ScriptedProvider::new([reply(vec![call("A", "wait", json!({}))])]);
    let (waiter, _started) = Waiter::new(false);
    let held = waiter.held.clone();
    let dropped = waiter.dropped.clone();
    let agent = agent_with(&provider, Arc::new(waiter));
    let outcome = tokio::time::timeout(Duration::from_millis(50), agent.prompt("go")).await;
    assert!(outcome.is_err(), "the stubborn tool never finishes");
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(Arc::strong_count(&held), 2);
    assert!(!agent.is_running(), "a dropped run frees the agent");
}

/// The roles of the messages a request sent, with each tool result's text.
fn sent(request: &agent_ai::Context) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|message| match message {
            Message::User(_) => "user".to_owned(),
            Message::Assistant(_) => "assistant".to_owned(),
            Message::ToolResult(result) => format!(
                "toolResult {} {}: {}",
                result.tool_call_id,
                if result.is_error { "ERR" } else { "ok" },
                content_text(&result.content)
            ),
        })
        .collect()
}

// A run dropped mid-batch (a caller's timeout around `prompt`) left the
// model's tool calls without results: the next prompt sent `user,
// assistant{toolCall}, user` (refused by real APIs), and `continue_run`
// failed with "Cannot continue from message role: assistant". The calls are
// answered as an abort answers them, with message events so a session that
// saves messages at `message_end` saves them too; the run's other closing
// events never come.
#[tokio::test(start_paused = true)]
async fn a_dropped_run_answers_the_calls_it_left_as_aborted() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("A", "wait", json!({})),
            call("B", "wait", json!({})),
        ]),
        reply(vec![text("next answer")]),
    ]);
    let (waiter, _started) = Waiter::new(false);
    let agent = agent_with(&provider, Arc::new(waiter));
    let mut events = agent.subscribe();
    let outcome = tokio::time::timeout(Duration::from_millis(50), agent.prompt("go")).await;
    assert!(outcome.is_err(), "the stubborn tools never finish");

    assert_eq!(
        drain(&mut events),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall", "toolcall"]),
            "tool_start(A)",
            "tool_start(B)",
            "message_start(toolResult A)",
            "message_end(toolResult A)",
            "message_start(toolResult B)",
            "message_end(toolResult B)",
        ]
    );
    let added = agent.prompt("next").await.unwrap();
    assert_eq!(added.len(), 2, "the prompt and the answer");
    assert_eq!(
        sent(&provider.requests()[1]),
        [
            "user",
            "assistant",
            "toolResult A ERR: Operation aborted",
            "toolResult B ERR: Operation aborted",
            "user",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_dropped_mid_batch_can_be_continued() {
    let provider = ScriptedProvider::new([
        reply(vec![call("A", "wait", json!({}))]),
        reply(vec![text("I see the call was aborted")]),
    ]);
    let (waiter, _started) = Waiter::new(false);
    let agent = agent_with(&provider, Arc::new(waiter));
    let outcome = tokio::time::timeout(Duration::from_millis(50), agent.prompt("go")).await;
    assert!(outcome.is_err());
    let added = agent.continue_run().await.unwrap();
    assert_eq!(added.len(), 1, "the answer to the aborted call");
    assert_eq!(
        sent(&provider.requests()[1]),
        ["user", "assistant", "toolResult A ERR: Operation aborted"]
    );
}
