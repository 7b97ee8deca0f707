//! Command hooks end to end: the built binary in print mode with hooks in
//! its global `settings.json`, against a loopback model server. Every event
//! runs a real script, and what the hooks say is checked where the model
//! reads it: the requests the server received.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::path::Path;

use e2e_support::*;
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
