//! Print mode (`-p`) and JSON mode (`--mode json`) of the built binary
//! against a loopback model server, in both wire formats (issue 4,
//! acceptance 1-3 and 6): a real read, edit and bash in a temp repository,
//! the requests checked for every tool result, and Ctrl+C during a slow
//! command.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::os::unix::process::ExitStatusExt as _;
use std::process::Command;

use e2e_support::*;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

const PROMPT: &str = "In notes.txt, change world to there, then run the marker command.";
const FINAL_TEXT: &str = "Done: notes.txt now says hello there.";

/// A repository with one file, and a server that scripts the model: read
/// it, edit one word, run bash, then answer.
fn repo_task(wire: Wire) -> (Sandbox, ModelServer) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("notes.txt"), "hello world\nsecond line\n").unwrap();
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("call_read", "read", json!({"path": "notes.txt"})),
            Answer::call(
                "call_edit",
                "edit",
                json!({"path": "notes.txt", "edits": [{"oldText": "world", "newText": "there"}]}),
            ),
            Answer::call(
                "call_bash",
                "bash",
                json!({"command": "echo marker-$((6*7))"}),
            ),
            Answer::text(&["Done: notes.txt", " now says hello there."]),
        ],
    );
    (sandbox, server)
}

/// The conversation the last request carries; request `i` carries the
/// first `1 + 2i` lines.
fn expected_transcript() -> Vec<String> {
    vec![
        format!("user: {PROMPT}"),
        format!(
            "assistant: call call_read read {}",
            json!({"path": "notes.txt"})
        ),
        "tool call_read: hello world\nsecond line\n".to_owned(),
        format!(
            "assistant: call call_edit edit {}",
            json!({"path": "notes.txt", "edits": [{"oldText": "world", "newText": "there"}]})
        ),
        "tool call_edit: Successfully replaced 1 block(s) in notes.txt.".to_owned(),
        format!(
            "assistant: call call_bash bash {}",
            json!({"command": "echo marker-$((6*7))"})
        ),
        "tool call_bash: marker-42\n".to_owned(),
    ]
}

/// The four requests went to the API's path with the key and model, offered
/// the seven tools, and carried the conversation so far: every tool result.
fn assert_requests(wire: Wire, server: &ModelServer) {
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let transcript = expected_transcript();
    let (auth_name, auth_value) = wire.auth_header();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", wire.path())
        );
        assert_eq!(request.header(auth_name), Some(auth_value.as_str()));
        assert_eq!(request.body["model"], MODEL);
        assert_eq!(request.body["stream"], true);
        assert_eq!(
            wire.tool_names(&request.body),
            ["read", "bash", "edit", "write", "grep", "find", "ls"]
        );
        assert_eq!(wire.transcript(&request.body), transcript[..1 + 2 * i]);
    }
}

fn print_mode_runs_the_task(wire: Wire) {
    let (sandbox, server) = repo_task(wire);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", PROMPT]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, format!("{FINAL_TEXT}\n").as_str());
    assert_eq!(
        std::fs::read_to_string(sandbox.work.join("notes.txt")).unwrap(),
        "hello there\nsecond line\n"
    );
    assert_requests(wire, &server);
    // The session was saved where `--continue` looks for it.
    let files = Sandbox::session_files(&sandbox.default_session_dir());
    assert_eq!(files.len(), 1);
    assert_eq!(
        session_roles(&session_lines(&files[0])),
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
}

#[test]
fn print_mode_reads_edits_runs_bash_and_prints_only_the_answer_openai() {
    print_mode_runs_the_task(Wire::OpenAi);
}

#[test]
fn print_mode_reads_edits_runs_bash_and_prints_only_the_answer_anthropic() {
    print_mode_runs_the_task(Wire::Anthropic);
}

/// An event as `type`, with the role of a message, the provider event of a
/// `message_update`, or the tool of a tool execution.
fn event_label(event: &Value) -> String {
    let kind = event["type"].as_str().unwrap();
    let detail = match kind {
        "message_start" | "message_end" => event["message"]["role"].as_str(),
        "message_update" => event["assistantMessageEvent"]["type"].as_str(),
        "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
            event["toolName"].as_str()
        }
        _ => None,
    };
    match detail {
        Some(detail) => format!("{kind} {detail}"),
        None => kind.to_owned(),
    }
}

/// The events of a turn whose answer is one tool call of `tool`, with
/// `updates` progress updates.
fn tool_call_turn(tool: &str, updates: usize) -> Vec<String> {
    let mut labels = vec![
        "message_start assistant".to_owned(),
        "message_update toolcall_start".to_owned(),
    ];
    // The arguments arrive in three fragments: empty, then two halves.
    labels.extend(std::iter::repeat_n(
        "message_update toolcall_delta".to_owned(),
        3,
    ));
    labels.extend([
        "message_update toolcall_end".to_owned(),
        "message_end assistant".to_owned(),
        // The permission guard's decision (allowed: the tool then starts).
        "permission_decision".to_owned(),
        format!("tool_execution_start {tool}"),
    ]);
    labels.extend(std::iter::repeat_n(
        format!("tool_execution_update {tool}"),
        updates,
    ));
    labels.extend([
        format!("tool_execution_end {tool}"),
        "message_start toolResult".to_owned(),
        "message_end toolResult".to_owned(),
        "turn_end".to_owned(),
        "turn_start".to_owned(),
    ]);
    labels
}

fn json_mode_streams_the_task(wire: Wire) {
    let (sandbox, server) = repo_task(wire);
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", PROMPT]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();

    let mut expected: Vec<String> = [
        "session",
        "agent_start",
        "turn_start",
        "message_start user",
        "message_end user",
    ]
    .map(str::to_owned)
    .to_vec();
    expected.extend(tool_call_turn("read", 0));
    expected.extend(tool_call_turn("edit", 0));
    // bash reports progress: once at the start, once for its output.
    expected.extend(tool_call_turn("bash", 2));
    expected.extend(
        [
            "message_start assistant",
            "message_update text_start",
            "message_update text_delta",
            "message_update text_delta",
            "message_update text_end",
            "message_end assistant",
            "turn_end",
            "agent_end",
        ]
        .map(str::to_owned),
    );
    let labels: Vec<String> = events.iter().map(event_label).collect();
    assert_eq!(labels, expected);

    // The session header first: Pi's version 3 in this cwd.
    let header = &events[0];
    assert_eq!(
        (&header["version"], &header["cwd"]),
        (&json!(3), &json!(sandbox.work.to_str().unwrap()))
    );
    assert_eq!(header["id"].as_str().unwrap().len(), 36, "a UUID: {header}");
    assert_eq!(
        events[3]["message"]["content"],
        json!([{"type": "text", "text": PROMPT}])
    );

    // Each tool execution: the model's arguments in, the tool's text out.
    let executions: Vec<(Value, Value, Value, Value)> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|end| {
            let start = events
                .iter()
                .find(|e| {
                    e["type"] == "tool_execution_start" && e["toolCallId"] == end["toolCallId"]
                })
                .unwrap();
            (
                end["toolCallId"].clone(),
                start["args"].clone(),
                end["result"]["content"].clone(),
                end["isError"].clone(),
            )
        })
        .collect();
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    assert_eq!(
        executions,
        [
            (
                json!("call_read"),
                json!({"path": "notes.txt"}),
                text("hello world\nsecond line\n"),
                json!(false)
            ),
            (
                json!("call_edit"),
                json!({"path": "notes.txt", "edits": [{"oldText": "world", "newText": "there"}]}),
                text("Successfully replaced 1 block(s) in notes.txt."),
                json!(false)
            ),
            (
                json!("call_bash"),
                json!({"command": "echo marker-$((6*7))"}),
                text("marker-42\n"),
                json!(false)
            ),
        ]
    );
    let edit_end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end" && e["toolName"] == "edit")
        .unwrap();
    assert_eq!(
        edit_end["result"]["details"],
        json!({"diff": "-1 hello world\n+1 hello there\n 2 second line", "firstChangedLine": 1})
    );
    let bash_updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_update")
        .map(|e| &e["partialResult"]["content"])
        .collect();
    assert_eq!(bash_updates, [&json!([]), &text("marker-42\n")]);

    // The answer streamed in its two pieces, and ended as the model's message.
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Done: notes.txt", " now says hello there."]);
    let answer = &events[events.len() - 3]["message"];
    assert_eq!(
        (
            &answer["content"],
            &answer["stopReason"],
            &answer["provider"],
            &answer["model"],
            &answer["usage"]["input"],
            &answer["usage"]["output"]
        ),
        (
            &text(FINAL_TEXT),
            &json!("stop"),
            &json!(wire.provider()),
            &json!(MODEL),
            &json!(120),
            &json!(8)
        )
    );

    // turn_end holds each turn's tool results; agent_end every message added.
    let turn_results: Vec<Vec<Value>> = events
        .iter()
        .filter(|e| e["type"] == "turn_end")
        .map(|e| {
            e["toolResults"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["toolCallId"].clone())
                .collect()
        })
        .collect();
    assert_eq!(
        turn_results,
        [
            vec![json!("call_read")],
            vec![json!("call_edit")],
            vec![json!("call_bash")],
            vec![]
        ]
    );
    let roles: Vec<&str> = events.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );

    assert_eq!(
        std::fs::read_to_string(sandbox.work.join("notes.txt")).unwrap(),
        "hello there\nsecond line\n"
    );
    assert_requests(wire, &server);
}

#[test]
fn json_mode_prints_the_header_then_every_event_in_order_openai() {
    json_mode_streams_the_task(Wire::OpenAi);
}

#[test]
fn json_mode_prints_the_header_then_every_event_in_order_anthropic() {
    json_mode_streams_the_task(Wire::Anthropic);
}

/// Sends `signal` to print mode while bash runs a slow command: the run is
/// aborted, the command killed, the session saved, and then the process
/// ends by that signal, as a shell expects of a child it signalled.
fn signal_during_a_slow_bash_call(signal: Signal) {
    let signal_name = signal.as_str().trim_start_matches("SIG");
    let wire = Wire::OpenAi;
    let marker = unique_marker(signal_name);
    let _cleanup = KillOnDrop(marker.clone());
    let sandbox = Sandbox::new();
    let slow = slow_command(&marker);
    let server = ModelServer::only(
        wire,
        vec![Answer::call("call_slow", "bash", json!({"command": slow}))],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(ALLOW_SLOW);
    command.args(["-p", "Run the slow command."]);
    let running = Running::spawn(command);
    wait_until("the slow command to run", || slow_command_running(&marker));

    running.signal(signal_name);
    let (status, stdout, stderr) = running.finish();
    // Named for the signal: no one pressed Ctrl-C when a supervisor sent TERM.
    let notice = match signal {
        Signal::SIGINT => "interrupted, aborting the run (Ctrl-C again to exit now)",
        Signal::SIGTERM => "terminated (SIGTERM), aborting the run (a second signal exits now)",
        _ => "hung up (SIGHUP), aborting the run (a second signal exits now)",
    };
    assert_eq!(
        (status.signal(), stdout.as_str(), stderr.as_str()),
        (
            Some(signal as i32),
            "",
            format!("coding-agent: {notice}\nRequest was aborted\n").as_str()
        )
    );
    wait_until("the slow command to be gone", || {
        processes_with(&marker).is_empty()
    });
    assert_eq!(server.requests().len(), 1);

    // Saved: the call, its aborted result, and the aborted answer.
    let files = Sandbox::session_files(&sandbox.default_session_dir());
    assert_eq!(files.len(), 1);
    let lines = session_lines(&files[0]);
    assert_eq!(
        session_roles(&lines),
        ["user", "assistant", "toolResult", "assistant"]
    );
    let result = &lines
        .iter()
        .find(|line| line["message"]["role"] == "toolResult")
        .unwrap()["message"];
    assert_eq!(
        (
            &result["toolCallId"],
            &result["content"],
            &result["isError"]
        ),
        (
            &json!("call_slow"),
            &json!([{"type": "text", "text": "Command aborted"}]),
            &json!(true)
        )
    );
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "aborted");
}

#[test]
fn ctrl_c_during_a_slow_bash_call_ends_by_sigint_leaves_no_process_and_saves_the_session() {
    signal_during_a_slow_bash_call(Signal::SIGINT);
}

#[test]
fn sigterm_during_a_slow_bash_call_also_aborts_and_leaves_no_process() {
    signal_during_a_slow_bash_call(Signal::SIGTERM);
}

#[test]
fn sighup_during_a_slow_bash_call_also_aborts_and_leaves_no_process() {
    signal_during_a_slow_bash_call(Signal::SIGHUP);
}

/// Ctrl-C as a terminal sends it: to the whole foreground process group,
/// here a shell loop running print mode once per prompt. The binary saves
/// the session, then ends by SIGINT, so the shell stops the loop: it went on
/// to the next prompt when the binary exited with status 130 instead.
#[test]
fn ctrl_c_in_a_shell_loop_saves_the_session_and_stops_the_loop() {
    use std::os::unix::process::CommandExt as _;

    let wire = Wire::Anthropic;
    let sandbox = Sandbox::new();
    // The first prompt waits for Ctrl-C; a second one would be answered.
    let server = ModelServer::start(move |request| match request.index {
        0 => Reply::Stall,
        _ => Reply::Events(wire.events(&Answer::text(&["Second answer."]))),
    });
    let agent = sandbox.command(wire, &server);
    let mut shell = Command::new("bash");
    shell
        .args([
            "-c",
            r#"for prompt in first second; do "$@" "$prompt"; echo "status $?"; done"#,
            "loop",
        ])
        .arg(agent.get_program())
        .args(agent.get_args())
        .args(["-p"])
        .env_clear()
        .envs(
            agent
                .get_envs()
                .filter_map(|(name, value)| Some((name, value?))),
        )
        .current_dir(agent.get_current_dir().unwrap())
        .process_group(0);
    let running = Running::spawn(shell);
    server.wait_for_requests(1, PATIENCE);

    let group = format!("-{}", running.pid());
    let kill = Command::new("kill").args(["-INT", "--", &group]).status();
    assert!(kill.unwrap().success());
    let (status, stdout, stderr) = running.finish();
    assert_eq!(
        (status.signal(), stdout.as_str(), stderr.as_str()),
        (
            Some(Signal::SIGINT as i32),
            "",
            "coding-agent: interrupted, aborting the run (Ctrl-C again to exit now)\nRequest was aborted\n"
        )
    );
    assert_eq!(server.requests().len(), 1, "the second prompt was sent");
    let files = Sandbox::session_files(&sandbox.default_session_dir());
    assert_eq!(files.len(), 1);
    let lines = session_lines(&files[0]);
    assert_eq!(session_roles(&lines), ["user", "assistant"]);
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "aborted");
}

/// `--mode json | head`: a reader that closes stdout while bash runs ends the
/// run as Ctrl-C does (the command killed, the session saved) with the status
/// a shell gives a process killed by SIGPIPE, and without an error message.
#[test]
fn a_reader_closing_stdout_aborts_the_run_and_saves_it() {
    let wire = Wire::OpenAi;
    let marker = unique_marker("epipe");
    let _cleanup = KillOnDrop(marker.clone());
    let sandbox = Sandbox::new();
    let ticking = format!("exec -a tick-{marker} bash -c 'while :; do echo tick; sleep 0.2; done'");
    let server = ModelServer::only(
        wire,
        vec![Answer::call(
            "call_tick",
            "bash",
            json!({"command": ticking}),
        )],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["--allow", "bash", "--mode", "json", "Run it."]);
    let mut running = Running::spawn(command);
    running.close_stdout_after("tool_execution_update");

    let (status, stdout, stderr) = running.finish();
    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (Some(141), "", "")
    );
    wait_until("the command to be gone", || {
        processes_with(&marker).is_empty()
    });
    assert_eq!(server.requests().len(), 1);
    let files = Sandbox::session_files(&sandbox.default_session_dir());
    let lines = session_lines(&files[0]);
    assert_eq!(
        session_roles(&lines),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "aborted");
}

/// A server that refuses the first request (429, retry at once), then answers.
fn rate_limited_once() -> (Sandbox, ModelServer) {
    let server = ModelServer::start(|request| match request.index {
        0 => Reply::RateLimited,
        _ => Reply::Events(Wire::OpenAi.events(&Answer::text(&["Hello."]))),
    });
    (Sandbox::new(), server)
}

#[test]
fn a_retried_request_is_logged_on_stderr_and_the_answer_still_printed() {
    let (sandbox, server) = rate_limited_once();
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["--no-session", "-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stdout.as_str()), (Some(0), "Hello.\n"));
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        stderr,
        "Warning: Retrying the request (1/2) in 0s: 429 rate_limit_error: Rate limit reached\n"
    );
}

#[test]
fn coding_agent_log_filters_what_stderr_shows() {
    let (sandbox, server) = rate_limited_once();
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command
        .env("CODING_AGENT_LOG", "error")
        .args(["--no-session", "-p", "hi"]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Hello.\n");
    assert_eq!(server.requests().len(), 2, "the request was retried");
}

/// A Pi setting this agent does not read is named at start, not left to do
/// nothing silently (docs/DEVIATIONS.md M16).
#[test]
fn a_pi_setting_this_agent_does_not_read_is_named() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(
        &json!({"sessionDir": "/elsewhere", "images": {"autoResize": false},
            "retry": {"provider": {"timeoutMs": 5000}}}),
    );
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stdout.as_str()), (Some(0), "ok\n"));
    let file = sandbox.agent_dir.join("settings.json");
    assert_eq!(
        stderr,
        format!(
            "Warning: {0}: `sessionDir` is a Pi setting this agent does not read (docs/DEVIATIONS.md M16)\nWarning: {0}: `images.autoResize` is a Pi setting this agent does not read (docs/DEVIATIONS.md M16)\nWarning: {0}: `retry.provider.timeoutMs` is a Pi setting this agent does not read (docs/DEVIATIONS.md M16)\n",
            file.display()
        )
    );
}

/// An answer whose text the output limit cut short is printed, and said to
/// be cut on stderr: it read as a whole answer.
#[test]
fn an_answer_cut_at_the_output_limit_is_printed_and_said_to_be_cut() {
    let server = ModelServer::start(move |_| {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": "The first half"}, "finish_reason": "length"}]});
        Reply::Events(vec![
            format!("data: {chunk}\n\n"),
            "data: [DONE]\n\n".to_owned(),
        ])
    });
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["--no-session", "-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (
            Some(0),
            "The first half\n",
            "The answer was cut off at the output limit (maxTokens)\n"
        )
    );
}

/// An answer that reached the output limit while thinking has no text:
/// print mode says so on stderr instead of printing nothing and exiting 0
/// as if the model had answered.
#[test]
fn an_answer_cut_off_while_thinking_is_said_not_printed_as_nothing() {
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let server = ModelServer::start(move |_| {
        Reply::Events(vec![
            chunk(
                json!({"role": "assistant", "content": "<think>first, the"}),
                Value::Null,
            ),
            chunk(json!({"content": " case where"}), Value::Null),
            chunk(json!({}), json!("length")),
            "data: [DONE]\n\n".to_owned(),
        ])
    });
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["--no-session", "-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stdout.as_str()), (Some(0), ""));
    assert_eq!(
        stderr,
        "The answer reached the output limit before any text (it was all thinking); raise maxTokens or lower the thinking level\n"
    );
}

/// A server that refuses the first request (503) and answers the retry.
fn busy_then_answering(wire: Wire) -> ModelServer {
    ModelServer::start(move |request| match request.index {
        0 => Reply::Status(
            503,
            r#"{"error":{"type":"overloaded_error","message":"busy"}}"#.to_owned(),
        ),
        _ => Reply::Events(wire.events(&Answer::text(&["Answered."]))),
    })
}

/// Print mode with an unknown tool (warned about at start) against
/// [`busy_then_answering`] (a retry, warned about mid-run), its retries fast.
fn warned_run(sandbox: &Sandbox, wire: Wire, server: &ModelServer) -> Command {
    sandbox.write_global_settings(
        &json!({"retry": {"baseDelayMs": 10, "provider": {"maxRetries": 0}}}),
    );
    let mut command = sandbox.command(wire, server);
    command.args(["-t", "read,bogus", "-p", "hello"]);
    command
}

/// A stderr that cannot be written (`2>/dev/full`, or a reader gone with
/// `2>&1 | head -1`) loses the warnings, not the run: a warning's failed
/// write panicked (exit status 101) and the session lacked the answer.
#[test]
fn warnings_that_cannot_be_written_do_not_end_the_run() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = busy_then_answering(wire);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = warned_run(&sandbox, wire, &server)
        .stdin(std::process::Stdio::null())
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap().as_str()
        ),
        (Some(0), "Answered.\n")
    );
    assert_eq!(server.requests().len(), 2);
    let files = Sandbox::session_files(&sandbox.default_session_dir());
    let lines = session_lines(&files[0]);
    assert_eq!(
        lines.last().unwrap()["message"]["content"],
        json!([{"type": "text", "text": "Answered."}])
    );
}

/// The warnings of a run (an unknown tool, a retried request) are lines of
/// the warnings layer: headed `Warning:` by default, and filtered by
/// `CODING_AGENT_LOG` as its help says (`error` shows none of them).
#[test]
fn the_warnings_of_a_run_follow_coding_agent_log() {
    let wire = Wire::OpenAi;
    for (filter, expected) in [
        (
            None,
            "Warning: Unknown tool \"bogus\". Valid tools: read, bash, edit, write, grep, find, ls\n\
             Warning: Retrying (1/3) in 10ms: 503 overloaded_error: busy\n\
             Warning: Retry 1 succeeded\n",
        ),
        (Some("error"), ""),
    ] {
        let sandbox = Sandbox::new();
        let server = busy_then_answering(wire);
        let mut command = warned_run(&sandbox, wire, &server);
        if let Some(filter) = filter {
            command.env("CODING_AGENT_LOG", filter);
        }
        let (status, stdout, stderr) = Running::spawn(command).finish();
        assert_eq!(
            (status.code(), stdout.as_str(), stderr.as_str()),
            (Some(0), "Answered.\n", expected),
            "CODING_AGENT_LOG={filter:?}"
        );
    }
}
