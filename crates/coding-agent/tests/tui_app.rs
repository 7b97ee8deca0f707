//! The interactive app (issue 5) without a terminal: agent events and keys
//! in, the whole screen read back from a `TestBackend`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "modes_support/mod.rs"]
mod modes_support;
#[path = "tui_support/screen.rs"]
mod screen;
#[allow(dead_code)]
#[path = "tui_support/sse_server.rs"]
mod sse_server;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_ai::{Content, Message};
use agent_core::{AgentEvent, AgentToolResult};
use coding_agent::app::AgentSession;
use coding_agent::app::ModelCatalog;
use coding_agent::modes::interactive::{Action, App, QUIT_WINDOW};
use coding_agent::session::ContextItem;
use coding_agent::settings::{ModelFlags, Settings};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use modes_support::{Fixture, call, reply, reply_message, text};
use screen::screen;
use serde_json::json;

fn app(messages: &[Message]) -> App {
    App::new(
        "openai/gpt-test".into(),
        Path::new("/work/project"),
        vec!["read".into(), "bash".into()],
        &items(messages),
    )
}

/// A saved conversation of messages only, as a session gives it.
fn items(messages: &[Message]) -> Vec<ContextItem> {
    messages.iter().cloned().map(ContextItem::from).collect()
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
    script: Vec<agent_ai::testing::ScriptedResponse>,
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

/// The first `rows` rows of the screen.
fn top_rows(app: &mut App, width: u16, height: u16, now: Instant, rows: usize) -> Vec<String> {
    screen(app, width, height, now)
        .lines()
        .take(rows)
        .map(str::to_owned)
        .collect()
}

/// A warning notice.
fn warning(text: &str) -> Vec<coding_agent::render::StyledLine> {
    vec![coding_agent::render::StyledLine::new(
        text,
        coding_agent::render::Style::Warning,
    )]
}

/// A new app that has shown `events` and is idle again; the time it used.
fn idle_after(events: &[AgentEvent]) -> (App, Instant) {
    let mut app = app(&[]);
    let now = Instant::now();
    for event in events {
        app.apply_event(event, now);
    }
    app.set_running(false, now);
    (app, now)
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
    let (mut app, now) = idle_after(&events);
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

#[tokio::test]
async fn a_call_recovered_from_the_models_text_is_marked_as_such() {
    let fixture = Fixture::new();
    let mut recovered = agent_ai::ToolCall::new("c1", "read", json!({"path": "a.txt"}));
    recovered.recovered_from_text = Some(true);
    let events = run_events(
        &fixture,
        vec![
            reply(vec![agent_ai::AssistantContent::ToolCall(recovered)]),
            reply(vec![call("c2", "bash", json!({"command": "echo hi"}))]),
            reply(vec![text("It holds x.")]),
        ],
        "what is in a.txt?",
    )
    .await;
    let (mut app, now) = idle_after(&events);
    assert_eq!(
        top_rows(&mut app, 60, 20, now, 10),
        [
            "> what is in a.txt?",
            "",
            "read a.txt · recovered from text",
            "  x",
            "",
            "$ echo hi",
            "  hi",
            "  exit 0 · 0.0s",
            "",
            "It holds x.",
        ]
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
    let running = screen(&mut app, 60, 13, start + Duration::from_millis(2300));
    assert_eq!(
        running,
        [
            "> count",
            "",
            "$ for i in 1 2 3; do echo $i; sleep 1; done",
            "  1",
            "  2",
            "  running · 2.3s",
            "⠧ Working… (Esc to cancel, Enter to steer, Alt+Enter to",
            "follow up)",
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

#[test]
fn an_mcp_call_shows_its_server_tool_arguments_and_collapsed_result() {
    let args = json!({"message": "hi"});
    let name = "mcp__everything__echo";
    let events = [
        AgentEvent::AgentStart,
        AgentEvent::MessageStart {
            message: Message::User(agent_ai::UserMessage::text("echo")),
        },
        AgentEvent::MessageEnd {
            message: Message::Assistant(reply_message(vec![
                call("c1", name, args.clone()),
                call("c2", "mcp__gh__create_issue", json!({})),
            ])),
        },
        AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: name.into(),
            args,
        },
        AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: name.into(),
            result: partial(&(1..=30).map(|n| format!("line {n}\n")).collect::<String>()),
            is_error: false,
        },
        AgentEvent::ToolExecutionStart {
            tool_call_id: "c2".into(),
            tool_name: "mcp__gh__create_issue".into(),
            args: json!({}),
        },
        AgentEvent::ToolExecutionEnd {
            tool_call_id: "c2".into(),
            tool_name: "mcp__gh__create_issue".into(),
            result: partial("MCP server \"gh\" is not running"),
            is_error: true,
        },
    ];
    let (mut app, now) = idle_after(&events);
    let shown = above_editor(&screen(&mut app, 60, 24, now));
    // Collapsed like the built-ins: the first lines and a count of the rest;
    // an error in the error style.
    let mut expected = vec![
        "> echo".to_owned(),
        String::new(),
        "everything echo {\"message\":\"hi\"}".to_owned(),
    ];
    expected.extend((1..=10).map(|n| format!("  line {n}")));
    expected.extend([
        "  … 20 more lines".to_owned(),
        String::new(),
        "gh create_issue".to_owned(),
        "  MCP server \"gh\" is not running".to_owned(),
    ]);
    assert_eq!(shown.trim_end(), expected.join("\n"));
}

/// The rows of the screen from the first, up to the editor's top rule.
fn above_editor(screen: &str) -> String {
    screen
        .lines()
        .take_while(|l| !l.starts_with('─'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// In a window of five rows during a run, the editor keeps its row (the
/// layout's solver gave it none, and what was typed went unseen); the
/// footer goes first.
#[test]
fn a_short_window_keeps_a_row_for_the_editor() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.set_running(true, now);
    type_text(&mut app, "steer me");
    let shown = screen(&mut app, 20, 5, now);
    assert!(shown.contains("> steer me"), "{shown}");
    assert!(shown.contains("Working…"), "{shown}");
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
        above_editor(&screen(&mut app, 60, 13, now)),
        [
            "> count",
            "",
            "$ sleep 5",
            "  running · 0.0s",
            "Queued steering: use ls instead",
            "Queued follow-up: then summarise",
            "⠋ Working… (Esc to cancel, Enter to steer, Alt+Enter to",
            "follow up)",
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
        above_editor(&screen(&mut app, 60, 13, now)),
        [
            "",
            "$ sleep 5",
            "  running · 0.0s",
            "",
            "> use ls instead",
            "Queued follow-up: then summarise",
            "⠋ Working… (Esc to cancel, Enter to steer, Alt+Enter to",
            "follow up)",
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

/// The quit hint lasts as long as its window (Pi's 500 ms): it hid a run's
/// spinner for the rest of the run, and a Ctrl+C minutes later still quit.
#[test]
fn the_quit_hint_and_its_window_close_together() {
    let mut app = app(&[]);
    app.set_running(true, Instant::now());
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.handle_key(ctrl_c), Action::None);
    let armed = screen(&mut app, 60, 10, Instant::now());
    assert!(armed.contains("Press Ctrl+C again to quit"), "{armed}");
    std::thread::sleep(QUIT_WINDOW + Duration::from_millis(100));
    let later = screen(&mut app, 60, 10, Instant::now());
    assert!(!later.contains("Press Ctrl+C again"), "{later}");
    assert!(later.contains("Working…"), "{later}");
    assert_eq!(app.handle_key(ctrl_c), Action::None, "the window closed");
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
        above_editor(&screen(&mut app, 80, 10, Instant::now())),
        [
            "Active tools: read, bash",
            "",
            "Unknown command /bogus; /help lists them (the text is back in the editor)",
            "",
            "",
        ]
        .join("\n")
    );
    assert_eq!(app.editor.text(), "/bogus", "not lost");
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(app.editor.text(), "");
    // A path is not a command: it is sent.
    type_text(&mut app, "/usr/bin/env fails when I run it, why?");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Prompt("/usr/bin/env fails when I run it, why?".into())
    );
    type_text(&mut app, "/mcp");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Mcp);
    type_text(&mut app, "/new");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::NewSession);
    type_text(&mut app, "/resume 2");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Resume(Some(2)));
    type_text(&mut app, "/quit");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Quit);
}

#[test]
fn compact_passes_its_focus_on_and_waits_for_the_agent() {
    let fixture = Fixture::new();
    let mut app = App::new("m".into(), &fixture.cwd, vec![], &[]);
    type_text(&mut app, "/compact focus on X");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Compact(Some("focus on X".into()))
    );
    type_text(&mut app, "/compact");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Compact(None));
    app.set_running(true, Instant::now());
    type_text(&mut app, "/compact");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
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

#[test]
fn a_slash_opens_the_command_menu_above_the_editor_and_enter_runs_the_chosen_one() {
    let mut app = app(&[]);
    type_text(&mut app, "/");
    let shown = above_editor(&screen(&mut app, 60, 14, Instant::now()));
    let rows: Vec<&str> = shown.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        rows,
        [
            "→ /compact  compact the conversation now [FOCUS]",
            "  /copy     copy the last answer to the clipboard",
            "  /exit     quit",
            "  /export   write the session as an HTML page [PATH]",
            "  /fork     go on in a copy, from an earlier prompt [N]",
            "  /help     the keys and the commands",
            "  /mcp      the MCP servers, their state and tools",
            "  /model    list the models, or switch to one [NAME]",
        ]
    );
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Down));
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Quit, "/exit");
}

/// Enter on a lone `/` runs nothing: the menu opens on `/compact` (first
/// by name) and Enter sent it, compacting a long session unasked; `/ `
/// (an unknown command) put the `/` back for a second Enter to do the same.
/// A command chosen with the arrows, or typed, still runs.
#[test]
fn enter_on_a_lone_slash_runs_no_command_until_one_is_chosen() {
    let mut app = app(&[]);
    type_text(&mut app, "/");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(app.editor.text(), "/");
    let shown = above_editor(&screen(&mut app, 60, 14, Instant::now()));
    assert!(
        shown.contains("→ /compact") && shown.contains("Type a command or choose one with ↑↓"),
        "{shown}"
    );
    type_text(&mut app, " ");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(app.editor.text(), "/", "the unknown command is back");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(app.editor.text(), "/");
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Up));
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Compact(None),
        "chosen with the arrows"
    );
    type_text(&mut app, "/ex");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Quit, "typed");
}

#[test]
fn page_up_and_down_scroll_the_transcript_by_its_height_less_two_rows() {
    let mut app = app(&[]);
    for n in 1..=40 {
        app.notice(vec![coding_agent::render::StyledLine::new(
            format!("line {n}"),
            coding_agent::render::Style::Normal,
        )]);
    }
    let now = Instant::now();
    // 14 rows: 9 for the transcript (rules, editor and footer take 5).
    let last_shown = |app: &mut App| {
        let screen = above_editor(&screen(app, 40, 14, now));
        screen.lines().rfind(|l| !l.is_empty()).unwrap().to_owned()
    };
    assert_eq!(last_shown(&mut app), "line 40");
    app.handle_key(key(KeyCode::PageUp));
    assert_eq!(
        last_shown(&mut app),
        "line 36",
        "7 rows: 9 less 2 (blank rows between notices count)"
    );
    app.handle_key(key(KeyCode::PageDown));
    assert_eq!(last_shown(&mut app), "line 40");
}

#[test]
fn tab_candidates_past_the_width_wrap_over_rows() {
    let fixture = Fixture::new();
    for n in 1..=5 {
        std::fs::write(fixture.cwd.join(format!("report_{n}_final.txt")), "").unwrap();
    }
    let mut app = App::new("m".into(), &fixture.cwd, vec![], &[]);
    type_text(&mut app, "@rep");
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(app.editor.text(), "@report_");
    let shown = above_editor(&screen(&mut app, 40, 14, Instant::now()));
    let rows: Vec<&str> = shown.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        rows,
        [
            "report_1_final.txt  report_2_final.txt",
            "report_3_final.txt  report_4_final.txt",
            "report_5_final.txt",
        ]
    );
}

#[test]
fn up_recalls_a_loaded_sessions_prompts_and_commands_newest_first() {
    use coding_agent::session::BashExecution;
    let run = |command: &str, excluded: bool| {
        ContextItem::Command(BashExecution {
            role: "bashExecution".into(),
            command: command.into(),
            output: String::new(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: 0,
            exclude_from_context: excluded.then_some(true),
        })
    };
    let mut loaded = items(&[Message::User(agent_ai::UserMessage::text("fix the parser"))]);
    loaded.push(run("cargo test", false));
    loaded.push(run("ls", true));
    loaded.extend(items(&[
        Message::Assistant(reply_message(vec![text("Done.")])),
        Message::User(agent_ai::UserMessage::text("now the docs")),
    ]));
    let mut app = App::new("m".into(), Path::new("/"), vec![], &loaded);
    let mut recalled = Vec::new();
    for _ in 0..5 {
        app.handle_key(key(KeyCode::Up));
        recalled.push(app.editor.text());
    }
    assert_eq!(
        recalled,
        [
            "now the docs",
            "!!ls",
            "!cargo test",
            "fix the parser",
            "fix the parser"
        ]
    );
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
            agent_ai::testing::ScriptedResponse::Message(answer),
        ],
    );
    session
        .prompt(AgentSession::user_message("read a.txt", Vec::new()))
        .await
        .unwrap();
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

#[test]
fn a_code_block_in_an_answer_is_drawn_in_syntax_colours() {
    let answer = reply_message(vec![text("```rust\nlet s = \"x\"; // c\n```")]);
    let mut app = app(&[Message::Assistant(answer)]);
    let now = Instant::now();
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(40, 10)).unwrap();
    terminal.draw(|frame| app.draw(frame, now)).unwrap();
    let buffer = terminal.backend().buffer();
    let row = (0..10)
        .find(|&y| buffer[(0, y)].symbol() == "l" && buffer[(1, y)].symbol() == "e")
        .expect("the code line is on screen");
    let line: String = (0..17)
        .map(|x| buffer[(x, row)].symbol().to_owned())
        .collect();
    assert_eq!(line, "let s = \"x\"; // c");
    use ratatui::style::Color;
    let fg = |x: u16| buffer[(x, row)].fg;
    // Keyword, plain name, string, comment: each in its theme colour.
    assert_eq!(
        [fg(0), fg(4), fg(8), fg(13)],
        [Color::Cyan, Color::Reset, Color::Green, Color::DarkGray]
    );
}

/// Settings with a local provider (no key needed, a context window) besides
/// the built-ins; the session started on openai.
fn catalog(extra: &str) -> ModelCatalog {
    let settings: Settings = serde_json::from_str(&format!(
        r#"{{"providers":{{"local":{{"baseUrl":"http://127.0.0.1:9/v1","defaultModel":"qwen","contextWindow":32000}}{extra}}}}}"#
    ))
    .unwrap();
    ModelCatalog {
        settings,
        settings_path: "/agent/settings.json".into(),
        flags: ModelFlags::default(),
        start_provider: "openai".into(),
        cycle: Vec::new(),
    }
}

fn only_openai_key(name: &str) -> Option<String> {
    (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned())
}

#[test]
fn model_lists_the_providers_default_models_marking_the_current_one_and_missing_keys() {
    let mut app = App::new(
        "openai/gpt-4o".into(),
        Path::new("/work/project"),
        vec![],
        &[],
    );
    type_text(&mut app, "/model");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Model(None));
    app.show_models(&catalog("").choices(&only_openai_key));
    assert_eq!(
        above_editor(&screen(&mut app, 70, 12, Instant::now())),
        [
            "Model: openai/gpt-4o",
            "Switch with /model PROVIDER/ID, or /model PROVIDER for its default:",
            "  anthropic/claude-sonnet-4-5  (no key: set ANTHROPIC_API_KEY)",
            "  local/qwen",
            "* openai/gpt-4o",
            "",
            "",
        ]
        .join("\n")
    );
}

/// `/model` lists what the `/model ` menu offers: it showed the providers'
/// defaults alone, so after a switch to a model a server listed no row was
/// marked current.
#[test]
fn model_lists_the_cycled_and_served_models_too_and_marks_one_switched_to() {
    let mut app = App::new(
        "openai/gpt-4o".into(),
        Path::new("/work/project"),
        vec![],
        &[],
    );
    let choices = catalog("").choices(&only_openai_key);
    app.set_model_names(&["openai/gpt-4o-mini".into()], &choices);
    app.add_served_models(&[agent_ai::Model::new(
        "llama3:8b",
        "local",
        "openai-completions",
    )]);
    app.set_model("local/llama3:8b".into(), None);
    app.show_models(&choices);
    assert_eq!(
        above_editor(&screen(&mut app, 70, 12, Instant::now())),
        [
            "Model: local/llama3:8b",
            "Switch with /model PROVIDER/ID, or /model PROVIDER for its default:",
            "  anthropic/claude-sonnet-4-5  (no key: set ANTHROPIC_API_KEY)",
            "  local/qwen",
            "  openai/gpt-4o",
            "  openai/gpt-4o-mini  (cycled by Ctrl+P)",
            "* local/llama3:8b  (served by local)",
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn model_name_switches_the_session_and_the_footer_shows_the_new_model() {
    let fixture = Fixture::new();
    let (session, _) = fixture.session(&[], vec![]);
    let catalog = catalog("");
    let mut app = App::new(
        "openai/gpt-4o".into(),
        Path::new("/work/project"),
        vec![],
        &[],
    );
    type_text(&mut app, "/model local");
    let Action::Model(Some(name)) = app.handle_key(key(KeyCode::Enter)) else {
        panic!("/model NAME asks for a switch");
    };
    let (model, _) = catalog.switch(&session, &name, &only_openai_key).unwrap();
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("local", "qwen")
    );
    assert_eq!(session.model(), model);
    app.set_model("local/qwen".into(), catalog.context_window(&model));
    let footer: Vec<String> = screen(&mut app, 60, 6, Instant::now())
        .lines()
        .skip(4)
        .map(str::to_owned)
        .collect();
    assert_eq!(
        footer,
        [
            "/work/project",
            "↑0 ↓0 R0 W0 $0.000 ctx 0/32k (0%)                 local/qwen",
        ]
    );
    // A provider without its key is not switched to.
    let Err(error) = catalog.switch(&session, "anthropic/claude-haiku-4-5", &only_openai_key)
    else {
        panic!("switched without a key");
    };
    assert_eq!(
        error.to_string(),
        "no API key for provider \"anthropic\": set ANTHROPIC_API_KEY or pass --api-key KEY (a provider in /agent/settings.json may name another variable with \"apiKeyEnv\")"
    );
    assert_eq!(session.model(), model);
}

/// `/model gtp-typo` switched to a model the local server does not serve,
/// without a word (the next request failed, and `--continue` brought the
/// typo back); RPC's `set_model` refused it. A provider whose server lists
/// its models is now taken at its word, as RPC does; one whose list cannot
/// be had (a server that does not answer, a built-in provider) takes any id
/// (DEVIATIONS M34).
#[tokio::test]
async fn model_name_is_refused_when_the_providers_server_does_not_list_it() {
    let server = sse_server::SseServer::with_calls(vec![]);
    let fixture = Fixture::new();
    let (session, _) = fixture.session(&[], vec![]);
    let catalog = catalog(&format!(
        r#","served":{{"baseUrl":"{}","defaultModel":"test-model"}}"#,
        server.base_url
    ));
    let before = session.model();
    let Err(error) = catalog
        .switch_offered(&session, "served/gtp-typo", &only_openai_key)
        .await
    else {
        panic!("switched to a model the server does not list");
    };
    assert_eq!(
        error.to_string(),
        "Model not found: served/gtp-typo (served offers: test-model, served-model)"
    );
    assert_eq!(session.model(), before, "not switched, nor recorded");
    let (model, _) = catalog
        .switch_offered(&session, "served/served-model", &only_openai_key)
        .await
        .unwrap();
    assert_eq!(model.id, "served-model");
    // The current provider's server is asked about a bare id too.
    let Err(error) = catalog
        .switch_offered(&session, "gtp-typo", &only_openai_key)
        .await
    else {
        panic!("switched to a model the server does not list");
    };
    assert!(
        error
            .to_string()
            .starts_with("Model not found: served/gtp-typo")
    );
    // `local`'s server does not answer: its list is unknown, any id goes.
    let (model, _) = catalog
        .switch_offered(&session, "local/anything", &only_openai_key)
        .await
        .unwrap();
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("local", "anything")
    );
}

#[test]
fn model_names_resolve_as_provider_slash_id_provider_default_model_or_current_provider_id() {
    let catalog = catalog("");
    let current = agent_ai::Model::new("gpt-4o", "openai", "openai-completions");
    let resolved = |name: &str| {
        let flags = catalog.flags_for(name, &current).unwrap();
        (flags.provider.unwrap(), flags.model)
    };
    assert_eq!(
        resolved("local/coder"),
        ("local".into(), Some("coder".into()))
    );
    assert_eq!(resolved("anthropic"), ("anthropic".into(), None));
    assert_eq!(resolved("qwen"), ("local".into(), Some("qwen".into())));
    assert_eq!(
        resolved("gpt-4.1"),
        ("openai".into(), Some("gpt-4.1".into()))
    );
}

/// A refused command goes back into the editor, to be sent once the
/// agent is done (it was dropped, and had to be typed again).
#[test]
fn switching_models_is_refused_while_the_agent_works_but_listing_is_not() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.set_running(true, now);
    for command in ["/model local", "/compact keep the plan", "/new"] {
        type_text(&mut app, command);
        assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
        let name = command.split(' ').next().unwrap();
        assert!(
            screen(&mut app, 120, 8, now).contains(&format!(
                "{name} is not available while the agent is working (Esc cancels it; the text is back in the editor)"
            )),
            "{command}"
        );
        assert_eq!(app.editor.text(), command);
        app.editor.clear();
    }
    type_text(&mut app, "/model");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::Model(None));
}

/// A command of the user's (`!cmd`) is recorded in the session when it
/// ends: leaving the session while it runs would put its output in the
/// session switched to, so what leaves waits, as it does for the agent.
#[test]
fn leaving_the_session_is_refused_while_a_command_of_yours_runs() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.user_bash_started("user-bash-1", "sleep 4", false, now);
    for command in ["/new", "/resume 1", "/fork 1", "/tree 1"] {
        type_text(&mut app, command);
        assert_eq!(
            app.handle_key(key(KeyCode::Enter)),
            Action::None,
            "{command}"
        );
        let name = command.split(' ').next().unwrap();
        assert!(
            screen(&mut app, 120, 8, now).contains(&format!(
                "{name} is not available while your command runs (Esc cancels it; the text is back in the editor)"
            )),
            "{command}"
        );
        assert_eq!(app.editor.text(), command);
        app.editor.clear();
    }
    app.user_bash_ended(AgentToolResult::text("done"), false, now);
    type_text(&mut app, "/new");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::NewSession);
}

#[test]
fn footer_shows_context_fill_as_a_percentage_of_a_known_window() {
    let mut app = app(&[]);
    let now = Instant::now();
    let mut answer = reply_message(vec![text("ok")]);
    answer.usage.input = 12_000;
    answer.usage.output = 345;
    app.apply_event(
        &AgentEvent::MessageEnd {
            message: Message::Assistant(answer),
        },
        now,
    );
    let last_row = |app: &mut App| screen(app, 60, 8, now).lines().last().unwrap().to_owned();
    assert_eq!(
        last_row(&mut app),
        "↑12k ↓345 R0 W0 $0.000 ctx 12k               openai/gpt-test"
    );
    app.set_model("openai/gpt-4o".into(), Some(128_000));
    assert_eq!(
        last_row(&mut app),
        "↑12k ↓345 R0 W0 $0.000 ctx 12k/128k (10%)      openai/gpt-4o"
    );

    // After a compaction the last answer's usage counted the old context:
    // the estimate of the next request shows, marked, until an answer.
    app.context_compacted(3_200);
    assert_eq!(
        last_row(&mut app),
        "↑12k ↓345 R0 W0 $0.000 ctx ~3.2k/128k (3%)     openai/gpt-4o"
    );
    let mut next = reply_message(vec![text("ok")]);
    next.usage.input = 4_000;
    app.apply_event(
        &AgentEvent::MessageEnd {
            message: Message::Assistant(next),
        },
        now,
    );
    assert_eq!(
        last_row(&mut app),
        "↑16k ↓345 R0 W0 $0.000 ctx 4.0k/128k (3%)      openai/gpt-4o"
    );
}

#[test]
fn a_retry_wait_is_counted_down_above_the_editor_until_it_is_over() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.set_running(true, now);
    app.retry_waiting(2, 3, Duration::from_millis(4000), now);
    let status = |app: &mut App, at: Instant| {
        above_editor(&screen(app, 60, 6, at))
            .lines()
            .last()
            .unwrap()
            .trim_end()
            .to_owned()
    };
    assert_eq!(
        status(&mut app, now),
        "Retrying (2/3) in 4s... (Esc to cancel)"
    );
    assert_eq!(
        status(&mut app, now + Duration::from_millis(1500)),
        "Retrying (2/3) in 3s... (Esc to cancel)"
    );
    assert_eq!(
        status(&mut app, now + Duration::from_secs(9)),
        "Retrying (2/3) in 0s... (Esc to cancel)"
    );
    app.retry_wait_over();
    let working = |app: &mut App| above_editor(&screen(app, 60, 6, now)).contains("Working…");
    assert!(working(&mut app), "{}", screen(&mut app, 60, 6, now));
    app.retry_waiting(3, 3, Duration::from_secs(8), now);
    app.set_running(false, now);
    app.set_running(true, now);
    assert!(working(&mut app), "a new run");
}

/// A compaction in several requests (minutes apiece on a local model)
/// counts them in the status line, and the count goes when it ends.
#[test]
fn a_compaction_in_several_requests_counts_them_above_the_editor() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.set_running(true, now);
    let status = |app: &mut App| {
        above_editor(&screen(app, 70, 6, now))
            .lines()
            .last()
            .unwrap()
            .trim_end()
            .to_owned()
    };
    // As Pi says it: nothing to steer while the summary is written.
    app.compaction_started();
    assert_eq!(status(&mut app), "Compacting context… (Esc to cancel)");
    app.compaction_progress(Some((2, 5)));
    assert_eq!(
        status(&mut app),
        "Compacting: 2 of 5 summary requests done… (Esc to cancel)"
    );
    app.compaction_progress(None);
    assert!(
        status(&mut app).contains("Working…"),
        "{}",
        status(&mut app)
    );
}

#[test]
fn footer_shows_the_thinking_level_and_shift_tab_asks_for_the_next() {
    let mut app = app(&[]);
    let now = Instant::now();
    let last_row = |app: &mut App| screen(app, 60, 8, now).lines().last().unwrap().to_owned();
    app.set_thinking(Some(agent_ai::ThinkingLevel::High));
    assert_eq!(
        last_row(&mut app),
        "↑0 ↓0 R0 W0 $0.000 ctx 0              openai/gpt-test • high"
    );
    app.set_thinking(Some(agent_ai::ThinkingLevel::Off));
    assert_eq!(
        last_row(&mut app),
        "↑0 ↓0 R0 W0 $0.000 ctx 0      openai/gpt-test • thinking off"
    );
    // Too narrow for the level: it goes whole, never cut from its label
    // (`• thinking` read as thinking on when `off` was cut).
    let narrow = screen(&mut app, 50, 8, now);
    assert_eq!(
        narrow.lines().last().unwrap(),
        "↑0 ↓0 R0 W0 $0.000 ctx 0           openai/gpt-test"
    );
    app.set_thinking(None);
    assert_eq!(
        last_row(&mut app),
        "↑0 ↓0 R0 W0 $0.000 ctx 0                     openai/gpt-test"
    );
    assert_eq!(
        app.handle_key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT)),
        Action::CycleThinking
    );
}

#[tokio::test]
async fn after_model_the_next_request_goes_to_the_new_provider_and_the_session_records_it() {
    let one = sse_server::SseServer::with_calls(vec![]);
    let two = sse_server::SseServer::with_calls(vec![]);
    let settings: Settings = serde_json::from_str(&format!(
        r#"{{"defaultProvider":"one","providers":{{
            "one":{{"baseUrl":"{}","defaultModel":"m1"}},
            "two":{{"baseUrl":"{}","defaultModel":"m2"}}}}}}"#,
        one.base_url, two.base_url
    ))
    .unwrap();
    let no_env = |_: &str| None;
    let resolved = coding_agent::settings::resolve_model(
        &ModelFlags::default(),
        &settings,
        Path::new("/agent/settings.json"),
        &no_env,
    )
    .unwrap();
    let fixture = Fixture::new();
    let session = AgentSession::new(coding_agent::app::SessionOptions {
        provider: coding_agent::settings::provider_for(&resolved).unwrap(),
        model: resolved.model,
        cwd: fixture.cwd.clone(),
        tools: vec![],
        system_prompt: "You are a test.".into(),
        session: coding_agent::session::SessionManager::create(&fixture.cwd, &fixture.sessions),
        hooks: None,
        guard: None,
        thinking: Default::default(),
        prompt_templates: Vec::new(),
        tools_host: None,
    })
    .unwrap();
    let catalog = ModelCatalog {
        settings,
        settings_path: "/agent/settings.json".into(),
        flags: ModelFlags::default(),
        start_provider: "one".into(),
        cycle: Vec::new(),
    };
    let run = async |prompt: &str| {
        session
            .prompt(AgentSession::user_message(prompt, Vec::new()))
            .await
            .unwrap();
    };
    run("first").await;
    catalog.switch(&session, "two/m2b", &no_env).unwrap();
    run("second").await;

    // The conversation's requests (a switch asks the new server for its
    // context window too).
    let models = |server: &sse_server::SseServer| {
        server
            .requests()
            .iter()
            .filter(|r| r.get("messages").is_some())
            .map(|r| r["model"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (models(&one), models(&two)),
        (vec!["m1".to_owned()], vec!["m2b".to_owned()])
    );
    assert_eq!(
        session.last_assistant_text().as_deref(),
        Some("Done. Last user message: second")
    );
    let lines = fixture.session_lines();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "session",
            "thinking_level_change",
            "message",
            "message",
            "model_change",
            "message",
            "message"
        ]
    );
    let change = &lines[4];
    assert_eq!(
        change.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "id", "parentId", "timestamp", "provider", "modelId"]
    );
    assert_eq!(change["parentId"], lines[3]["id"]);
    assert_eq!(
        (&change["provider"], &change["modelId"]),
        (&json!("two"), &json!("m2b"))
    );
    assert_eq!(lines[5]["parentId"], change["id"]);
    assert_eq!(lines[6]["message"]["provider"], json!("two"));
    assert_eq!(lines[6]["message"]["model"], json!("m2b"));
}

#[test]
fn a_warning_while_an_answer_waits_for_its_first_word_shows_above_it() {
    let mut app = app(&[]);
    let now = Instant::now();
    let waiting = reply_message(vec![]);
    app.apply_event(
        &AgentEvent::MessageStart {
            message: Message::Assistant(waiting),
        },
        now,
    );
    app.notice(warning("Warning: Retrying the request"));
    app.apply_event(
        &AgentEvent::MessageEnd {
            message: Message::Assistant(reply_message(vec![text("Hello.")])),
        },
        now,
    );
    app.notice(warning("Warning: later"));
    assert_eq!(
        top_rows(&mut app, 40, 12, now, 6),
        [
            "Warning: Retrying the request",
            "",
            "Hello.",
            "",
            "Warning: later",
            ""
        ]
    );
}

/// A session tool with its own renderers.
struct Shout {
    tool: agent_ai::Tool,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShoutArgs {
    /// What to shout.
    #[allow(dead_code)]
    text: String,
}

#[async_trait::async_trait]
impl coding_agent::ToolDefinition for Shout {
    fn tool(&self) -> &agent_ai::Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Shout"
    }

    async fn execute(
        &self,
        _params: serde_json::Value,
        _ctx: coding_agent::ToolContext,
    ) -> Result<AgentToolResult, agent_core::ToolError> {
        Ok(AgentToolResult::default())
    }

    fn render_call(
        &self,
        args: &serde_json::Value,
        _options: coding_agent::render::RenderOptions,
    ) -> Vec<coding_agent::render::StyledLine> {
        let text = args["text"].as_str().unwrap_or_default().to_uppercase();
        vec![coding_agent::render::StyledLine::new(
            format!("SHOUT {text}!"),
            coding_agent::render::Style::Bold,
        )]
    }

    fn render_result(
        &self,
        result: &AgentToolResult,
        _is_error: bool,
        _options: coding_agent::render::RenderOptions,
    ) -> Vec<coding_agent::render::StyledLine> {
        vec![coding_agent::render::StyledLine::new(
            format!("echoed {} blocks", result.content.len()),
            coding_agent::render::Style::Dim,
        )]
    }
}

#[test]
fn a_session_tool_is_drawn_by_its_own_renderers_also_after_a_reset() {
    let shout: std::sync::Arc<dyn coding_agent::ToolDefinition> = std::sync::Arc::new(Shout {
        tool: agent_ai::Tool::for_args::<ShoutArgs>("shout", "Shouts."),
    });
    let events = [
        AgentEvent::AgentStart,
        AgentEvent::MessageStart {
            message: Message::User(agent_ai::UserMessage::text("go")),
        },
        AgentEvent::MessageEnd {
            message: Message::Assistant(reply_message(vec![call(
                "c1",
                "shout",
                json!({"text": "hi"}),
            )])),
        },
        AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "shout".into(),
            args: json!({"text": "hi"}),
        },
        AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "shout".into(),
            result: partial("hi"),
            is_error: false,
        },
    ];
    let mut app = app(&[]);
    app.set_tools(vec![shout]);
    let now = Instant::now();
    for event in &events {
        app.apply_event(event, now);
    }
    app.set_running(false, now);
    let expected = "> go\n\nSHOUT HI!\n  echoed 1 blocks";
    assert_eq!(
        above_editor(&screen(&mut app, 60, 12, now)).trim_end(),
        expected
    );

    // A resumed session keeps the session's renderers.
    let messages: Vec<Message> = [
        Message::User(agent_ai::UserMessage::text("go")),
        Message::Assistant(reply_message(vec![call(
            "c1",
            "shout",
            json!({"text": "hi"}),
        )])),
    ]
    .into();
    app.reset(&items(&messages));
    assert_eq!(
        above_editor(&screen(&mut app, 60, 12, now)).trim_end(),
        "> go\n\nSHOUT HI!"
    );
}

/// A warning quoting a server's stderr keeps its lines apart: they were
/// drawn glued together (`...compatibility issues.Consider updating...`).
#[test]
fn a_warning_of_several_lines_keeps_them_apart() {
    let mut app = app(&[]);
    let now = Instant::now();
    app.warning("Warning: MCP server \"s\" exited (its last words: issues.\nConsider updating)");
    assert_eq!(
        top_rows(&mut app, 60, 12, now, 2),
        [
            "Warning: MCP server \"s\" exited (its last words: issues.",
            "Consider updating)",
        ]
    );
}
