//! Turns of the loop (`docs/tool-behaviour.md` §2.1, with Pi's cases):
//! event order, steering and follow-up queues, `should_stop_after_turn`,
//! failed responses and `continue`.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_ai::{Message, ScriptedProvider, StopReason, UserContent};
use agent_core::{
    AgentContext, AgentTool, AgentToolResult, ContinueError, MessageQueue, QueueMode, ToolError,
    ToolSet, UpdateSink, agent_loop, agent_loop_continue,
};
use async_trait::async_trait;
use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn texts_of_users(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => match &u.content {
                UserContent::Text(t) => Some(t.clone()),
                UserContent::Blocks(_) => None,
            },
            _ => None,
        })
        .collect()
}

fn roles(messages: &[Message]) -> Vec<&'static str> {
    messages
        .iter()
        .map(|m| match m {
            Message::User(_) => "user",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        })
        .collect()
}

// AL1.
#[tokio::test]
async fn prompt_and_text_answer_give_pis_event_order() {
    let provider = ScriptedProvider::new([reply(vec![text("Hi there!")])]);
    let mut context = context(vec![]);
    let recorder = Recorder::default();
    let added = agent_loop(
        vec![user("Hello")],
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
            "message_start(user Hello)",
            "message_end(user Hello)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(2 messages)",
        ]
    );
    assert_eq!(roles(&added), ["user", "assistant"]);
    assert_eq!(roles(&context.messages.snapshot()), ["user", "assistant"]);
}

/// An update passes the provider's message on as it came, shared: a copy
/// for every delta made a long answer quadratic in its length.
#[tokio::test]
async fn updates_share_the_providers_message_instead_of_copying_it() {
    // The scripted provider streams a block's start, delta and end with
    // one message.
    let provider = ScriptedProvider::new([reply(vec![text("Hi there!")])]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("Hello")],
        &mut context(vec![]),
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    let partials: Vec<Arc<agent_ai::AssistantMessage>> = recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            agent_core::AgentEvent::MessageUpdate {
                assistant_message_event,
            } => match *assistant_message_event {
                agent_ai::AssistantMessageEvent::TextStart { partial, .. }
                | agent_ai::AssistantMessageEvent::TextDelta { partial, .. }
                | agent_ai::AssistantMessageEvent::TextEnd { partial, .. } => Some(partial),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(partials.len(), 3);
    assert!(partials.iter().all(|p| Arc::ptr_eq(p, &partials[0])));
    assert_eq!(partials[0].text(), "Hi there!");
}

// AL4.
#[tokio::test]
async fn tool_call_runs_and_its_result_goes_back_to_the_model() {
    let provider = ScriptedProvider::new([
        reply(vec![call("tool-1", "echo", json!({"value": "hello"}))]),
        reply(vec![text("done")]),
    ]);
    let echo = EchoTool::new();
    let executed = echo.executed.clone();
    let mut context = context(vec![Arc::new(echo)]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    assert_eq!(*executed.lock().unwrap(), ["hello"]);
    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"]),
            "tool_start(tool-1)",
            "tool_end(tool-1 ok: echoed: hello)",
            "message_start(toolResult tool-1)",
            "message_end(toolResult tool-1)",
            "turn_end(1 results)",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(4 messages)",
        ]
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        roles(&requests[1].messages),
        ["user", "assistant", "toolResult"]
    );
    assert_eq!(requests[0].tools[0].name, "echo");
    let Message::ToolResult(result) = &requests[1].messages[2] else {
        panic!("expected a tool result");
    };
    assert_eq!(result.details, Some(json!({"value": "hello"})));
}

/// A tool that queues a steering message while it runs, and then, when
/// given a token, cancels the run (a user who typed, then pressed Esc).
struct Steerer {
    tool: agent_ai::Tool,
    steering: MessageQueue,
    cancels: Option<CancellationToken>,
}

impl Steerer {
    /// The tool `steer`, queueing into `steering`.
    fn new(steering: &MessageQueue) -> Self {
        Steerer {
            tool: agent_ai::Tool {
                name: "steer".into(),
                description: "Steers.".into(),
                parameters: json!({"type": "object"}),
            },
            steering: steering.clone(),
            cancels: None,
        }
    }
}

#[async_trait]
impl AgentTool for Steerer {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Steerer"
    }

    async fn execute(
        &self,
        id: &str,
        _params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        self.steering.push(user(&format!("interrupt from {id}")));
        if let Some(cancel) = &self.cancels {
            cancel.cancel();
        }
        Ok(AgentToolResult::text("ran"))
    }
}

// AL6 as Pi 0.73.1 behaves: steering never skips calls; it is read after turn_end.
#[tokio::test]
async fn steering_queued_during_a_batch_is_read_after_the_turn() {
    let provider = ScriptedProvider::new([
        reply(vec![
            call("tool-1", "steer", json!({})),
            call("tool-2", "steer", json!({})),
        ]),
        reply(vec![text("ok")]),
        reply(vec![text("ok again")]),
    ]);
    let steering = MessageQueue::default();
    let tool = Steerer::new(&steering);
    let mut context = context(vec![Arc::new(tool)]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider)
            .with_tool_execution(agent_core::ExecutionMode::Sequential)
            .with_steering(steering),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    // One at a time: the first interrupt in the second turn, the second in a third.
    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall", "toolcall"]),
            "tool_start(tool-1)",
            "tool_end(tool-1 ok: ran)",
            "message_start(toolResult tool-1)",
            "message_end(toolResult tool-1)",
            "tool_start(tool-2)",
            "tool_end(tool-2 ok: ran)",
            "message_start(toolResult tool-2)",
            "message_end(toolResult tool-2)",
            "turn_end(2 results)",
            "turn_start",
            "message_start(user interrupt from tool-1)",
            "message_end(user interrupt from tool-1)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "turn_start",
            "message_start(user interrupt from tool-2)",
            "message_end(user interrupt from tool-2)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(8 messages)",
        ]
    );
    let requests = provider.requests();
    assert_eq!(
        texts_of_users(&requests[1].messages),
        ["go", "interrupt from tool-1"]
    );
}

#[tokio::test]
async fn steering_queued_before_the_run_joins_the_first_turn() {
    let provider = ScriptedProvider::new([reply(vec![text("a")]), reply(vec![text("b")])]);
    let steering = MessageQueue::new(QueueMode::OneAtATime);
    steering.push(user("s1"));
    steering.push(user("s2"));
    let mut context = context(vec![]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_steering(steering),
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
            "message_start(user s1)",
            "message_end(user s1)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "turn_start",
            "message_start(user s2)",
            "message_end(user s2)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(5 messages)",
        ]
    );
}

#[tokio::test]
async fn steering_in_all_mode_delivers_every_queued_message_at_once() {
    let provider = ScriptedProvider::new([reply(vec![text("a")])]);
    let steering = MessageQueue::new(QueueMode::All);
    steering.push(user("s1"));
    steering.push(user("s2"));
    let mut context = context(vec![]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_steering(steering),
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
            "message_start(user s1)",
            "message_end(user s1)",
            "message_start(user s2)",
            "message_end(user s2)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(4 messages)",
        ]
    );
}

#[tokio::test]
async fn follow_ups_start_new_turns_when_the_model_would_stop() {
    let provider = ScriptedProvider::new([
        reply(vec![text("a")]),
        reply(vec![text("b")]),
        reply(vec![text("c")]),
    ]);
    let follow_up = MessageQueue::default();
    follow_up.push(user("f1"));
    follow_up.push(user("f2"));
    let mut context = context(vec![]);
    let recorder = Recorder::default();
    let added = agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_follow_up(follow_up.clone()),
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
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "turn_start",
            "message_start(user f1)",
            "message_end(user f1)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "turn_start",
            "message_start(user f2)",
            "message_end(user f2)",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(6 messages)",
        ]
    );
    assert_eq!(texts_of_users(&added), ["go", "f1", "f2"]);
    assert!(follow_up.is_empty());
}

#[tokio::test]
async fn should_stop_after_turn_ends_the_run_after_a_tool_turn() {
    let provider = ScriptedProvider::new([
        reply(vec![call("1", "echo", json!({"value": "v"}))]),
        reply(vec![text("never asked")]),
    ]);
    let mut context = context(vec![Arc::new(EchoTool::new())]);
    let recorder = Recorder::default();
    let config = config(&provider).with_should_stop_after_turn(|turn| {
        turn.tool_results.len() == 1 && turn.new_messages.len() == 3
    });
    agent_loop(
        vec![user("go")],
        &mut context,
        &config,
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    let tail: Vec<String> = recorder.lines().into_iter().rev().take(2).collect();
    assert_eq!(tail, ["agent_end(3 messages)", "turn_end(1 results)"]);
    assert_eq!(provider.requests().len(), 1);
}

/// An answer cut at its length limit was writing its last call: that one is
/// not run (its repaired arguments would, say, write half a file as a
/// success), the ones before it are, and the model is told why.
#[tokio::test]
async fn the_call_an_answer_was_cut_off_in_is_not_run() {
    let mut cut = ScriptedProvider::reply(vec![
        call("1", "echo", json!({"value": "whole"})),
        call("2", "echo", json!({"value": "half of"})),
    ]);
    cut.stop_reason = StopReason::Length;
    let provider = ScriptedProvider::new([
        agent_ai::testing::ScriptedResponse::Message(cut),
        reply(vec![text("done")]),
    ]);
    let echo = EchoTool::new();
    let executed = echo.executed.clone();
    let mut context = context(vec![Arc::new(echo)]);
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &Recorder::default().emit(),
    )
    .await;
    assert_eq!(*executed.lock().unwrap(), ["whole"]);
    let Message::ToolResult(result) = &provider.requests()[1].messages[3] else {
        panic!("expected the second call's result");
    };
    assert!(result.is_error);
    assert_eq!(
        result.content,
        [agent_ai::Content::text(agent_core::pipeline::CUT_OFF_TEXT)]
    );
}

#[tokio::test]
async fn failed_response_ends_the_run_without_running_its_tool_calls() {
    let mut failed = ScriptedProvider::reply(vec![call("1", "echo", json!({"value": "v"}))]);
    failed.stop_reason = StopReason::Error;
    failed.error_message = Some("overloaded".into());
    let provider = ScriptedProvider::new([agent_ai::testing::ScriptedResponse::Message(failed)]);
    let echo = EchoTool::new();
    let executed = echo.executed.clone();
    let mut context = context(vec![Arc::new(echo)]);
    let recorder = Recorder::default();
    let added = agent_loop(
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
            streamed_assistant(&["toolcall"]),
            "turn_end(0 results)",
            "agent_end(2 messages)",
        ]
    );
    assert!(executed.lock().unwrap().is_empty());
    let Message::Assistant(last) = added.last().unwrap() else {
        panic!("expected the assistant message last");
    };
    assert_eq!(last.error_message.as_deref(), Some("overloaded"));
}

#[tokio::test]
async fn provider_error_without_start_still_gets_message_start() {
    // An exhausted script answers with a lone `error` event.
    let provider = ScriptedProvider::default();
    let mut context = context(vec![]);
    let recorder = Recorder::default();
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await;
    assert_eq!(recorder.lines(), ANSWERED_GO);
}

// AL7 and the assistant-tail case: errors before any event.
#[tokio::test]
async fn continue_refuses_an_empty_context_or_an_assistant_tail() {
    let provider = ScriptedProvider::default();
    let recorder = Recorder::default();
    let mut empty = AgentContext::new(None, Arc::new(ToolSet::empty()));
    let error = agent_loop_continue(
        &mut empty,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await
    .unwrap_err();
    assert_eq!(error, ContinueError::NoMessages);
    assert_eq!(error.to_string(), "Cannot continue: no messages in context");

    let mut ended = AgentContext::new(None, Arc::new(ToolSet::empty()));
    ended.messages = vec![
        user("hi"),
        ScriptedProvider::reply(vec![text("hello")]).into(),
    ]
    .into();
    let error = agent_loop_continue(
        &mut ended,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Cannot continue from message role: assistant"
    );
    assert!(recorder.lines().is_empty());
    assert!(provider.requests().is_empty());
}

// AL8.
#[tokio::test]
async fn continue_from_a_user_message_emits_no_prompt_events() {
    let provider = ScriptedProvider::new([reply(vec![text("Hi")])]);
    let mut context = context(vec![]);
    context.messages.push(user("Hello"));
    let recorder = Recorder::default();
    let added = agent_loop_continue(
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &recorder.emit(),
    )
    .await
    .unwrap();
    assert_eq!(
        recorder.lines(),
        lines![
            "agent_start",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(1 messages)",
        ]
    );
    assert_eq!(roles(&added), ["assistant"]);
}

#[tokio::test]
async fn system_prompt_and_tools_reach_the_provider() {
    let provider = ScriptedProvider::new([reply(vec![text("ok")])]);
    let tools = ToolSet::new(vec![Arc::new(EchoTool::new()) as Arc<dyn AgentTool>]).unwrap();
    let mut context = AgentContext::new(Some("You are terse.".into()), Arc::new(tools));
    agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider),
        &CancellationToken::new(),
        &|_| {},
    )
    .await;
    let request = &provider.requests()[0];
    assert_eq!(request.system_prompt.as_deref(), Some("You are terse."));
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
}

/// A message queued for a run that is then cancelled stays queued: the
/// loop asks the model once more only to end, and a message added to that
/// ending conversation would ride along, unanswered, with the next prompt
/// (the terminal UI gives it back to the editor instead).
#[tokio::test]
async fn steering_queued_for_a_cancelled_run_stays_queued() {
    let provider = ScriptedProvider::new([
        reply(vec![call("tool-1", "steer", json!({}))]),
        reply(vec![text("never read")]),
    ]);
    let steering = MessageQueue::default();
    let cancel = CancellationToken::new();
    let tool = Steerer {
        cancels: Some(cancel.clone()),
        ..Steerer::new(&steering)
    };
    let mut context = context(vec![Arc::new(tool)]);
    let added = agent_loop(
        vec![user("go")],
        &mut context,
        &config(&provider).with_steering(steering.clone()),
        &cancel,
        &Recorder::default().emit(),
    )
    .await;
    assert_eq!(texts_of_users(&added), ["go"], "{added:?}");
    assert_eq!(texts_of_users(&steering.take()), ["interrupt from tool-1"]);
}
