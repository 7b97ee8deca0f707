//! Approvals in the interactive mode (issue 13): the prompt over the
//! transcript on a `TestBackend`, and the real binary inside tmux asking,
//! remembering "allow for this session", sending a deny's reason to the
//! model, and asking once whether to trust a project.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "modes_support/mod.rs"]
mod modes_support;
#[path = "tui_support/screen.rs"]
mod screen;
#[allow(dead_code)]
#[path = "tui_support/sse_server.rs"]
mod sse_server;
#[allow(dead_code)]
#[path = "tui_support/tmux.rs"]
mod tmux;

use std::path::Path;
use std::time::Instant;

use agent_ai::Message;
use agent_core::AgentEvent;
use coding_agent::modes::interactive::App;
use coding_agent::modes::interactive::approval::{ApprovalAnswer, ApprovalPrompt, ApprovalRequest};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use modes_support::{call, reply_message};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Position;
use screen::screen;
use serde_json::json;
use sse_server::SseServer;
use tmux::Tmux;
use tokio::sync::oneshot;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// An app whose model has asked for `touch a.txt`, now waiting for approval
/// (the guard asks before the call starts, so there is no start event yet).
fn asking_app() -> (App, Instant) {
    let mut app = App::new(
        "openai/gpt-test".into(),
        Path::new("/work/project"),
        vec!["bash".into()],
        &[],
    );
    let now = Instant::now();
    for event in [
        AgentEvent::AgentStart,
        AgentEvent::MessageStart {
            message: Message::User(agent_ai::UserMessage::text("make a file")),
        },
        AgentEvent::MessageEnd {
            message: Message::Assistant(reply_message(vec![call(
                "c1",
                "bash",
                json!({"command": "touch a.txt"}),
            )])),
        },
    ] {
        app.apply_event(&event, now);
    }
    (app, now)
}

fn prompt(id: &str, command: &str) -> (ApprovalPrompt, oneshot::Receiver<ApprovalAnswer>) {
    let (reply, answer) = oneshot::channel();
    let request = ApprovalRequest {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        args: json!({ "command": command }),
        reason: "touch is not on the known-safe list".into(),
        suggested_rules: vec![format!("bash({command})")],
        project_rules: true,
    };
    (ApprovalPrompt { request, reply }, answer)
}

#[test]
fn the_prompt_draws_the_call_over_the_transcript_and_takes_the_keys_not_the_editor() {
    let (mut app, now) = asking_app();
    let (first, mut answer) = prompt("c1", "touch a.txt");
    app.approvals.push(first);
    let rule = "─".repeat(70);
    let expected = |selected: usize| {
        let choice = |n: usize, text: &str| {
            let mark = if n == selected { "›" } else { " " };
            format!("│ {mark} {n}. {text}")
        };
        [
            "> make a file".to_owned(),
            String::new(),
            "$ touch a.txt".to_owned(),
            "  waiting for approval".to_owned(),
            String::new(),
            format!("┌ Permission needed {}┐", "─".repeat(49)),
            "│ $ touch a.txt                                                      │".to_owned(),
            "│ touch is not on the known-safe list                                │".to_owned(),
            "│                                                                    │".to_owned(),
            format!("{:<69}│", choice(1, "Allow once")),
            format!(
                "{:<69}│",
                choice(2, "Allow for this session: bash(touch a.txt)")
            ),
            format!(
                "{:<69}│",
                choice(
                    3,
                    "Always allow in this project (.coding-agent/settings.json)"
                )
            ),
            format!(
                "{:<69}│",
                choice(4, "Always allow everywhere (global settings)")
            ),
            format!("{:<69}│", choice(5, "Deny…")),
            "│ ↑↓ Enter or 1-5 to choose · Esc denies                             │".to_owned(),
            format!("└{}┘", "─".repeat(68)),
            "Waiting for your approval (Esc denies)".to_owned(),
            rule.clone(),
            ">".to_owned(),
            rule.clone(),
            "/work/project".to_owned(),
            format!("↑0 ↓0 R0 W0 $0.000 ctx 0{}openai/gpt-test", " ".repeat(31)),
        ]
        .join("\n")
    };
    assert_eq!(screen(&mut app, 70, 22, now), expected(1));
    // Arrows move the selection; letters, which the prompt has no use
    // for, go to the editor (nothing typed is lost).
    app.handle_key(key(KeyCode::Char('x')));
    app.handle_key(key(KeyCode::Down));
    assert_eq!(app.editor.text(), "x");
    app.handle_key(key(KeyCode::Backspace));
    assert_eq!(screen(&mut app, 70, 22, now), expected(2));
    assert!(app.editor.is_empty());
    assert!(answer.try_recv().is_err(), "no answer yet");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(answer.try_recv(), Ok(ApprovalAnswer::AllowSession));
    assert!(app.approvals.current().is_none());
    let after = screen(&mut app, 70, 22, now);
    assert!(!after.contains("Permission needed"), "{after}");
    assert_eq!(
        after.lines().take(4).collect::<Vec<_>>(),
        ["> make a file", "", "$ touch a.txt", ""],
        "answered, the call is no longer waiting, and has not started yet"
    );
    // Allowed, the call starts (the guard decides before its start event).
    app.apply_event(
        &AgentEvent::ToolExecutionStart {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args: json!({"command": "touch a.txt"}),
        },
        now,
    );
    assert_eq!(
        screen(&mut app, 70, 22, now)
            .lines()
            .take(4)
            .collect::<Vec<_>>(),
        ["> make a file", "", "$ touch a.txt", "  running · 0.0s"],
        "once started the call runs"
    );
    // The editor takes keys again.
    app.handle_key(key(KeyCode::Char('x')));
    assert!(!app.editor.is_empty());
}

/// The prompt takes rows from the bottom of the transcript, which is drawn
/// above it: drawn over it, the prompt hid the newest rows, the call's own
/// `waiting for approval` among them.
#[test]
fn the_newest_transcript_rows_stay_in_sight_above_the_prompt() {
    let (mut app, now) = asking_app();
    let (first, _answer) = prompt("c1", "touch a.txt");
    app.approvals.push(first);
    let shown = screen(&mut app, 70, 19, now);
    let lines: Vec<&str> = shown.lines().collect();
    let top = lines
        .iter()
        .position(|line| line.starts_with("┌ Permission needed"))
        .expect(&shown);
    assert!(
        lines[..top]
            .iter()
            .any(|line| line.contains("waiting for approval")),
        "{shown}"
    );
}

/// A person typing as the prompt appears must not approve the call with the
/// Enter (or the number) meant for the editor: those keys wait out the
/// grace from when the prompt is first drawn and from each key typed since,
/// and go to the editor meanwhile, as do the letters the prompt has no use
/// for; Esc and the arrows are the prompt's at once.
#[test]
fn keys_that_answer_wait_out_the_grace_after_the_prompt_appears() {
    let (mut app, now) = asking_app();
    let (first, mut answer) = prompt("c1", "touch a.txt");
    app.approvals
        .set_grace(std::time::Duration::from_secs(3600));
    app.approvals.push(first);
    // Not even drawn yet, then drawn: both too soon.
    app.handle_key(key(KeyCode::Char('1')));
    screen(&mut app, 70, 22, now);
    for code in [
        KeyCode::Char(' '),
        KeyCode::Char('i'),
        KeyCode::Char('n'),
        KeyCode::Char(' '),
        KeyCode::Char('3'),
        KeyCode::Char('x'),
        KeyCode::Backspace,
        KeyCode::Down,
    ] {
        app.handle_key(key(code));
    }
    assert!(answer.try_recv().is_err(), "answered within the grace");
    assert_eq!(
        app.editor.text(),
        "1 in 3",
        "what was typed is in the editor"
    );
    // The grace over: the selection the arrow moved is what Enter picks.
    app.approvals.set_grace(std::time::Duration::ZERO);
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(answer.try_recv(), Ok(ApprovalAnswer::AllowSession));
    // Esc denies at once, grace or not.
    let (second, mut denied) = prompt("c2", "rm b.txt");
    app.approvals
        .set_grace(std::time::Duration::from_secs(3600));
    app.approvals.push(second);
    screen(&mut app, 70, 22, now);
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(denied.try_recv(), Ok(ApprovalAnswer::Deny { reason: None }));
}

#[test]
fn a_batch_asks_one_call_at_a_time_and_a_cancelled_call_drops_its_prompt() {
    let (mut app, now) = asking_app();
    let (first, mut first_answer) = prompt("c1", "touch a.txt");
    let (second, second_answer) = prompt("c2", "mkdir out");
    let (third, third_answer) = prompt("c3", "rm b.txt");
    app.approvals.push(first);
    app.approvals.push(second);
    app.approvals.push(third);
    let shown = screen(&mut app, 70, 22, now);
    assert!(
        shown.contains("┌ Permission needed (2 more waiting) ─"),
        "{shown}"
    );
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(
        first_answer.try_recv(),
        Ok(ApprovalAnswer::Deny { reason: None })
    );
    let shown = screen(&mut app, 70, 22, now);
    assert!(shown.contains("│ $ mkdir out"), "{shown}");
    assert!(shown.contains("(1 more waiting)"), "{shown}");
    // The second call's run is cancelled: its prompt goes, the third shows.
    drop(second_answer);
    assert!(app.approvals.drop_abandoned());
    let shown = screen(&mut app, 70, 22, now);
    assert!(shown.contains("│ $ rm b.txt"), "{shown}");
    assert!(shown.contains("┌ Permission needed ─"), "{shown}");
    drop(third_answer);
    assert!(app.approvals.drop_abandoned());
    assert!(app.approvals.current().is_none());
}

#[test]
fn deny_asks_for_a_reason_with_the_cursor_in_it_and_enter_sends_it() {
    let (mut app, now) = asking_app();
    let (first, mut answer) = prompt("c1", "touch a.txt");
    app.approvals.push(first);
    app.handle_key(key(KeyCode::Char('5')));
    for c in "not here".chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
    app.paste(", use /tmp");
    let shown = screen(&mut app, 70, 22, now);
    let rows: Vec<&str> = shown.lines().collect();
    assert_eq!(
        rows[11..15],
        [
            "│ Deny: tell the model why (optional)                                │",
            "│ > not here, use /tmp                                               │",
            "│ Enter denies with this reason (empty: none) · Esc denies without   │",
            "│ one                                                                │",
        ],
        "{shown}"
    );
    // The cursor is at the end of the reason.
    let mut terminal = Terminal::new(TestBackend::new(70, 22)).unwrap();
    terminal.draw(|frame| app.draw(frame, now)).unwrap();
    assert_eq!(
        terminal.get_cursor_position().unwrap(),
        Position::new(22, 12)
    );
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        answer.try_recv(),
        Ok(ApprovalAnswer::Deny {
            reason: Some("not here, use /tmp".into())
        })
    );
    assert!(app.editor.is_empty(), "the reason never reached the editor");
}

/// The prompt shows the call that runs: characters a terminal draws as
/// nothing or obeys (a bidi override, a zero-width space, a carriage return,
/// an escape) are spelled out, in the call and in the rule offered. (`touch
/// a\u{202e}b.txt` was shown as `touch ab.txt`, and allowed as
/// `bash(touch ab.txt)`.)
#[test]
fn the_prompt_spells_out_characters_the_terminal_would_hide() {
    for (command, shown) in [
        ("touch a\u{202e}b.txt", "touch a<U+202E>b.txt"),
        ("echo hi\u{200b}", "echo hi<U+200B>"),
        ("sh\r\x1b[2Kls", "sh\\r\\x1b[2Kls"),
        ("echo a\u{a0}b", "echo a<U+00A0>b"),
    ] {
        let (mut app, now) = asking_app();
        let (first, _answer) = prompt("c1", command);
        app.approvals.push(first);
        let screen = screen(&mut app, 70, 22, now);
        assert!(screen.contains(&format!("│ $ {shown} ")), "{screen}");
        assert!(
            screen.contains(&format!("2. Allow for this session: bash({shown})")),
            "{screen}"
        );
    }
}

/// A project whose settings allow `touch a.txt` (ignored until trusted).
fn project_allowing_touch(cwd: &Path) {
    std::fs::create_dir_all(cwd.join(".coding-agent")).unwrap();
    std::fs::write(
        cwd.join(".coding-agent/settings.json"),
        json!({"permissions": {"allow": ["bash(touch a.txt)"]}}).to_string(),
    )
    .unwrap();
}

/// The screen once the app shows either the trust question or its UI.
fn first_screen(tmux: &Tmux) -> String {
    tmux.wait_for("the trust question or the UI", |s| {
        s.contains("Trust this project?") || s.contains("openai/test-model")
    })
}

#[test]
fn the_trust_question_comes_at_start_and_a_yes_is_remembered_and_applies_the_projects_rules() {
    let server = SseServer::with_calls(vec![("bash", json!({"command": "touch a.txt"}))]);
    let Some(tmux) = Tmux::start_in(&server, &[], project_allowing_touch) else {
        return;
    };
    let question = first_screen(&tmux);
    let settings = tmux.cwd.join(".coding-agent/settings.json");
    let rows: Vec<&str> = question.lines().map(str::trim_end).collect();
    assert_eq!(
        rows[..6],
        [
            format!("This project has its own settings: {}", settings.display()).as_str(),
            "",
            "Until you trust the project, only its deny and ask rules apply, so a repository you did not write",
            "cannot let commands run without asking. Trusting it also starts its own command hooks and MCP",
            "servers, lets it choose the model and where your requests and keys go, and gives the model its",
            "instructions.",
        ],
        "{question}"
    );
    assert!(rows.contains(&"  allow bash(touch a.txt)"), "{question}");
    // A prompt typed ahead as the agent starts does not answer it.
    tmux.key("y");
    tmux.key("Enter");
    std::thread::sleep(std::time::Duration::from_millis(700));
    let still = tmux.screen();
    assert!(still.contains("Trust this project?"), "{still}");
    assert!(!tmux.agent_dir.join("trusted-projects.json").exists());
    tmux.key("1");
    tmux.wait_for("the UI", |s| s.contains("openai/test-model"));
    let trusted: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmux.agent_dir.join("trusted-projects.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(trusted, json!({"trusted": [tmux.cwd]}));
    tmux.quit();
    tmux.launch();
    let next = first_screen(&tmux);
    assert!(!next.contains("Trust this project?"), "{next}");
    // The project's `allow` rule applies: the call runs unasked.
    tmux.ask("make a file");
    assert!(tmux.cwd.join("a.txt").exists());
}

/// Trusted at the question, the project's choice of model is not said to
/// be ignored: the settings were read (and warned about) before the
/// question, and the warning stayed after the yes, above a session using
/// the very choice it said was ignored.
#[test]
fn a_project_trusted_at_the_question_is_not_said_to_be_untrusted() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        std::fs::create_dir_all(cwd.join(".coding-agent")).unwrap();
        std::fs::write(
            cwd.join(".coding-agent/settings.json"),
            json!({"defaultModel": "test-model"}).to_string(),
        )
        .unwrap();
    }) else {
        return;
    };
    let question = first_screen(&tmux);
    assert!(question.contains("defaultModel test-model"), "{question}");
    std::thread::sleep(std::time::Duration::from_millis(700));
    tmux.key("1");
    let screen = tmux.wait_for("the UI", |s| s.contains("openai/test-model"));
    assert!(!screen.contains("is not trusted"), "{screen}");
}

#[test]
fn a_project_with_its_own_hooks_is_asked_about_and_a_no_keeps_them_off_until_asked_again() {
    let server = SseServer::with_calls(Vec::new());
    let hooks = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}});
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        std::fs::create_dir_all(cwd.join(".coding-agent")).unwrap();
        std::fs::write(cwd.join(".coding-agent/settings.json"), hooks.to_string()).unwrap();
    }) else {
        return;
    };
    let question = first_screen(&tmux);
    assert!(question.contains("  command hooks on Stop"), "{question}");
    tmux.key("Escape");
    // The notice says why the hooks do not run (it may be drawn after the
    // footer: warnings come on their own channel).
    let notice = format!(
        "Warning: hooks: the hooks in {} do not run: the project is not trusted",
        tmux.cwd.join(".coding-agent/settings.json").display()
    );
    tmux.wait_for("the UI with the hooks' notice", |s| {
        s.contains("openai/test-model") && s.replace('\n', " ").contains(&notice)
    });
    assert!(!tmux.agent_dir.join("trusted-projects.json").exists());
    tmux.quit();
    tmux.launch();
    let again = first_screen(&tmux);
    assert!(again.contains("Trust this project?"), "{again}");
}

#[test]
fn with_trust_on_the_command_line_nothing_is_asked_or_stored() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &["--trust"], project_allowing_touch) else {
        return;
    };
    let first = first_screen(&tmux);
    assert!(!first.contains("Trust this project?"), "{first}");
    assert!(!tmux.agent_dir.join("trusted-projects.json").exists());
}

/// The tool results the model read, in order: the `tool` messages of the
/// last request.
fn tool_results(server: &SseServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Sends `key` to the approval prompt on the screen once the keys that
/// answer it are taken: the binary ignores them for a moment after the
/// prompt appears (`APPROVAL_GRACE`, 500 ms), so that a key meant for the
/// editor cannot approve a call.
fn answer(tmux: &Tmux, key: &str) {
    std::thread::sleep(std::time::Duration::from_millis(700));
    tmux.key(key);
}

/// Once the UI is up, sends `prompt` and waits for the approval prompt; the
/// screen then.
fn send_until_asked(tmux: &Tmux, prompt: &str) -> String {
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text(prompt);
    tmux.key("Enter");
    tmux.wait_for("the prompt", |s| s.contains("Permission needed"))
}

#[test]
fn allow_for_this_session_runs_the_same_command_again_unasked_and_a_deny_sends_its_reason() {
    let server = SseServer::with_calls(vec![
        ("bash", json!({"command": "touch a.txt"})),
        ("bash", json!({"command": "touch a.txt"})),
        ("bash", json!({"command": "mkdir out"})),
    ]);
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    let asked = send_until_asked(&tmux, "make files");
    assert!(asked.contains("│ $ touch a.txt"), "{asked}");
    assert!(
        asked.contains("2. Allow for this session: bash(touch a.txt)"),
        "{asked}"
    );
    answer(&tmux, "2");
    // The same command again runs unasked: the next prompt is the third
    // call's.
    let asked = tmux.wait_for("the third call's prompt", |s| {
        s.contains("Permission needed") && s.contains("│ $ mkdir out")
    });
    assert!(!asked.contains("│ $ touch a.txt"), "{asked}");
    assert!(tmux.cwd.join("a.txt").exists());
    assert_eq!(tool_results(&server), ["(no output)", "(no output)"]);
    tmux.key("Down");
    tmux.key("Down");
    tmux.key("Down");
    tmux.key("Down");
    answer(&tmux, "Enter");
    tmux.wait_for("the reason input", |s| {
        s.contains("Deny: tell the model why")
    });
    tmux.type_text("write under notes/ instead");
    tmux.key("Enter");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: make files")
    });
    assert!(!tmux.cwd.join("out").exists());
    assert_eq!(
        tool_results(&server),
        [
            "(no output)",
            "(no output)",
            "Blocked: the user denied this call: write under notes/ instead"
        ]
    );
}

#[test]
fn esc_denies_the_call_and_the_model_reads_that_the_user_refused() {
    let server = SseServer::with_calls(vec![("bash", json!({"command": "touch a.txt"}))]);
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    let asked = send_until_asked(&tmux, "make a file");
    assert!(
        asked.contains("Waiting for your approval (Esc denies)"),
        "{asked}"
    );
    tmux.key("Escape");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: make a file")
    });
    assert!(!tmux.cwd.join("a.txt").exists());
    assert_eq!(
        tool_results(&server),
        ["Blocked: the user denied this call"]
    );
}

/// In a trusted project (an untrusted one is not offered the choice: its
/// allow rules would be ignored at the next start).
#[test]
fn always_allow_in_this_project_writes_the_rule_to_the_projects_settings() {
    let server = SseServer::with_calls(vec![("bash", json!({"command": "touch a.txt"}))]);
    let Some(tmux) = Tmux::start_in(&server, &["--trust"], |_| {}) else {
        return;
    };
    let asked = send_until_asked(&tmux, "make a file");
    assert!(asked.contains("3. Always allow in this project"), "{asked}");
    answer(&tmux, "3");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: make a file")
    });
    assert!(tmux.cwd.join("a.txt").exists());
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmux.cwd.join(".coding-agent/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        settings,
        json!({"permissions": {"allow": ["bash(touch a.txt)"]}})
    );
}

/// A short window leaves out why the policy asks and the keys, never the
/// call; one too short for the call and its choices says so and takes no
/// approval until it grows (it used to show the choices alone, and `1`
/// approved a command that was nowhere on screen).
#[test]
fn a_window_too_short_for_the_call_and_its_choices_takes_only_a_deny() {
    let (mut app, now) = asking_app();
    let (first, mut answer) = prompt("c1", "touch a.txt");
    app.approvals.push(first);

    let short = screen(&mut app, 70, 15, now);
    assert!(short.contains("│ $ touch a.txt"), "{short}");
    assert!(short.contains("5. Deny…"), "{short}");
    assert!(
        !short.contains("known-safe"),
        "the reason made room: {short}"
    );

    let tiny = screen(&mut app, 70, 10, now);
    assert!(!tiny.contains("Allow once"), "{tiny}");
    assert!(
        tiny.contains("The call does not fit: enlarge the window to answer · Esc denies"),
        "{tiny}"
    );
    app.handle_key(key(KeyCode::Char('1')));
    app.handle_key(key(KeyCode::Enter));
    assert!(answer.try_recv().is_err(), "no approval of an unseen call");
    assert!(app.approvals.current().is_some());

    let grown = screen(&mut app, 70, 22, now);
    assert!(grown.contains("│ $ touch a.txt"), "{grown}");
    app.handle_key(key(KeyCode::Char('1')));
    assert_eq!(answer.try_recv(), Ok(ApprovalAnswer::AllowOnce));

    let (second, mut denied) = prompt("c2", "touch b.txt");
    app.approvals.push(second);
    screen(&mut app, 70, 10, now);
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(denied.try_recv(), Ok(ApprovalAnswer::Deny { reason: None }));
}

/// A call taller than the prompt (a 60-line script) used to show its first
/// rows and `…`, and a long line was cut at the window's edge: "Allow once"
/// ran code nobody saw. Every row now shows, wrapped; what does not fit is
/// scrolled with PgUp/PgDn, and the call is allowed only once every row has
/// been on the screen.
#[test]
fn a_call_taller_than_the_prompt_is_scrolled_and_allowed_only_once_read_to_the_end() {
    let (mut app, now) = asking_app();
    let mut script: Vec<String> = (1..=60)
        .map(|i| format!("echo line{i} > /tmp/x{i}"))
        .collect();
    script.push(format!(
        "mkdir -p build && echo {} && python3 -c 'HIDDEN_END'",
        "x".repeat(150)
    ));
    let (mut first, mut answer) = prompt("c1", &script.join("\n"));
    first.request.suggested_rules = vec!["bash(mkdir -p build)".into()];
    app.approvals.push(first);

    let top = screen(&mut app, 70, 30, now);
    assert!(top.contains("echo line1 > /tmp/x1"), "{top}");
    assert!(
        top.contains("· PgUp/PgDn/Home/End scroll; the call can be"),
        "{top}"
    );
    assert!(top.contains("1. Allow once"), "{top}");
    assert!(!top.contains("HIDDEN_END"), "{top}");
    app.handle_key(key(KeyCode::Char('1')));
    app.handle_key(key(KeyCode::Enter));
    assert!(
        answer.try_recv().is_err(),
        "not read to the end, not allowed"
    );

    let mut bottom = String::new();
    for _ in 0..20 {
        app.handle_key(key(KeyCode::PageDown));
        bottom = screen(&mut app, 70, 30, now);
        // Why the policy asks is the last row scrolled to.
        if bottom.contains("known-safe") {
            break;
        }
    }
    assert!(
        bottom.contains("python3 -c 'HIDDEN_END'"),
        "the long line wraps, whole: {bottom}"
    );
    assert!(bottom.contains("echo line60 > /tmp/x60"), "{bottom}");
    app.handle_key(key(KeyCode::PageUp));
    screen(&mut app, 70, 30, now);
    app.handle_key(key(KeyCode::Char('1')));
    assert_eq!(answer.try_recv(), Ok(ApprovalAnswer::AllowOnce));
}

/// A write of 2,000 lines showed 16 rows at a time in a 30-row window:
/// about 125 PgDn presses stood before "Allow once" was taken, and End and
/// Home did nothing. While the call scrolls, End shows its last rows (it has
/// then been on the screen to the end, and may be allowed) and Home its
/// first; where it does not scroll they are the editor's, as before.
#[test]
fn end_and_home_jump_to_the_last_and_first_rows_of_a_call_that_scrolls() {
    let (mut app, now) = asking_app();
    let content: Vec<String> = (1..=2000).map(|i| format!("line {i}")).collect();
    let (reply, mut answer) = oneshot::channel();
    app.approvals.push(ApprovalPrompt {
        request: ApprovalRequest {
            tool_call_id: "c1".into(),
            tool_name: "write".into(),
            args: json!({"path": "big.txt", "content": content.join("\n")}),
            reason: "write is not allowed without asking".into(),
            suggested_rules: vec!["write(big.txt)".into()],
            project_rules: true,
        },
        reply,
    });
    let top = screen(&mut app, 80, 30, now);
    assert!(top.contains("PgUp/PgDn/Home/End scroll"), "{top}");
    assert!(!top.contains("line 2000"), "{top}");
    app.handle_key(key(KeyCode::Char('1')));
    assert!(answer.try_recv().is_err(), "not read to the end");

    app.handle_key(key(KeyCode::End));
    let bottom = screen(&mut app, 80, 30, now);
    assert!(bottom.contains("line 2000"), "{bottom}");
    assert!(bottom.contains("not allowed without asking"), "{bottom}");
    app.handle_key(key(KeyCode::Home));
    let back = screen(&mut app, 80, 30, now);
    assert!(back.contains("Rows 1-"), "{back}");
    assert!(app.editor.is_empty(), "the keys were the prompt's");
    app.handle_key(key(KeyCode::Char('1')));
    assert_eq!(answer.try_recv(), Ok(ApprovalAnswer::AllowOnce));

    // A call that fits leaves Home and End to the editor.
    let (small, _answer) = prompt("c2", "touch a.txt");
    app.approvals.push(small);
    screen(&mut app, 80, 30, now);
    for code in [
        KeyCode::Char('b'),
        KeyCode::Home,
        KeyCode::Char('a'),
        KeyCode::End,
        KeyCode::Char('c'),
    ] {
        app.handle_key(key(code));
    }
    assert_eq!(app.editor.text(), "abc");
}

/// A line of six long `curl`s asks with six rules. Joined on the "Allow for
/// this session" choice they wrapped to fourteen rows, and an 80x24 window
/// said the call did not fit: only a deny was taken. The rules are now
/// listed under the call, scrolled with it, as is why the policy asks;
/// every choice keeps one row.
#[test]
fn many_long_rules_are_listed_with_the_call_and_allow_once_stays_reachable() {
    let (mut app, now) = asking_app();
    let commands: Vec<String> = (0..6)
        .map(|j| {
            format!(
                "curl -fsSL https://downloads.example.com/releases/v1.2.3/artifacts/\
                 linux-x86_64/component-{j}-with-a-long-name.tar.gz -o /tmp/c{j}.tgz"
            )
        })
        .collect();
    let (mut first, mut answer) = prompt("c1", &commands.join("; "));
    first.request.suggested_rules = commands.iter().map(|c| format!("bash({c})")).collect();
    app.approvals.push(first);

    let top = screen(&mut app, 80, 24, now);
    assert!(!top.contains("does not fit"), "{top}");
    assert!(top.contains("1. Allow once"), "{top}");
    assert!(
        top.contains("2. Allow for this session: the 6 rules above"),
        "{top}"
    );
    app.handle_key(key(KeyCode::Char('1')));
    assert!(answer.try_recv().is_err(), "not read to the end");

    let mut seen = top;
    for _ in 0..20 {
        app.handle_key(key(KeyCode::PageDown));
        let page = screen(&mut app, 80, 24, now);
        seen.push_str(&page);
        if page.contains("known-safe") {
            break;
        }
    }
    assert!(
        seen.contains("Rules added by the choices to allow for longer:"),
        "{seen}"
    );
    assert!(
        seen.contains("-o /tmp/c5.tgz)"),
        "every rule is listed: {seen}"
    );
    assert!(
        seen.contains("known-safe"),
        "the reason ends the scroll: {seen}"
    );
    app.handle_key(key(KeyCode::Char('1')));
    assert_eq!(answer.try_recv(), Ok(ApprovalAnswer::AllowOnce));
}

/// In a window of a few rows the prompt's frame is cut to the transcript's
/// area: it was drawn two rows tall into a one-row area, its bottom border
/// on the status row (`Waiting for your───┘`).
#[test]
fn the_prompt_stays_inside_its_area_in_a_tiny_window() {
    for (width, height) in [(20, 6), (30, 8)] {
        let (mut app, now) = asking_app();
        let (first, _answer) = prompt("c1", "touch a.txt");
        app.approvals.push(first);
        let shown = screen(&mut app, width, height, now);
        let is_frame = |row: &str| row.contains(['┌', '┐', '└', '┘', '│']);
        assert!(shown.lines().any(is_frame), "{shown}");
        assert!(
            !shown
                .lines()
                .any(|row| row.starts_with("Waiting for your") && is_frame(row)),
            "the frame stays off the status row:\n{shown}"
        );
    }
}
