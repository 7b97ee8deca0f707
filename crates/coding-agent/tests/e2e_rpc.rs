//! RPC mode (`--mode rpc`) of the built binary against a loopback model
//! server (issue 4, acceptance 4): a streamed answer, `abort` during a slow
//! bash call (the run ends at once and no process is left), the conversation
//! from `get_messages`, and an unknown command. A signal (SIGTERM during a
//! bash tool call, SIGINT during a user `bash` command) ends the mode with
//! status 130 once the work is aborted, leaving no process behind. A
//! command refused leaves the running prompt alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::sync::mpsc::Receiver;

use e2e_support::*;
use serde_json::{Value, json};

/// Reads lines up to and including the response to the command `id`;
/// returns the events before it and the response.
fn until_response(lines: &Receiver<String>, id: &str) -> (Vec<Value>, Value) {
    let mut events = Vec::new();
    loop {
        let line = next_json(lines);
        if line["type"] == "response" && line["id"] == id {
            return (events, line);
        }
        events.push(line);
    }
}

/// Reads events up to and including `agent_end`.
fn until_agent_end(lines: &Receiver<String>) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = next_json(lines);
        let end = event["type"] == "agent_end";
        events.push(event);
        if end {
            return events;
        }
    }
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn rpc_streams_an_answer_aborts_a_slow_bash_call_and_reports_the_conversation() {
    let wire = Wire::OpenAi;
    let marker = unique_marker("rpcabort");
    let _cleanup = KillOnDrop(marker.clone());
    let sandbox = Sandbox::new();
    let slow = slow_command(&marker);
    let server = ModelServer::only(
        wire,
        vec![
            Answer::text(&["Hello", " from", " RPC."]),
            Answer::call("call_slow", "bash", json!({"command": slow})),
        ],
    );
    let Rpc {
        running,
        mut stdin,
        lines,
    } = Rpc::start_with(&sandbox, wire, &server, &ALLOW_SLOW);

    // A prompt is answered at once, then its events stream to agent_end.
    send(
        &mut stdin,
        &json!({"id": "p1", "type": "prompt", "message": "Say hello."}),
    );
    assert_eq!(
        next_json(&lines),
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true})
    );
    let events = until_agent_end(&lines);
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hello", " from", " RPC."]);
    assert_eq!(events[0]["type"], "agent_start");
    let last_answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "message_end")
        .unwrap();
    assert_eq!(
        last_answer["message"]["content"],
        json!([{"type": "text", "text": "Hello from RPC."}])
    );

    // A prompt whose answer runs a slow command; abort it while it runs.
    send(
        &mut stdin,
        &json!({"id": "p2", "type": "prompt", "message": "Run the slow command."}),
    );
    assert_eq!(
        next_json(&lines),
        json!({"id": "p2", "type": "response", "command": "prompt", "success": true})
    );
    wait_until("the slow command to run", || slow_command_running(&marker));
    send(&mut stdin, &json!({"id": "a1", "type": "abort"}));
    // The run's last events come before the abort's response, which comes
    // without waiting for the sleep.
    let (events, response) = until_response(&lines, "a1");
    assert_eq!(
        response,
        json!({"id": "a1", "type": "response", "command": "abort", "success": true})
    );
    let tail: Vec<&str> = types(&events)
        .into_iter()
        .skip_while(|t| *t != "tool_execution_end")
        .collect();
    assert_eq!(
        tail,
        [
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        (
            &end["toolCallId"],
            &end["result"]["content"],
            &end["isError"]
        ),
        (
            &json!("call_slow"),
            &json!([{"type": "text", "text": "Command aborted"}]),
            &json!(true)
        )
    );
    wait_until("the aborted command's processes to be gone", || {
        processes_with(&marker).is_empty()
    });

    // The whole conversation, in order.
    send(&mut stdin, &json!({"id": "m1", "type": "get_messages"}));
    let (events, response) = until_response(&lines, "m1");
    assert_eq!(events, [] as [Value; 0]);
    let messages = response["data"]["messages"].as_array().unwrap();
    let roles: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["stopReason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("user", ""),
            ("assistant", "stop"),
            ("user", ""),
            ("assistant", "toolUse"),
            ("toolResult", ""),
            ("assistant", "aborted")
        ]
    );

    // An unknown command, answered without its id (as Pi does).
    send(&mut stdin, &json!({"id": "u1", "type": "frobnicate"}));
    assert_eq!(
        next_json(&lines),
        json!({"type": "response", "command": "frobnicate", "success": false,
               "error": "Unknown command: frobnicate"})
    );

    // End of input ends the mode.
    drop(stdin);
    let (status, _, stderr) = running.finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
    assert_eq!(server.requests().len(), 2);
}

/// A `fork` from an entry that is not a user message of the branch fails
/// before the running prompt is touched, as in Pi. It aborted the prompt's
/// run first: the answer ended `aborted`, then the fork failed anyway.
#[test]
fn a_fork_or_a_switch_to_a_wrong_target_fails_and_leaves_the_running_prompt_alone() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |_| {
        // Slow enough for the fork and the switch to come while the
        // answer is awaited.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        Reply::Events(wire.events(&Answer::text(&["Slow answer."])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": "hi"}),
    );
    server.wait_for_requests(1, std::time::Duration::from_secs(10));
    let (before, forked) = rpc.ask(json!({"id": "f", "type": "fork", "entryId": "nope"}));
    assert!(
        !before.iter().any(|line| line["type"] == "agent_end"),
        "the run ended for the fork: {before:?}"
    );
    assert_eq!(
        forked,
        json!({"id": "f", "type": "response", "command": "fork", "success": false,
               "error": "Invalid entry ID for forking: nope"})
    );
    let notes = sandbox.work.join("notes.txt");
    std::fs::write(&notes, "not a session\n").unwrap();
    let (before, switched) = rpc
        .ask(json!({"id": "s", "type": "switch_session", "sessionPath": notes.to_str().unwrap()}));
    assert!(
        !before.iter().any(|line| line["type"] == "agent_end"),
        "the run ended for the switch: {before:?}"
    );
    assert_eq!(switched["success"], false, "{switched}");
    assert!(
        switched["error"]
            .as_str()
            .unwrap()
            .contains("is not a session file"),
        "{switched}"
    );
    // A new session's file goes into a folder that is there: a mistyped
    // path made its folders anywhere, and said success.
    let astray = sandbox.work.join("no such folder").join("s.jsonl");
    let (_, switched) = rpc
        .ask(json!({"id": "s", "type": "switch_session", "sessionPath": astray.to_str().unwrap()}));
    assert_eq!(
        switched["error"],
        format!(
            "session file {}: no folder {}: a new session starts only in a folder that exists",
            astray.display(),
            astray.parent().unwrap().display()
        ),
        "{switched}"
    );
    assert!(!astray.parent().unwrap().exists());
    let end = rpc.until(|line| line["type"] == "agent_end");
    let answer = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(answer["stopReason"], "stop", "{answer}");
    rpc.finish();
    assert_eq!(server.requests().len(), 1);
}

/// What stderr says when Ctrl-C stops RPC mode.
const RPC_INTERRUPTED: &str =
    "coding-agent: interrupted, aborting the run and bash commands (Ctrl-C again to exit now)\n";

/// What stderr says when SIGTERM stops RPC mode.
const RPC_TERMINATED: &str = "coding-agent: terminated (SIGTERM), aborting the run and bash commands (a second signal exits now)\n";

/// Every line still on stdout, until it closes.
fn rest(lines: &Receiver<String>) -> Vec<Value> {
    lines
        .iter()
        .map(|line| serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn sigterm_during_a_slow_bash_tool_call_aborts_the_run_exits_130_and_leaves_no_process() {
    let wire = Wire::OpenAi;
    let marker = unique_marker("rpcterm");
    let _cleanup = KillOnDrop(marker.clone());
    let sandbox = Sandbox::new();
    let slow = slow_command(&marker);
    let server = ModelServer::only(
        wire,
        vec![Answer::call("call_slow", "bash", json!({"command": slow}))],
    );
    // Kept open: the signal, not the end of input, ends the mode.
    let Rpc {
        running,
        mut stdin,
        lines,
    } = Rpc::start_with(&sandbox, wire, &server, &ALLOW_SLOW);
    send(
        &mut stdin,
        &json!({"id": "p1", "type": "prompt", "message": "Run the slow command."}),
    );
    assert_eq!(
        next_json(&lines),
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true})
    );
    wait_until("the slow command to run", || slow_command_running(&marker));

    running.signal("TERM");
    let (status, _, stderr) = running.finish();
    assert_eq!(
        (status.code(), stderr.as_str()),
        (Some(130), RPC_TERMINATED)
    );
    wait_until("the aborted command's processes to be gone", || {
        processes_with(&marker).is_empty()
    });
    // The aborted run's last events were written before the exit.
    let events = rest(&lines);
    let tail: Vec<&str> = types(&events)
        .into_iter()
        .skip_while(|t| *t != "tool_execution_end")
        .collect();
    assert_eq!(
        tail,
        [
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    let end = &events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        (
            &end["toolCallId"],
            &end["result"]["content"],
            &end["isError"]
        ),
        (
            &json!("call_slow"),
            &json!([{"type": "text", "text": "Command aborted"}]),
            &json!(true)
        )
    );
    let run_messages = events.last().unwrap()["messages"].as_array().unwrap();
    assert_eq!(run_messages.last().unwrap()["stopReason"], "aborted");
    assert_eq!(server.requests().len(), 1);
    drop(stdin);
}

#[test]
fn sigint_during_a_user_bash_command_kills_it_answers_runs_session_end_and_exits_130() {
    let wire = Wire::Anthropic;
    let marker = unique_marker("rpcint");
    let _cleanup = KillOnDrop(marker.clone());
    let sandbox = Sandbox::new();
    let ended = sandbox.root.join("ended.json");
    sandbox.write_global_settings(&json!({"hooks": {"SessionEnd": [{"hooks": [
        {"type": "command", "command": format!("cat > {}", ended.display())}
    ]}]}}));
    let server = ModelServer::only(wire, vec![]);
    let Rpc {
        running,
        mut stdin,
        lines,
    } = Rpc::start_with(&sandbox, wire, &server, &[]);
    send(
        &mut stdin,
        &json!({"id": "b1", "type": "bash", "command": slow_command(&marker)}),
    );
    wait_until("the slow command to run", || slow_command_running(&marker));

    running.signal("INT");
    let (status, _, stderr) = running.finish();
    assert_eq!(
        (status.code(), stderr.as_str()),
        (Some(130), RPC_INTERRUPTED)
    );
    wait_until("the cancelled command's processes to be gone", || {
        processes_with(&marker).is_empty()
    });
    // The command's response, cancelled, was written before the exit.
    assert_eq!(
        rest(&lines),
        [
            json!({"id": "b1", "type": "response", "command": "bash", "success": true,
                "data": {"output": "", "cancelled": true, "truncated": false}})
        ]
    );
    assert_eq!(server.requests().len(), 0);
    // The SessionEnd hooks did their cleanup before the exit.
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&ended).unwrap()).unwrap();
    assert_eq!(
        (&input["hook_event_name"], &input["reason"]),
        (&json!("SessionEnd"), &json!("other"))
    );
    drop(stdin);
}

/// A sandbox and a model that answers "ok" to everything.
fn answering_ok() -> (Sandbox, Wire, ModelServer) {
    let wire = Wire::OpenAi;
    let server = ModelServer::start(move |_| Reply::Events(wire.events(&Answer::text(&["ok"]))));
    (Sandbox::new(), wire, server)
}

/// The file of a session one prompt long, its RPC process ended.
fn a_saved_session(sandbox: &Sandbox, wire: Wire, server: &ModelServer) -> String {
    let mut first = Rpc::start(sandbox, wire, server);
    first.prompt("one");
    let (_, state) = first.ask(json!({"id": "s", "type": "get_state"}));
    first.finish();
    state["data"]["sessionFile"].as_str().unwrap().to_owned()
}

/// Asking the providers' endpoints for their models does not hold up the
/// other commands: an endpoint that never answers delayed every event,
/// response and abort behind it by its whole timeout.
#[test]
fn a_slow_model_listing_does_not_hold_up_other_commands() {
    let (sandbox, wire, server) = answering_ok();
    // Takes connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/v1", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || silent.incoming().take(4).collect::<Vec<_>>());
    sandbox.write_global_settings(&json!({"providers": {
        "slow": {"api": "openai-completions", "baseUrl": silent_url, "defaultModel": "m"}
    }}));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "l", "type": "get_available_models"}),
    );
    let (before, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["success"], true);
    assert!(
        before.iter().all(|line| line["id"] != "l"),
        "the listing answered first: {before:?}"
    );
    let listed = rpc.until(|line| line["id"] == "l");
    assert_eq!(listed["success"], true, "{listed}");
    rpc.finish();
    drop(held);
}

/// A `get_available_models` piped in just before the input closes is
/// answered before the mode exits: the listing ran untracked, and the mode
/// returned without its response whenever the endpoint was slower than the
/// end of the input.
#[test]
fn a_model_listing_is_answered_before_the_mode_exits() {
    let (sandbox, wire, server) = answering_ok();
    // Takes the listing's connection and drops it a second later.
    let slow = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let slow_url = format!("http://{}/v1", slow.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        if let Some(connection) = slow.incoming().next() {
            std::thread::sleep(std::time::Duration::from_secs(1));
            drop(connection);
        }
    });
    sandbox.write_global_settings(&json!({"providers": {
        "slow": {"api": "openai-completions", "baseUrl": slow_url, "defaultModel": "m"}
    }}));
    let Rpc {
        running,
        mut stdin,
        lines,
    } = Rpc::start(&sandbox, wire, &server);
    send(
        &mut stdin,
        &json!({"id": "l", "type": "get_available_models"}),
    );
    drop(stdin);
    let written = rest(&lines);
    let listed = written
        .iter()
        .find(|line| line["id"] == "l")
        .unwrap_or_else(|| panic!("no response to get_available_models: {written:?}"));
    assert_eq!(listed["success"], true, "{listed}");
    assert!(running.finish().0.success());
    held.join().unwrap();
}

/// Sends a prompt (with `behaviour` as its `streamingBehavior`) while the
/// run before it is over for the client (`agent_end` written, `get_state`
/// says it is not streaming) but its Stop hook still runs: the loop keeps
/// answering, holds the prompt as pending, and sends it once the hook is
/// done.
fn prompt_during_a_stop_hook_runs_after_it(behaviour: Option<&str>) {
    let (sandbox, wire, server) = answering_ok();
    // The hook holds the run's tail until the test lets it go.
    let go = sandbox.root.join("go");
    let hook = format!(
        "for _ in $(seq 600); do [ -e '{}' ] && break; sleep 0.05; done",
        go.display()
    );
    sandbox.write_global_settings(&json!({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": hook, "timeout": 60}]}
    ]}}));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    let (_, first) = rpc.ask(json!({"id": "p1", "type": "prompt", "message": "first"}));
    assert_eq!(first["success"], true, "{first}");
    until_agent_end(&rpc.lines);
    let (_, state) = rpc.ask(json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], false, "{state}");

    let mut second = json!({"id": "p2", "type": "prompt", "message": "second"});
    if let Some(behaviour) = behaviour {
        second["streamingBehavior"] = json!(behaviour);
    }
    let (_, accepted) = rpc.ask(second);
    assert_eq!(
        accepted,
        json!({"id": "p2", "type": "response", "command": "prompt", "success": true})
    );
    // The loop still answers while the hook runs.
    let (_, waiting) = rpc.ask(json!({"id": "s2", "type": "get_state"}));
    std::fs::write(&go, "").unwrap();
    until_agent_end(&rpc.lines);
    rpc.finish();
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let state = &waiting["data"];
    assert_eq!(state["pendingMessageCount"], 1, "{state}");
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(
        last_user_text(&bodies[1]).contains("second"),
        "{}",
        bodies[1]
    );
}

/// The last user text of a chat completions request.
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(text) => text.clone(),
        content => content.to_string(),
    }
}

/// A prompt sent while only the previous run's Stop hook runs is taken at
/// once and run when the hook is done: it froze every command for 5 s,
/// then was refused as "already processing" though `get_state` had just
/// said the agent was not streaming.
#[test]
fn a_prompt_during_a_stop_hook_runs_after_it() {
    prompt_during_a_stop_hook_runs_after_it(None);
}

/// A follow-up sent while only the previous run's Stop hook runs is run
/// when the hook is done: it was queued and never sent.
#[test]
fn a_follow_up_during_a_stop_hook_is_run_after_it() {
    prompt_during_a_stop_hook_runs_after_it(Some("followUp"));
}

/// The wait before a retry is part of the run: switching models then is
/// refused, as during the agent's turns. It was taken, and the retry went
/// to the new model, one run split between two models in the file.
#[test]
fn switching_models_during_the_wait_before_a_retry_is_refused() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(
        &json!({"retry": {"baseDelayMs": 60000, "provider": {"maxRetries": 0}}}),
    );
    let busy = r#"{"error":{"type":"overloaded_error","message":"busy"}}"#;
    let server = ModelServer::start(move |_| Reply::Status(503, busy.to_owned()));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": "hi"}),
    );
    rpc.until(|line| line["type"] == "auto_retry_start");
    let (_, set) =
        rpc.ask(json!({"id": "m", "type": "set_model", "provider": "openai", "modelId": "gpt-4o"}));
    let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
    for refused in [&set, &cycled] {
        assert_eq!(refused["success"], false, "{refused}");
        assert_eq!(
            refused["error"], "cannot switch models while the agent is working",
            "{refused}"
        );
    }
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["model"]["id"], MODEL, "{state}");
    send(&mut rpc.stdin, &json!({"id": "r", "type": "abort_retry"}));
    rpc.until(|line| line["type"] == "auto_retry_end");
    rpc.finish();
}

/// `export_html` refuses the mode's own stdout, by any name: the page went
/// into the protocol stream, which the client reads as JSON lines.
#[test]
fn export_html_refuses_the_protocol_stream() {
    let (sandbox, wire, server) = answering_ok();
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt("one");
    for (id, path) in [("e1", "/dev/stdout"), ("e2", "/proc/self/fd/1")] {
        // Every line is JSON (`ask` fails on one that is not).
        let (_, refused) = rpc.ask(json!({"id": id, "type": "export_html", "outputPath": path}));
        assert_eq!(refused["success"], false, "{refused}");
        let error = refused["error"].as_str().unwrap();
        assert!(
            error.starts_with(&format!("Not exported: {path} is this process's stdout")),
            "{error}"
        );
    }
    rpc.finish();
}

/// A user command still running when a new session starts is recorded in
/// the session it ran in: it was added to the new one, whose model read of
/// a command the user ran elsewhere.
#[test]
fn a_user_command_outliving_its_session_is_recorded_in_that_session() {
    let (sandbox, wire, server) = answering_ok();
    let gate = sandbox.root.join("gate");
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt("one");
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    let first = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    let command = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; echo from-first",
        gate.display()
    );
    send(
        &mut rpc.stdin,
        &json!({"id": "b", "type": "bash", "command": command}),
    );
    let (_, new) = rpc.ask(json!({"id": "n", "type": "new_session"}));
    assert_eq!(new["success"], true, "{new}");
    std::fs::write(&gate, "").unwrap();
    let ran = rpc.until(|line| line["id"] == "b");
    assert_eq!(ran["data"]["output"], "from-first\n", "{ran}");

    let (_, messages) = rpc.ask(json!({"id": "m", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"], json!([]));
    rpc.prompt("two");
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    let second = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    rpc.finish();
    assert!(
        !std::fs::read_to_string(&second)
            .unwrap()
            .contains("from-first")
    );
    let last = std::fs::read_to_string(&first).unwrap();
    let last: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["message"]["role"], &last["message"]["output"]),
        (&json!("bashExecution"), &json!("from-first\n"))
    );
}

/// Switching to a session whose last line was cut says so once: the check
/// before the switch and the switch each said it.
/// The file a session was switched to by a path with `.` and `..` in it is
/// named as every other command names it: an editor comparing the names
/// took it for another file.
#[test]
fn a_session_switched_to_by_a_roundabout_path_is_named_plainly() {
    let (sandbox, wire, server) = answering_ok();
    let file = std::path::PathBuf::from(a_saved_session(&sandbox, wire, &server));

    let dir = file.parent().unwrap();
    let roundabout = dir
        .join("..")
        .join(dir.file_name().unwrap())
        .join(".")
        .join(file.file_name().unwrap());
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    let (_, switched) =
        rpc.ask(json!({"id": "w", "type": "switch_session", "sessionPath": roundabout}));
    assert_eq!(switched["success"], true, "{switched}");
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["sessionFile"], file.to_str().unwrap());
    rpc.finish();
}

#[test]
fn switching_to_a_session_with_a_cut_line_warns_once() {
    let (sandbox, wire, server) = answering_ok();
    let file = a_saved_session(&sandbox, wire, &server);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"type\":\"message\",\"id\":\"cu");
    std::fs::write(&file, text).unwrap();

    let mut rpc = Rpc::start(&sandbox, wire, &server);
    let (_, switched) = rpc.ask(json!({"id": "w", "type": "switch_session", "sessionPath": file}));
    assert_eq!(switched["success"], true, "{switched}");
    drop(rpc.stdin);
    let (status, _, stderr) = rpc.running.finish();
    assert!(status.success());
    assert_eq!(
        stderr
            .matches("is not a session entry and is left out")
            .count(),
        1,
        "{stderr}"
    );
}

/// What is sent while `navigate_tree` writes the summary of the branch left
/// waits for the move, as during a `compact`, and then goes out on the
/// branch moved to: a `follow_up` (and a `steer`) then was accepted, listed
/// in `queue_update`, and dropped when the move ended, never reaching the
/// model or the session file; a plain `prompt` was refused as "already
/// processing". What was queued for the branch left, before the move, is
/// still dropped.
#[test]
fn messages_sent_during_a_summarising_move_in_the_tree_go_out_after_it() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    // The summary is held until the messages are in.
    let release = std::sync::Arc::new(std::sync::Barrier::new(2));
    let held = std::sync::Arc::clone(&release);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            held.wait();
            return summary_reply(wire, "LEFT");
        }
        // A run that goes on until the move aborts it.
        if last_user_text(&request.body) == "three" {
            return Reply::Stall;
        }
        Reply::Events(wire.events(&Answer::text(&[&format!("answer {}", request.index)])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt("one");
    rpc.prompt("two");
    let (_, tree) = rpc.ask(json!({"id": "t", "type": "get_tree"}));
    let two = tree["data"]["rows"][2]["id"].clone();
    rpc.ask(json!({"id": "3", "type": "prompt", "message": "three"}));
    server.wait_for_requests(3, std::time::Duration::from_secs(10));
    let (_, queued) =
        rpc.ask(json!({"id": "l", "type": "follow_up", "message": "for the branch left"}));
    assert_eq!(queued["success"], true, "{queued}");
    send(
        &mut rpc.stdin,
        &json!({"id": "n", "type": "navigate_tree", "targetId": two, "summarize": true}),
    );
    server.wait_for_requests(4, std::time::Duration::from_secs(10));
    for command in [
        json!({"id": "s", "type": "steer", "message": "steered"}),
        json!({"id": "p", "type": "prompt", "message": "plain"}),
        json!({"id": "f", "type": "prompt", "message": "followed", "streamingBehavior": "followUp"}),
    ] {
        let id = command["id"].clone();
        let (_, accepted) = rpc.ask(command);
        assert_eq!(accepted["success"], true, "{id}: {accepted}");
    }
    release.wait();
    let moved = rpc.until(|line| line["id"] == "n");
    assert_eq!(moved["data"]["summarized"], true, "{moved}");
    let (_, state) = rpc.ask(json!({"id": "st", "type": "get_state"}));
    // The input's end waits for the run of what was queued, if any.
    rpc.finish();

    let last = server.requests().pop().unwrap();
    let users: Vec<String> = wire
        .transcript(&last.body)
        .into_iter()
        .filter(|line| line.starts_with("user: "))
        .collect();
    assert_eq!(users.len(), 5, "{users:#?}");
    assert_eq!(users[0], "user: one");
    assert!(
        users[1].starts_with("user: The user went down another branch"),
        "{users:#?}"
    );
    assert_eq!(
        users[2..],
        ["user: steered", "user: plain", "user: followed"]
    );
    let file = state["data"]["sessionFile"].as_str().unwrap();
    let saved = std::fs::read_to_string(file).unwrap();
    for text in ["steered", "plain", "followed"] {
        assert!(saved.contains(&format!("\"{text}\"")), "{text} not saved");
    }
    assert!(!saved.contains("for the branch left"), "{saved}");
}
