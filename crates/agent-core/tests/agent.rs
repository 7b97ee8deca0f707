//! The `Agent` handle (`docs/tool-behaviour.md` §2.1): state, queues, busy
//! errors, continue, and event subscription.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agent_ai::{Message, ScriptedProvider};
use agent_core::{
    Agent, AgentError, AgentEvent, AgentTool, AgentToolResult, LoopConfig, ToolError, UpdateSink,
};
use async_trait::async_trait;
use common::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn agent(provider: &ScriptedProvider, tools: Vec<Arc<dyn AgentTool>>) -> Agent {
    let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()));
    Agent::new(config, context(tools))
}

fn transcript(agent: &Agent) -> Vec<String> {
    agent
        .messages()
        .iter()
        .map(|m| match m {
            Message::User(u) => match &u.content {
                agent_ai::UserContent::Text(t) => format!("user {t}"),
                agent_ai::UserContent::Blocks(_) => "user [blocks]".into(),
            },
            Message::Assistant(a) => format!("assistant {}", a.text()),
            Message::ToolResult(r) => format!("toolResult {}", content_text(&r.content)),
        })
        .collect()
}

/// The conversation of a prompt `go` whose model calls `echo` with `v`,
/// then answers `done`.
const ECHO_ROUND: [&str; 4] = [
    "user go",
    "assistant ",
    "toolResult echoed: v",
    "assistant done",
];

#[tokio::test]
async fn prompt_records_the_conversation_and_notifies_subscribers() {
    let provider = ScriptedProvider::new([
        reply(vec![call("1", "echo", json!({"value": "v"}))]),
        reply(vec![text("done")]),
    ]);
    let agent = agent(&provider, vec![Arc::new(EchoTool::new())]);
    let mut events = agent.subscribe();
    let added = agent.prompt("go").await.unwrap();
    assert_eq!(added.len(), 4);
    assert_eq!(transcript(&agent), ECHO_ROUND);
    let mut lines = Vec::new();
    while let Some(event) = events.try_recv() {
        lines.push(compact(&event));
    }
    assert_eq!(
        lines,
        lines![
            "agent_start",
            "turn_start",
            "message_start(user go)",
            "message_end(user go)",
            streamed_assistant(&["toolcall"]),
            "tool_start(1)",
            "tool_end(1 ok: echoed: v)",
            "message_start(toolResult 1)",
            "message_end(toolResult 1)",
            "turn_end(1 results)",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(4 messages)",
        ]
    );
}

#[tokio::test]
async fn steer_and_follow_up_only_queue() {
    let provider = ScriptedProvider::default();
    let agent = agent(&provider, vec![]);
    agent.steer(user("s"));
    agent.follow_up(user("f"));
    agent.abort();
    assert!(agent.messages().is_empty());
    assert!(provider.requests().is_empty());
}

/// What waits in the queues can be seen and taken back: steering left by an
/// aborted run was read by the next prompt's first turn, and an embedder had
/// no way to give it back to the user instead.
#[tokio::test]
async fn queued_messages_can_be_seen_and_taken_back() {
    let provider = ScriptedProvider::new([reply(vec![text("ok")])]);
    let agent = agent(&provider, vec![]);
    agent.steer(user("s"));
    agent.follow_up(user("f"));
    assert_eq!(agent.steering().messages(), [user("s")]);
    assert_eq!(agent.follow_ups().messages(), [user("f")]);
    assert_eq!(agent.steering().drain(), [user("s")]);
    agent.follow_ups().clear();
    agent.prompt("go").await.unwrap();
    assert_eq!(transcript(&agent), ["user go", "assistant ok"]);
}

/// Blocks until cancelled, after saying it started.
struct Blocker {
    tool: agent_ai::Tool,
    started: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl AgentTool for Blocker {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Block"
    }

    async fn execute(
        &self,
        _id: &str,
        _params: Value,
        cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        self.started.send(()).unwrap();
        cancel.cancelled().await;
        Err(ToolError::new("Operation aborted"))
    }
}

#[tokio::test]
async fn a_busy_agent_refuses_prompt_and_continue_with_pis_texts() {
    let provider = ScriptedProvider::new([reply(vec![call("1", "block", json!({}))])]);
    let (started, mut started_rx) = mpsc::unbounded_channel();
    let blocker = Blocker {
        tool: agent_ai::Tool {
            name: "block".into(),
            description: "Blocks.".into(),
            parameters: json!({"type": "object"}),
        },
        started,
    };
    let agent = agent(&provider, vec![Arc::new(blocker)]);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    started_rx.recv().await.unwrap();
    assert!(agent.is_running());
    assert_eq!(
        agent.prompt("again").await.unwrap_err().to_string(),
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    assert_eq!(
        agent.continue_run().await.unwrap_err().to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    agent.abort();
    run.await.unwrap().unwrap();
    assert!(!agent.is_running());
}

#[tokio::test]
async fn continue_errors_use_pis_texts() {
    let provider = ScriptedProvider::default();
    let agent = agent(&provider, vec![]);
    assert_eq!(
        agent.continue_run().await.unwrap_err(),
        AgentError::NoMessages
    );
    assert_eq!(
        AgentError::NoMessages.to_string(),
        "No messages to continue from"
    );
    agent.set_messages(vec![
        user("hi"),
        ScriptedProvider::reply(vec![text("hello")]).into(),
    ]);
    assert_eq!(
        agent.continue_run().await.unwrap_err().to_string(),
        "Cannot continue from message role: assistant"
    );
    assert!(!agent.is_running(), "a refused continue frees the agent");
}

#[tokio::test]
async fn continue_after_the_model_runs_a_queued_follow_up() {
    let provider = ScriptedProvider::new([reply(vec![text("more done")])]);
    let agent = agent(&provider, vec![]);
    agent.set_messages(vec![
        user("hi"),
        ScriptedProvider::reply(vec![text("hello")]).into(),
    ]);
    agent.follow_up(user("more"));
    agent.continue_run().await.unwrap();
    assert_eq!(
        transcript(&agent),
        [
            "user hi",
            "assistant hello",
            "user more",
            "assistant more done"
        ]
    );
}

// One at a time: the steering message continue takes is the prompt, and the
// initial steering poll is skipped, so the second one gets its own turn.
#[tokio::test]
async fn continue_after_the_model_runs_queued_steering_one_at_a_time() {
    let provider = ScriptedProvider::new([reply(vec![text("r1")]), reply(vec![text("r2")])]);
    let agent = agent(&provider, vec![]);
    agent.set_messages(vec![
        user("hi"),
        ScriptedProvider::reply(vec![text("hello")]).into(),
    ]);
    agent.steer(user("s1"));
    agent.steer(user("s2"));
    agent.continue_run().await.unwrap();
    assert_eq!(
        transcript(&agent),
        [
            "user hi",
            "assistant hello",
            "user s1",
            "assistant r1",
            "user s2",
            "assistant r2"
        ]
    );
}

#[tokio::test]
async fn continue_from_a_user_message_asks_the_model_again() {
    let provider = ScriptedProvider::new([reply(vec![text("noted")])]);
    let agent = agent(&provider, vec![]);
    let mut events = agent.subscribe();
    agent.set_messages(vec![user("hi")]);
    let added = agent.continue_run().await.unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(transcript(&agent), ["user hi", "assistant noted"]);
    let mut lines = Vec::new();
    while let Some(event) = events.try_recv() {
        lines.push(compact(&event));
    }
    assert_eq!(
        lines,
        lines![
            "agent_start",
            "turn_start",
            streamed_assistant(&["text"]),
            "turn_end(0 results)",
            "agent_end(1 messages)",
        ]
    );
}

/// Adds `echo` to its agent's tools when called, as an MCP server whose list
/// changed during a call would.
struct Grow {
    tool: agent_ai::Tool,
    agent: Arc<std::sync::OnceLock<Agent>>,
}

#[async_trait]
impl AgentTool for Grow {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Grow"
    }

    async fn execute(
        &self,
        _id: &str,
        _params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        let agent = self.agent.get().unwrap();
        let grown = Grow {
            tool: self.tool.clone(),
            agent: self.agent.clone(),
        };
        let tools: Vec<Arc<dyn AgentTool>> = vec![Arc::new(grown), Arc::new(EchoTool::new())];
        agent.set_tools(Arc::new(agent_core::ToolSet::new(tools).unwrap()));
        Ok(AgentToolResult::text("grown"))
    }
}

#[tokio::test]
async fn set_tools_takes_effect_at_the_next_request_not_in_the_running_batch() {
    let provider = ScriptedProvider::new([
        // `echo` is called in the batch that adds it: that batch runs with
        // the tools its request offered, so `echo` is not found yet.
        reply(vec![
            call("1", "grow", json!({})),
            call("2", "echo", json!({"value": "early"})),
        ]),
        reply(vec![call("3", "echo", json!({"value": "late"}))]),
        reply(vec![text("done")]),
    ]);
    let slot = Arc::new(std::sync::OnceLock::new());
    let grow = Grow {
        tool: agent_ai::Tool {
            name: "grow".into(),
            description: "Adds echo.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        agent: slot.clone(),
    };
    let agent = agent(&provider, vec![Arc::new(grow)]);
    slot.set(agent.clone()).unwrap();
    agent.prompt("go").await.unwrap();

    let offered: Vec<Vec<String>> = provider
        .requests()
        .iter()
        .map(|request| request.tools.iter().map(|t| t.name.clone()).collect())
        .collect();
    assert_eq!(
        offered,
        [vec!["grow"], vec!["grow", "echo"], vec!["grow", "echo"]]
    );
    assert_eq!(
        transcript(&agent),
        [
            "user go",
            "assistant ",
            "toolResult grown",
            "toolResult Tool echo not found",
            "assistant ",
            "toolResult echoed: late",
            "assistant done"
        ]
    );
    // Set while idle, the tools are those of the next run.
    agent.set_tools(Arc::new(agent_core::ToolSet::empty()));
    assert!(agent.tools().definitions().is_empty());
}

#[tokio::test]
async fn a_model_switched_through_the_handle_gets_the_next_request() {
    let first = ScriptedProvider::new([reply(vec![text("from first")])]);
    let second = ScriptedProvider::new([reply(vec![text("from second")])]);
    let agent = agent(&first, Vec::new());
    agent.prompt("one").await.unwrap();
    let mut model = ScriptedProvider::model();
    model.id = "second-model".into();
    agent.model().set_model(model, Arc::new(second.clone()));
    agent
        .model()
        .set_reasoning(Some(agent_ai::ThinkingLevel::High));
    agent.prompt("two").await.unwrap();
    assert_eq!(first.requests().len(), 1);
    let requests = second.requests();
    assert_eq!(requests.len(), 1, "the second run asked the new provider");
    assert_eq!(requests[0].reasoning, Some(agent_ai::ThinkingLevel::High));
    let last = agent.messages().pop().unwrap();
    let Message::Assistant(answer) = last else {
        panic!("{last:?}")
    };
    assert_eq!(answer.text(), "from second");
    assert_eq!(agent.model().model().id, "second-model");
}

#[tokio::test]
async fn transform_context_rewrites_the_request_but_not_the_history() {
    let provider = ScriptedProvider::new([reply(vec![text("ok")])]);
    let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()))
        .with_transform_context(|model, mut context| {
            context.system_prompt = Some(format!("for {}", model.id).into());
            context
        });
    let agent = Agent::new(config, context(Vec::new()));
    agent.prompt("hi").await.unwrap();
    let sent = provider.requests();
    assert_eq!(
        sent[0].system_prompt.as_deref(),
        Some(format!("for {}", ScriptedProvider::model().id).as_str())
    );
    assert_eq!(transcript(&agent), ["user hi", "assistant ok"]);
}

// A panicking `transform_context` escaped `prompt` as a provider's panic
// did (no `agent_end`, the caller's task lost): it ends the turn the same
// way, with an error answer that names what panicked.
#[tokio::test]
async fn a_transform_context_that_panics_ends_the_run_with_an_error_answer() {
    let provider = ScriptedProvider::new([reply(vec![text("never sent")])]);
    let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()))
        .with_transform_context(|_, _| panic!("no context today"));
    assert_go_ends_in_error(config, "transform_context panicked: no context today").await;
    assert!(provider.requests().is_empty(), "the request was sent");
}

/// Prompts "go" on a fresh agent of `config` and asserts the run ends with
/// one error answer saying `error`, and the events of a run answered once.
async fn assert_go_ends_in_error(config: LoopConfig, error: &str) {
    let agent = Agent::new(config, context(vec![]));
    let mut events = agent.subscribe();
    let added = agent.prompt("go").await.unwrap();
    let Some(Message::Assistant(answer)) = added.last() else {
        panic!("expected an answer last, got {added:?}");
    };
    assert_eq!(
        (answer.stop_reason, answer.error_message.as_deref()),
        (agent_ai::StopReason::Error, Some(error))
    );
    let mut lines = Vec::new();
    while let Some(event) = events.try_recv() {
        lines.push(compact(&event));
    }
    assert_eq!(lines, ANSWERED_GO);
}

#[test]
fn loop_config_clones_share_the_model_handle() {
    let provider = ScriptedProvider::new([]);
    let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()));
    let copy = config.clone();
    let mut model = ScriptedProvider::model();
    model.id = "switched".into();
    config.model.set_model(model, Arc::new(provider));
    assert_eq!(copy.model.model().id, "switched");
}

/// The events a stream has received so far, compacted.
fn drain(events: &mut agent_core::AgentEvents) -> Vec<String> {
    std::iter::from_fn(|| events.try_recv())
        .map(|event| compact(&event))
        .collect()
}

// A subscriber that subscribes (a UI opening a second view when a run starts)
// hung the run: subscribers were called with their list locked.
#[tokio::test]
async fn a_subscriber_may_subscribe_and_the_new_one_gets_the_events_after() {
    let provider = ScriptedProvider::new([reply(vec![text("hi")])]);
    let agent = agent(&provider, vec![]);
    let mut first = agent.subscribe();
    let joined = Arc::new(std::sync::Mutex::new(None));
    agent.subscribe_with({
        let (agent, joined) = (agent.clone(), joined.clone());
        move |event| {
            if matches!(event, agent_core::AgentEvent::AgentStart) {
                *joined.lock().unwrap() = Some(agent.subscribe());
            }
            true
        }
    });
    let mut last = agent.subscribe();
    agent.prompt("go").await.unwrap();
    let whole = lines![
        "agent_start",
        "turn_start",
        "message_start(user go)",
        "message_end(user go)",
        streamed_assistant(&["text"]),
        "turn_end(0 results)",
        "agent_end(2 messages)",
    ];
    assert_eq!(drain(&mut first), whole);
    assert_eq!(drain(&mut last), whole);
    let mut joined = joined.lock().unwrap().take().unwrap();
    assert_eq!(drain(&mut joined), whole[1..]);
}

// A subscriber that panicked mid-run took the run down with it: the tool
// call stayed without a result and the other subscribers never saw the end.
#[tokio::test]
async fn a_panicking_subscriber_is_dropped_and_the_run_goes_on() {
    let provider = ScriptedProvider::new([
        reply(vec![call("1", "echo", json!({"value": "v"}))]),
        reply(vec![text("done")]),
        reply(vec![text("again")]),
    ]);
    let agent = agent(&provider, vec![Arc::new(EchoTool::new())]);
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    agent.subscribe_with({
        let told = told.clone();
        move |event| {
            told.lock().unwrap().push(compact(event));
            assert!(
                !matches!(event, agent_core::AgentEvent::ToolExecutionStart { .. }),
                "subscriber bug"
            );
            true
        }
    });
    let mut events = agent.subscribe();
    let added = agent.prompt("go").await.unwrap();
    assert_eq!(added.len(), 4);
    assert_eq!(transcript(&agent), ECHO_ROUND);
    let lines = drain(&mut events);
    assert!(lines.contains(&"tool_start(1)".to_owned()), "{lines:?}");
    assert_eq!(lines.last().unwrap(), "agent_end(4 messages)");
    // Told up to the event it panicked on, then no more.
    assert_eq!(told.lock().unwrap().last().unwrap(), "tool_start(1)");
    // The agent still works, and still tells its other subscribers.
    agent.prompt("more").await.unwrap();
    assert_eq!(drain(&mut events).last().unwrap(), "agent_end(2 messages)");
    assert_eq!(told.lock().unwrap().last().unwrap(), "tool_start(1)");
}

// Two agents built from clones of one configuration shared the slot that
// `set_tools` hands a run its new tools through: `b` offered `a`'s tools.
#[tokio::test]
async fn agents_from_clones_of_one_config_keep_their_own_tools() {
    let provider = ScriptedProvider::new([reply(vec![text("from b")])]);
    let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()));
    let a = Agent::new(config.clone(), context(vec![Arc::new(EchoTool::new())]));
    let b = Agent::new(config, context(vec![]));
    a.set_tools(a.tools());
    b.prompt("b").await.unwrap();
    assert!(provider.requests()[0].tools.is_empty());
    assert!(b.tools().is_empty());
}

// The docs said continue resumes "after an error"; it refuses a failed
// answer, as Pi does, and a retry removes that answer first.
#[tokio::test]
async fn continue_after_a_failed_answer_needs_the_answer_removed_first() {
    let provider = ScriptedProvider::new([failed_reply("overloaded"), reply(vec![text("ok")])]);
    let agent = agent(&provider, vec![]);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        agent.continue_run().await.unwrap_err(),
        AgentError::ContinueFromAssistant
    );
    let mut messages = agent.messages();
    messages.pop();
    agent.set_messages(messages);
    agent.continue_run().await.unwrap();
    assert_eq!(transcript(&agent), ["user go", "assistant ok"]);
}

/// A provider with a bug: it panics when asked for a stream, or while its
/// stream is polled.
struct PanickingProvider {
    in_poll: bool,
}

impl agent_ai::Provider for PanickingProvider {
    fn stream(
        &self,
        _model: &agent_ai::Model,
        _context: &agent_ai::Context,
        _cancel: CancellationToken,
    ) -> agent_ai::AssistantStream {
        use futures::StreamExt;
        if self.in_poll {
            futures::stream::once(async { panic!("the stream broke down") }).boxed()
        } else {
            panic!("no stream today")
        }
    }
}

// A provider's panic escaped `prompt`: no `agent_end`, and a caller that
// spawned the run lost it with the task, while tool and subscriber panics
// were already results and log lines. It ends the turn as a stream that
// broke does: an error answer that names the panic.
#[tokio::test]
async fn a_provider_that_panics_ends_the_run_with_an_error_answer() {
    for (in_poll, panic) in [(false, "no stream today"), (true, "the stream broke down")] {
        let config = LoopConfig::new(
            ScriptedProvider::model(),
            Arc::new(PanickingProvider { in_poll }),
        );
        assert_go_ends_in_error(config, &format!("Provider panicked: {panic}")).await;
    }
}

/// A provider streaming one text answer in `pieces` deltas the way the
/// HTTP ones do: it keeps its message and appends each delta in place
/// (`Arc::make_mut`), which copies the whole message whenever someone
/// still holds it. It counts those copies.
struct Streamer {
    pieces: usize,
    copies: Arc<std::sync::atomic::AtomicUsize>,
}

/// The piece a [`Streamer`] sends each time.
const PIECE: &str = "0123456789";

impl agent_ai::Provider for Streamer {
    fn stream(
        &self,
        _model: &agent_ai::Model,
        _context: &agent_ai::Context,
        _cancel: CancellationToken,
    ) -> agent_ai::AssistantStream {
        use agent_ai::AssistantMessageEvent as Event;
        use futures::StreamExt;
        let message = Arc::new(ScriptedProvider::reply(vec![text("")]));
        let (pieces, copies) = (self.pieces, self.copies.clone());
        let start = [
            Event::Start {
                partial: message.clone(),
            },
            Event::TextStart {
                content_index: 0,
                partial: message.clone(),
            },
        ];
        let deltas = futures::stream::unfold((message, 0), move |(mut message, sent)| {
            let copies = copies.clone();
            async move {
                if sent == pieces {
                    let end = Event::TextEnd {
                        content_index: 0,
                        content: message.text(),
                        partial: message.clone(),
                    };
                    let done = Event::Done {
                        reason: agent_ai::StopReason::Stop,
                        message: (*message).clone(),
                    };
                    return Some((vec![end, done], (message, sent + 1)));
                }
                if sent > pieces {
                    return None;
                }
                // Weak references make `make_mut` move the message, not copy it.
                if Arc::strong_count(&message) > 1 {
                    copies.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                match &mut Arc::make_mut(&mut message).content[0] {
                    agent_ai::AssistantContent::Text(block) => block.text.push_str(PIECE),
                    _ => unreachable!(),
                }
                let delta = Event::TextDelta {
                    content_index: 0,
                    delta: PIECE.into(),
                    partial: message.clone(),
                };
                Some((vec![delta], (message, sent + 1)))
            }
        })
        .flat_map(futures::stream::iter);
        futures::stream::iter(start).chain(deltas).boxed()
    }
}

/// Runs `go` against a [`Streamer`] of 100 deltas with a subscriber that
/// gets `updates` and reads only after the run; returns what it read and
/// how often the provider copied its message.
async fn read_after_the_run(updates: Option<agent_core::Updates>) -> (Vec<AgentEvent>, usize) {
    let copies = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let provider = Streamer {
        pieces: 100,
        copies: copies.clone(),
    };
    let agent = Agent::new(
        LoopConfig::new(ScriptedProvider::model(), Arc::new(provider)),
        context(vec![]),
    );
    let mut events = updates.map(|updates| agent.subscribe_to(updates));
    agent.prompt("go").await.unwrap();
    let read = events
        .as_mut()
        .map(|events| std::iter::from_fn(|| events.try_recv()).collect())
        .unwrap_or_default();
    (read, copies.load(std::sync::atomic::Ordering::Relaxed))
}

/// The message of each update among `events`.
fn update_texts(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => Some(assistant_message_event.message().text()),
            _ => None,
        })
        .collect()
}

// A subscriber reading after the run held every update, each holding the
// answer so far, so the provider copied the whole answer for every delta:
// a 200,000-character answer in 20-character deltas took 1 GB. What
// `subscribe` still does (it is every event), and says it costs.
#[tokio::test]
async fn a_subscriber_of_every_update_read_later_makes_the_provider_copy_per_delta() {
    let (_, alone) = read_after_the_run(None).await;
    assert_eq!(
        alone, 0,
        "without a subscriber the provider appends in place"
    );
    let (read, copies) = read_after_the_run(Some(agent_core::Updates::Every)).await;
    assert_eq!(
        update_texts(&read).len(),
        102,
        "text start, 100 deltas, text end"
    );
    assert!(copies >= 100, "{copies} copies");
}

#[tokio::test]
async fn a_settled_subscriber_read_later_holds_no_update_and_costs_no_copy() {
    let (read, copies) = read_after_the_run(Some(agent_core::Updates::None)).await;
    assert_eq!(read.iter().map(compact).collect::<Vec<_>>(), ANSWERED_GO);
    let AgentEvent::MessageEnd { message } = &read[5] else {
        panic!("{:?}", read[5]);
    };
    assert_eq!(message_text(message), PIECE.repeat(100));
    assert_eq!(copies, 0);
}

#[tokio::test]
async fn a_coalescing_subscriber_read_later_holds_only_the_newest_update() {
    let (read, copies) = read_after_the_run(Some(agent_core::Updates::Newest)).await;
    let lines: Vec<String> = read.iter().map(compact).collect();
    assert_eq!(
        lines[4..7],
        [
            "message_start(assistant)",
            "message_update(text_end)",
            "message_end(assistant)"
        ]
    );
    assert_eq!(update_texts(&read), [PIECE.repeat(100)]);
    // Two, whatever the number of deltas: at the first delta (the text
    // start waited) and at the second (the first delta waited); the later
    // ones it holds weakly.
    assert_eq!(copies, 2);
}

fn message_text(message: &Message) -> String {
    match message {
        Message::Assistant(answer) => answer.text(),
        other => panic!("not an answer: {other:?}"),
    }
}

// `set_messages` during a run replaced a conversation the run no longer
// appended to: the run returned its 2 messages and `messages()` held 0.
// The run's later messages are appended to the new conversation, as Pi
// appends them; DEVIATIONS #36: its next request sends the new one too.
#[tokio::test]
async fn messages_set_during_a_run_are_what_the_run_goes_on_from() {
    let provider = ScriptedProvider::new([reply(vec![text("hi")])]);
    let agent = agent(&provider, vec![]);
    agent.subscribe_with({
        let agent = agent.clone();
        move |event| {
            if let AgentEvent::MessageEnd {
                message: Message::User(_),
            } = event
            {
                agent.set_messages(vec![user("instead")]);
            }
            true
        }
    });
    let added = agent.prompt("go").await.unwrap();
    assert_eq!(added.len(), 2);
    assert_eq!(transcript(&agent), ["user instead", "assistant hi"]);
    let sent: Vec<String> = provider.requests()[0]
        .messages
        .iter()
        .map(|m| match m {
            Message::User(u) => format!("{:?}", u.content),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].contains("instead"), "{sent:?}");
}

/// A tool whose result is one image, kept to compare with where it ends up.
struct Screenshot {
    tool: agent_ai::Tool,
    image: Arc<str>,
}

#[async_trait]
impl AgentTool for Screenshot {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Screenshot"
    }

    async fn execute(
        &self,
        _id: &str,
        _params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult {
            content: vec![agent_ai::Content::image(self.image.clone(), "image/png")],
            ..AgentToolResult::text("")
        })
    }
}

/// An image a tool returns is the same bytes in the history, the run's
/// result and every event, not a copy in each: a copy of megabytes in each
/// held five of every screenshot a session read (150 reads: 1.7 GB).
#[tokio::test]
async fn an_image_a_tool_returns_is_shared_not_copied() {
    let image: Arc<str> = Arc::from("iVBORw0KGgo".repeat(1000));
    let screenshot = Screenshot {
        tool: agent_ai::Tool {
            name: "screenshot".into(),
            description: "Takes one.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        image: image.clone(),
    };
    let provider = ScriptedProvider::new([
        reply(vec![call("1", "screenshot", json!({}))]),
        reply(vec![text("done")]),
    ]);
    let agent = agent(&provider, vec![Arc::new(screenshot)]);
    let mut events = agent.subscribe();
    let added = agent.prompt("go").await.unwrap();

    let images = |content: &[agent_ai::Content]| -> Vec<Arc<str>> {
        content
            .iter()
            .filter_map(|content| match content {
                agent_ai::Content::Image(image) => Some(image.data.clone()),
                agent_ai::Content::Text(_) => None,
            })
            .collect()
    };
    let images_of = |message: &Message| match message {
        Message::ToolResult(result) => images(&result.content),
        _ => Vec::new(),
    };
    let mut held: Vec<Arc<str>> = agent.messages().iter().flat_map(images_of).collect();
    held.extend(added.iter().flat_map(images_of));
    while let Some(event) = events.try_recv() {
        match event {
            AgentEvent::MessageEnd { message } => held.extend(images_of(&message)),
            AgentEvent::ToolExecutionEnd { result, .. } => held.extend(images(&result.content)),
            _ => {}
        }
    }
    assert_eq!(held.len(), 4, "history, result, message_end, tool end");
    assert!(held.iter().all(|data| Arc::ptr_eq(data, &image)));
}
