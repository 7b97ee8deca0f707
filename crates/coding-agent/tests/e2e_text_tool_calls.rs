//! A model that writes its tool call as text (issue 6), through the built
//! binary against a loopback OpenAI-compatible server: the call is recovered
//! by default, runs, shows as recovered in the json events, and its result
//! goes back with the nudge to answer; `--no-text-tool-calls` and the
//! `recoverTextToolCalls` setting leave the text alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use agent_ai::providers::text_tool_calls::RECOVERED_RESULT_NUDGE;
use e2e_support::*;
use serde_json::{Value, json};

const PROMPT: &str = "Use the read tool to read README.md, then tell me its first heading.";
/// What Qwen2.5-Coder-Instruct 1.5B behind llama.cpp's server answers, byte
/// for byte in shape: the call in a json fence, `tool_calls` left empty.
const FENCED_CALL: &str =
    "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"README.md\"}}\n```";
const ANSWER: &str = "The first heading is \"# Widget Factory\".";

/// A repository with a README, and a server whose model writes the read call
/// as text, then answers.
fn text_call_task() -> (Sandbox, ModelServer) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("README.md"), "# Widget Factory\n").unwrap();
    let server = ModelServer::only(
        Wire::OpenAi,
        vec![
            Answer::text(&[&FENCED_CALL[..10], &FENCED_CALL[10..]]),
            Answer::text(&[ANSWER]),
        ],
    );
    (sandbox, server)
}

/// Runs the prompt in json mode with `extra` arguments; the events.
fn json_events(sandbox: &Sandbox, server: &ModelServer, extra: &[&str]) -> Vec<Value> {
    let mut command = sandbox.command(Wire::OpenAi, server);
    command
        .args(extra)
        .args(["--no-session", "--mode", "json", PROMPT]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The assistant messages, as `message_end` events carry them.
fn answers(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .map(|e| &e["message"])
        .collect()
}

#[test]
fn a_call_written_as_text_is_recovered_runs_and_its_result_asks_for_the_answer() {
    let (sandbox, server) = text_call_task();
    let events = json_events(&sandbox, &server, &[]);

    let answers = answers(&events);
    assert_eq!(answers.len(), 2);
    let call = &answers[0]["content"][0];
    let id = call["id"].as_str().unwrap().to_owned();
    assert_eq!(
        answers[0]["content"],
        json!([{"type": "toolCall", "id": id, "name": "read",
                "arguments": {"path": "README.md"}, "recoveredFromText": true}])
    );
    assert_eq!(answers[0]["stopReason"], "toolUse");
    assert_eq!(
        answers[1]["content"],
        json!([{"type": "text", "text": ANSWER}])
    );

    // The tool really ran, under the recovered id.
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        (&end["toolCallId"], &end["toolName"], &end["isError"]),
        (&json!(id), &json!("read"), &json!(false))
    );
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": "# Widget Factory\n"}])
    );

    // The second request replays the call and carries its result with the
    // nudge; the stored result (the event above) has none.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        Wire::OpenAi.transcript(&requests[1].body),
        [
            format!("user: {PROMPT}"),
            format!("assistant: call {id} read {}", json!({"path": "README.md"})),
            format!("tool {id}: # Widget Factory\n\n\n{RECOVERED_RESULT_NUDGE}"),
        ]
    );
}

/// With recovery off, the fenced JSON is the answer and nothing runs.
fn assert_left_as_text(events: &[Value], server: &ModelServer) {
    let answers = answers(events);
    assert_eq!(answers.len(), 1);
    assert_eq!(
        answers[0]["content"],
        json!([{"type": "text", "text": FENCED_CALL}])
    );
    assert_eq!(answers[0]["stopReason"], "stop");
    assert!(!events.iter().any(|e| e["type"] == "tool_execution_start"));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn no_text_tool_calls_flag_leaves_the_text_as_the_answer() {
    let (sandbox, server) = text_call_task();
    let events = json_events(&sandbox, &server, &["--no-text-tool-calls"]);
    assert_left_as_text(&events, &server);
}

#[test]
fn recover_text_tool_calls_false_in_settings_leaves_the_text_as_the_answer() {
    let (sandbox, server) = text_call_task();
    sandbox
        .write_global_settings(&json!({"providers": {"openai": {"recoverTextToolCalls": false}}}));
    let events = json_events(&sandbox, &server, &[]);
    assert_left_as_text(&events, &server);
}
