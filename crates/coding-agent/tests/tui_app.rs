//! The interactive app (issue 5) without a terminal: agent events and keys
//! in, the whole screen read back from a `TestBackend`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "modes_support/mod.rs"]
mod modes_support;
#[path = "tui_support/screen.rs"]
mod screen;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_ai::{Content, Message};
use agent_core::{AgentEvent, AgentToolResult};
use coding_agent::modes::AgentSession;
use coding_agent::modes::interactive::{Action, App};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use modes_support::{Fixture, call, reply, reply_message, text};
use screen::screen;
use serde_json::json;

fn app(messages: &[Message]) -> App {
    App::new(
        "openai/gpt-test".into(),
        Path::new("/work/project"),
        vec!["read".into(), "bash".into()],
        messages,
    )
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        assert_eq!(app.handle_key(key(KeyCode::Char(c))), Action::None);
    }
}

/// Runs `prompt` through a scripted session and returns every event.
async fn run_events(
    fixture: &Fixture,
    script: Vec<agent_ai::stream::ScriptedResponse>,
    prompt: &str,
) -> Vec<AgentEvent> {
    let (session, _) = fixture.session(&["read", "bash"], script);
    let mut events = session.subscribe();
    session
        .prompt(AgentSession::user_message(prompt, Vec::new()))
        .await
        .unwrap();
    let mut all = Vec::new();
    while let Some(event) = events.try_recv() {
        all.push(event);
    }
    all
}

#[tokio::test]
async fn transcript_shows_the_prompt_markdown_answer_tool_calls_and_footer() {
    let fixture = Fixture::new();
    let events = run_events(
        &fixture,
        vec![
            reply(vec![
                text("Let me look."),
                call("c1", "read", json!({"path": "a.txt"})),
                call("c2", "bash", json!({"command": "echo hi"})),
            ]),
            reply(vec![text(
                "# Done\n\n- `a.txt` holds **x**\n- bash said hi",
            )]),
        ],
        "what is in a.txt?",
    )
    .await;
    let mut app = app(&[]);
    let now = Instant::now();
    for event in &events {
        app.apply_event(event, now);
    }
    app.set_running(false, now);
    assert_eq!(
        screen(&mut app, 60, 24, now),
        [
            "> what is in a.txt?",
            "",
            "Let me look.",
            "",
            "read a.txt",
            "  x",
            "",
            "$ echo hi",
            "  hi",
            "  exit 0 · 0.0s",
            "",
            "# Done",
            "",
            "- a.txt holds x",
            "- bash said hi",
            "",
            "",
            "",
            "",
            &"─".repeat(60),
            ">",
            &"─".repeat(60),
            "/work/project",
            "↑0 ↓0 R0 W0 $0.000 ctx 0                     openai/gpt-test",
        ]
        .join("\n")
    );
}

/// An assistant message calling bash with `command`, as `message_end` brings it.
fn bash_call_events(command: &str) -> Vec<AgentEvent> {
    let args = json!({"command": command});
    vec![
        AgentEvent::AgentStart,
        AgentEvent::MessageStart {
            message: Message::User(agent_ai::UserMessage::text("count")),
        },
        AgentEvent::MessageEnd {
            message: Message::Assistant(reply_message(vec![call("c1", "bash", args.clone())])),
        },
        AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args,
        },
    ]
}

fn partial(text: &str) -> AgentToolResult {
    AgentToolResult {
        content: vec![Content::text(text)],
        details: None,
        terminate: false,
    }
}

#[test]
fn bash_shows_a_live_tail_with_elapsed_time_while_it_runs_and_its_status_after() {
    let mut app = app(&[]);
    let start = Instant::now();
    for event in bash_call_events("for i in 1 2 3; do echo $i; sleep 1; done") {
        app.apply_event(&event, start);
    }
    app.apply_event(
        &AgentEvent::ToolExecutionUpdate {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args: json!({}),
            partial_result: partial("1\n2\n"),
        },
        start,
    );
    let running = screen(&mut app, 60, 12, start + Duration::from_millis(2300));
    assert_eq!(
        running,
        [
            "> count",
            "",
            "$ for i in 1 2 3; do echo $i; sleep 1; done",
            "  1",
            "  2",
            "  running · 2.3s",
            "⠧ Working… (Esc to cancel, Enter to steer, Alt+Enter to foll",
            &"─".repeat(60),
            ">",
            &"─".repeat(60),
            "/work/project",
            "↑0 ↓0 R0 W0 $0.000 ctx 0                     openai/gpt-test",
        ]
        .join("\n")
    );
    app.apply_event(
        &AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            result: partial("1\n2\n3\n"),
            is_error: false,
        },
        start + Duration::from_millis(3100),
    );
    app.set_running(false, start);
    let done = screen(&mut app, 60, 12, start + Duration::from_secs(9));
    assert_eq!(
        done.lines().take(7).collect::<Vec<_>>().join("\n"),
        [
            "> count",
            "",
            "$ for i in 1 2 3; do echo $i; sleep 1; done",
            "  1",
            "  2",
            "  3",
            "  exit 0 · 3.1s",
        ]
        .join("\n")
    );
}
