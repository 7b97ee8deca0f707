//! The real binary in a real terminal (tmux, 100x30) against a scripted
//! OpenAI-format model: live bash output, Esc cancelling, steering.
//! Skipped (with a note) where tmux is not installed, failed under `CI=true`
//! (see `tui_support/tmux.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "remote_support/mod.rs"]
mod remote_support;
#[path = "tui_support/sse_server.rs"]
mod sse_server;
#[allow(dead_code)]
#[path = "tui_support/tmux.rs"]
mod tmux;

use std::path::Path;
use std::time::{Duration, Instant};

use sse_server::{COUNT_COMMAND, SseServer};

/// The counting command sleeps, which is not on the known-safe list: a rule
/// allows it, so no approval is asked.
const ALLOW_COUNT: &[&str] = &["--allow", "'bash(sleep:*)'"];
use tmux::{DEADLINE, Tmux};

/// Processes running in `cwd` whose command line holds the count command
/// (this test's bash run; another test running the same command in parallel
/// works in another directory).
fn count_processes(cwd: &Path) -> Vec<String> {
    processes_with(cwd, COUNT_COMMAND)
}

/// Processes running in `cwd` whose command line holds `text`.
fn processes_with(cwd: &Path, text: &str) -> Vec<String> {
    let cwd = std::fs::canonicalize(cwd).unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        if !path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .chars()
            .all(|c| c.is_ascii_digit())
        {
            continue;
        }
        // A zombie has exited; it only waits to be reaped.
        let zombie = std::fs::read_to_string(path.join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if zombie || std::fs::read_link(path.join("cwd")).ok() != Some(cwd.clone()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(path.join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(text) && !cmdline.contains("tmux") {
                found.push(format!("{}: {cmdline}", path.display()));
            }
        }
    }
    found
}

/// The roles (and, for tool results, whether they failed) saved in the one
/// session file under the agent dir beside `cwd`.
fn saved_roles(cwd: &Path) -> Vec<String> {
    let sessions = cwd.parent().unwrap().join("agent/sessions");
    let dir = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["type"] == "message")
        .map(|entry| {
            let message = &entry["message"];
            match message["role"].as_str().unwrap() {
                "toolResult" => format!("toolResult isError={}", message["isError"]),
                "assistant" => format!("assistant {}", message["stopReason"].as_str().unwrap()),
                role => role.to_owned(),
            }
        })
        .collect()
}

/// The app against `server` (which answers with the counting command),
/// asked to count: the bash call runs about three seconds.
fn start_counting(server: &SseServer) -> Option<Tmux> {
    let tmux = Tmux::start_in(server, ALLOW_COUNT, |_| {})?;
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("count to three");
    tmux.key("Enter");
    Some(tmux)
}

#[test]
fn live_bash_output_shows_before_the_call_ends_and_steering_reaches_the_model() {
    let server = SseServer::start();
    let Some(tmux) = start_counting(&server) else {
        return;
    };
    let live = tmux.wait_for("the live tail", |s| {
        s.contains("running ·") && s.lines().any(|l| l.trim() == "1")
    });
    assert!(!live.contains("exit 0"), "{live}");
    tmux.type_text("then say hi");
    tmux.key("Enter");
    tmux.wait_for("the pending steering message", |s| {
        s.contains("Queued steering: then say hi")
    });
    let done = tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: then say hi")
    });
    assert!(done.contains("exit 0"), "{done}");
    assert!(!done.contains("Queued steering"), "{done}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    tmux.key("C-c");
    tmux.key("C-c");
    tmux.wait_for("the app to quit", |s| !s.contains("openai/test-model"));
    assert_eq!(
        saved_roles(&tmux.cwd),
        [
            "user",
            "assistant toolUse",
            "toolResult isError=false",
            "user",
            "assistant stop"
        ]
    );
}

/// [`start_counting`], with `then say hi` sent as steering while the
/// command runs.
fn steering_while_counting(server: &SseServer) -> Option<Tmux> {
    let tmux = start_counting(server)?;
    tmux.wait_for("the live tail", |s| s.contains("running ·"));
    tmux.type_text("then say hi");
    tmux.key("Enter");
    Some(tmux)
}

#[test]
fn alt_up_takes_queued_messages_back_into_the_editor_before_the_model_sees_them() {
    let server = SseServer::start();
    let Some(tmux) = steering_while_counting(&server) else {
        return;
    };
    tmux.type_text("and bye");
    tmux.key("M-Enter");
    tmux.wait_for("both queued", |s| {
        s.contains("Queued steering: then say hi") && s.contains("Queued follow-up: and bye")
    });
    tmux.type_text("typed");
    tmux.key("M-Up");
    let restored = tmux.wait_for("the messages back in the editor", |s| {
        s.contains("Restored 2 queued messages to the editor")
    });
    assert!(!restored.contains("Queued "), "{restored}");
    let editor: Vec<&str> = restored
        .lines()
        .skip_while(|line| !line.starts_with("> then say hi"))
        .take(5)
        .map(str::trim_end)
        .collect();
    assert_eq!(
        editor,
        ["> then say hi", "", "  and bye", "", "  typed"],
        "{restored}"
    );
    // The run ends with the model having seen neither.
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: count to three")
    });
    assert_eq!(server.requests().len(), 2);
    tmux.key("Enter");
    tmux.wait_for("the restored text sent", |s| {
        s.contains("Done. Last user message: then say hi")
    });
    tmux.quit();
}

/// A message queued for a run the user then cancels goes back to the
/// editor, as in Pi: it used to wait and ride along with the next, unrelated
/// prompt, which then never got an answer of its own.
#[test]
fn esc_gives_the_cancelled_runs_queued_messages_back_to_the_editor() {
    let server = SseServer::start();
    let Some(tmux) = steering_while_counting(&server) else {
        return;
    };
    tmux.wait_for("queued", |s| s.contains("Queued steering: then say hi"));
    tmux.key("Escape");
    let restored = tmux.wait_for("the message back in the editor", |s| {
        s.contains("Restored 1 queued message to the editor")
    });
    assert!(!restored.contains("Queued steering"), "{restored}");
    assert!(
        restored
            .lines()
            .any(|line| line.trim_end() == "> then say hi"),
        "{restored}"
    );
    assert_eq!(server.requests().len(), 1, "nothing more was sent");
    tmux.quit();
}

/// [`start_counting`], once the command runs and its first line shows.
fn counting_shown(server: &SseServer) -> Option<Tmux> {
    let tmux = start_counting(server)?;
    tmux.wait_for("the live tail", |s| {
        s.contains("running ·") && s.lines().any(|l| l.trim() == "1")
    });
    assert!(!count_processes(&tmux.cwd).is_empty(), "the command runs");
    Some(tmux)
}

/// Waits until no process in `cwd` holds any of `texts` (a kill is sent as
/// a run ends; the process may take a moment to go).
fn wait_gone(cwd: &Path, texts: &[&str]) {
    let start = Instant::now();
    let left = || -> Vec<String> { texts.iter().flat_map(|t| processes_with(cwd, t)).collect() };
    while !left().is_empty() {
        assert!(start.elapsed() < DEADLINE, "still running: {:?}", left());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a session saves of a turn cut during its bash call: the call and
/// its cancelled result, then the aborted answer.
const CUT_DURING_THE_CALL: [&str; 4] = [
    "user",
    "assistant toolUse",
    "toolResult isError=true",
    "assistant aborted",
];

#[test]
fn esc_cancels_the_running_bash_call_and_leaves_no_process() {
    let server = SseServer::start();
    let Some(tmux) = counting_shown(&server) else {
        return;
    };
    tmux.key("Escape");
    let screen = tmux.wait_for("the abort", |s| {
        s.contains("Aborted") && !s.contains("Working…")
    });
    assert!(!screen.contains("exit 0"), "{screen}");
    wait_gone(&tmux.cwd, &[COUNT_COMMAND]);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(saved_roles(&tmux.cwd), CUT_DURING_THE_CALL);
}

/// Closing the terminal (its window, or the connection to it) sends SIGHUP
/// and closes the pty: the agent quits as on Ctrl+C twice. It used to die at
/// once, leaving the command running and the call unsaved.
#[test]
fn closing_the_terminal_kills_the_running_command_and_saves_the_call() {
    let server = SseServer::start();
    let Some(tmux) = counting_shown(&server) else {
        return;
    };
    let agent = env!("CARGO_BIN_EXE_coding-agent");
    assert_eq!(processes_with(&tmux.cwd, agent).len(), 1, "the agent runs");
    tmux.tmux(&["kill-server"]);
    wait_gone(&tmux.cwd, &[COUNT_COMMAND, agent]);
    assert_eq!(saved_roles(&tmux.cwd), CUT_DURING_THE_CALL);
}

#[test]
fn read_edit_and_bash_calls_render_through_their_renderers() {
    let server = SseServer::with_calls(vec![
        ("read", serde_json::json!({"path": "notes.txt"})),
        (
            "edit",
            serde_json::json!({"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]}),
        ),
        (
            "bash",
            serde_json::json!({"command": "wc -l notes.txt && grep -n BETA notes.txt"}),
        ),
    ]);
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    let screen = tmux.ask("tidy notes.txt");
    // The elapsed time is the machine's; the rest is exact.
    // From the prompt on (a new session's first line stands above it).
    let transcript: Vec<String> = screen
        .lines()
        .skip_while(|line| !line.starts_with("> tidy"))
        .take(22)
        .map(|line| match line.split_once(" · ") {
            Some((status, _)) => format!("{status} · <elapsed>"),
            None => line.trim_end().to_owned(),
        })
        .collect();
    assert_eq!(
        transcript,
        [
            "> tidy notes.txt",
            "",
            "read notes.txt",
            "  alpha",
            "  beta",
            "  gamma",
            "",
            "edit notes.txt",
            "   1 alpha",
            "  -2 beta",
            "  +2 BETA",
            "   3 gamma",
            "",
            "$ wc -l notes.txt && grep -n BETA notes.txt",
            "  3 notes.txt",
            "  2:BETA",
            "  exit 0 · <elapsed>",
            "",
            "Done. Last user message: tidy notes.txt",
            "",
            "",
            "",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(tmux.cwd.join("notes.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
}

#[test]
fn a_retried_request_shows_as_a_warning_in_the_transcript() {
    let server = SseServer::with_calls(Vec::new());
    server.refuse_next(1);
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.ask("hello");
    // The warning comes on its own channel, so with no wait before the retry
    // it may be drawn after the short answer: wait for it too, and do not
    // assert the order.
    let screen = tmux.wait_for("the warning", |s| s.contains("Rate limit reached"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let warning =
        "Warning: Retrying the request (1/2) in 0s: 429 rate_limit_error: Rate limit reached";
    assert!(lines.contains(&warning), "{screen}");
    assert!(lines.contains(&"> hello"), "{screen}");
    assert_eq!(server.requests().len(), 2);
}

/// Settings for the run in `cwd`: session retries after `base_delay_ms`, none
/// inside the provider (so each refused request reaches the session).
fn retry_settings(cwd: &Path, base_delay_ms: u64) {
    global_settings(
        cwd,
        &format!(r#"{{"retry":{{"baseDelayMs":{base_delay_ms},"provider":{{"maxRetries":0}}}}}}"#),
    );
}

/// Writes `json` as the global settings of the run in `cwd` (the agent
/// dir beside it): a project's own would need trust for its providers.
fn global_settings(cwd: &Path, json: &str) {
    let agent_dir = cwd.parent().unwrap().join("agent");
    std::fs::write(agent_dir.join("settings.json"), json).unwrap();
}

#[test]
fn a_call_a_hook_rewrote_shows_what_ran_live_and_when_resumed() {
    let server = SseServer::with_calls(vec![(
        "bash",
        serde_json::json!({"command": "echo from the model"}),
    )]);
    let Some(tmux) = Tmux::start_in(&server, &["--continue"], |cwd| {
        let hook = cwd.parent().unwrap().join("rewrite.sh");
        std::fs::write(
            &hook,
            "#!/bin/sh\ncat > /dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"updatedInput\": {\"command\": \"echo from the hook\"}}}'\n",
        )
        .unwrap();
        let settings = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "bash",
            "hooks": [{"type": "command", "command": format!("sh {}", hook.display())}]}]}});
        global_settings(cwd, &settings.to_string());
    }) else {
        return;
    };
    let shown = |screen: &str| {
        screen.contains("$ echo from the hook · arguments from a hook")
            && screen.lines().any(|line| line.trim() == "from the hook")
            && !screen.contains("from the model")
    };
    let live = tmux.ask("say it");
    assert!(shown(&live), "{live}");
    tmux.quit();
    tmux.launch();
    let resumed = tmux.wait_for("the resumed call", |s| s.contains("$ echo"));
    assert!(shown(&resumed), "{resumed}");
    tmux.quit();
}

/// The status line of a retry's wait with `seconds` left.
fn countdown(seconds: u64) -> String {
    format!("Retrying (1/3) in {seconds}s... (Esc to cancel)")
}

#[test]
fn a_retry_wait_counts_down_and_esc_cancels_it() {
    let server = SseServer::with_calls(Vec::new());
    server.refuse_next(10);
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| retry_settings(cwd, 5000)) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("hello");
    tmux.key("Enter");
    tmux.wait_for("the countdown", |s| {
        s.contains(&countdown(5)) || s.contains(&countdown(4))
    });
    tmux.wait_for("the countdown to go on", |s| s.contains(&countdown(3)));
    tmux.key("Escape");
    let screen = tmux.wait_for("the cancelled retry", |s| {
        s.contains("Retry cancelled after 1 attempt")
    });
    assert!(!screen.contains("(Esc to cancel)"), "{screen}");
    // The turn's own error stays in the transcript.
    assert!(screen.contains("Rate limit reached"), "{screen}");
    assert_eq!(server.requests().len(), 1, "the retry never asked");
}

#[test]
fn a_retry_wait_counts_down_then_the_turn_is_asked_again() {
    let server = SseServer::with_calls(Vec::new());
    server.refuse_next(1);
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| retry_settings(cwd, 2000)) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("hello");
    tmux.key("Enter");
    tmux.wait_for("the countdown", |s| s.contains(&countdown(2)));
    tmux.wait_for("the countdown to go on", |s| s.contains(&countdown(1)));
    let screen = tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: hello") && s.contains("Retry 1 succeeded")
    });
    assert!(!screen.contains("s... (Esc to cancel)"), "{screen}");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_request_that_keeps_failing_ends_as_one_line_with_its_last_error() {
    let mut server = SseServer::with_calls(Vec::new());
    // Nothing listens there, as when a local model's server has stopped:
    // each request is refused at once, and retried after a real wait.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    server.base_url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        global_settings(
            cwd,
            r#"{"retry":{"baseDelayMs":100,"provider":{"maxRetries":1}}}"#,
        );
    }) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("hello");
    tmux.key("Enter");
    let screen = tmux.wait_for("the end of the retries", |s| {
        s.contains("Retry failed after 3 attempts: Connection error")
    });
    // Four attempts of two requests each: once 4 warnings, 4 errors and 3
    // retry lines, then the last of each: all fold into the end line.
    let count = |text: &str| screen.matches(text).count();
    assert_eq!(count("Warning: Retrying the request"), 0, "{screen}");
    assert_eq!(count("Error: Connection error"), 0, "{screen}");
    assert_eq!(count("Retrying ("), 0, "{screen}");
    assert_eq!(count("Connection error"), 1, "{screen}");
    assert!(screen.contains("> hello"), "{screen}");
}

#[test]
fn the_model_menu_offers_what_a_local_server_lists() {
    let server = SseServer::with_calls(Vec::new());
    let url = server.base_url.clone();
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        let settings = format!(
            r#"{{"providers":{{"local":{{"api":"openai-completions","baseUrl":"{url}","defaultModel":"test-model"}}}}}}"#
        );
        let agent_dir = cwd.parent().unwrap().join("agent");
        std::fs::write(agent_dir.join("settings.json"), settings).unwrap();
    }) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("/model ");
    let screen = tmux.wait_for("the served model in the menu", |s| {
        s.contains("local/served-model")
    });
    let row = screen
        .lines()
        .find(|line| line.contains("local/served-model"))
        .unwrap();
    assert!(row.contains("served by local"), "{screen}");
    assert!(screen.contains("local/test-model"), "{screen}");
    // What is typed stays first; Down takes the served model.
    tmux.type_text("local/serv");
    tmux.key("Down");
    tmux.key("Enter");
    tmux.wait_for("the switch", |s| {
        s.contains("Switched to local/served-model")
    });
    tmux.type_text("hello");
    tmux.key("Enter");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: hello")
    });
    let requests = server.requests();
    assert_eq!(requests.last().unwrap()["model"], "served-model");
    // A model the server does not list is refused (it was switched to
    // without a word), and the command is back in the editor to be fixed.
    let refused = run_command(
        &tmux,
        "/model local/gtp-typo",
        "Model not found: local/gtp-typo (local offers: test-model, served-model)",
    );
    assert!(refused.contains("> /model local/gtp-typo"), "{refused}");
    assert!(
        refused
            .lines()
            .last()
            .unwrap()
            .ends_with("local/served-model"),
        "{refused}"
    );
}

#[test]
fn shift_tab_cycles_the_thinking_level_shown_in_the_footer_and_sent() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &["--thinking", "medium"], |cwd| {
        global_settings(cwd, r#"{"providers":{"openai":{"reasoning":true}}}"#);
    }) else {
        return;
    };
    tmux.wait_for("the level in the footer", |s| {
        s.contains("openai/test-model • medium")
    });
    tmux.key("BTab");
    let screen = tmux.wait_for("the next level", |s| s.contains("openai/test-model • high"));
    assert!(screen.contains("Thinking level: high"), "{screen}");
    tmux.ask("hello");
    assert_eq!(server.requests()[0]["reasoning_effort"], "high");
}

#[test]
fn after_a_compaction_the_footer_keeps_the_totals_and_estimates_the_context_also_when_resumed() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &["--continue"], |cwd| {
        global_settings(cwd, r#"{"providers": {"openai": {"contextWindow": 4000}}}"#);
    }) else {
        return;
    };
    // Two long prompts: the first is old enough to be summarised.
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    for what in ["first", "second"] {
        tmux.type_text(&format!("{what} {}", "word ".repeat(200).trim_end()));
        tmux.key("Enter");
        let answer = format!("Done. Last user message: {what} word");
        tmux.wait_for("the answer", |s| s.contains(&answer));
    }
    // The scripted model reports 1,000 prompt and 20 answer tokens (the
    // footer counts them when the answer ends, a frame after its text).
    let reported = |s: &str| s.contains("ctx 1.0k/4.0k (26%)");
    tmux.wait_for("the answer's usage in the footer", reported);
    tmux.type_text("/compact");
    tmux.key("Enter");
    let screen = tmux.wait_for("the compaction", |s| s.contains("Compacted from"));
    // `↑2.0k ↓40 R0 W0 $0.000 ctx ~2.8k/4.0k (71%)`
    let footer = |screen: &str| {
        let line = screen.lines().rfind(|line| line.contains("ctx ")).unwrap();
        line[..=line.find(')').unwrap()].to_owned()
    };
    let compacted = footer(&screen);
    assert!(compacted.starts_with("↑2.0k ↓40 "), "{screen}");
    assert!(compacted.contains("ctx ~"), "{screen}");
    assert!(!compacted.contains("ctx ~1.0k"), "{screen}");

    // The same when the session is resumed before the next answer: the
    // totals count the whole file, not only the messages kept.
    tmux.quit();
    tmux.launch();
    let resumed = tmux.wait_for("the resumed footer", |s| s.contains("openai/test-model"));
    assert_eq!(footer(&resumed), compacted, "{resumed}");
    tmux.ask("third");
    tmux.wait_for("the new answer's usage in the footer", reported);
    tmux.quit();
}

/// Types `command` and sends it; waits until the screen shows `shown`.
fn run_command(tmux: &Tmux, command: &str, shown: &str) -> String {
    tmux.type_text(command);
    tmux.key("Enter");
    tmux.wait_for(shown, |s| s.contains(shown))
}

/// `/export ~/x.html` writes in the home folder, as the tools read `~`
/// (it wrote to a folder named `~` in the working directory).
#[test]
fn export_reads_a_tilde_as_the_home_folder() {
    let server = SseServer::with_calls(Vec::new());
    let home = tempfile::tempdir().unwrap();
    let env = [("HOME", home.path().display().to_string())];
    let Some(tmux) = Tmux::start_with_env(&server, &env, &[], |_| {}) else {
        return;
    };
    tmux.ask("first question");
    run_command(&tmux, "/export ~/chat.html", "Exported to");
    assert!(home.path().join("chat.html").is_file());
    assert!(!tmux.cwd.join("~").exists());
}

/// The footer shows the working directory under `~` only when it is in the
/// user's home: `HOME=` (empty) was a prefix of every path, and the footer
/// read `~//tmp/.../work`.
#[test]
fn an_empty_home_is_no_prefix_of_the_footers_directory() {
    let server = SseServer::with_calls(Vec::new());
    let env = [("HOME", String::new())];
    let Some(tmux) = Tmux::start_with_env(&server, &env, &[], |_| {}) else {
        return;
    };
    let cwd = tmux.cwd.display().to_string();
    let screen = tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    let footer = screen.lines().find(|line| line.contains(&cwd));
    assert_eq!(footer.map(str::trim), Some(cwd.as_str()), "{screen}");
}

#[test]
fn session_commands_show_name_export_copy_and_fork_the_session() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    // tmux keeps what a program copies (OSC 52) in its paste buffer.
    tmux.tmux(&["set", "-g", "set-clipboard", "on"]);
    tmux.ask("first question");
    tmux.ask("second question");

    // The notice's last line: the lines above it are drawn by then.
    let screen = run_command(&tmux, "/session", "Used     ");
    let line = |screen: &str, label: &str| {
        let found = screen.lines().find(|line| line.starts_with(label));
        found
            .unwrap_or_else(|| panic!("no {label} line:\n{screen}"))
            .to_owned()
    };
    // The file's path is longer than the screen is wide.
    assert!(screen.contains(".jsonl\nID       "), "{screen}");
    // The scripted model reports 1,000 prompt and 20 answer tokens.
    assert_eq!(
        line(&screen, "Context"),
        "Context  4 messages: 2 user, 2 assistant, 0 tool calls, 0 results; 1.0k of 128k tokens (1%)"
    );
    assert_eq!(
        line(&screen, "Used"),
        "Used     2.0k in, 40 out, 0 cache read, 0 cache write, $0.000"
    );
    assert_eq!(
        line(&screen, "Name"),
        "Name     (none; /name NAME sets one)"
    );

    run_command(&tmux, "/name bug hunt", "Session named bug hunt");
    let screen = run_command(&tmux, "/session", "Name     bug hunt");
    assert!(screen.contains("Name     bug hunt"), "{screen}");

    let exported = tmux.cwd.join("chat.html");
    run_command(&tmux, "/export chat.html", "Exported to");
    let html = std::fs::read_to_string(&exported).unwrap();
    assert!(
        html.contains("second question")
            && html.contains("Done. Last user message: first question"),
        "{html}"
    );

    run_command(&tmux, "/copy", "Copied the last answer");
    assert_eq!(
        tmux.tmux(&["show-buffer"]),
        "Done. Last user message: second question"
    );

    let screen = run_command(&tmux, "/fork", " 2. second question");
    assert!(screen.contains(" 1. first question"), "{screen}");
    let screen = run_command(
        &tmux,
        "/fork 2",
        "Forked into a new session before message 2",
    );
    // The new session holds the first exchange; the second message waits
    // in the editor, and goes out as it is.
    assert!(
        !screen.contains("Done. Last user message: second question"),
        "{screen}"
    );
    assert!(
        screen.contains("Done. Last user message: first question"),
        "{screen}"
    );
    let requests = server.requests().len();
    tmux.key("Enter");
    tmux.wait_for("the answer in the fork", |s| {
        s.contains("Done. Last user message: second question")
    });
    assert_eq!(
        user_texts(&server.requests()[requests]),
        ["first question", "second question"]
    );
    tmux.quit();
}

/// Every file below `dir`.
fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The user messages of a request, as sent.
fn user_texts(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            m["content"]
                .as_str()
                .unwrap_or_else(|| m["content"][0]["text"].as_str().unwrap())
                .to_owned()
        })
        .collect()
}

#[test]
fn tree_goes_back_in_the_same_file_and_can_leave_a_summary_of_the_branch_left() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.ask("first question");
    tmux.ask("second question");
    let screen = run_command(
        &tmux,
        "/tree",
        "  4. assistant: Done. Last user message: second question  ← current",
    );
    assert!(screen.contains("  1. user: first question"), "{screen}");
    assert!(screen.contains("  3. user: second question"), "{screen}");

    // A user message: the conversation goes on from before it, and its
    // text waits in the editor to be changed.
    run_command(
        &tmux,
        "/tree 3",
        "Went back to before row 3; its message is in the editor",
    );
    tmux.type_text(" differently");
    let requests = server.requests().len();
    tmux.key("Enter");
    tmux.wait_for("the answer on the new branch", |s| {
        s.contains("Done. Last user message: second question differently")
    });
    assert_eq!(
        user_texts(&server.requests()[requests]),
        ["first question", "second question differently"]
    );
    let screen = run_command(
        &tmux,
        "/tree",
        "  6.    assistant: Done. Last user message: second question differently  ← current",
    );
    for row in [
        "  2. assistant: Done. Last user message: first question",
        "  3. ├─ user: second question",
        "  4. │  assistant: Done. Last user message: second question",
        "  5. └─ user: second question differently",
    ] {
        assert!(screen.contains(row), "{row}:\n{screen}");
    }

    // Back to the first branch's answer, with the branch left summarised:
    // one request to the summariser, then the model reads the summary.
    let requests = server.requests().len();
    run_command(
        &tmux,
        "/tree 4 summarize the wording",
        "Went on from row 4; the branch left is summarised for the model",
    );
    // The summary is a line in the transcript; Ctrl+O shows it whole.
    let screen = tmux.screen();
    assert!(
        screen.contains("Summary of the branch left (/tree) · "),
        "{screen}"
    );
    let asked = &server.requests()[requests];
    let request = &user_texts(asked)[0];
    assert!(
        request.contains("[User]: second question differently")
            && request.contains("a branch the user has left")
            && request.ends_with("Additional focus: the wording"),
        "{request}"
    );
    assert!(!request.contains("[User]: first question"), "{request}");
    tmux.ask("third question");
    let users = user_texts(server.requests().last().unwrap());
    assert_eq!(users.len(), 4, "{users:?}");
    assert_eq!(users[..2], ["first question", "second question"]);
    assert!(
        users[2].contains("came back to this point")
            && users[2].contains("Done. Last user message: <conversation>"),
        "{}",
        users[2]
    );
    assert_eq!(users[3], "third question");
    let screen = run_command(
        &tmux,
        "/tree",
        "  7. │  assistant: Done. Last user message: third question  ← current",
    );
    for row in [
        "  5. │  [summary of a branch left]",
        "  8. └─ user: second question differently",
    ] {
        assert!(screen.contains(row), "{row}:\n{screen}");
    }
    // The next answer's rows land in the middle of the numbering (this
    // branch is not the last); `/tree 8` still names the row listed.
    tmux.ask("fourth question");
    let screen = run_command(
        &tmux,
        "/tree 8",
        "Went back to before row 8; its message is in the editor",
    );
    assert!(
        screen.contains("second question differently") && !screen.contains("fourth question"),
        "{screen}"
    );
    tmux.quit();
    // All of it is one session file, which holds every branch.
    let files: Vec<_> = walk_files(&tmux.agent_dir.join("sessions"));
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(saved.matches("\"type\":\"branch_summary\"").count(), 1);
    assert!(saved.contains("second question differently"));
}

#[test]
fn a_command_of_yours_runs_in_the_shell_and_reaches_the_model_unless_kept_from_it() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    // Each screen is waited for whole: a capture can catch a frame half
    // drawn.
    tmux.type_text("!echo seen by the model; exit 3");
    tmux.key("Enter");
    tmux.wait_for("the command, its output and how it ended", |s| {
        s.contains("$ echo seen by the model; exit 3 · run by you")
            && s.contains("  seen by the model")
            && s.contains("  exit 3 · ")
    });
    tmux.type_text("!!echo kept apart");
    tmux.key("Enter");
    tmux.wait_for("the command kept apart", |s| {
        s.contains("$ echo kept apart · run by you, not sent to the model")
            && s.contains("  kept apart")
    });

    // A long command: its output shows while it runs, Esc cancels it and
    // its process is gone.
    tmux.type_text("!echo started; sleep 30");
    tmux.key("Enter");
    tmux.wait_for("the output while it runs", |s| {
        s.contains("  started") && s.contains("Running your command")
    });
    let running = || processes_with(&tmux.cwd, "sleep 30");
    assert!(!running().is_empty());
    tmux.key("Escape");
    tmux.wait_for("the cancel", |s| {
        s.contains("$ echo started; sleep 30 · run by you") && s.contains("aborted")
    });
    assert_eq!(running(), Vec::<String>::new());

    tmux.ask("what did I run?");
    let sent = server.requests().pop().unwrap();
    let users: Vec<String> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(
        users[0].contains("Ran `echo seen by the model; exit 3`")
            && users[0].contains("Command exited with code 3"),
        "{users:?}"
    );
    assert!(users[1].contains("(command cancelled)"), "{users:?}");
    assert!(!users.iter().any(|u| u.contains("kept apart")), "{users:?}");

    // Quitting while a command of yours runs kills it too.
    run_command(&tmux, "!echo again; sleep 31", "  again");
    let running = || processes_with(&tmux.cwd, "sleep 31");
    assert!(!running().is_empty());
    tmux.quit();
    assert_eq!(running(), Vec::<String>::new());
}

#[test]
fn commands_of_yours_look_the_same_in_a_resumed_session() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.ask("hello");
    let live = [
        "$ echo seen; exit 3 · run by you",
        "  seen",
        "$ echo kept apart · run by you, not sent to the model",
        "  kept apart",
    ];
    run_command(&tmux, "!echo seen; exit 3", "  exit 3 · ");
    run_command(&tmux, "!!echo kept apart", live[2]);
    tmux.wait_for("both commands", |s| live.iter().all(|l| s.contains(l)));
    tmux.quit();

    tmux.launch();
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    let screen = run_command(&tmux, "/resume 1", "Resumed");
    for line in live {
        assert!(screen.contains(line), "{line}:\n{screen}");
    }
    assert!(screen.contains("  exit 3"), "{screen}");
    assert!(!screen.contains("Ran `echo"), "{screen}");
    tmux.quit();
}

#[test]
fn reload_reads_the_context_files_templates_and_skills_again() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        std::fs::write(cwd.join("AGENTS.md"), "Rule one.").unwrap();
    }) else {
        return;
    };
    tmux.ask("first");
    let system = |request: &serde_json::Value| {
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(system(&server.requests()[0]).contains("Rule one."));

    std::fs::write(tmux.cwd.join("AGENTS.md"), "Rule two.").unwrap();
    let prompts = tmux.agent_dir.join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("greet.md"), "Say hello to $1.").unwrap();
    let skill = tmux.agent_dir.join("skills/lint/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: lint\ndescription: Lint it.\n---\nRun clippy.\n",
    )
    .unwrap();
    run_command(
        &tmux,
        "/reload",
        "Reloaded the system prompt (context files: 1, skills: 1) and the commands (2)",
    );
    tmux.type_text("/greet Bob");
    tmux.key("Enter");
    tmux.wait_for("the template's answer", |s| {
        s.contains("Done. Last user message: Say hello to Bob.")
    });
    let now = system(server.requests().last().unwrap());
    assert!(
        now.contains("Rule two.") && !now.contains("Rule one."),
        "{now}"
    );
    assert!(now.contains("<name>lint</name>"), "{now}");
    tmux.quit();
}

#[test]
fn resume_starts_with_the_sessions_of_the_directory_listed_by_name_or_first_prompt() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &["--resume"], |_| {}) else {
        return;
    };
    tmux.wait_for("the empty list", |s| s.contains("No saved sessions"));
    tmux.ask("remember the word PLUM");
    tmux.quit();
    tmux.launch();
    tmux.wait_for("the list", |s| {
        s.contains("Saved sessions") && s.contains(" 1. remember the word PLUM · just now")
    });
    // A session given a name is listed by it, as Pi lists them.
    run_command(&tmux, "/resume 1", "Resumed");
    run_command(&tmux, "/name plum work", "Session named plum work");
    tmux.quit();
    tmux.launch();
    tmux.wait_for("the list by name", |s| {
        s.contains("Saved sessions") && s.contains(" 1. plum work")
    });
    let screen = run_command(&tmux, "/resume 1", "Resumed");
    assert!(
        screen.contains("Done. Last user message: remember the word PLUM"),
        "{screen}"
    );
    // A search lists by title, of any age; its numbers are what N opens.
    run_command(&tmux, "/new", "New session");
    tmux.ask("an unrelated prompt");
    let found = run_command(&tmux, "/resume PLUM", "Saved sessions");
    assert!(found.contains(" 1. plum work · "), "{found}");
    assert!(!found.contains(" 2. "), "{found}");
    let none = run_command(&tmux, "/resume cherry", "No saved session");
    assert!(
        none.contains("No saved session's title holds \"cherry\""),
        "{none}"
    );
    tmux.quit();
}

#[test]
fn a_prompt_template_is_listed_in_help_and_sent_expanded() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &["--trust"], |cwd| {
        let prompts = cwd.join(".coding-agent/prompts");
        std::fs::create_dir_all(&prompts).unwrap();
        std::fs::write(
            prompts.join("explain.md"),
            "---\ndescription: Explain a file\n---\nExplain $1 briefly.\n",
        )
        .unwrap();
    }) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("/help");
    tmux.key("Enter");
    tmux.wait_for("the template in /help", |s| {
        s.lines()
            .any(|line| line.starts_with("/explain") && line.ends_with("Explain a file"))
    });
    run_command(
        &tmux,
        "/explain notes.txt",
        "Done. Last user message: Explain notes.txt briefly.",
    );
    tmux.quit();
}

#[test]
fn ctrl_p_cycles_the_models_and_comes_back_to_the_one_started_with() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    // openai's default model comes next (anthropic's too, when its key is
    // in the environment); the model started with comes round again.
    tmux.key("C-p");
    tmux.wait_for("the switch, in the footer too", |s| {
        s.contains("Switched to openai/gpt-4o")
            && s.lines().last().unwrap().ends_with("openai/gpt-4o")
    });
    // The footer shows the model the last notice switched to.
    let settled = |s: &str| {
        let switched = s.lines().rev().find_map(|l| l.strip_prefix("Switched to "));
        switched.is_some_and(|model| s.lines().last().unwrap().ends_with(model))
    };
    for _ in 0..2 {
        if tmux
            .screen()
            .lines()
            .last()
            .unwrap()
            .ends_with("openai/test-model")
        {
            break;
        }
        let switches = tmux.screen().matches("Switched to").count();
        tmux.key("C-p");
        tmux.wait_for("the next switch, in the footer too", |s| {
            s.matches("Switched to").count() > switches && settled(s)
        });
    }
    let screen = tmux.screen();
    assert!(
        screen
            .lines()
            .last()
            .unwrap()
            .ends_with("openai/test-model"),
        "{screen}"
    );
    tmux.quit();
}

/// `/resume` goes on with the model the session used last, as `-c` and
/// RPC's `switch_session` do: not with the one chosen since.
#[test]
fn resume_goes_on_with_the_model_the_session_used() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.ask("first");
    run_command(&tmux, "/new", "New session");
    run_command(&tmux, "/model openai/gpt-4o", "Switched to openai/gpt-4o");
    run_command(&tmux, "/resume", "Saved sessions");
    let resumed = run_command(&tmux, "/resume 1", "Resumed");
    let footer = resumed.lines().last().unwrap();
    assert!(footer.ends_with("openai/test-model"), "{resumed}");
    tmux.quit();
}

#[test]
fn the_editing_keys_of_a_shell_line_work_from_a_real_terminal() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.wait_for("the footer and a new session's first line", |s| {
        s.contains("openai/test-model") && s.contains("/help lists keys and commands")
    });
    // The editor's line, the last to start with `>` (tmux drops the
    // trailing blanks of a line).
    let editor_line = |s: &str| {
        s.lines()
            .rev()
            .find(|line| line.starts_with('>'))
            .map(|line| line.trim_start_matches('>').trim().to_owned())
    };
    tmux.type_text("say hello world");
    tmux.key("C-w");
    tmux.wait_for("the word deleted", |s| {
        editor_line(s).as_deref() == Some("say hello")
    });
    tmux.key("C-u");
    tmux.wait_for("the line deleted", |s| {
        editor_line(s).as_deref() == Some("")
    });
    // Both kills in a row come back as one text; Ctrl+_ (0x1f) undoes the
    // yank, then the Ctrl+U.
    tmux.key("C-y");
    tmux.wait_for("the kills yanked", |s| {
        editor_line(s).as_deref() == Some("say hello world")
    });
    tmux.key("C-_");
    tmux.key("C-_");
    tmux.wait_for("two edits undone", |s| {
        editor_line(s).as_deref() == Some("say hello")
    });
    // Alt+B arrives as ESC b.
    tmux.key("M-b");
    tmux.type_text("big ");
    tmux.key("End");
    tmux.type_text("there");
    // Ctrl+] (0x1d) then a character jumps to it.
    tmux.key("C-a");
    tmux.key("C-]");
    tmux.type_text("h");
    tmux.type_text("oh ");
    tmux.wait_for("the jump", |s| {
        editor_line(s).as_deref() == Some("say big oh hello there")
    });
    tmux.key("Enter");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: say big oh hello there")
    });
    tmux.quit();
}

#[test]
fn ctrl_z_stops_to_the_shell_and_fg_brings_the_app_back_as_it_was() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_from_shell(&server) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("half a prompt");
    tmux.key("C-z");
    // The shell's job table says so; the UI is gone from the screen.
    tmux.wait_for("the shell, the app stopped", |s| {
        s.contains("[1]+  Stopped") && !s.contains("openai/test-model")
    });
    tmux.type_text("fg");
    tmux.key("Enter");
    tmux.wait_for("the app again, the prompt kept", |s| {
        s.contains("openai/test-model") && s.contains("> half a prompt")
    });
    tmux.type_text(" sent");
    tmux.key("Enter");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: half a prompt sent")
    });
    tmux.quit();
}

#[test]
fn ctrl_g_edits_the_prompt_in_the_users_editor() {
    use std::os::unix::fs::PermissionsExt;
    let scripts = tempfile::tempdir().unwrap();
    let seen = scripts.path().join("seen.txt");
    // Keeps what it was given, then writes its own text.
    let editor = scripts.path().join("editor.sh");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\ncp \"$1\" '{}'\nprintf 'written in the editor\\n' > \"$1\"\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let failing = scripts.path().join("failing.sh");
    std::fs::write(&failing, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();

    let server = SseServer::with_calls(Vec::new());
    let env = [("VISUAL", editor.display().to_string())];
    let Some(tmux) = Tmux::start_with_env(&server, &env, &[], |_| {}) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("a first draft");
    tmux.key("C-g");
    tmux.wait_for("the edited prompt", |s| {
        s.contains("> written in the editor")
    });
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "a first draft");
    tmux.key("Enter");
    tmux.wait_for("the answer", |s| {
        s.contains("Done. Last user message: written in the editor")
    });
    tmux.quit();

    // An editor that fails leaves the prompt as it was.
    let env = [("VISUAL", failing.display().to_string())];
    let Some(tmux) = Tmux::start_with_env(&server, &env, &[], |_| {}) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("kept as typed");
    tmux.key("C-g");
    tmux.wait_for("the failure, the prompt kept", |s| {
        s.contains("exited with exit status: 3; the prompt is as it was")
            && s.contains("> kept as typed")
    });
    tmux.quit();
}

#[test]
fn new_and_quit_end_the_session_for_its_session_end_hooks() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        let settings = serde_json::json!({"hooks": {"SessionEnd": [{"hooks": [
            {"type": "command", "command": "cat >> ended.jsonl; echo >> ended.jsonl"}
        ]}]}});
        let agent_dir = cwd.parent().unwrap().join("agent");
        std::fs::write(agent_dir.join("settings.json"), settings.to_string()).unwrap();
    }) else {
        return;
    };
    tmux.ask("first");
    run_command(&tmux, "/new", "New session started");
    tmux.quit();
    let ended: Vec<serde_json::Value> = std::fs::read_to_string(tmux.cwd.join("ended.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let reasons: Vec<&str> = ended
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["clear", "prompt_input_exit"]);
    assert_ne!(ended[0]["session_id"], ended[1]["session_id"]);
}

#[test]
fn an_answer_left_unread_past_the_threshold_notifies_the_idle_prompt_hooks_once() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start_in(&server, &[], |cwd| {
        let settings = serde_json::json!({
            "idleNotificationSecs": 1,
            "hooks": {"Notification": [{"matcher": "idle_prompt", "hooks": [
                {"type": "command", "command": "cat >> idle.jsonl; echo >> idle.jsonl"}
            ]}]}
        });
        let agent_dir = cwd.parent().unwrap().join("agent");
        std::fs::write(agent_dir.join("settings.json"), settings.to_string()).unwrap();
    }) else {
        return;
    };
    let log = tmux.cwd.join("idle.jsonl");
    let notified = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let wait_for_count = |count: usize| {
        let start = Instant::now();
        while notified().len() < count {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no idle notification; screen:\n{}",
                tmux.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // Waiting for the first prompt is not waiting after an answer.
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(notified().is_empty(), "{:?}", notified());
    tmux.ask("first");
    wait_for_count(1);
    let event = &notified()[0];
    assert_eq!(
        (
            &event["hook_event_name"],
            &event["notification_type"],
            &event["message"]
        ),
        (
            &serde_json::json!("Notification"),
            &serde_json::json!("idle_prompt"),
            &serde_json::json!("coding-agent is waiting for your input")
        )
    );
    // Each answer starts a wait of its own.
    tmux.ask("second");
    wait_for_count(2);
    tmux.quit();
}

/// With `--remote`, Tab completes an `@` path from the remote host's files,
/// where the tools act: it listed this machine's. (The "remote" here is
/// this machine over SSH: its `~` is the passwd home, not the `HOME` the
/// binary is given, which holds a file only this side has.)
#[test]
fn with_remote_tab_completes_paths_from_the_remote_hosts_files() {
    let Some(sshd) = remote_support::Sshd::start() else {
        return;
    };
    let far = tempfile::tempdir().unwrap();
    std::fs::create_dir(far.path().join("far-folder")).unwrap();
    std::fs::write(far.path().join("far-folder/inside.txt"), "x").unwrap();
    let here = tempfile::tempdir().unwrap();
    std::fs::write(here.path().join("only-here-marker.txt"), "x").unwrap();
    let server = SseServer::with_calls(Vec::new());
    let (cache_var, cache) = remote_support::cache_env();
    let flags = sshd.flags(far.path());
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    let env = [
        (cache_var, cache.display().to_string()),
        ("HOME", here.path().display().to_string()),
    ];
    let Some(tmux) = Tmux::start_with_env(&server, &env, &args, |_| {}) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    tmux.type_text("read @far");
    tmux.key("Tab");
    tmux.wait_for("the remote folder", |s| s.contains("read @far-folder/"));
    tmux.key("Tab");
    tmux.wait_for("the file in it", |s| {
        s.contains("read @far-folder/inside.txt")
    });
    tmux.key("C-u");
    tmux.type_text("read @~/only-here");
    tmux.key("Tab");
    std::thread::sleep(Duration::from_millis(500));
    tmux.type_text("|");
    let screen = tmux.wait_for("the typed bar", |s| s.contains('|'));
    assert!(screen.contains("read @~/only-here|"), "{screen}");
}

/// Input typed faster than a terminal pastes (tmux `send-keys`, xdotool,
/// dictation: no bracketed paste) arrives as one burst of more than 1 KiB:
/// it all reaches the editor, and the Enter after it submits it. (The first
/// 1,024 bytes showed and the rest, Enter too, waited for the next key.)
#[test]
fn a_typed_burst_longer_than_a_kilobyte_is_submitted_whole() {
    let server = SseServer::with_calls(Vec::new());
    let Some(tmux) = Tmux::start(&server) else {
        return;
    };
    tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    let burst = format!("{}end", "y".repeat(2997));
    tmux.tmux(&["send-keys", "-l", &burst, ";", "send-keys", "Enter"]);
    // The answer (the message again) is taller than the screen: the
    // footer counts its tokens once it is in.
    tmux.wait_for("the answer", |s| s.contains("↑1.0k ↓20"));
    assert_eq!(user_texts(&server.requests()[0]), [burst]);
}
