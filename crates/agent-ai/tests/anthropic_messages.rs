//! The `anthropic-messages` provider against a loopback server that answers
//! with server-sent events byte for byte as Anthropic documents them.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use agent_ai::message::{AssistantContent, TextContent, ThinkingContent, ToolCall};
use agent_ai::providers::{
    AnthropicMessagesProvider, ProviderConfig, RetryNotice, RetryPolicy, for_api,
};
use agent_ai::{
    AssistantMessage, AssistantMessageEvent, Content, Context, Message, Model, Provider,
    StopReason, ThinkingLevel, Tool, ToolResultMessage, Usage, UserContent, UserMessage,
};
use futures::StreamExt;
use serde_json::{Value, json};
use support::{Reply, Step, TestServer, recorded_notices, trace, without_timestamps};
use tokio_util::sync::CancellationToken;

// Events exactly as Anthropic's streaming documentation shows them (spacing
// included: the documented examples put a space after `:` and `,`).
const MESSAGE_START: &str = "event: message_start\ndata: {\"type\": \"message_start\", \"message\": {\"id\": \"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY\", \"type\": \"message\", \"role\": \"assistant\", \"content\": [], \"model\": \"claude-sonnet-4-5\", \"stop_reason\": null, \"stop_sequence\": null, \"usage\": {\"input_tokens\": 25, \"output_tokens\": 1}}}\n\n";
const PING: &str = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
const MESSAGE_STOP: &str = "event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n";
const OVERLOADED: &str = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";

fn block_start(index: usize, block: Value) -> String {
    format!(
        "event: content_block_start\ndata: {}\n\n",
        json!({"type": "content_block_start", "index": index, "content_block": block})
    )
}

fn delta(index: usize, delta: Value) -> String {
    format!(
        "event: content_block_delta\ndata: {}\n\n",
        json!({"type": "content_block_delta", "index": index, "delta": delta})
    )
}

fn text_delta(index: usize, text: &str) -> String {
    delta(index, json!({"type": "text_delta", "text": text}))
}

fn json_delta(index: usize, partial: &str) -> String {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": partial}),
    )
}

fn block_stop(index: usize) -> String {
    format!(
        "event: content_block_stop\ndata: {{\"type\": \"content_block_stop\", \"index\": {index}}}\n\n"
    )
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    format!(
        "event: message_delta\ndata: {{\"type\": \"message_delta\", \"delta\": {{\"stop_reason\": \"{stop_reason}\", \"stop_sequence\":null}}, \"usage\": {{\"output_tokens\": {output_tokens}}}}}\n\n"
    )
}

fn tool_use(index: usize, id: &str, name: &str) -> String {
    block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )
}

/// A text block at `index` streamed as `parts`.
fn text_block(index: usize, parts: &[&str]) -> Vec<String> {
    let mut events = vec![block_start(index, json!({"type": "text", "text": ""}))];
    events.extend(parts.iter().map(|p| text_delta(index, p)));
    events.push(block_stop(index));
    events
}

fn reply(events: Vec<String>) -> Reply {
    Reply::events(events)
}

fn model() -> Model {
    let mut model = Model::new("claude-sonnet-4-5", "anthropic", "anthropic-messages");
    model.supports_images = true;
    model
}

fn config(server: &TestServer) -> ProviderConfig {
    let mut config = ProviderConfig::new(server.url(""), Some("test-key".into()));
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(1),
    };
    config.read_timeout = Duration::from_secs(10);
    config
}

fn hello_context() -> Context {
    Context {
        system_prompt: None,
        messages: vec![UserMessage::text("Hello").into()].into(),
        tools: vec![].into(),
        reasoning: None,
        max_tokens: None,
    }
}

async fn run(config: ProviderConfig, context: &Context) -> Vec<AssistantMessageEvent> {
    AnthropicMessagesProvider::new(config)
        .stream(&model(), context, CancellationToken::new())
        .collect()
        .await
}

/// The last event's message, as a whole message (`role` included).
fn final_message(events: &[AssistantMessageEvent]) -> Value {
    let last = events.last().unwrap().final_message().unwrap().clone();
    without_timestamps(serde_json::to_value(Message::Assistant(last)).unwrap())
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + output,
           "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}})
}

/// An assistant message as events carry it (Pi's shape: `role` included).
fn assistant(content: Value, stop_reason: &str, usage: Value) -> Value {
    json!({
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "responseId": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
        "usage": usage,
        "stopReason": stop_reason,
        "timestamp": 0
    })
}

fn failed(content: Value, stop_reason: &str, usage: Value, error: &str) -> Value {
    let mut message = assistant(content, stop_reason, usage);
    message["errorMessage"] = json!(error);
    message
}

#[tokio::test]
async fn text_answer_streams_every_event_with_its_partial_message() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.push(PING.to_owned());
    events.push(text_delta(0, "Hello"));
    events.push(text_delta(0, "!"));
    events.push(block_stop(0));
    events.push(message_delta("end_turn", 15));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    let partial = |text: Option<&str>| {
        let content = match text {
            None => json!([]),
            Some(t) => json!([{"type": "text", "text": t}]),
        };
        assistant(content, "stop", usage(25, 1))
    };
    let mut no_response = partial(None);
    no_response.as_object_mut().unwrap().remove("responseId");
    no_response["usage"] = usage(0, 0);
    let actual: Vec<Value> = events
        .iter()
        .map(|e| without_timestamps(serde_json::to_value(e).unwrap()))
        .collect();
    assert_eq!(
        actual,
        vec![
            json!({"type": "start", "partial": no_response}),
            json!({"type": "text_start", "contentIndex": 0, "partial": partial(Some(""))}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hello", "partial": partial(Some("Hello"))}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "!", "partial": partial(Some("Hello!"))}),
            json!({"type": "text_end", "contentIndex": 0, "content": "Hello!", "partial": partial(Some("Hello!"))}),
            json!({"type": "done", "reason": "stop",
                   "message": assistant(json!([{"type": "text", "text": "Hello!"}]), "stop", usage(25, 15))}),
        ]
    );
}

/// An emoji whose surrogate pair a proxy split between two deltas is
/// joined, as Pi's string concatenation joins it; a lone half is U+FFFD
/// (the answer used to fail: "Malformed stream event").
#[tokio::test]
async fn an_emoji_split_between_deltas_is_joined_and_a_lone_surrogate_is_a_replacement() {
    let raw_delta = |text: &str| {
        format!(
            "event: content_block_delta\ndata: {{\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {{\"type\": \"text_delta\", \"text\": \"{text}\"}}}}\n\n"
        )
    };
    let mut events = vec![MESSAGE_START.to_owned()];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.push(raw_delta(r"smile \ud83d"));
    events.push(raw_delta(r"\ude00 end \udc00"));
    events.push(block_stop(0));
    events.push(message_delta("end_turn", 15));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["smile \u{1F600}", " end \u{FFFD}"]);
    assert_eq!(
        final_message(&events)["content"],
        json!([{"type": "text", "text": "smile \u{1F600} end \u{FFFD}"}])
    );
}

/// A reply that sends `events` and then holds the connection open, saying
/// nothing more (until the server's hold limit).
fn sent_then_held<const N: usize>(events: [String; N]) -> Reply {
    let mut steps: Vec<Step> = events.into_iter().map(Step::Send).collect();
    steps.push(Step::Hold);
    Reply::steps(steps)
}

/// A high half alone at the end of the last delta: the events after it
/// are not another delta, so no low half will come. The answer waited for
/// another delta or the end of the body, past `message_stop`, for as long
/// as the server kept the connection open (with pings, with no limit).
#[tokio::test]
async fn a_lone_high_surrogate_at_the_end_holds_back_no_event() {
    let server = TestServer::start(vec![sent_then_held([
        MESSAGE_START.to_owned(),
        block_start(0, json!({"type": "text", "text": ""})),
        "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"lone \\ud83d\"}}\n\n".to_owned(),
        block_stop(0),
        message_delta("end_turn", 15),
        MESSAGE_STOP.to_owned(),
        PING.to_owned(),
    ])])
    .await;
    let mut config = config(&server);
    // Longer than the server's hold: only the server ends the body.
    config.read_timeout = support::MAX_HOLD * 2;
    let mut stream = AnthropicMessagesProvider::new(config).stream(
        &model(),
        &hello_context(),
        CancellationToken::new(),
    );

    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let last = matches!(
            event,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        );
        events.push(event);
        if last {
            break;
        }
    }

    assert_eq!(
        server.expired_holds(),
        0,
        "the answer ended only when the server closed the connection"
    );
    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            "text_delta 0 \"lone \u{FFFD}\"",
            "text_end 0 \"lone \u{FFFD}\"",
            "done stop",
        ]
    );
}

#[tokio::test]
async fn thinking_then_text_keeps_the_signature_for_replay() {
    let mut events = vec![
        MESSAGE_START.to_owned(),
        block_start(0, json!({"type": "thinking", "thinking": ""})),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "I need to find the GCD of 1071 and 462.\n\n"}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "1071 = 2 × 462 + 147"}),
        ),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}),
        ),
        block_stop(0),
    ];
    events.extend(text_block(1, &["The GCD is 21."]));
    events.push(message_delta("end_turn", 40));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "thinking_start 0",
            r#"thinking_delta 0 "I need to find the GCD of 1071 and 462.\n\n""#,
            r#"thinking_delta 0 "1071 = 2 × 462 + 147""#,
            r#"thinking_end 0 "I need to find the GCD of 1071 and 462.\n\n1071 = 2 × 462 + 147""#,
            "text_start 1",
            r#"text_delta 1 "The GCD is 21.""#,
            r#"text_end 1 "The GCD is 21.""#,
            "done stop",
        ]
    );
    assert_eq!(
        final_message(&events),
        assistant(
            json!([
                {"type": "thinking", "thinking": "I need to find the GCD of 1071 and 462.\n\n1071 = 2 × 462 + 147",
                 "thinkingSignature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
                {"type": "text", "text": "The GCD is 21."}
            ]),
            "stop",
            usage(25, 40)
        )
    );
}

#[tokio::test]
async fn redacted_thinking_becomes_a_redacted_thinking_block() {
    let mut events = vec![
        MESSAGE_START.to_owned(),
        block_start(
            0,
            json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
        ),
        block_stop(0),
    ];
    events.extend(text_block(1, &["Done."]));
    events.push(message_delta("end_turn", 9));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "thinking_start 0",
            r#"thinking_end 0 "[Reasoning redacted]""#,
            "text_start 1",
            r#"text_delta 1 "Done.""#,
            r#"text_end 1 "Done.""#,
            "done stop",
        ]
    );
    assert_eq!(
        final_message(&events)["content"][0],
        json!({"type": "thinking", "thinking": "[Reasoning redacted]",
               "thinkingSignature": "EmwKAhgBEgy3va3pzix", "redacted": true})
    );
}

#[tokio::test]
async fn one_tool_call_streams_its_arguments_parsed_as_they_arrive() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Okay, let me check the weather."]));
    events.extend([
        tool_use(1, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"),
        json_delta(1, ""),
        json_delta(1, "{\"location\":"),
        json_delta(1, " \"San Fra"),
        json_delta(1, "ncisco, CA\", \"unit\": \"fah"),
        json_delta(1, "renheit\"}"),
        block_stop(1),
        message_delta("tool_use", 89),
        MESSAGE_STOP.to_owned(),
    ]);
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            r#"text_delta 0 "Okay, let me check the weather.""#,
            r#"text_end 0 "Okay, let me check the weather.""#,
            "toolcall_start 1 toolu_01T1x1fJ34qAmk2tNTrN7Up6 get_weather",
            r#"toolcall_delta 1 "" -> {}"#,
            r#"toolcall_delta 1 "{\"location\":" -> {}"#,
            r#"toolcall_delta 1 " \"San Fra" -> {"location":"San Fra"}"#,
            r#"toolcall_delta 1 "ncisco, CA\", \"unit\": \"fah" -> {"location":"San Francisco, CA","unit":"fah"}"#,
            r#"toolcall_delta 1 "renheit\"}" -> {"location":"San Francisco, CA","unit":"fahrenheit"}"#,
            r#"toolcall_end 1 toolu_01T1x1fJ34qAmk2tNTrN7Up6 get_weather {"location":"San Francisco, CA","unit":"fahrenheit"}"#,
            "done toolUse",
        ]
    );
    assert_eq!(
        final_message(&events),
        assistant(
            json!([
                {"type": "text", "text": "Okay, let me check the weather."},
                {"type": "toolCall", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
                 "arguments": {"location": "San Francisco, CA", "unit": "fahrenheit"}}
            ]),
            "toolUse",
            usage(25, 89)
        )
    );
}

#[tokio::test]
async fn three_parallel_tool_calls_arrive_in_order() {
    let mut events = vec![MESSAGE_START.to_owned()];
    for (index, (id, path)) in [
        ("toolu_a", "a.txt"),
        ("toolu_b", "b.txt"),
        ("toolu_c", "c.txt"),
    ]
    .into_iter()
    .enumerate()
    {
        events.push(tool_use(index, id, "read"));
        events.push(json_delta(index, &format!("{{\"path\": \"{path}\"}}")));
        events.push(block_stop(index));
    }
    events.push(message_delta("tool_use", 120));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "toolcall_start 0 toolu_a read",
            r#"toolcall_delta 0 "{\"path\": \"a.txt\"}" -> {"path":"a.txt"}"#,
            r#"toolcall_end 0 toolu_a read {"path":"a.txt"}"#,
            "toolcall_start 1 toolu_b read",
            r#"toolcall_delta 1 "{\"path\": \"b.txt\"}" -> {"path":"b.txt"}"#,
            r#"toolcall_end 1 toolu_b read {"path":"b.txt"}"#,
            "toolcall_start 2 toolu_c read",
            r#"toolcall_delta 2 "{\"path\": \"c.txt\"}" -> {"path":"c.txt"}"#,
            r#"toolcall_end 2 toolu_c read {"path":"c.txt"}"#,
            "done toolUse",
        ]
    );
    let ids: Vec<String> = events
        .last()
        .unwrap()
        .message()
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(ids, ["toolu_a", "toolu_b", "toolu_c"]);
}

/// Some proxies give a call's whole input in `content_block_start` and
/// stream no delta: that input is the call's (it became `{}`, and the
/// tool refused the call for missing every property).
#[tokio::test]
async fn tool_input_given_whole_at_the_start_of_its_block_is_kept() {
    let events = vec![
        MESSAGE_START.to_owned(),
        block_start(
            0,
            json!({"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {"command": "ls"}}),
        ),
        block_stop(0),
        message_delta("tool_use", 10),
        MESSAGE_STOP.to_owned(),
    ];
    let server = TestServer::start(vec![reply(events)]).await;
    let events = run(config(&server), &hello_context()).await;
    let message = events.last().unwrap().message();
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments, json!({"command": "ls"}));
}

#[tokio::test]
async fn malformed_tool_input_is_repaired_when_the_block_ends() {
    let mut events = vec![MESSAGE_START.to_owned(), tool_use(0, "toolu_w", "write")];
    // A Windows path with invalid escapes and a raw newline inside a string:
    // not JSON, but what the model meant is clear.
    events.push(json_delta(0, "{\"path\": \"C:\\temp\\notes.txt\", "));
    events.push(json_delta(0, "\"content\": \"line 1\nline 2\"}"));
    events.push(block_stop(0));
    events.push(message_delta("tool_use", 30));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "toolcall_start 0 toolu_w write",
            r#"toolcall_delta 0 "{\"path\": \"C:\\temp\\notes.txt\", " -> {"path":"C:\\temp\\notes.txt"}"#,
            r#"toolcall_delta 0 "\"content\": \"line 1\nline 2\"}" -> {"path":"C:\\temp\\notes.txt","content":"line 1\nline 2"}"#,
            r#"toolcall_end 0 toolu_w write {"path":"C:\\temp\\notes.txt","content":"line 1\nline 2"}"#,
            "done toolUse",
        ]
    );
}

/// A broken connection reads as it does for every provider (`Connection error: ...`).
#[tokio::test]
async fn a_stream_cut_mid_way_ends_in_an_error_keeping_what_arrived() {
    let mut parts: Vec<Step> = [
        MESSAGE_START.to_owned(),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Partial ans"),
    ]
    .into_iter()
    .map(Step::Send)
    .collect();
    parts.push(Step::Cut);
    let server = TestServer::start(vec![Reply::steps(parts)]).await;

    let events = run(config(&server), &hello_context()).await;

    let error = "Connection error: error decoding response body: error reading a body from connection: unexpected EOF during chunk size line";
    assert_eq!(
        trace(&events),
        [
            "start".to_owned(),
            "text_start 0".to_owned(),
            r#"text_delta 0 "Partial ans""#.to_owned(),
            format!("error error: {error}"),
        ]
    );
    assert_eq!(
        final_message(&events),
        failed(
            json!([{"type": "text", "text": "Partial ans"}]),
            "error",
            usage(25, 1),
            error
        )
    );
}

/// Deviation P2, for this API too: a body cut short is an error, in the shared words.
#[tokio::test]
async fn a_stream_that_ends_without_message_stop_is_an_error() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Hi"]));
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events).last().unwrap(),
        "error error: Connection closed before the response was complete"
    );
    assert_eq!(events.last().unwrap().message().text(), "Hi");
}

/// An answer whose `message_delta` said why it stopped is whole even when
/// `message_stop` never comes (as an OpenAI finish reason without
/// `[DONE]`): it was thrown away and asked for again.
#[tokio::test]
async fn a_stream_that_said_its_stop_reason_is_whole_without_message_stop() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Hello!"]));
    events.push(message_delta("end_turn", 15));
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(trace(&events).last().unwrap(), "done stop");
    assert_eq!(events.last().unwrap().message().text(), "Hello!");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limited_request_is_retried_then_succeeds() {
    // An HTTP-date `retry-after` in the past means "now".
    let limited = Reply::Status {
        status: 429,
        headers: vec![("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT".into())],
        body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#.into(),
    };
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Hello!"]));
    events.push(message_delta("end_turn", 15));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![limited, reply(events)]).await;
    let mut config = config(&server);
    let notices = recorded_notices(&mut config);

    let events = run(config, &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            r#"text_delta 0 "Hello!""#,
            r#"text_end 0 "Hello!""#,
            "done stop",
        ]
    );
    assert_eq!(
        *notices.lock().unwrap(),
        vec![RetryNotice {
            attempt: 1,
            max_retries: 2,
            delay: Duration::ZERO,
            status: Some(429),
            message: "429 rate_limit_error: Number of requests has exceeded your rate limit".into(),
        }]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn retry_after_longer_than_max_delay_fails_at_once() {
    let limited = Reply::Status {
        status: 429,
        headers: vec![("retry-after", "120".into())],
        body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}"#
            .into(),
    };
    let server = TestServer::start(vec![limited]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "error error: 429 rate_limit_error: Slow down (the server asked to retry after 120s, longer than the 1s this client waits at most)",
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn overloaded_answers_are_retried_up_to_max_retries_then_reported() {
    let overloaded = || Reply::Status {
        status: 529,
        headers: vec![],
        body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            .into(),
    };
    let server = TestServer::start(vec![overloaded(), overloaded(), overloaded()]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "error error: 529 overloaded_error: Overloaded (gave up after 2 retries)",
        ]
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn overloaded_error_event_before_any_content_is_retried() {
    // Also without `"type": "error"` in its data, as some proxies send it:
    // the event's name says what it is.
    let untyped = "event: error\ndata: {\"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    for error in [OVERLOADED, untyped] {
        overloaded_then_answered(error).await;
    }
}

async fn overloaded_then_answered(error: &str) {
    let overloaded = Reply::events([MESSAGE_START, error]);
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Hello!"]));
    events.push(message_delta("end_turn", 15));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![overloaded, reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            r#"text_delta 0 "Hello!""#,
            r#"text_end 0 "Hello!""#,
            "done stop",
        ]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_error_event_after_content_ends_in_an_error() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.push(text_delta(0, "Hel"));
    events.push(OVERLOADED.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            r#"text_delta 0 "Hel""#,
            "error error: overloaded_error: Overloaded",
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

/// An error event whose data is the plain text of a proxy (Envoy's) is the
/// server's message, and "not now" as an `overloaded_error` is: retried
/// before anything was shown, busy after. It read `Malformed stream
/// event: expected value at line 1 column 1` and was never retried.
#[tokio::test]
async fn an_error_event_of_plain_text_is_the_servers_busy_message() {
    const UPSTREAM: &str = "upstream connect error or disconnect/reset before headers";
    let error = format!("event: error\ndata: {UPSTREAM}\n\n");
    overloaded_then_answered(&error).await;

    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Hel"]));
    events.push(error);
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events).last().unwrap(),
        &format!("error error: {UPSTREAM}")
    );
    let message = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        message.error_kind,
        Some(agent_ai::ErrorKind::Provider { busy: true })
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn client_errors_carry_the_server_message_and_are_not_retried() {
    let invalid = Reply::Status {
        status: 400,
        headers: vec![],
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 999999 > 64000, which is the maximum allowed"}}"#.into(),
    };
    let server = TestServer::start(vec![invalid]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "error error: 400 invalid_request_error: max_tokens: 999999 > 64000, which is the maximum allowed",
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

/// The shared wording: the parser's complaint and the data it read.
#[tokio::test]
async fn malformed_event_data_ends_in_an_error() {
    let events = vec![
        MESSAGE_START.to_owned(),
        "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": 0, \"content_block\": \n\n".to_owned(),
    ];
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            r#"error error: Malformed stream event: EOF while parsing a value at line 1 column 60 in "{\"type\": \"content_block_start\", \"index\": 0, \"content_block\":""#,
        ]
    );
}

/// Deviation P3: a stall past `read_timeout` ends the stream.
#[tokio::test]
async fn a_stall_past_read_timeout_ends_in_an_error() {
    let server = TestServer::start(vec![sent_then_held([
        MESSAGE_START.to_owned(),
        block_start(0, json!({"type": "text", "text": ""})),
    ])])
    .await;
    let mut config = config(&server);
    config.read_timeout = Duration::from_millis(200);

    let events = run(config, &hello_context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            "error error: Request timed out: no data received for 200ms",
        ]
    );
}

#[tokio::test]
async fn cancelling_mid_stream_ends_aborted_with_the_partial_message() {
    let server = TestServer::start(vec![sent_then_held([
        MESSAGE_START.to_owned(),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Let me think"),
    ])])
    .await;
    let cancel = CancellationToken::new();
    let mut stream = AnthropicMessagesProvider::new(config(&server)).stream(
        &model(),
        &hello_context(),
        cancel.clone(),
    );

    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        events.push(event);
    }

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            r#"text_delta 0 "Let me think""#,
            "error aborted: Request was aborted",
        ]
    );
    assert_eq!(
        final_message(&events),
        failed(
            json!([{"type": "text", "text": "Let me think"}]),
            "aborted",
            usage(25, 1),
            "Request was aborted"
        )
    );
}

#[tokio::test]
async fn cancelled_before_the_start_sends_nothing_and_ends_aborted() {
    let server = TestServer::start(vec![]).await;
    let cancel = CancellationToken::new();
    cancel.cancel();

    let events: Vec<_> = AnthropicMessagesProvider::new(config(&server))
        .stream(&model(), &hello_context(), cancel)
        .collect()
        .await;

    assert_eq!(
        trace(&events),
        ["start", "error aborted: Request was aborted"]
    );
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn without_an_api_key_no_x_api_key_header_is_sent() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["local"]));
    events.push(message_delta("end_turn", 1));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;
    let mut config = config(&server);
    config.api_key = None;

    let events = run(config, &hello_context()).await;

    assert_eq!(trace(&events).last().unwrap(), "done stop");
    assert_eq!(server.requests()[0].header("x-api-key"), None);
}

#[test]
fn debug_output_never_shows_the_api_key() {
    assert_eq!(
        format!(
            "{:?}",
            AnthropicMessagesProvider::new(ProviderConfig::new("http://h", Some("secret".into())))
        ),
        r#"AnthropicMessagesProvider { base_url: "http://h", .. }"#
    );
}

/// Deviation P5 (Pi: `An unknown error occurred`): the error names the stop reason.
#[tokio::test]
async fn refusal_ends_in_an_error() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["I can't"]));
    events.push(message_delta("refusal", 3));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(
        trace(&events).last().unwrap(),
        "error error: The provider stopped the response: refusal"
    );
}

#[tokio::test]
async fn max_tokens_ends_with_length() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Once upon"]));
    events.push(message_delta("max_tokens", 8192));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let events = run(config(&server), &hello_context()).await;

    assert_eq!(trace(&events).last().unwrap(), "done length");
}

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall::new(id, name, arguments))
}

fn from_model(content: Vec<AssistantContent>, stop_reason: StopReason) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        response_model: None,
        response_id: None,
        usage: Usage::default(),
        stop_reason,
        error_message: None,
        error_kind: None,
        timestamp: 1,
    })
}

fn result(id: &str, name: &str, content: Vec<Content>, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content,
        details: Some(json!({"not": "sent"})),
        is_error,
        timestamp: 2,
    })
}

fn user_blocks(blocks: Vec<Content>) -> Message {
    Message::User(UserMessage {
        content: UserContent::Blocks(blocks),
        timestamp: 3,
    })
}

#[tokio::test]
async fn request_carries_headers_tools_system_merged_results_and_images() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["ok"]));
    events.push(message_delta("end_turn", 1));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;
    let mut config = config(&server);
    config.max_tokens = 4096;
    config.temperature = Some(0.7);

    let read = Tool {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"], "additionalProperties": false}),
    };
    let ls = Tool {
        name: "ls".into(),
        description: "List a directory.".into(),
        parameters: json!({"type": "object"}),
    };
    let context = Context {
        system_prompt: Some("You are a coding agent.".into()),
        tools: vec![read, ls].into(),
        reasoning: None,
        max_tokens: None,
        messages: vec![
            user_blocks(vec![
                Content::text("What is in these?"),
                Content::image("iVBORw0KGgo=", "image/png"),
            ]),
            from_model(
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "Read both.".into(),
                        thinking_signature: Some("sig-1".into()),
                        redacted: None,
                    }),
                    text(""),
                    call("toolu_1", "read", json!({"path": "a.txt"})),
                    call("toolu_2", "read", json!({"path": "b.png"})),
                    call("toolu_3", "ls", json!({})),
                ],
                StopReason::ToolUse,
            ),
            result(
                "toolu_1",
                "read",
                vec![Content::text("line 1"), Content::text("line 2")],
                false,
            ),
            result(
                "toolu_2",
                "read",
                vec![Content::image("R0lGOD==", "image/gif")],
                false,
            ),
            // toolu_3 never got a result: it is answered before the next user message.
            Message::User(UserMessage {
                content: UserContent::Text("Why stop?".into()),
                timestamp: 4,
            }),
            // A failed turn is not replayed.
            from_model(vec![text("half an ans")], StopReason::Error),
            from_model(
                vec![call("toolu_4", "read", json!({"path": "c.txt"}))],
                StopReason::ToolUse,
            ),
            result("toolu_4", "read", vec![Content::text("ENOENT")], true),
        ]
        .into(),
    };

    let events = run(config, &context).await;
    assert_eq!(trace(&events).last().unwrap(), "done stop");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(request.header("x-api-key"), Some("test-key"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        request.body,
        json!({
            "model": "claude-sonnet-4-5",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in these?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Read both.", "signature": "sig-1"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.png"}},
                    {"type": "tool_use", "id": "toolu_3", "name": "ls", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "line 1\nline 2", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
                        {"type": "text", "text": "(see attached image)"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGOD=="}}
                    ], "is_error": false},
                    {"type": "tool_result", "tool_use_id": "toolu_3", "content": "No result provided", "is_error": true}
                ]},
                {"role": "user", "content": "Why stop?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_4", "name": "read", "input": {"path": "c.txt"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_4", "content": "ENOENT", "is_error": true,
                     "cache_control": ephemeral}
                ]}
            ],
            "max_tokens": 4096,
            "stream": true,
            "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": ephemeral}],
            "temperature": 0.7,
            "tools": [
                {"name": "read", "description": "Read a file.", "input_schema": {
                    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                {"name": "ls", "description": "List a directory.", "input_schema": {
                    "type": "object", "properties": {}, "required": []}, "cache_control": ephemeral}
            ]
        })
    );
}

#[tokio::test]
async fn replay_from_another_model_turns_thinking_into_text_and_fixes_tool_ids() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["ok"]));
    events.push(message_delta("end_turn", 1));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;
    let mut foreign = from_model(
        vec![
            AssistantContent::Thinking(ThinkingContent {
                thinking: "Plan.".into(),
                thinking_signature: Some("opaque".into()),
                redacted: None,
            }),
            call("call|abc.1", "ls", json!({})),
        ],
        StopReason::ToolUse,
    );
    if let Message::Assistant(message) = &mut foreign {
        message.api = "openai-completions".into();
        message.provider = "openai".into();
        message.model = "gpt-4o".into();
    }
    let context = Context {
        system_prompt: None,
        tools: vec![].into(),
        reasoning: None,
        max_tokens: None,
        messages: vec![
            UserMessage::text("List.").into(),
            foreign,
            result("call|abc.1", "ls", vec![Content::text("a.txt")], false),
        ]
        .into(),
    };

    run(config(&server), &context).await;

    assert_eq!(
        server.requests()[0].body["messages"],
        json!([
            {"role": "user", "content": "List."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Plan."},
                {"type": "tool_use", "id": "call_abc_1", "name": "ls", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_abc_1", "content": "a.txt", "is_error": false,
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[tokio::test]
async fn for_api_builds_the_anthropic_provider() {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["via for_api"]));
    events.push(message_delta("end_turn", 3));
    events.push(MESSAGE_STOP.to_owned());
    let server = TestServer::start(vec![reply(events)]).await;

    let provider = for_api("anthropic-messages", config(&server)).unwrap();
    let events: Vec<_> = provider
        .stream(&model(), &hello_context(), CancellationToken::new())
        .collect()
        .await;

    assert_eq!(events.last().unwrap().message().text(), "via for_api");
    assert!(for_api("no-such-api", config(&server)).is_none());
}

// ---------------------------------------------------------------- thinking

fn hello_reply() -> Reply {
    let mut events = vec![MESSAGE_START.to_owned()];
    events.extend(text_block(0, &["Hello"]));
    events.push(message_delta("end_turn", 1));
    events.push(MESSAGE_STOP.to_owned());
    reply(events)
}

/// What a reasoning model's requests say of thinking, one request per
/// context sent through a provider with `temperature` 0.5: `max_tokens`,
/// `thinking` and `temperature`.
async fn thinking_sent(contexts: Vec<Context>) -> Vec<Value> {
    let server = TestServer::start(contexts.iter().map(|_| hello_reply()).collect()).await;
    let mut config = config(&server);
    config.temperature = Some(0.5);
    let provider = AnthropicMessagesProvider::new(config);
    let mut model = model();
    model.reasoning = true;
    for context in contexts {
        let events: Vec<_> = provider
            .stream(&model, &context, CancellationToken::new())
            .collect()
            .await;
        assert_eq!(trace(&events).last().unwrap(), "done stop");
    }
    server
        .requests()
        .iter()
        .map(|request| {
            json!({
                "max_tokens": request.body["max_tokens"],
                "thinking": request.body.get("thinking"),
                "temperature": request.body.get("temperature"),
            })
        })
        .collect()
}

#[tokio::test]
async fn thinking_levels_become_budgets_on_top_of_max_tokens_and_drop_the_temperature() {
    use ThinkingLevel::*;
    let levels = [None, Some(Off), Some(Minimal), Some(Medium), Some(Xhigh)];
    let sent = thinking_sent(
        levels
            .map(|reasoning| Context {
                reasoning,
                ..hello_context()
            })
            .into(),
    )
    .await;
    assert_eq!(
        sent,
        [
            json!({"max_tokens": 8192, "thinking": null, "temperature": 0.5}),
            json!({"max_tokens": 8192, "thinking": {"type": "disabled"}, "temperature": 0.5}),
            json!({"max_tokens": 9216, "thinking": {"type": "enabled", "budget_tokens": 1024},
                   "temperature": null}),
            json!({"max_tokens": 16384, "thinking": {"type": "enabled", "budget_tokens": 8192},
                   "temperature": null}),
            // xhigh is not supported without the model's map: high's budget.
            json!({"max_tokens": 24576, "thinking": {"type": "enabled", "budget_tokens": 16384},
                   "temperature": null}),
        ]
    );
}

#[tokio::test]
async fn a_model_without_reasoning_gets_no_thinking_and_budgets_come_from_the_config() {
    let server = TestServer::start(vec![hello_reply(), hello_reply()]).await;
    let mut config = config(&server);
    config.thinking_budgets.low = 3000;
    config.max_tokens = 1000;
    let provider = AnthropicMessagesProvider::new(config);
    let context = Context {
        reasoning: Some(ThinkingLevel::Low),
        ..hello_context()
    };
    let plain = model();
    let mut reasoning = model();
    reasoning.reasoning = true;
    for model in [&plain, &reasoning] {
        let events: Vec<_> = provider
            .stream(model, &context, CancellationToken::new())
            .collect()
            .await;
        assert_eq!(trace(&events).last().unwrap(), "done stop");
    }
    let requests = server.requests();
    assert_eq!(requests[0].body.get("thinking"), None);
    assert_eq!(requests[0].body["max_tokens"], 1000);
    assert_eq!(
        requests[1].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 3000})
    );
    assert_eq!(requests[1].body["max_tokens"], 4000);
}

/// [`Context::max_tokens`] bounds the whole request, thinking included, as
/// Pi's model `maxTokens` does: a session with an 8192-token window asked
/// for `max_tokens: 18432` (16384 of them thinking), more than the window.
/// The budget is cut below the limit, leaving the answer 1024 tokens (Pi's
/// `adjustMaxTokensForThinking`); a limit that leaves no budget of 1024,
/// Anthropic's least, turns thinking off.
#[tokio::test]
async fn thinking_stays_within_the_requests_token_limit() {
    use ThinkingLevel::*;
    let asked = [(High, 2048), (Low, 4096), (Medium, 1500), (High, 50_000)];
    let sent = thinking_sent(
        asked
            .map(|(level, limit)| Context {
                reasoning: Some(level),
                max_tokens: Some(limit),
                ..hello_context()
            })
            .into(),
    )
    .await;
    let thinking = |max_tokens, budget: Option<u32>| {
        json!({
            "max_tokens": max_tokens,
            "thinking": match budget {
                Some(budget) => json!({"type": "enabled", "budget_tokens": budget}),
                None => json!({"type": "disabled"}),
            },
            "temperature": if budget.is_some() { Value::Null } else { json!(0.5) },
        })
    };
    assert_eq!(
        sent,
        [
            thinking(2048, Some(1024)),
            thinking(4096, Some(2048)),
            thinking(1500, None),
            thinking(24576, Some(16384)),
        ]
    );
}
