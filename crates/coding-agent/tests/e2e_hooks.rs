//! Command hooks end to end: the built binary in print mode with hooks in
//! its global `settings.json`, against a loopback model server. Every event
//! runs a real script, and what the hooks say is checked where the model
//! reads it: the requests the server received.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;
#[path = "http_support/hook_server.rs"]
mod hook_server;

use std::path::Path;

use e2e_support::*;
use hook_server::HookServer;
use serde_json::{Value, json};

const PROMPT: &str = "Clean up, then tell me what notes.txt says.";

/// Writes an executable script into `dir`; returns its path.
fn script(dir: &Path, name: &str, text: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

fn command_hook(matcher: &str, command: &str) -> Value {
    json!([{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": 20}]}])
}

const BLOCK_RM: &str = r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
if event["tool_input"]["command"].split()[:1] == ["rm"]:
    print("rm is not allowed; move files to .trash instead", file=sys.stderr)
    sys.exit(2)
"#;

const READ_CONTEXT: &str = r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
    "additionalContext": "notes.txt is generated; edit notes.in instead"}}))
"#;

/// Blocks the first stop (the model must report the cleanup), not the second.
const STOP_ONCE: &str = r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
if not event["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "say which files you kept"}))
"#;

/// A model that runs `echo ran` with bash, then answers `Done.`.
fn runs_echo(wire: Wire) -> ModelServer {
    ModelServer::answering(
        wire,
        vec![
            Answer::call("call_1", "bash", json!({"command": "echo ran"})),
            Answer::text(&["Done."]),
        ],
    )
}

#[test]
fn every_hook_event_reaches_the_model_through_the_binary() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("notes.txt"), "hello\n").unwrap();
    let hooks_dir = sandbox.root.join("hooks");
    std::fs::create_dir(&hooks_dir).unwrap();
    let inputs = sandbox.root.join("inputs.jsonl");
    let settings = json!({"hooks": {
        "SessionStart": command_hook("", "echo 'branch: main'"),
        "UserPromptSubmit": command_hook(
            "",
            &format!(
                "tee -a {} >/dev/null; echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"UserPromptSubmit\", \"additionalContext\": \"today is a holiday\"}}}}'",
                inputs.display()
            ),
        ),
        "PreToolUse": command_hook("Bash", &script(&hooks_dir, "block_rm.py", BLOCK_RM)),
        "PostToolUse": command_hook("Read", &script(&hooks_dir, "read_context.py", READ_CONTEXT)),
        "Stop": command_hook("", &script(&hooks_dir, "stop_once.py", STOP_ONCE)),
    }});
    sandbox.write_global_settings(&settings);
    let wire = Wire::OpenAi;
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("call_rm", "bash", json!({"command": "rm -f notes.txt"})),
            Answer::call("call_read", "read", json!({"path": "notes.txt"})),
            Answer::text(&["It says hello."]),
            Answer::text(&["It says hello; I kept notes.txt."]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", PROMPT]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "It says hello; I kept notes.txt.\n");
    assert!(sandbox.work.join("notes.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        wire.transcript(&requests[3].body),
        [
            format!(
                "user: {PROMPT}\nSessionStart hook additional context: branch: main\nUserPromptSubmit hook additional context: today is a holiday"
            ),
            format!(
                "assistant: call call_rm bash {}",
                json!({"command": "rm -f notes.txt"})
            ),
            "tool call_rm: Blocked by PreToolUse hook: rm is not allowed; move files to .trash instead"
                .to_owned(),
            format!(
                "assistant: call call_read read {}",
                json!({"path": "notes.txt"})
            ),
            "tool call_read: hello\n\nPostToolUse hook additional context: notes.txt is generated; edit notes.in instead"
                .to_owned(),
            "assistant: It says hello.".to_owned(),
            "user: Stop hook feedback: say which files you kept".to_owned(),
        ]
    );
    // The prompt hook read Claude Code's input for its event.
    let input: Value =
        serde_json::from_str(std::fs::read_to_string(&inputs).unwrap().trim()).unwrap();
    let session = &Sandbox::session_files(&sandbox.default_session_dir())[0];
    assert_eq!(
        input,
        json!({
            "session_id": session_lines(session)[0]["id"],
            "transcript_path": session.to_string_lossy(),
            "cwd": sandbox.work.to_string_lossy(),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": PROMPT,
        })
    );
}

#[test]
fn a_hook_timeout_and_an_untrusted_projects_hooks_are_warnings_on_stderr() {
    let sandbox = Sandbox::new();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
        {"type": "command", "command": "sleep 30", "timeout": 0.5}
    ]}]}});
    sandbox.write_global_settings(&settings);
    let project_settings = sandbox.write_project_settings(
        &json!({"hooks": {"PreToolUse": command_hook("*", "touch pwned")}}),
    );
    let wire = Wire::Anthropic;
    let server = runs_echo(wire);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "run it"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();

    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (
            Some(0),
            "Done.\n",
            format!(
                "Warning: hooks: the hooks in {} do not run: the project is not trusted\nWarning: PreToolUse hook \"sleep 30\" timed out after 0.5s and was killed\n",
                project_settings.display()
            )
            .as_str()
        )
    );
    assert!(!sandbox.work.join("pwned").exists());
    assert_eq!(
        wire.transcript(&server.requests()[1].body).last().unwrap(),
        "tool call_1: ran\n"
    );
}

/// Hooks run outside the sandbox, so their shell is `/bin/sh`, not the
/// first `sh` on the PATH: a sandboxed command can write a PATH folder in
/// the workspace (an activated `.venv/bin`) and had its own `sh` run
/// unsandboxed by the next hook.
#[test]
fn a_hooks_shell_is_not_looked_up_on_the_path() {
    let sandbox = Sandbox::new();
    let planted = sandbox.work.join(".venv/bin");
    std::fs::create_dir_all(&planted).unwrap();
    let marker = sandbox.root.join("planted-sh-ran");
    let fake_sh = planted.join("sh");
    std::fs::write(
        &fake_sh,
        format!(
            "#!/bin/sh\ntouch '{}'\nexec /bin/sh \"$@\"\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &fake_sh,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let ran = sandbox.root.join("hook-ran");
    sandbox.write_global_settings(&json!({"hooks": {
        "PreToolUse": command_hook("*", &format!("touch '{}'", ran.display()))
    }}));
    let wire = Wire::OpenAi;
    let server = runs_echo(wire);
    let path = format!("{}:{}", planted.display(), std::env::var("PATH").unwrap());
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "run it"]).env("PATH", path);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Done.\n");
    assert!(ran.exists(), "the hook ran");
    assert!(!marker.exists(), "the planted sh ran");
}

#[test]
fn a_projects_hooks_run_once_it_is_trusted_with_the_flag() {
    let sandbox = Sandbox::new();
    sandbox.write_project_settings(
        &json!({"hooks": {"PreToolUse": command_hook("*", "touch trusted-hook-ran")}}),
    );
    let wire = Wire::OpenAi;
    let server = runs_echo(wire);
    let mut command = sandbox.command(wire, &server);
    command.args(["--trust", "-p", "run it"]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Done.\n");
    assert!(sandbox.work.join("trusted-hook-ran").exists());
}

/// Appends the event it reads to `events.jsonl`; as a PreCompact hook,
/// refuses while a file `hold` is in the working directory.
const RECORD: &str = r#"#!/usr/bin/env python3
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.path.dirname(__file__), "events.jsonl"), "a") as f:
    f.write(json.dumps(event) + "\n")
if event["hook_event_name"] == "PreCompact" and os.path.exists("hold"):
    print("not now: the release is being cut", file=sys.stderr)
    sys.exit(2)
"#;

#[test]
fn compaction_and_the_end_of_a_session_run_their_hooks_selected_by_matcher() {
    let sandbox = Sandbox::new();
    let hooks_dir = sandbox.root.join("hooks");
    std::fs::create_dir(&hooks_dir).unwrap();
    let record = script(&hooks_dir, "record.py", RECORD);
    let settings = json!({
        "providers": {"openai": {"contextWindow": 4000}},
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "echo fresh start"}]},
                {"matcher": "compact", "hooks": [{"type": "command", "command": "echo re-read NOTES.md"}]},
            ],
            "PreCompact": command_hook("manual", &record),
            "SessionEnd": command_hook("", &record),
        },
    });
    sandbox.write_global_settings(&settings);
    let wire = Wire::OpenAi;
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "SUMMARY");
        }
        Reply::Events(wire.events(&Answer::text(&["ok"])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.ask(json!({"id": "a", "type": "set_auto_compaction", "enabled": false}));
    // Nothing to compact yet: the PreCompact hook is not run for it (it
    // ran, then the compaction failed anyway).
    let (_, nothing) = rpc.ask(json!({"id": "c0", "type": "compact"}));
    assert_eq!(nothing["success"], false, "{nothing}");
    let long = |label: &str| format!("{label} {}", "word ".repeat(1000));
    rpc.prompt(&long("first"));
    rpc.prompt(&long("second"));
    // The prompt's first line, then what the hooks added.
    let added = |request: &Request| {
        let user = wire.transcript(&request.body)[0].clone();
        user.split_once('\n').map(|(_, rest)| rest.to_owned())
    };
    assert_eq!(
        added(&server.requests()[0]).as_deref(),
        Some("SessionStart hook additional context: fresh start"),
        "the startup hook alone"
    );

    std::fs::write(sandbox.work.join("hold"), "").unwrap();
    let (_, held) = rpc.ask(json!({"id": "c1", "type": "compact"}));
    assert_eq!(
        held,
        json!({"id":"c1","type":"response","command":"compact","success":false,
            "error":"Compaction blocked by PreCompact hook: not now: the release is being cut"})
    );
    std::fs::remove_file(sandbox.work.join("hold")).unwrap();
    let (_, compacted) =
        rpc.ask(json!({"id": "c2", "type": "compact", "customInstructions": "keep the API"}));
    assert_eq!(compacted["success"], true, "{compacted}");

    rpc.prompt("third");
    let last = server.requests().last().unwrap().body.clone();
    assert_eq!(
        wire.transcript(&last).last().unwrap(),
        "user: third\nSessionStart hook additional context: re-read NOTES.md"
    );
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    let first_id = state["data"]["sessionId"].clone();
    rpc.ask(json!({"id": "n", "type": "new_session"}));
    let (_, state) = rpc.ask(json!({"id": "s2", "type": "get_state"}));
    let second_id = state["data"]["sessionId"].clone();
    rpc.finish();

    let events: Vec<Value> = std::fs::read_to_string(hooks_dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: Vec<(&Value, &Value, Value)> = events
        .iter()
        .map(|e| {
            let what = match e["hook_event_name"].as_str().unwrap() {
                "PreCompact" => json!([e["trigger"], e["custom_instructions"]]),
                _ => e["reason"].clone(),
            };
            (&e["hook_event_name"], &e["session_id"], what)
        })
        .collect();
    assert_eq!(
        seen,
        [
            (&json!("PreCompact"), &first_id, json!(["manual", ""])),
            (
                &json!("PreCompact"),
                &first_id,
                json!(["manual", "keep the API"])
            ),
            (&json!("SessionEnd"), &first_id, json!("clear")),
            (&json!("SessionEnd"), &second_id, json!("other")),
        ]
    );
}

/// A prompt sent while `compact` runs waits for it and goes out as the
/// messages queued then do, with what the `compact` SessionStart hooks give
/// back: it went out without it (only a prompt that found no run got it).
#[test]
fn a_prompt_sent_during_a_compaction_gets_the_compact_hooks_context() {
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({
        "providers": {"openai": {"contextWindow": 4000}},
        "hooks": {"SessionStart": [
            {"matcher": "compact", "hooks": [{"type": "command", "command": "echo re-read NOTES.md"}]},
        ]},
    }));
    let wire = Wire::OpenAi;
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            std::thread::sleep(std::time::Duration::from_millis(500));
            return summary_reply(wire, "SUMMARY");
        }
        Reply::Events(wire.events(&Answer::text(&["ok"])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.ask(json!({"id": "a", "type": "set_auto_compaction", "enabled": false}));
    let long = |label: &str| format!("{label} {}", "word ".repeat(1000));
    rpc.prompt(&long("first"));
    rpc.prompt(&long("second"));
    send(&mut rpc.stdin, &json!({"id": "c", "type": "compact"}));
    rpc.until(|line| line["type"] == "compaction_start");
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": "third"}),
    );
    let compacted = rpc.until(|line| line["id"] == "c");
    assert_eq!(compacted["success"], true, "{compacted}");
    rpc.until(|line| line["type"] == "agent_end");
    rpc.finish();
    let last = server.requests().last().unwrap().body.clone();
    assert_eq!(
        wire.transcript(&last).last().unwrap(),
        "user: third\nSessionStart hook additional context: re-read NOTES.md"
    );
}

#[test]
fn session_end_runs_when_a_print_run_ends_even_on_an_output_error() {
    let sandbox = Sandbox::new();
    let ended = sandbox.root.join("ended.json");
    sandbox.write_global_settings(&json!({"hooks": {
        "SessionEnd": command_hook("other", &format!("cat > {}", ended.display())),
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["Done."])]);
    let mut command = sandbox.command(wire, &server);
    command
        .args(["-p", "hi"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    // The reader goes away: writing the answer fails.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // As a shell reports SIGPIPE: the answer did not reach its reader.
    assert_eq!(output.status.code(), Some(141), "{stderr}");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&ended).unwrap()).unwrap();
    assert_eq!(
        (&input["hook_event_name"], &input["reason"]),
        (&json!("SessionEnd"), &json!("other"))
    );
}

/// A prompt a UserPromptSubmit hook refuses is a failure the reader hears
/// of: print mode says why on stderr and exits 1 (it exited 0 with no
/// output), RPC answers the prompt a second time with `success: false`, as
/// Pi does for a prompt that fails (the client waited for an `agent_end`
/// that never came), and JSON mode writes that response after the session
/// header (it wrote the header alone, as a crash leaves it).
#[test]
fn a_prompt_a_hook_refuses_fails_in_print_and_json_mode_and_over_rpc() {
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({"hooks": {
        "UserPromptSubmit": command_hook("", "echo 'prompts are frozen today' >&2; exit 2"),
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["never"])]);
    let reason = "Prompt blocked by UserPromptSubmit hook: prompts are frozen today";

    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stdout.as_str()), (Some(1), ""), "{stderr}");
    assert_eq!(stderr, format!("{reason}\n"));

    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(1), ""), "{stdout}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0]["type"], "session", "{stdout}");
    assert_eq!(
        lines[1],
        json!({"type": "response", "command": "prompt", "success": false, "error": reason})
    );

    let mut rpc = Rpc::start(&sandbox, wire, &server);
    let (_, accepted) = rpc.ask(json!({"id": "p1", "type": "prompt", "message": "hi"}));
    assert_eq!(accepted["success"], true, "{accepted}");
    let refused = next_json(&rpc.lines);
    assert_eq!(
        refused,
        json!({"id": "p1", "type": "response", "command": "prompt", "success": false, "error": reason})
    );
    rpc.finish();
    assert!(server.requests().is_empty());
}

/// Refuses prompts that mention `forbidden`; gives the others context.
const GUARD_PROMPTS: &str = r#"#!/usr/bin/env python3
import json, sys
prompt = json.load(sys.stdin)["prompt"]
if "forbidden" in prompt:
    print("that topic is off limits", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
    "additionalContext": "checked: " + prompt}}))
"#;

/// Messages sent while the agent works pass the UserPromptSubmit hooks as
/// a prompt does: a refused one is answered `success: false` and never
/// reaches the model, an accepted one carries the hook's context. (Steering
/// and follow-ups skipped the hooks, so a prompt guard was bypassed by
/// typing while a command ran.)
#[test]
fn messages_queued_while_the_agent_works_pass_the_prompt_hooks() {
    let sandbox = Sandbox::new();
    let hooks_dir = sandbox.root.join("hooks");
    std::fs::create_dir(&hooks_dir).unwrap();
    sandbox.write_global_settings(&json!({"hooks": {
        "UserPromptSubmit": command_hook("", &script(&hooks_dir, "guard.py", GUARD_PROMPTS)),
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("call_1", "bash", json!({"command": "sleep 2"})),
            Answer::text(&["Slept."]),
            Answer::text(&["Later, then."]),
        ],
    );
    let flags = ["--permission-mode", "bypass", "--sandbox", "off"];
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &flags);
    let (_, accepted) = rpc.ask(json!({"id": "go", "type": "prompt", "message": "go"}));
    assert_eq!(accepted["success"], true, "{accepted}");
    while next_json(&rpc.lines)["type"] != "tool_execution_start" {}
    let refused = "Prompt blocked by UserPromptSubmit hook: that topic is off limits";
    for (id, command) in [
        (
            "s",
            json!({"type": "steer", "message": "the forbidden steer"}),
        ),
        (
            "f",
            json!({"type": "follow_up", "message": "a forbidden follow-up"}),
        ),
        (
            "p",
            json!({"type": "prompt", "message": "forbidden too", "streamingBehavior": "followUp"}),
        ),
    ] {
        let mut command = command;
        command["id"] = json!(id);
        let (_, response) = rpc.ask(command);
        assert_eq!(
            (&response["success"], &response["error"]),
            (&json!(false), &json!(refused)),
            "{id}: {response}"
        );
    }
    let (_, queued) = rpc.ask(json!({"id": "ok", "type": "follow_up", "message": "and then rest"}));
    assert_eq!(queued["success"], true, "{queued}");
    while next_json(&rpc.lines)["type"] != "agent_end" {}
    rpc.finish();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let last = wire.transcript(&requests[2].body);
    assert!(
        !last.iter().any(|line| line.contains("forbidden")),
        "{last:#?}"
    );
    assert_eq!(
        last.last().unwrap(),
        "user: and then rest\nUserPromptSubmit hook additional context: checked: and then rest"
    );
}

/// Approves `touch` commands in the user's place, and keeps its input.
const APPROVE_TOUCH: &str = r#"#!/usr/bin/env python3
import json, os, sys
event = json.load(sys.stdin)
with open(os.environ["INPUTS"], "a") as log:
    log.write(json.dumps(event) + "\n")
if event["tool_input"]["command"].split()[:1] == ["touch"]:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow"}}}))
"#;

/// Tells the model where a missing file comes from.
const EXPLAIN_FAILURE: &str = r#"#!/usr/bin/env python3
import json, os, sys
event = json.load(sys.stdin)
with open(os.environ["INPUTS"], "a") as log:
    log.write(json.dumps(event) + "\n")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
    "additionalContext": "generated files appear after `make`"}}))
"#;

/// Writes keep.txt, then runs `-p "clean up"` against a model that answers
/// `answers` in order (the session's and its hooks' requests alike, the
/// first asking for `rm keep.txt`); checks that the run ends with `Done.`,
/// that keep.txt is still there and that every answer was asked for; the
/// requests.
fn clean_up_keeping(sandbox: &Sandbox, wire: Wire, answers: Vec<Answer>) -> Vec<Request> {
    std::fs::write(sandbox.work.join("keep.txt"), "data").unwrap();
    let count = answers.len();
    let server = ModelServer::only(wire, answers);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "clean up"]);
    assert_eq!(Running::spawn(command).finish_quietly(), "Done.\n");
    assert!(sandbox.work.join("keep.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), count);
    requests
}

#[test]
fn an_agent_hook_reads_the_project_under_the_policy_before_its_verdict() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("PROTECTED.md"), "keep.txt\n").unwrap();
    std::fs::write(sandbox.work.join("secret.txt"), "TOPSECRET").unwrap();
    sandbox.write_global_settings(&json!({
        "permissions": {"deny": ["read(secret.txt)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "agent", "prompt": "Refuse deleting a file PROTECTED.md lists. The call: $ARGUMENTS"}
        ]}]}
    }));
    let wire = Wire::OpenAi;
    let requests = clean_up_keeping(
        &sandbox,
        wire,
        vec![
            Answer::call("call_rm", "bash", json!({"command": "rm keep.txt"})),
            // The hook's model looks around, then says no.
            Answer::call("look_1", "read", json!({"path": "PROTECTED.md"})),
            Answer::call("look_2", "read", json!({"path": "secret.txt"})),
            Answer::call("look_3", "grep", json!({"pattern": "SECRET"})),
            Answer::text(&[r#"{"ok": false, "reason": "keep.txt is protected"}"#]),
            Answer::text(&["Done."]),
        ],
    );
    let asked = &requests[1].body;
    assert_eq!(wire.tool_names(asked), ["read", "grep", "find", "ls"]);
    let question = wire.transcript(asked).last().cloned().unwrap();
    assert!(
        question.starts_with("user: Refuse deleting a file PROTECTED.md lists. The call: {")
            && question.contains(r#""tool_input":{"command":"rm keep.txt"}"#),
        "{question}"
    );
    let looked = wire.transcript(&requests[3].body);
    assert_eq!(looked[looked.len() - 3], "tool look_1: keep.txt\n");
    // The session's deny rule holds for the hook's model too.
    let refused = &looked[looked.len() - 1];
    assert!(
        refused.starts_with("tool look_2: Blocked by the permission policy:")
            && !refused.contains("TOPSECRET"),
        "{refused}"
    );
    // And a grep of the folder holding it leaves it out.
    let searched = wire.transcript(&requests[4].body);
    assert_eq!(
        searched[searched.len() - 1],
        "tool look_3: No matches found\n\n[1 path the permission rules guard was left out: secret.txt]"
    );
    let transcript = wire.transcript(&requests[5].body);
    assert_eq!(
        transcript[2],
        "tool call_rm: Blocked by PreToolUse hook: keep.txt is protected"
    );
}

/// Denies every call it is asked about and stops the agent.
const DENY_AND_STOP: &str = r#"#!/usr/bin/env python3
import json
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
    "decision": {"behavior": "deny", "message": "not on this machine", "interrupt": True}}}))
"#;

#[test]
fn a_permission_request_deny_with_interrupt_stops_the_agent() {
    let sandbox = Sandbox::new();
    let hooks_dir = sandbox.root.join("hooks");
    std::fs::create_dir(&hooks_dir).unwrap();
    sandbox.write_global_settings(&json!({"hooks": {
        "PermissionRequest": command_hook("Bash", &script(&hooks_dir, "stop.py", DENY_AND_STOP)),
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(
        wire,
        vec![
            Answer::call("call_rm", "bash", json!({"command": "rm keep.txt"})),
            Answer::text(&["Done."]),
        ],
    );
    std::fs::write(sandbox.work.join("keep.txt"), "kept").unwrap();
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "clean up"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(sandbox.work.join("keep.txt").exists());
    assert_eq!(
        server.requests().len(),
        1,
        "the model is not asked again; stdout: {stdout} stderr: {stderr}"
    );
    // As when the user aborts: nothing printed, a failed exit.
    assert_eq!((status.code(), stdout.as_str()), (Some(1), ""), "{stderr}");
    assert!(stderr.contains("Request was aborted"), "{stderr}");
    assert!(
        stderr.contains(
            "Warning: a PermissionRequest hook stopped the agent: \
             Blocked by PermissionRequest hook: not on this machine\n"
        ),
        "{stderr}"
    );
}

#[test]
fn permission_request_answers_where_no_one_can_be_asked_and_failures_get_their_own_hook() {
    let sandbox = Sandbox::new();
    let hooks_dir = sandbox.root.join("hooks");
    std::fs::create_dir(&hooks_dir).unwrap();
    let inputs = sandbox.root.join("inputs.jsonl");
    sandbox.write_global_settings(&json!({"hooks": {
        "PermissionRequest": command_hook("Bash", &script(&hooks_dir, "approve.py", APPROVE_TOUCH)),
        "PostToolUse": command_hook("", &format!("echo PostToolUse >> {}", inputs.display())),
        "PostToolUseFailure": command_hook("", &script(&hooks_dir, "explain.py", EXPLAIN_FAILURE)),
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("call_touch", "bash", json!({"command": "touch built.txt"})),
            Answer::call("call_rm", "bash", json!({"command": "rm built.txt"})),
            Answer::call("call_cat", "bash", json!({"command": "cat generated.txt"})),
            Answer::text(&["Done."]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.env("INPUTS", &inputs).args(["-p", "build"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "Done.\n");
    // `touch` was approved by the hook; `rm` was not, and print mode has
    // no one else to ask: it is refused, as without hooks.
    assert!(sandbox.work.join("built.txt").exists());
    assert!(
        stderr.contains("Blocked: needs approval (`rm built.txt`"),
        "{stderr}"
    );
    let requests = server.requests();
    let transcript = wire.transcript(&requests[3].body);
    assert_eq!(transcript[2], "tool call_touch: (no output)");
    assert!(
        transcript[4].starts_with("tool call_rm: Blocked: needs approval (`rm built.txt`"),
        "{}",
        transcript[4]
    );
    assert_eq!(
        transcript[6],
        "tool call_cat: cat: generated.txt: No such file or directory\n\n\n\
         Command exited with code 1\n\
         PostToolUseFailure hook additional context: generated files appear after `make`"
    );
    let logged = std::fs::read_to_string(&inputs).unwrap();
    let events: Vec<Value> = logged
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| json!(line)))
        .collect();
    let named = |event: &Value| {
        event["hook_event_name"]
            .as_str()
            .or(event.as_str())
            .map(str::to_owned)
    };
    // PostToolUse ran after the call that did not fail, not after the
    // failure; the blocked call ran no tool hook after it.
    assert_eq!(
        events.iter().filter_map(named).collect::<Vec<_>>(),
        [
            "PermissionRequest",
            "PostToolUse",
            "PermissionRequest",
            "PostToolUseFailure"
        ]
    );
    let request = &events[0];
    assert_eq!(
        (
            &request["tool_name"],
            &request["tool_input"],
            &request["tool_use_id"]
        ),
        (
            &json!("bash"),
            &json!({"command": "touch built.txt"}),
            &json!("call_touch")
        )
    );
    assert!(
        request["reason"]
            .as_str()
            .unwrap()
            .contains("touch built.txt")
    );
    let failure = &events[3];
    assert_eq!(
        (&failure["tool_use_id"], &failure["is_interrupt"]),
        (&json!("call_cat"), &json!(false))
    );
    assert_eq!(
        failure["error"],
        "cat: generated.txt: No such file or directory\n\n\nCommand exited with code 1"
    );
}

/// Through the permission guard: the `additionalContext` of a call the
/// guard refused (a hook's ask where no one can approve) was added to the
/// result of the next call with the same id.
#[test]
fn a_refused_calls_pre_tool_use_context_is_not_added_to_a_later_call_of_the_same_id() {
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({"hooks": {
        "PreToolUse": command_hook(
            "Bash",
            r#"grep -q SECRETCMD && echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "additionalContext": "STALE CONTEXT FROM FIRST CALL"}}'; exit 0"#,
        ),
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("same", "bash", json!({"command": "echo SECRETCMD"})),
            Answer::call("same", "bash", json!({"command": "echo second"})),
            Answer::text(&["Done."]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "go"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "Done.\n"),
        "{stderr}"
    );
    let transcript = wire.transcript(&server.requests()[2].body);
    assert!(
        transcript[2].starts_with("tool same: Blocked: a PreToolUse hook asks for approval"),
        "{transcript:?}"
    );
    assert!(
        transcript[2].ends_with("STALE CONTEXT FROM FIRST CALL"),
        "the refused call's context goes with its refusal: {transcript:?}"
    );
    assert_eq!(transcript[4], "tool same: second\n", "{transcript:?}");
}

#[test]
fn an_http_hook_gets_the_event_with_only_the_environment_it_may_use() {
    let hooks = HookServer::start(&[(
        "/check",
        "200 OK",
        r#"{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "checked by the policy service"}}"#,
    )]);
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(
        &json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{
            "type": "http",
            "url": format!("{}/check", hooks.url),
            "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "[${OTHER_SECRET}]"},
            "allowedEnvVars": ["HOOK_TOKEN"],
            "timeout": 20
        }]}]}}),
    );
    let wire = Wire::OpenAi;
    let server = runs_echo(wire);
    let mut command = sandbox.command(wire, &server);
    command
        .env("HOOK_TOKEN", "s3cret")
        .env("OTHER_SECRET", "never sent")
        .args(["-p", "echo"]);
    assert_eq!(Running::spawn(command).finish_quietly(), "Done.\n");
    let requests = hooks.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (
            request.headers["authorization"].as_str(),
            request.headers["x-other"].as_str()
        ),
        ("Bearer s3cret", "[]")
    );
    assert_eq!(
        (
            &request.body["hook_event_name"],
            &request.body["tool_use_id"],
            &request.body["tool_response"]["content"]
        ),
        (
            &json!("PostToolUse"),
            &json!("call_1"),
            &json!([{"type": "text", "text": "ran\n"}])
        )
    );
    let transcript = wire.transcript(&server.requests()[1].body);
    assert_eq!(
        transcript.last().unwrap(),
        "tool call_1: ran\n\nPostToolUse hook additional context: checked by the policy service"
    );
}

#[test]
fn a_prompt_hook_asks_the_sessions_model_and_its_no_blocks_the_call() {
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "prompt", "prompt": "Refuse commands that delete files. The call: $ARGUMENTS"}
        ]}]}}),
    );
    let wire = Wire::OpenAi;
    let requests = clean_up_keeping(
        &sandbox,
        wire,
        vec![
            Answer::call("call_rm", "bash", json!({"command": "rm keep.txt"})),
            Answer::text(&[r#"{"ok": false, "reason": "rm deletes files; move them instead"}"#]),
            Answer::call("call_echo", "bash", json!({"command": "echo ran"})),
            Answer::text(&["```json\n{\"ok\": true}\n```"]),
            Answer::text(&["Done."]),
        ],
    );
    // The verdict's request: the hook's prompt with the event in it, and
    // no tools.
    let asked = &requests[1].body;
    assert_eq!(asked["messages"][0]["role"], "system");
    let question = wire.transcript(asked).last().cloned().unwrap();
    assert!(
        question.starts_with("user: Refuse commands that delete files. The call: {")
            && question.contains(r#""tool_input":{"command":"rm keep.txt"}"#)
            && question.contains(r#""hook_event_name":"PreToolUse""#),
        "{question}"
    );
    assert!(wire.tool_names(asked).is_empty());
    let transcript = wire.transcript(&requests[4].body);
    assert_eq!(
        transcript[2],
        "tool call_rm: Blocked by PreToolUse hook: rm deletes files; move them instead"
    );
    assert_eq!(transcript[4], "tool call_echo: ran\n");
}
