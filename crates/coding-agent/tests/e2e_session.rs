//! Sessions of the built binary across a crash (issue 4, acceptance 5): a
//! run killed with SIGKILL, then `--continue` against a model that answers.
//! The saved file stays valid JSONL and what is sent on resume is a valid
//! conversation: every tool call has a result, orphans closed with
//! `No result provided`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::io::Write;
use std::path::{Path, PathBuf};

use e2e_support::*;
use serde_json::{Value, json};

/// The only session file of `dir`, once there is one holding a message
/// of `role`.
fn wait_for_saved(dir: &Path, role: &str) -> PathBuf {
    let mut found = None;
    wait_until(&format!("a {role} message in the session file"), || {
        found = Sandbox::session_files(dir).into_iter().find(|file| {
            session_roles(&session_lines(file))
                .iter()
                .any(|saved| saved == role)
        });
        found.is_some()
    });
    found.unwrap()
}

/// Every `assistant: call ID ...` line is followed by its `tool ID: ...`
/// line before the next user or assistant text.
fn assert_every_call_answered(transcript: &[String]) {
    let mut open: Vec<&str> = Vec::new();
    for line in transcript {
        if let Some(rest) = line.strip_prefix("assistant: call ") {
            open.push(rest.split(' ').next().unwrap());
        } else if let Some(rest) = line.strip_prefix("tool ") {
            let id = rest.split(':').next().unwrap();
            open.retain(|pending| *pending != id);
        } else {
            assert_eq!(open, [] as [&str; 0], "unanswered before {line:?}");
        }
    }
    assert_eq!(open, [] as [&str; 0], "unanswered at the end");
}

/// Each entry's `parentId` is the entry before it (the first, Pi's
/// `thinking_level_change`, has none; the permission guard's `custom`
/// decision entries sit between the messages).
fn assert_chained(lines: &[Value]) {
    let entries: Vec<&Value> = lines.iter().filter(|l| l["type"] != "session").collect();
    assert_eq!(entries[0]["type"], "thinking_level_change");
    assert_eq!(entries[0]["parentId"], Value::Null);
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "{}", pair[1]);
    }
}

#[test]
fn killed_while_the_model_stalls_then_continue_resumes_with_the_saved_tool_result() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("notes.txt"), "alpha\n").unwrap();
    let sessions = sandbox.root.join("sessions");
    let server = ModelServer::start(move |request| match request.index {
        0 => Reply::Events(wire.events(&Answer::call(
            "call_read",
            "read",
            json!({"path": "notes.txt"}),
        ))),
        1 => Reply::Stall,
        2 => Reply::Events(wire.events(&Answer::text(&["Resumed", " and done."]))),
        n => Reply::Events(wire.events(&Answer::text(&[&format!("unexpected request {n}")]))),
    });

    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "Read notes.txt."]);
    command.arg("--session-dir").arg(&sessions);
    let mut running = Running::spawn(command);
    let file = wait_for_saved(&sessions, "toolResult");
    server.wait_for_requests(2, PATIENCE); // the second one stalls
    running.kill_9();

    let lines = session_lines(&file);
    assert!(lines.iter().all(Value::is_object), "valid JSONL: {lines:?}");
    assert_eq!(session_roles(&lines), ["user", "assistant", "toolResult"]);
    // A kill in the middle of a write leaves a torn last line; resuming
    // must cope with one.
    let torn = r#"{"type":"message","id":"deadbeef","parentId":"#;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(torn.as_bytes())
        .unwrap();

    let mut command = sandbox.command(wire, &server);
    command.args(["--continue", "-p", "Go on."]);
    command.arg("--session-dir").arg(&sessions);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "Resumed and done.\n")
    );
    assert_eq!(
        stderr,
        format!(
            "Warning: {}: line 7 is not a session entry and is left out (edited, or cut off mid-write); what it held is missing from the conversation\n",
            file.display()
        ),
        "the torn line is named"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let transcript = wire.transcript(&requests[2].body);
    assert_eq!(
        transcript,
        [
            "user: Read notes.txt.".to_owned(),
            format!(
                "assistant: call call_read read {}",
                json!({"path": "notes.txt"})
            ),
            "tool call_read: alpha\n".to_owned(),
            "user: Go on.".to_owned(),
        ]
    );
    assert_every_call_answered(&transcript);

    // The same file, continued: the torn line left alone on its own line,
    // every other line JSON, the new messages chained to the saved ones.
    assert_eq!(
        Sandbox::session_files(&sessions),
        std::slice::from_ref(&file)
    );
    let lines = session_lines(&file);
    // header, thinking_level_change, user, assistant, the read's permission
    // decision, tool result, torn
    assert_eq!(lines[6], Value::String(torn.to_owned()));
    let valid: Vec<Value> = lines.into_iter().filter(Value::is_object).collect();
    assert_eq!(valid.len(), 8);
    assert_eq!(valid[0]["type"], "session");
    assert_eq!(
        session_roles(&valid),
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    assert_chained(&valid);
}

#[test]
fn killed_during_a_tool_call_then_continue_closes_the_orphaned_call() {
    let wire = Wire::Anthropic;
    let marker = unique_marker("orphan");
    let _cleanup = KillOnDrop(marker.clone());
    let sandbox = Sandbox::new();
    let sessions = sandbox.root.join("sessions");
    let slow = slow_command(&marker);
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("call_slow", "bash", json!({"command": slow})),
            Answer::text(&["The command was cut short."]),
        ],
    );

    let mut command = sandbox.command(wire, &server);
    command.args(ALLOW_SLOW);
    command.args(["-p", "Run the slow command."]);
    command.arg("--session-dir").arg(&sessions);
    let mut running = Running::spawn(command);
    let file = wait_for_saved(&sessions, "assistant");
    wait_until("the slow command to run", || slow_command_running(&marker));
    running.kill_9();
    // SIGKILL gives the agent no chance to stop its command: the test does.
    drop(KillOnDrop(marker.clone()));

    let lines = session_lines(&file);
    assert!(lines.iter().all(Value::is_object), "valid JSONL: {lines:?}");
    assert_eq!(session_roles(&lines), ["user", "assistant"]);

    let mut command = sandbox.command(wire, &server);
    command.args(["--continue", "-p", "What happened?"]);
    command.arg("--session-dir").arg(&sessions);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "The command was cut short.\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let transcript = wire.transcript(&requests[1].body);
    assert_eq!(
        transcript,
        [
            "user: Run the slow command.".to_owned(),
            format!(
                "assistant: call call_slow bash {}",
                json!({"command": slow_command(&marker)})
            ),
            "tool call_slow: No result provided".to_owned(),
            "user: What happened?".to_owned(),
        ]
    );
    assert_every_call_answered(&transcript);
    // Anthropic's body says the synthetic result is an error.
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|block| block["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["is_error"], true);

    // The file holds what happened; the synthetic result is only sent.
    let lines = session_lines(&file);
    assert!(lines.iter().all(Value::is_object), "valid JSONL: {lines:?}");
    assert_eq!(
        session_roles(&lines),
        ["user", "assistant", "user", "assistant"]
    );
    assert_chained(&lines);
}

/// The id in a session file's name (`<timestamp>_<id>.jsonl`).
fn file_id(path: &Path) -> String {
    let stem = path.file_stem().unwrap().to_str().unwrap();
    stem.rsplit_once('_').unwrap().1.to_owned()
}

#[test]
fn session_and_fork_take_an_id_prefix_and_a_fork_leaves_the_original_alone() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let sessions = sandbox.default_session_dir();
    let server = ModelServer::start(move |request| {
        let answer = format!("answer {}", request.index + 1);
        Reply::Events(wire.events(&Answer::text(&[&answer])))
    });
    let run = |args: &[&str]| {
        let mut command = sandbox.command(wire, &server);
        command.args(args);
        Running::spawn(command).finish()
    };
    let (status, stdout, _) = run(&["-p", "first"]);
    assert_eq!((status.code(), stdout.as_str()), (Some(0), "answer 1\n"));
    let original = Sandbox::session_files(&sessions).remove(0);
    let id = file_id(&original);

    // `--session` with the first 8 characters of the id goes on in that file.
    let (status, _, stderr) = run(&["--session", &id[..8], "-p", "second"]);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(
        Sandbox::session_files(&sessions),
        std::slice::from_ref(&original)
    );
    assert_eq!(
        wire.transcript(&server.requests()[1].body),
        ["user: first", "assistant: answer 1", "user: second"]
    );
    let before_fork = std::fs::read_to_string(&original).unwrap();

    // `--fork` goes on in a new file with the history; the original stays.
    let (status, _, stderr) = run(&["--fork", &id, "-p", "third"]);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(
        wire.transcript(&server.requests()[2].body),
        [
            "user: first",
            "assistant: answer 1",
            "user: second",
            "assistant: answer 2",
            "user: third"
        ]
    );
    assert_eq!(std::fs::read_to_string(&original).unwrap(), before_fork);
    let files = Sandbox::session_files(&sessions);
    assert_eq!(files.len(), 2);
    let fork = files.iter().find(|file| **file != original).unwrap();
    let lines = session_lines(fork);
    assert_eq!(lines[0]["parentSession"], original.display().to_string());
    assert_eq!(
        session_roles(&lines),
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );

    // An id that names no session, or more than one, is a usage error.
    let (status, _, stderr) = run(&["--session", "0123abcd", "-p", "x"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "coding-agent: no session with the id 0123abcd in {}\n",
            sessions.display()
        )
    );
    assert_eq!(server.requests().len(), 3, "no request was sent");
    // A name that is no file and no path is looked up as an id too, as in
    // Pi (a typo started an empty session saved as `./zzzz`).
    let (status, _, stderr) = run(&["--session", "zzzz", "-p", "x"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "coding-agent: no session with the id zzzz in {}\n",
            sessions.display()
        )
    );
    assert!(!sandbox.work.join("zzzz").exists());
    assert_eq!(server.requests().len(), 3, "no request was sent");
    let (status, _, stderr) = run(&["-r", "-p", "x"]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--resume lists the sessions in the interactive mode"),
        "{stderr}"
    );
}

/// Sets the soft file-size limit of process `pid` (`prlimit`, util-linux).
fn limit_file_size(pid: u32, soft: &str) {
    let status = std::process::Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--fsize={soft}:")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success());
}

/// A first write the disk takes only part of (here a file-size limit; a
/// full disk does the same), then a write that succeeds: the file holds
/// each entry once. The retry used to append the header and every entry
/// again after the cut, so the reopened session began twice.
#[test]
fn a_first_write_cut_short_is_replaced_whole_not_appended_again() {
    let sandbox = Sandbox::new();
    let wire = Wire::OpenAi;
    let pid = std::sync::Arc::new(std::sync::Mutex::new(None::<u32>));
    let server = {
        let pid = pid.clone();
        ModelServer::start(move |request| {
            let pid = pid.lock().unwrap().expect("the binary's pid");
            // The first answer's save meets a 1 KiB limit; the second's none.
            limit_file_size(
                pid,
                if request.index == 0 {
                    "1024"
                } else {
                    "unlimited"
                },
            );
            let text = if request.index == 0 { "one" } else { "two" };
            Reply::Events(wire.events(&Answer::text(&[text])))
        })
    };
    let first_prompt = format!("first {}", "x".repeat(3000));
    let direct = sandbox.command(wire, &server);
    // Through a shell that ignores SIGXFSZ, which would otherwise kill the
    // binary at the limit (an ignored signal stays ignored across exec).
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg("trap '' XFSZ; exec \"$0\" \"$@\"")
        .arg(direct.get_program())
        .args(direct.get_args())
        .args(["-p", &first_prompt, "second"])
        .current_dir(direct.get_current_dir().unwrap())
        .env_clear()
        .envs(direct.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let running = Running::spawn(command);
    *pid.lock().unwrap() = Some(running.pid());
    let (status, stdout, stderr) = running.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "two\n");
    assert!(
        stderr.contains("File too large"),
        "the limit was met: {stderr}"
    );

    let files = Sandbox::session_files(&sandbox.default_session_dir());
    assert_eq!(files.len(), 1);
    let lines = session_lines(&files[0]);
    let headers = lines
        .iter()
        .filter(|line| line["type"] == "session")
        .count();
    assert_eq!(headers, 1, "{lines:?}");
    assert_chained(&lines);
    let said: Vec<String> = lines
        .iter()
        .filter(|line| line["type"] == "message")
        .map(|line| {
            let content = &line["message"]["content"];
            content[0]["text"]
                .as_str()
                .or(content.as_str())
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(said, [first_prompt.as_str(), "one", "second", "two"]);
}

/// A continued session goes on with the model it used last, as Pi's does
/// (it went to the default, a local session quietly moving to a paid
/// API); one whose provider is gone from the settings is said, and the
/// default goes on.
#[test]
fn a_continued_session_goes_on_with_its_model() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let one = ModelServer::answering(wire, vec![Answer::text(&["From one."])]);
    let two = ModelServer::answering(wire, vec![Answer::text(&["From two."])]);
    let provider = |server: &ModelServer, model: &str| provider_entry(wire, server, model);
    let settings = |with_two: bool| {
        let mut providers = json!({"one": provider(&one, "m1")});
        if with_two {
            providers["two"] = provider(&two, "m2");
        }
        json!({"defaultProvider": "one", "providers": providers})
    };
    sandbox.write_global_settings(&settings(true));
    let run = |args: &[&str]| {
        let mut command = sandbox.bare_command();
        command.args(args);
        Running::spawn(command).finish()
    };
    let (_, stdout, stderr) = run(&["--provider", "two", "-p", "first"]);
    assert_eq!(stdout, "From two.\n", "{stderr}");
    let (_, stdout, stderr) = run(&["-c", "-p", "second"]);
    assert_eq!(stdout, "From two.\n", "{stderr}");
    let sent = two.requests().last().unwrap().body.clone();
    assert_eq!(sent["model"], "m2");
    assert!(one.requests().is_empty());
    // `--api-key` is the default provider's key: the session's own provider
    // goes on with its own.
    let (_, stdout, stderr) = run(&["-c", "--api-key", "sk-for-one", "-p", "again"]);
    assert_eq!(stdout, "From two.\n", "{stderr}");
    let sent = two.requests().last().unwrap().clone();
    assert_eq!(sent.header("authorization"), Some("Bearer k"));

    sandbox.write_global_settings(&settings(false));
    let (status, stdout, stderr) = run(&["-c", "-p", "third"]);
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "From one.\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "the session last used two/m2, which cannot be used now (unknown provider \"two\""
        ),
        "{stderr}"
    );
    assert!(stderr.contains("going on with one/m1"), "{stderr}");
}

/// RPC `switch_session` goes on with the model the session used last, as
/// Pi's does (it kept the model in use), and sessions started after it are
/// still saved in the directory's session folder, not beside the file
/// switched to.
#[test]
fn switching_to_a_session_brings_back_its_model_and_keeps_the_session_folder() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let one = ModelServer::answering(wire, vec![Answer::text(&["From one."])]);
    let two = ModelServer::answering(wire, vec![Answer::text(&["From two."])]);
    let provider = |server: &ModelServer, model: &str| provider_entry(wire, server, model);
    sandbox.write_global_settings(&json!({"defaultProvider": "one", "providers": {
        "one": provider(&one, "m1"), "two": provider(&two, "m2"),
    }}));
    let mut command = sandbox.bare_command();
    command.args(["--provider", "two", "-p", "first"]);
    let (_, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(stdout, "From two.\n", "{stderr}");
    let sessions = sandbox.default_session_dir();
    let elsewhere = sandbox.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let moved = elsewhere.join("kept.jsonl");
    std::fs::rename(&Sandbox::session_files(&sessions)[0], &moved).unwrap();

    let mut command = sandbox.bare_command();
    command
        .args(["--mode", "rpc"])
        .stdin(std::process::Stdio::piped());
    let mut running = Running::spawn_piped(command);
    let (stdin, lines) = (running.take_stdin(), running.stdout_lines());
    let mut rpc = Rpc {
        running,
        stdin,
        lines,
    };
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["model"]["provider"], "one", "{state}");
    let before = std::fs::read(&moved).unwrap();
    let (_, switched) = rpc.ask(json!({"id": "w", "type": "switch_session", "sessionPath": moved}));
    assert_eq!(switched["success"], true, "{switched}");
    // Going back to its model writes nothing into a file only opened.
    assert_eq!(std::fs::read(&moved).unwrap(), before);
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(
        (
            &state["data"]["model"]["provider"],
            &state["data"]["model"]["id"]
        ),
        (&json!("two"), &json!("m2")),
        "{state}"
    );
    rpc.prompt("second");
    assert_eq!(two.requests().len(), 2);
    assert!(one.requests().is_empty());

    let (_, new) = rpc.ask(json!({"id": "n", "type": "new_session"}));
    assert_eq!(new["success"], true, "{new}");
    rpc.prompt("third");
    rpc.finish();
    assert_eq!(
        Sandbox::session_files(&sessions).len(),
        1,
        "the new session"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1);
}

/// A provider of settings.json serving `model` from `server`.
fn provider_entry(wire: Wire, server: &ModelServer, model: &str) -> Value {
    json!({"baseUrl": wire.base_url(server.addr()), "apiKey": "k", "defaultModel": model, "contextWindow": 100000})
}

/// A session file edited by hand: a line that no longer parses was left
/// out without a word (and with it, through the broken chain, what came
/// before it), and a line appended without an id made the next entry a new
/// root, detaching the whole conversation. The unread line is named on
/// stderr, and the conversation goes on from the last entry with an id.
#[test]
fn a_hand_edited_session_file_names_its_unread_lines_and_keeps_its_conversation() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "first"]);
    Running::spawn(command).finish_quietly();
    let file = Sandbox::session_files(&sandbox.default_session_dir())
        .pop()
        .unwrap();
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"type\":\"note\"}\nthis line was typed by hand\n");
    std::fs::write(&file, text).unwrap();

    let mut command = sandbox.command(wire, &server);
    command.args(["--session", file.to_str().unwrap(), "-p", "second"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    assert!(
        stderr.contains(&format!(
            "{}: line {} is not a session entry and is left out",
            file.display(),
            lines - 2
        )),
        "{stderr}"
    );
    assert_eq!(
        wire.transcript(&server.requests()[1].body),
        ["user: first", "assistant: ok", "user: second"]
    );
}

/// Two agents on one session file (an RPC client's and a `--session` run):
/// each goes on in its own branch, and resumed, the file goes on from
/// whichever wrote last, so the other's turns were out of the conversation
/// without a word. The one that finds the file grown says so.
#[test]
fn a_session_file_another_process_writes_too_is_said_once() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |_| Reply::Events(wire.events(&Answer::text(&["ok"]))));
    let file = sandbox.root.join("shared.jsonl");
    let file_arg = file.to_str().unwrap();
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--session", file_arg]);
    rpc.prompt("from the client");
    let mut other = sandbox.command(wire, &server);
    other.args(["--session", file_arg, "-p", "from the other"]);
    let (status, _, stderr) = Running::spawn(other).finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
    rpc.prompt("the client again");
    rpc.prompt("and again");
    drop(rpc.stdin);
    let (status, _, stderr) = rpc.running.finish();
    assert!(status.success());
    assert_eq!(
        stderr,
        format!(
            "Warning: {}: another process is writing this session file too; each goes on in a branch of its own, and resumed, the file goes on from the entry written last (/tree shows the other branch)\n",
            file.display()
        )
    );
}

/// A session file cut short by another program while an RPC session runs
/// (truncated to half) was taken for one another process writes too: the
/// warning said so, the next turn went after the cut, and the turns the
/// cut lost were never written again, though the session held them.
#[test]
fn a_session_file_cut_short_meanwhile_is_said_and_written_whole_again() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |_| Reply::Events(wire.events(&Answer::text(&["ok"]))));
    let file = sandbox.root.join("cut.jsonl");
    let file_arg = file.to_str().unwrap();
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--session", file_arg]);
    for message in ["one", "two", "three"] {
        rpc.prompt(message);
    }
    let written = std::fs::read(&file).unwrap();
    std::fs::write(&file, &written[..written.len() / 2]).unwrap();
    rpc.prompt("four");
    drop(rpc.stdin);
    let (status, _, stderr) = rpc.running.finish();
    assert!(status.success());
    assert_eq!(
        stderr,
        format!(
            "Warning: {}: the session file was cut short by another program (emptied or truncated); it is written whole again from the session this process holds\n",
            file.display()
        )
    );

    let mut command = sandbox.command(wire, &server);
    command.args(["--session", file_arg, "-p", "five"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
    let requests = server.requests();
    assert_eq!(
        wire.transcript(&requests.last().unwrap().body),
        [
            "user: one",
            "assistant: ok",
            "user: two",
            "assistant: ok",
            "user: three",
            "assistant: ok",
            "user: four",
            "assistant: ok",
            "user: five"
        ]
    );
}
