//! `--mode json` through the library: the session header, then every agent
//! event as one line in Pi's shapes and order, for a run with one tool call.
//! Timestamps and the session id are normalised; everything else is compared
//! whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod modes_support;

use coding_agent::app::AgentSession;
use coding_agent::modes::{PrintFormat, run_print};
use modes_support::{Fixture, call, normalized, reply, text};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const USAGE: &str = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0.0,"output":0.0,"cacheRead":0.0,"cacheWrite":0.0,"total":0.0}}"#;

fn assistant(content: Value, stop_reason: &str) -> Value {
    json!({
        "role": "assistant",
        "content": content,
        "api": "scripted",
        "provider": "scripted",
        "model": "scripted",
        "usage": serde_json::from_str::<Value>(USAGE).unwrap(),
        "stopReason": stop_reason,
        "timestamp": 0,
    })
}

fn update(event: Value, partial: &Value) -> Value {
    let mut event = event;
    event["partial"] = partial.clone();
    json!({"type": "message_update", "assistantMessageEvent": event, "message": partial})
}

#[tokio::test]
async fn json_mode_prints_the_header_then_every_event_in_pi_shapes() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(
        &["ls"],
        vec![
            reply(vec![call("c1", "ls", json!({}))]),
            reply(vec![text("Only a.txt.")]),
        ],
    );
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = run_print(
        &session,
        &[AgentSession::user_message("list", Vec::new())],
        PrintFormat::Json,
        &mut out,
        &mut err,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        (status, String::from_utf8(err).unwrap()),
        (0, String::new())
    );
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| normalized(serde_json::from_str(l).unwrap()))
        .collect();

    let cwd = fixture.cwd.to_str().unwrap();
    let user =
        json!({"role": "user", "content": [{"type": "text", "text": "list"}], "timestamp": 0});
    let tool_call = json!({"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}});
    let empty = assistant(json!([]), "toolUse");
    let calling = assistant(json!([tool_call]), "toolUse");
    let result = json!({"content": [{"type": "text", "text": "a.txt"}]});
    let tool_result = json!({
        "role": "toolResult", "toolCallId": "c1", "toolName": "ls",
        "content": [{"type": "text", "text": "a.txt"}], "isError": false, "timestamp": 0,
    });
    let answer_start = assistant(json!([]), "stop");
    let answer = assistant(json!([{"type": "text", "text": "Only a.txt."}]), "stop");

    let expected = vec![
        json!({"type": "session", "version": 3, "id": "<id>", "timestamp": 0, "cwd": cwd}),
        json!({"type": "agent_start"}),
        json!({"type": "turn_start"}),
        json!({"type": "message_start", "message": user}),
        json!({"type": "message_end", "message": user}),
        json!({"type": "message_start", "message": empty}),
        update(
            json!({"type": "toolcall_start", "contentIndex": 0}),
            &calling,
        ),
        update(
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{}"}),
            &calling,
        ),
        update(
            json!({"type": "toolcall_end", "contentIndex": 0, "toolCall": tool_call}),
            &calling,
        ),
        json!({"type": "message_end", "message": calling}),
        json!({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "ls", "args": {}}),
        json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "ls", "result": result, "isError": false}),
        json!({"type": "message_start", "message": tool_result}),
        json!({"type": "message_end", "message": tool_result}),
        json!({"type": "turn_end", "message": calling, "toolResults": [tool_result]}),
        json!({"type": "turn_start"}),
        json!({"type": "message_start", "message": answer_start}),
        update(json!({"type": "text_start", "contentIndex": 0}), &answer),
        update(
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Only a.txt."}),
            &answer,
        ),
        update(
            json!({"type": "text_end", "contentIndex": 0, "content": "Only a.txt."}),
            &answer,
        ),
        json!({"type": "message_end", "message": answer}),
        json!({"type": "turn_end", "message": answer, "toolResults": []}),
        json!({"type": "agent_end", "messages": [user, calling, tool_result, answer]}),
    ];
    for (index, (line, want)) in lines.iter().zip(&expected).enumerate() {
        assert_eq!(line, want, "line {index}");
    }
    assert_eq!(lines.len(), expected.len());
}

#[tokio::test]
async fn json_lines_keep_pi_key_order() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(
        &["ls"],
        vec![
            reply(vec![call("c1", "ls", json!({"path": "."}))]),
            reply(vec![text("ok")]),
        ],
    );
    let mut out = Vec::new();
    run_print(
        &session,
        &[AgentSession::user_message("list", Vec::new())],
        PrintFormat::Json,
        &mut out,
        &mut Vec::new(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    let header = out.lines().next().unwrap();
    assert!(
        header.starts_with(r#"{"type":"session","version":3,"id":""#),
        "{header}"
    );
    let start = out
        .lines()
        .find(|l| l.contains("tool_execution_start"))
        .unwrap();
    assert_eq!(
        start,
        r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"ls","args":{"path":"."}}"#
    );
    let end = out
        .lines()
        .find(|l| l.contains("tool_execution_end"))
        .unwrap();
    assert_eq!(
        end,
        r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"ls","result":{"content":[{"type":"text","text":"a.txt"}]},"isError":false}"#
    );
}
