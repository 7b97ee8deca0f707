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

/// The rows of the screen from the first, up to the editor's top rule.
fn above_editor(screen: &str) -> String {
    screen
        .lines()
        .take_while(|l| !l.starts_with('─'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn enter_while_running_queues_steering_shown_as_pending_until_delivered() {
    let mut app = app(&[]);
    let now = Instant::now();
    for event in bash_call_events("sleep 5") {
        app.apply_event(&event, now);
    }
    type_text(&mut app, "use ls instead");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Steer("use ls instead".into())
    );
    type_text(&mut app, "then summarise");
    assert_eq!(
        app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)),
        Action::FollowUp("then summarise".into())
    );
    assert_eq!(
        above_editor(&screen(&mut app, 60, 12, now)),
        [
            "> count",
            "",
            "$ sleep 5",
            "  running · 0.0s",
            "Queued steering: use ls instead",
            "Queued follow-up: then summarise",
            "⠋ Working… (Esc to cancel, Enter to steer, Alt+Enter to foll",
        ]
        .join("\n")
    );
    app.apply_event(
        &AgentEvent::MessageStart {
            message: AgentSession::user_message("use ls instead", Vec::new()),
        },
        now,
    );
    assert_eq!(
        above_editor(&screen(&mut app, 60, 12, now)),
        [
            "",
            "$ sleep 5",
            "  running · 0.0s",
            "",
            "> use ls instead",
            "Queued follow-up: then summarise",
            "⠋ Working… (Esc to cancel, Enter to steer, Alt+Enter to foll",
        ]
        .join("\n")
    );
}

#[test]
fn esc_cancels_only_a_running_turn_and_ctrl_c_twice_quits() {
    let mut app = app(&[]);
    assert_eq!(app.handle_key(key(KeyCode::Esc)), Action::None);
    app.set_running(true, Instant::now());
    assert_eq!(app.handle_key(key(KeyCode::Esc)), Action::Abort);

    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    type_text(&mut app, "draft");
    assert_eq!(app.handle_key(ctrl_c), Action::None);
    assert_eq!(app.editor.text(), "", "the first Ctrl+C clears the editor");
    assert_eq!(app.handle_key(key(KeyCode::Left)), Action::None);
    assert_eq!(
        app.handle_key(ctrl_c),
        Action::None,
        "another key disarms it"
    );
    assert_eq!(app.handle_key(ctrl_c), Action::Quit);
}

#[test]
fn enter_sends_and_shift_or_alt_enter_adds_a_line_when_idle() {
    let mut app = app(&[]);
    type_text(&mut app, "one");
    app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    type_text(&mut app, "two");
    app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    type_text(&mut app, "three");
    let screen_text = screen(&mut app, 40, 10, Instant::now());
    assert_eq!(
        screen_text.lines().skip(4).take(3).collect::<Vec<_>>(),
        ["> one", "  two", "  three"]
    );
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Prompt("one\ntwo\nthree".into())
    );
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.editor.text(), "one\ntwo\nthree", "Up recalls history");
}

#[test]
fn slash_commands_list_tools_and_help_and_ask_for_a_new_session() {
    let mut app = app(&[]);
    type_text(&mut app, "/tools");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    type_text(&mut app, "/bogus");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(
        above_editor(&screen(&mut app, 60, 10, Instant::now())),
        [
            "Active tools: read, bash",
            "",
            "Unknown command /bogus; /help lists them",
            "",
            "",
        ]
        .join("\n")
    );
    type_text(&mut app, "/new");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::NewSession);
    type_text(&mut app, "/resume 2");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Resume(Some(2)));
    type_text(&mut app, "/quit");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Quit);
}

#[test]
fn tab_completes_an_at_path_from_the_cwd() {
    let fixture = Fixture::new();
    std::fs::create_dir(fixture.cwd.join("src")).unwrap();
    std::fs::write(fixture.cwd.join("src/main.rs"), "").unwrap();
    let mut app = App::new("m".into(), &fixture.cwd, vec![], &[]);
    type_text(&mut app, "look at @s");
    app.handle_key(key(KeyCode::Tab));
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.editor.text(), "look at @src/main.rs ");
}

#[tokio::test]
async fn a_resumed_session_shows_the_earlier_conversation_and_its_usage() {
    let fixture = Fixture::new();
    let mut answer = reply_message(vec![text("It holds x.")]);
    answer.usage.input = 1200;
    answer.usage.output = 34;
    answer.usage.cost.total = 0.0123;
    let (session, _) = fixture.session(
        &["read"],
        vec![
            reply(vec![call("c1", "read", json!({"path": "a.txt"}))]),
            agent_ai::stream::ScriptedResponse::Message(answer),
        ],
    );
    let mut events = session.subscribe();
    session
        .prompt(AgentSession::user_message("read a.txt", Vec::new()))
        .await
        .unwrap();
    while let Some(event) = events.try_recv() {
        session.record(&event).unwrap();
    }
    let file = session.session_file().unwrap();
    let messages = coding_agent::session::SessionManager::open(&file, &fixture.cwd)
        .unwrap()
        .messages();
    let mut app = app(&messages);
    assert_eq!(
        screen(&mut app, 50, 12, Instant::now()),
        [
            "> read a.txt",
            "",
            "read a.txt",
            "  x",
            "",
            "It holds x.",
            "",
            &"─".repeat(50),
            ">",
            &"─".repeat(50),
            "/work/project",
            "↑1.2k ↓34 R0 W0 $0.012 ctx 1.2k    openai/gpt-test",
        ]
        .join("\n")
    );
}

#[test]
fn resizing_reflows_the_transcript_and_keeps_the_latest_rows_in_view() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.apply_event(
        &AgentEvent::MessageEnd {
            message: Message::Assistant(reply_message(vec![text(
                "one two three four five six seven eight nine ten",
            )])),
        },
        now,
    );
    let wide = screen(&mut app, 80, 8, now);
    assert_eq!(
        wide.lines().next(),
        Some("one two three four five six seven eight nine ten")
    );
    let narrow = screen(&mut app, 20, 8, now);
    assert_eq!(
        narrow.lines().take(3).collect::<Vec<_>>(),
        ["one two three four", "five six seven eight", "nine ten"]
    );
}

#[test]
fn a_failed_answer_shows_its_error_in_red() {
    let mut app = app(&[]);
    let now = Instant::now();
    let mut failed = reply_message(vec![]);
    failed.stop_reason = agent_ai::StopReason::Error;
    failed.error_message = Some("429 rate limited".into());
    app.apply_event(
        &AgentEvent::MessageEnd {
            message: Message::Assistant(failed),
        },
        now,
    );
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(40, 8)).unwrap();
    terminal.draw(|frame| app.draw(frame, now)).unwrap();
    let buffer = terminal.backend().buffer();
    let first: String = (0..23)
        .map(|x| buffer[(x, 0)].symbol().to_owned())
        .collect();
    assert_eq!(first, "Error: 429 rate limited");
    assert_eq!(buffer[(0, 0)].fg, ratatui::style::Color::Red);
}
