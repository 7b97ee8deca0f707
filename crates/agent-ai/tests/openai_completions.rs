//! The `openai-completions` provider against a scripted server on 127.0.0.1:
//! byte-exact SSE in OpenAI's documented chunk format, and the request body
//! the provider sends, asserted as JSON. Whole event sequences are compared
//! (timestamps zeroed; `partial` shown where it matters).

#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use agent_ai::message::ImageContent;
use agent_ai::providers::text_tool_calls::RECOVERED_RESULT_NUDGE;
use agent_ai::providers::{OpenAiCompletions, ProviderConfig, RetryNotice, RetryPolicy};
use agent_ai::{
    AssistantContent, AssistantMessage, AssistantMessageEvent, Content, Context, Message, Model,
    Provider, StopReason, TextContent, ThinkingContent, ThinkingLevel, Tool, ToolCall,
    ToolResultMessage, UserContent, UserMessage,
};
use futures::StreamExt;
use serde_json::{Value, json};
use support::{Reply, Step, TestServer, recorded_notices, trace, without_timestamps};
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------- helpers

fn model() -> Model {
    Model::new("gpt-test", "openai", "openai-completions")
}

fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path"}},
            "required": ["path"]
        }),
    }
}

fn context() -> Context {
    Context {
        system_prompt: Some("You are a test.".into()),
        messages: vec![Message::User(UserMessage::text("Hi"))].into(),
        tools: vec![tool("read"), tool("ls")].into(),
        reasoning: None,
        max_tokens: None,
    }
}

/// A config for `server` with fast retries and a generous read timeout.
fn config(server: &TestServer) -> ProviderConfig {
    let mut config = ProviderConfig::new(server.url("/v1"), Some("sk-test".into()));
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(5),
    };
    config.read_timeout = Duration::from_secs(5);
    config
}

async fn run(config: ProviderConfig, context: &Context) -> Vec<AssistantMessageEvent> {
    OpenAiCompletions::new(config)
        .stream(&model(), context, CancellationToken::new())
        .collect()
        .await
}

/// A streamed answer, chunked, as OpenAI sends it.
fn stream(steps: Vec<Step>) -> Reply {
    Reply::steps(steps)
}

/// `data: <json>\n\n`, one server-sent event in OpenAI's format.
fn data(json: &Value) -> Step {
    Step::Send(format!("data: {json}\n\n"))
}

/// The `data: [DONE]\n\n` that ends an OpenAI stream.
fn done() -> Step {
    Step::Send("data: [DONE]\n\n".into())
}

/// One `chat.completion.chunk` with `delta` and `finish_reason`.
fn chunk(delta: Value, finish_reason: Value) -> Step {
    data(&json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]
    }))
}

/// The final chunk with usage and no choices (`stream_options.include_usage`).
fn usage_chunk(usage: Value) -> Step {
    data(&json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [],
        "usage": usage
    }))
}

/// A tool-call fragment chunk.
fn call_fragment(fragments: Value) -> Step {
    chunk(json!({"tool_calls": fragments}), Value::Null)
}

/// An event as JSON with timestamps zeroed.
fn full(event: &AssistantMessageEvent) -> Value {
    without_timestamps(serde_json::to_value(event).unwrap())
}

/// An event without its `partial`; a `toolcall_delta` shows instead the
/// arguments parsed so far as `partialArguments`.
fn summary(event: &AssistantMessageEvent) -> Value {
    let mut value = full(event);
    let map = value.as_object_mut().unwrap();
    if let Some(partial) = map.remove("partial")
        && map["type"] == "toolcall_delta"
    {
        let index = map["contentIndex"].as_u64().unwrap() as usize;
        map.insert(
            "partialArguments".into(),
            partial["content"][index]["arguments"].clone(),
        );
    }
    value
}

fn summaries(events: &[AssistantMessageEvent]) -> Vec<Value> {
    events.iter().map(summary).collect()
}

/// The final message as JSON (a whole message, `role` included), timestamps zeroed.
fn final_message(events: &[AssistantMessageEvent]) -> Value {
    let last = events.last().unwrap().final_message().unwrap().clone();
    without_timestamps(serde_json::to_value(Message::Assistant(last)).unwrap())
}

fn no_usage() -> Value {
    json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
           "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}})
}

fn usage(input: u64, output: u64, cache_read: u64) -> Value {
    json!({"input": input, "output": output, "cacheRead": cache_read, "cacheWrite": 0,
           "totalTokens": input + output + cache_read,
           "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}})
}

/// An assistant message of the test model as Pi serializes it (`role` included).
fn message(content: Value, usage: Value, stop_reason: &str) -> Value {
    json!({
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-test",
        "responseId": "chatcmpl-1",
        "usage": usage,
        "stopReason": stop_reason,
        "timestamp": 0
    })
}

fn with_error(mut message: Value, error_message: &str) -> Value {
    message["errorMessage"] = json!(error_message);
    message
}

fn text_answer() -> Reply {
    stream(vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Hello"}), Value::Null),
        chunk(json!({"content": " world"}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage_chunk(json!({"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14})),
        done(),
    ])
}

// ---------------------------------------------------------------- answers

#[tokio::test]
async fn text_answer_streams_start_text_events_and_done_with_partials() {
    let server = TestServer::start(vec![text_answer()]).await;
    let events = run(config(&server), &context()).await;

    let text = |t: &str| json!([{"type": "text", "text": t}]);
    let mut start = message(json!([]), no_usage(), "stop");
    start.as_object_mut().unwrap().remove("responseId");
    let done_message = message(text("Hello world"), usage(12, 2, 0), "stop");
    assert_eq!(
        events.iter().map(full).collect::<Vec<_>>(),
        vec![
            json!({"type": "start", "partial": start}),
            json!({"type": "text_start", "contentIndex": 0,
                   "partial": message(text(""), no_usage(), "stop")}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hello",
                   "partial": message(text("Hello"), no_usage(), "stop")}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": " world",
                   "partial": message(text("Hello world"), no_usage(), "stop")}),
            json!({"type": "text_end", "contentIndex": 0, "content": "Hello world",
                   "partial": done_message}),
            json!({"type": "done", "reason": "stop", "message": done_message}),
        ]
    );
}

#[tokio::test]
async fn one_tool_call_streams_its_arguments_and_ends_with_tool_use() {
    let server = TestServer::start(vec![stream(vec![
        call_fragment(json!([{"index": 0, "id": "call_abc", "type": "function",
                              "function": {"name": "read", "arguments": ""}}])),
        call_fragment(json!([{"index": 0, "function": {"arguments": "{\"path\":"}}])),
        call_fragment(json!([{"index": 0, "function": {"arguments": " \"READ"}}])),
        call_fragment(json!([{"index": 0, "function": {"arguments": "ME.md\"}"}}])),
        chunk(json!({}), json!("tool_calls")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;

    let call = json!({"type": "toolCall", "id": "call_abc", "name": "read",
                      "arguments": {"path": "README.md"}});
    let final_message = message(json!([call]), no_usage(), "toolUse");
    assert_eq!(
        summaries(&events),
        vec![
            json!({"type": "start"}),
            json!({"type": "toolcall_start", "contentIndex": 0}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "",
                   "partialArguments": {}}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"path\":",
                   "partialArguments": {}}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": " \"READ",
                   "partialArguments": {"path": "READ"}}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "ME.md\"}",
                   "partialArguments": {"path": "README.md"}}),
            json!({"type": "toolcall_end", "contentIndex": 0,
                   "toolCall": {"type": "toolCall", "id": "call_abc", "name": "read",
                                "arguments": {"path": "README.md"}}}),
            json!({"type": "done", "reason": "toolUse", "message": final_message}),
        ]
    );
}

/// A long call's arguments in small fragments are said as their parse
/// comes due (an eighth more text each time past 4 KiB), the fragments in
/// between joined into one delta, and what is left before the end: each
/// delta carried the whole message, and 1 MB of arguments in 30-character
/// pieces took seconds of copying. The deltas still add up to the text.
#[tokio::test]
async fn a_long_calls_fragments_are_said_as_their_parse_comes_due() {
    let content = "x".repeat(200_000);
    let text = json!({"path": "big.txt", "content": content}).to_string();
    let mut steps = vec![call_fragment(
        json!([{"index": 0, "id": "call_big", "type": "function",
                "function": {"name": "write", "arguments": ""}}]),
    )];
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(30)
        .map(|piece| String::from_utf8(piece.to_vec()).unwrap())
        .collect();
    for piece in &pieces {
        steps.push(call_fragment(
            json!([{"index": 0, "function": {"arguments": piece}}]),
        ));
    }
    steps.extend([chunk(json!({}), json!("tool_calls")), done()]);
    let server = TestServer::start(vec![stream(steps)]).await;
    let events = run(config(&server), &context()).await;
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ToolCallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas.concat(), text);
    // Every fragment of the first 4 KiB, then about 33 more for 196 KiB.
    assert!(
        deltas.len() < 4096 / 30 + 60,
        "{} deltas for {} fragments",
        deltas.len(),
        pieces.len()
    );
    let Some(AssistantMessageEvent::Done { message, .. }) = events.last() else {
        panic!("{:?}", events.last());
    };
    assert_eq!(
        message.tool_calls().next().unwrap().arguments["content"],
        json!(content)
    );
}

/// Deviation P4: fragments are assembled by `index`, not by a change of `id`.
#[tokio::test]
async fn parallel_tool_calls_with_interleaved_fragments_are_assembled_by_index() {
    let server = TestServer::start(vec![stream(vec![
        call_fragment(json!([{"index": 0, "id": "call_0", "type": "function",
                              "function": {"name": "read", "arguments": ""}}])),
        call_fragment(json!([{"index": 1, "id": "call_1", "type": "function",
                              "function": {"name": "ls", "arguments": ""}}])),
        call_fragment(json!([{"index": 0, "function": {"arguments": "{\"path\": \"a"}}])),
        call_fragment(json!([{"index": 2, "id": "call_2", "type": "function",
                              "function": {"name": "read", "arguments": "{\"pa"}}])),
        call_fragment(json!([{"index": 1, "function": {"arguments": "{\"path\": \".\"}"}}])),
        call_fragment(json!([
            {"index": 0, "function": {"arguments": ".txt\"}"}},
            {"index": 2, "function": {"arguments": "th\": \"b.txt\"}"}}
        ])),
        chunk(json!({}), json!("tool_calls")),
        usage_chunk(json!({"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80})),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;

    // `toolCall` in toolcall_end is a whole content block, as in content.
    let call = |id: &str, name: &str, path: &str| json!({"type": "toolCall", "id": id, "name": name, "arguments": {"path": path}});
    let calls = json!([
        call("call_0", "read", "a.txt"),
        call("call_1", "ls", "."),
        call("call_2", "read", "b.txt")
    ]);
    let content = calls.clone();
    assert_eq!(
        summaries(&events),
        vec![
            json!({"type": "start"}),
            json!({"type": "toolcall_start", "contentIndex": 0}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "", "partialArguments": {}}),
            json!({"type": "toolcall_start", "contentIndex": 1}),
            json!({"type": "toolcall_delta", "contentIndex": 1, "delta": "", "partialArguments": {}}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"path\": \"a",
                   "partialArguments": {"path": "a"}}),
            json!({"type": "toolcall_start", "contentIndex": 2}),
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "{\"pa",
                   "partialArguments": {}}),
            json!({"type": "toolcall_delta", "contentIndex": 1, "delta": "{\"path\": \".\"}",
                   "partialArguments": {"path": "."}}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": ".txt\"}",
                   "partialArguments": {"path": "a.txt"}}),
            json!({"type": "toolcall_delta", "contentIndex": 2, "delta": "th\": \"b.txt\"}",
                   "partialArguments": {"path": "b.txt"}}),
            json!({"type": "toolcall_end", "contentIndex": 0, "toolCall": calls[0]}),
            json!({"type": "toolcall_end", "contentIndex": 1, "toolCall": calls[1]}),
            json!({"type": "toolcall_end", "contentIndex": 2, "toolCall": calls[2]}),
            json!({"type": "done", "reason": "toolUse",
                   "message": message(content, usage(50, 30, 0), "toolUse")}),
        ]
    );
}

#[tokio::test]
async fn calls_all_numbered_zero_but_with_new_ids_are_separate_calls() {
    let server = TestServer::start(vec![stream(vec![
        call_fragment(json!([{"index": 0, "id": "call_a", "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}}])),
        call_fragment(json!([{"index": 0, "id": "call_b", "function": {"name": "ls", "arguments": "{}"}}])),
        // No index at all: continues the last call.
        call_fragment(json!([{"function": {"arguments": ""}}])),
        chunk(json!({}), json!("tool_calls")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let kinds: Vec<Value> = summaries(&events)
        .into_iter()
        .map(|mut s| {
            let map = s.as_object_mut().unwrap();
            map.remove("partialArguments");
            map.remove("message");
            s
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            json!({"type": "start"}),
            json!({"type": "toolcall_start", "contentIndex": 0}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"path\": \"a\"}"}),
            json!({"type": "toolcall_end", "contentIndex": 0,
                   "toolCall": {"type": "toolCall", "id": "call_a", "name": "read", "arguments": {"path": "a"}}}),
            json!({"type": "toolcall_start", "contentIndex": 1}),
            json!({"type": "toolcall_delta", "contentIndex": 1, "delta": "{}"}),
            json!({"type": "toolcall_delta", "contentIndex": 1, "delta": ""}),
            json!({"type": "toolcall_end", "contentIndex": 1,
                   "toolCall": {"type": "toolCall", "id": "call_b", "name": "ls", "arguments": {}}}),
            json!({"type": "done", "reason": "toolUse"}),
        ]
    );
}

/// Calls a server sent without ids get ids of their own, each different:
/// their results must go back matched, and strict servers refuse `""`.
#[tokio::test]
async fn calls_without_ids_are_given_ids() {
    let server = TestServer::start(vec![stream(vec![
        call_fragment(
            json!([{"index": 0, "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}}]),
        ),
        call_fragment(json!([{"index": 1, "function": {"name": "ls", "arguments": "{}"}}])),
        chunk(json!({}), json!("tool_calls")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let message = final_message(&events);
    let ids: Vec<&str> = message["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{message}");
    assert!(ids.iter().all(|id| id.starts_with("call_")), "{ids:?}");
    assert_ne!(ids[0], ids[1]);
}

#[tokio::test]
async fn reasoning_content_streams_as_thinking_before_the_text() {
    let server = TestServer::start(vec![stream(vec![
        chunk(
            json!({"role": "assistant", "reasoning_content": "Let me"}),
            Value::Null,
        ),
        chunk(json!({"reasoning_content": " think."}), Value::Null),
        chunk(
            json!({"content": "42", "reasoning_content": null}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;

    assert_eq!(
        summaries(&events),
        thinking_then_42(["Let me", " think."], Some("reasoning_content"))
    );
}

/// The events of an answer that thinks in the two `deltas` (the block
/// signed `signature`), then says `42`.
fn thinking_then_42(deltas: [&str; 2], signature: Option<&str>) -> Vec<Value> {
    let thought = deltas.concat();
    let mut thinking = json!({"type": "thinking", "thinking": thought});
    if let Some(signature) = signature {
        thinking["thinkingSignature"] = json!(signature);
    }
    let content = json!([thinking, {"type": "text", "text": "42"}]);
    vec![
        json!({"type": "start"}),
        json!({"type": "thinking_start", "contentIndex": 0}),
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": deltas[0]}),
        json!({"type": "thinking_delta", "contentIndex": 0, "delta": deltas[1]}),
        json!({"type": "thinking_end", "contentIndex": 0, "content": thought}),
        json!({"type": "text_start", "contentIndex": 1}),
        json!({"type": "text_delta", "contentIndex": 1, "delta": "42"}),
        json!({"type": "text_end", "contentIndex": 1, "content": "42"}),
        json!({"type": "done", "reason": "stop",
               "message": message(content, no_usage(), "stop")}),
    ]
}

/// A server without a reasoning parser (llama.cpp `--reasoning-format none`)
/// leaves the thoughts in `content` between tags; they stream as thinking,
/// with the tags split across chunks, and are not sent back (DEVIATIONS P8).
#[tokio::test]
async fn thoughts_in_think_tags_of_the_content_stream_as_thinking_and_are_not_replayed() {
    let server = TestServer::start(vec![
        stream(vec![
            chunk(json!({"role": "assistant", "content": "<thi"}), Value::Null),
            chunk(json!({"content": "nk>\nLet me"}), Value::Null),
            chunk(json!({"content": " think.</th"}), Value::Null),
            chunk(json!({"content": "ink>\n\n42"}), Value::Null),
            chunk(json!({}), json!("stop")),
            done(),
        ]),
        text_answer(),
    ])
    .await;
    let events = run(config(&server), &context()).await;

    assert_eq!(
        summaries(&events),
        thinking_then_42(["\nLet me", " think."], None)
    );

    let answer = events.last().unwrap().message().clone();
    let mut next = context();
    next.messages = vec![
        Message::User(UserMessage::text("What is 6*7?")),
        Message::Assistant(answer),
        Message::User(UserMessage::text("Sure?")),
    ]
    .into();
    run(config(&server), &next).await;
    let replayed = &server.requests()[1].body["messages"];
    assert_eq!(
        replayed[2],
        json!({"role": "assistant", "content": "42"}),
        "{replayed}"
    );
}

#[tokio::test]
async fn reasoning_field_named_reasoning_is_thinking_too() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"reasoning": "Hmm."}), Value::Null),
        chunk(json!({"content": "Yes."}), json!("stop")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    assert_eq!(
        final_message(&events)["content"],
        json!([
            {"type": "thinking", "thinking": "Hmm.", "thinkingSignature": "reasoning"},
            {"type": "text", "text": "Yes."}
        ])
    );
}

#[tokio::test]
async fn usage_reports_cached_input_apart_and_reasoning_in_output() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "ok"}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage_chunk(json!({
            "prompt_tokens": 1200,
            "completion_tokens": 80,
            "total_tokens": 1280,
            "prompt_tokens_details": {"cached_tokens": 1000},
            "completion_tokens_details": {"reasoning_tokens": 20}
        })),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    assert_eq!(final_message(&events)["usage"], usage(200, 100, 1000));
}

#[tokio::test]
async fn finish_reason_length_ends_with_stop_reason_length() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Once upon"}), json!("length")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    assert_eq!(
        summary(events.last().unwrap()),
        json!({"type": "done", "reason": "length", "message": message(
            json!([{"type": "text", "text": "Once upon"}]), no_usage(), "length")})
    );
}

/// Deviation P5: the error names the finish reason.
#[tokio::test]
async fn content_filter_ends_in_an_error_that_says_so() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "I"}), json!("content_filter")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    assert_eq!(
        summary(events.last().unwrap()),
        json!({"type": "error", "reason": "error", "error": with_error(message(
            json!([{"type": "text", "text": "I"}]), no_usage(), "error"),
            "The provider stopped the response: content_filter")})
    );
}

/// OpenRouter ends a stream whose upstream provider failed mid-answer with
/// `finish_reason: "error"`: a failure worth retrying, not a finished (cut)
/// answer.
#[tokio::test]
async fn finish_reason_error_is_a_failure_worth_retrying() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "The first half"}), json!("error")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = events.last().unwrap();
    assert_eq!(
        summary(last),
        json!({"type": "error", "reason": "error", "error": with_error(message(
            json!([{"type": "text", "text": "The first half"}]), no_usage(), "error"),
            "The provider failed during the response (finish_reason \"error\")")})
    );
    let agent_ai::AssistantMessageEvent::Error { error, .. } = last else {
        panic!("{last:?}");
    };
    assert!(
        error
            .error_kind
            .as_ref()
            .is_some_and(|kind| kind.is_transient())
    );
}

/// A server that escapes text as UTF-16 (`\ud83d\ude00`) may split an
/// emoji's surrogate pair between two chunks, or send a half alone. Pi's
/// `JSON.parse` takes both and its string concatenation joins the pair; here
/// the whole answer failed ("Malformed stream event: unexpected end of hex
/// escape"). The pair is joined; a half with no partner is U+FFFD.
#[tokio::test]
async fn an_emoji_split_between_chunks_is_joined_and_a_lone_surrogate_is_a_replacement() {
    let content = |text: &str| {
        Step::Send(format!(
            "data: {{\"id\":\"chatcmpl-1\",\"model\":\"gpt-test\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
        ))
    };
    let server = TestServer::start(vec![stream(vec![
        content(r"smile \ud83d"),
        content(r"\ude00 end, lone \udc00 and \ud83d"),
        chunk(json!({}), json!("stop")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let deltas: Vec<Value> = summaries(&events)
        .into_iter()
        .filter(|event| event["type"] == "text_delta")
        .map(|event| event["delta"].clone())
        .collect();
    assert_eq!(
        deltas,
        [
            json!("smile \u{1F600}"),
            json!(" end, lone \u{FFFD} and \u{FFFD}")
        ]
    );
    assert_eq!(
        final_message(&events)["content"],
        json!([{"type": "text", "text": "smile \u{1F600} end, lone \u{FFFD} and \u{FFFD}"}])
    );
}

// ---------------------------------------------------------------- failures

/// Deviation P2: a body cut short is an error, not a finished answer.
#[tokio::test]
async fn stream_closed_without_done_or_finish_reason_is_an_error_keeping_the_partial_text() {
    let server = TestServer::start(vec![Reply::Stream {
        chunked: false,
        steps: vec![chunk(json!({"content": "Hel"}), Value::Null)],
    }])
    .await;
    let events = run(config(&server), &context()).await;
    let partial = json!([{"type": "text", "text": "Hel"}]);
    assert_eq!(
        summaries(&events),
        vec![
            json!({"type": "start"}),
            json!({"type": "text_start", "contentIndex": 0}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
            json!({"type": "error", "reason": "error", "error": with_error(
                message(partial, no_usage(), "error"),
                "Connection closed before the response was complete")}),
        ]
    );
}

#[tokio::test]
async fn chunked_stream_cut_mid_way_is_a_connection_error() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hel"}), Value::Null),
        Step::Send("data: {\"id\": \"chatcmpl-1\", \"choi".into()),
        Step::Cut,
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        (last.stop_reason, last.text(), last.error_message.as_deref()),
        (
            StopReason::Error,
            "Hel".to_owned(),
            Some(
                "Connection error: error decoding response body: error reading a body from \
                 connection: unexpected EOF during chunk size line"
            ),
        )
    );
}

/// A connection reset after the headers, before any event (a proxy that
/// lost its upstream), is retried by the provider as a refused connection
/// is: nothing was shown, so nothing is repeated. It ended the answer at
/// once with `Connection error: ... Connection reset by peer`, though the
/// documented retries promised otherwise.
#[tokio::test]
async fn a_connection_reset_before_any_event_is_retried() {
    let server = TestServer::start(vec![
        stream(vec![
            Step::Send(": open\n\n".into()),
            // The client reads the headers first (a reset before them is
            // a failed send, retried all along).
            Step::Pause(Duration::from_millis(100)),
            Step::Reset,
        ]),
        text_answer(),
    ])
    .await;
    let mut config = config(&server);
    let notices = recorded_notices(&mut config);
    let events = run(config, &context()).await;

    assert_eq!(trace(&events).last().unwrap(), "done stop");
    assert_eq!(events.last().unwrap().message().text(), "Hello world");
    let notices = notices.lock().unwrap();
    assert_eq!(notices.len(), 1);
    assert!(
        notices[0]
            .message
            .starts_with("Connection error: error decoding response body"),
        "{:?}",
        notices[0]
    );
    assert_eq!(server.requests().len(), 2);
}

/// Cut after the finish reason (the usage chunk and `[DONE]` lost), the
/// answer is complete: it was discarded and asked for again, written and
/// billed twice.
#[tokio::test]
async fn a_stream_cut_after_its_finish_reason_keeps_the_answer() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hello"}), json!("stop")),
        Step::Send("data: {\"id\": \"chatcmpl-1\", \"usa".into()),
        Step::Cut,
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        (last.stop_reason, last.text(), last.error_message.as_deref()),
        (StopReason::Stop, "Hello".to_owned(), None)
    );
    assert_eq!(server.requests().len(), 1, "not asked again");
}

#[tokio::test]
async fn a_server_that_is_not_listening_is_named_with_the_cause() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config = ProviderConfig::new(format!("http://127.0.0.1:{port}/v1"), None);
    config.retry = RetryPolicy::none();
    let events = run(config, &context()).await;
    let last = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        (last.stop_reason, last.error_message.as_deref()),
        (
            StopReason::Error,
            Some(
                format!(
                    "Connection error: could not connect to http://127.0.0.1:{port}/v1/chat/completions: \
                     Connection refused (os error 111)"
                )
                .as_str()
            ),
        )
    );
    assert_eq!(last.error_kind, Some(agent_ai::ErrorKind::Connection));
}

#[tokio::test]
async fn malformed_event_json_is_an_error_naming_it() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hi"}), Value::Null),
        Step::Send("data: {\"choices\": [oops]}\n\n".into()),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    assert_eq!(
        summary(events.last().unwrap()),
        json!({"type": "error", "reason": "error", "error": with_error(
            message(json!([{"type": "text", "text": "Hi"}]), no_usage(), "error"),
            "Malformed stream event: expected value at line 1 column 14 in \"{\\\"choices\\\": [oops]}\"")})
    );
}

#[tokio::test]
async fn error_object_inside_the_stream_ends_with_its_message() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hi"}), Value::Null),
        data(&json!({"error": {"message": "Upstream provider overloaded", "code": 502}})),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        last.error_message.as_deref(),
        Some("Upstream provider overloaded")
    );
}

/// Deviation P6: an error object that says "not now" (`code` 502) before any
/// content is retried like a refused request, visibly, from a fresh start.
/// Foundry Local and other servers put `"error": null` in every chunk: no
/// error. It failed every answer with the message "null".
#[tokio::test]
async fn an_error_field_that_is_null_is_no_error() {
    let with_null_error = |delta: Value, finish_reason: Value| {
        data(&json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "gpt-test",
            "error": null,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        }))
    };
    let server = TestServer::start(vec![stream(vec![
        with_null_error(json!({"content": "Hello"}), Value::Null),
        with_null_error(json!({}), json!("stop")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = final_message(&events);
    assert_eq!(last["stopReason"], "stop", "{last}");
    assert_eq!(last["content"], json!([{"type": "text", "text": "Hello"}]));
}

#[tokio::test]
async fn error_object_before_any_content_is_retried() {
    let overloaded = json!({"error": {"message": "Upstream provider overloaded", "code": 502}});
    error_object_is_retried(overloaded, "Upstream provider overloaded").await;
}

/// OpenAI's own in-stream failure says "not now" by its `type` alone, with
/// a `null` code: it is retried as the same with a code 502 is. It ended
/// the answer.
#[tokio::test]
async fn error_object_of_a_transient_type_without_a_code_is_retried() {
    let message = "The server had an error while processing your request. Sorry about that!";
    let failed = json!({"error": {"message": message, "type": "server_error", "code": null}});
    error_object_is_retried(failed, &format!("server_error: {message}")).await;
}

/// OpenRouter and others say "not now" with a string `code` and no
/// `type`, in the chunk that also says `finish_reason: "error"` or
/// alone: retried as the same `type` is. It ended the answer as final,
/// while a `finish_reason: "error"` without it was retried.
#[tokio::test]
async fn error_object_with_a_transient_string_code_is_retried() {
    let message = "Internal error mid-stream";
    let alone = json!({"id": "x", "error": {"message": message, "code": "server_error"}});
    error_object_is_retried(alone, message).await;
    let with_finish_reason = json!({
        "id": "x",
        "error": {"message": message, "code": "server_error"},
        "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]
    });
    error_object_is_retried(with_finish_reason, message).await;
}

/// `error` as the stream's first event is retried once, the notice quoting
/// `message`, and the answer after it is the result.
async fn error_object_is_retried(error: Value, message: &str) {
    let server = TestServer::start(vec![stream(vec![data(&error)]), text_answer()]).await;
    let mut config = config(&server);
    let notices = recorded_notices(&mut config);
    let events = run(config, &context()).await;

    assert_eq!(
        trace(&events),
        [
            "start",
            "text_start 0",
            r#"text_delta 0 "Hello""#,
            r#"text_delta 0 " world""#,
            r#"text_end 0 "Hello world""#,
            "done stop",
        ]
    );
    assert_eq!(
        *notices.lock().unwrap(),
        vec![RetryNotice {
            attempt: 1,
            max_retries: 2,
            delay: Duration::from_millis(5),
            status: None,
            message: message.into(),
        }]
    );
    assert_eq!(server.requests().len(), 2);
}

/// Deviation P6: retries are visible (`on_retry`) and honour `retry-after`.
#[tokio::test]
async fn rate_limit_with_retry_after_is_retried_visibly_then_succeeds() {
    let server = TestServer::start(vec![
        Reply::Status {
            status: 429,
            headers: vec![("retry-after", "0".into())],
            body: r#"{"error":{"message":"Rate limit reached for gpt-test","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
        },
        text_answer(),
    ])
    .await;
    let mut config = config(&server);
    let notices = recorded_notices(&mut config);
    let events = run(config, &context()).await;

    assert_eq!(
        summary(events.last().unwrap()),
        json!({"type": "done", "reason": "stop", "message": message(
            json!([{"type": "text", "text": "Hello world"}]), usage(12, 2, 0), "stop")})
    );
    // retry-after: 0 wins over the 5 ms backoff.
    assert_eq!(
        *notices.lock().unwrap(),
        vec![RetryNotice {
            attempt: 1,
            max_retries: 2,
            delay: Duration::ZERO,
            status: Some(429),
            message: "429 requests: Rate limit reached for gpt-test".into(),
        }]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

/// Deviation P6: backoff doubles from the base delay; the last error is
/// returned with why no more retries were made. The stream starts with
/// `start` before anything is sent, as every provider's does.
#[tokio::test]
async fn server_error_after_retries_are_exhausted_carries_the_servers_message() {
    let failure = || {
        Reply::Status {
        status: 500,
        headers: vec![],
        body: r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#.into(),
    }
    };
    let server = TestServer::start(vec![failure(), failure(), failure()]).await;
    let mut config = config(&server);
    let notices = recorded_notices(&mut config);
    let events = run(config, &context()).await;

    let mut error = with_error(
        message(json!([]), no_usage(), "error"),
        "500 server_error: The server had an error while processing your request. \
         (gave up after 2 retries)",
    );
    error.as_object_mut().unwrap().remove("responseId");
    assert_eq!(
        summaries(&events),
        vec![
            json!({"type": "start"}),
            json!({"type": "error", "reason": "error", "error": error})
        ]
    );
    let notice = |attempt, delay| RetryNotice {
        attempt,
        max_retries: 2,
        delay: Duration::from_millis(delay),
        status: Some(500),
        message: "500 server_error: The server had an error while processing your request.".into(),
    };
    assert_eq!(*notices.lock().unwrap(), vec![notice(1, 5), notice(2, 10)]);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn client_error_is_not_retried() {
    let server = TestServer::start(vec![Reply::Status {
        status: 401,
        headers: vec![],
        body: r#"{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error"}}"#.into(),
    }])
    .await;
    let mut config = config(&server);
    let notices = recorded_notices(&mut config);
    let events = run(config, &context()).await;
    assert_eq!(
        events
            .last()
            .unwrap()
            .final_message()
            .unwrap()
            .error_message
            .as_deref(),
        Some("401 invalid_request_error: Incorrect API key provided: sk-test.")
    );
    assert_eq!(*notices.lock().unwrap(), vec![]);
    assert_eq!(server.requests().len(), 1);
}

/// Refusals the session would not ask again are not sent again by the
/// provider either (`ErrorKind::is_retryable`, one rule for both layers):
/// an account out of credit (a 429 `insufficient_quota`), an overflow that
/// came with a 5xx (re-sent twice at full size before the session's
/// overflow recovery could start), and a client error whose message merely
/// contains "overloaded".
#[tokio::test]
async fn refusals_the_session_would_not_retry_are_sent_once() {
    let cases = [
        (
            429,
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
            "429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.",
        ),
        (
            500,
            r#"{"error":{"message":"prompt is too long: 300000 tokens > 200000 maximum","type":"invalid_request_error"}}"#,
            "500 invalid_request_error: prompt is too long: 300000 tokens > 200000 maximum",
        ),
        (
            400,
            r#"{"error":{"message":"tool 'overloaded' is defined twice","type":"invalid_request_error"}}"#,
            "400 invalid_request_error: tool 'overloaded' is defined twice",
        ),
    ];
    for (status, body, said) in cases {
        let refusal = || Reply::Status {
            status,
            headers: vec![],
            body: body.into(),
        };
        let server = TestServer::start(vec![refusal(), refusal(), refusal()]).await;
        let mut config = config(&server);
        let notices = recorded_notices(&mut config);
        let events = run(config, &context()).await;
        let last = events.last().unwrap().final_message().unwrap();
        assert_eq!(last.error_message.as_deref(), Some(said));
        assert_eq!(*notices.lock().unwrap(), vec![], "{said}");
        assert_eq!(server.requests().len(), 1, "{said}");
    }
}

/// A success that is a whole JSON document, not the event stream asked
/// for: a proxy's error said with status 200, or a server that ignores
/// `"stream": true`. Read as a stream it was a cut connection, retried
/// three times, the server's words never shown; also when it is labelled
/// as an event stream (or as text), where the event parser skips it.
#[tokio::test]
async fn a_json_body_instead_of_a_stream_says_what_the_server_sent_and_is_not_retried() {
    let cases = [
        (
            r#"{"error":{"message":"Invalid API key provided for upstream","type":"auth"}}"#,
            "200 the server answered without an event stream: auth: Invalid API key provided for upstream",
        ),
        (
            r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}"#,
            "200 the server answered at once instead of streaming (it ignores \"stream\": true), which this client cannot read",
        ),
    ];
    let kinds = ["application/json", "text/event-stream", "text/plain"];
    for ((body, said), kind) in cases
        .into_iter()
        .flat_map(|case| kinds.map(|kind| (case, kind)))
    {
        let server = TestServer::start(vec![Reply::Status {
            status: 200,
            headers: vec![("content-type", kind.into())],
            body: format!("{body}\n"),
        }])
        .await;
        let mut config = config(&server);
        let notices = recorded_notices(&mut config);
        let events = run(config, &context()).await;
        let last = events.last().unwrap().final_message().unwrap();
        assert_eq!(last.error_message.as_deref(), Some(said), "{kind}");
        assert!(!last.error_kind.as_ref().unwrap().is_transient(), "{kind}");
        assert_eq!(*notices.lock().unwrap(), vec![], "{kind}");
        assert_eq!(server.requests().len(), 1, "{kind}");
    }
}

/// nginx's error page: its title says the status, which the error says
/// once (it read `502 502 Bad Gateway (an HTML page)`).
#[tokio::test]
async fn a_gateways_error_page_says_its_status_once() {
    let page = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n";
    let server = TestServer::start(vec![Reply::Status {
        status: 502,
        headers: vec![("content-type", "text/html".into())],
        body: page.into(),
    }])
    .await;
    let mut config = config(&server);
    config.retry = RetryPolicy::none();
    let events = run(config, &context()).await;
    assert_eq!(
        trace(&events),
        ["start", "error error: 502 Bad Gateway (an HTML page)"]
    );
}

/// Ollama's native API streams JSON lines, not events (a base URL without
/// `/v1`): said once with what it sent, not retried as a cut connection.
#[tokio::test]
async fn json_lines_instead_of_a_stream_are_said_and_not_retried() {
    let body = "{\"model\":\"qwen\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}\n";
    let server = TestServer::start(vec![Reply::Status {
        status: 200,
        headers: vec![("content-type", "application/x-ndjson".into())],
        body: body.into(),
    }])
    .await;
    let events = run(config(&server), &context()).await;
    let last = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        last.error_message.as_deref(),
        Some(
            "200 the server answered without an event stream: {\"model\":\"qwen\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}"
        )
    );
    assert_eq!(server.requests().len(), 1);
}

/// Some servers send a call's arguments as a JSON object, not as the
/// JSON text the API defines: they are the call's (they became `{}`).
#[tokio::test]
async fn arguments_sent_as_an_object_are_the_calls() {
    let server = TestServer::start(vec![stream(vec![
        call_fragment(json!([{"index": 0, "id": "call_0", "type": "function",
            "function": {"name": "bash", "arguments": {"command": "ls"}}}])),
        chunk(json!({}), json!("tool_calls")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = final_message(&events);
    assert_eq!(
        last["content"][0]["arguments"],
        json!({"command": "ls"}),
        "{last}"
    );
}

/// Mistral's reasoning models stream `content` as an array of parts: the
/// text parts are the answer (it was dropped).
#[tokio::test]
async fn content_sent_as_parts_keeps_its_text() {
    let server = TestServer::start(vec![stream(vec![
        chunk(
            json!({"content": [{"type": "text", "text": "Hel"}]}),
            Value::Null,
        ),
        chunk(
            json!({"content": [{"type": "text", "text": "lo"}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    let last = final_message(&events);
    assert_eq!(
        last["content"],
        json!([{"type": "text", "text": "Hello"}]),
        "{last}"
    );
}

#[tokio::test]
async fn malformed_tool_arguments_are_repaired_or_become_an_empty_object() {
    let server = TestServer::start(vec![stream(vec![
        // A raw newline inside a string and a regex backslash: repairable.
        call_fragment(json!([{"index": 0, "id": "call_0", "type": "function",
            "function": {"name": "read", "arguments": "{\"path\": \"a\nb\", \"pattern\": \"\\d+\"}"}}])),
        // An extra closing brace: not JSON, not a JSON prefix.
        call_fragment(json!([{"index": 1, "id": "call_1", "type": "function",
            "function": {"name": "read", "arguments": "{\"path\": \"c.txt\"}}"}}])),
        chunk(json!({}), json!("tool_calls")),
        done(),
    ])])
    .await;
    let events = run(config(&server), &context()).await;
    assert_eq!(
        final_message(&events)["content"],
        json!([
            {"type": "toolCall", "id": "call_0", "name": "read",
             "arguments": {"path": "a\nb", "pattern": "\\d+"}},
            {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {}}
        ])
    );
}

/// Deviation P3: a stall past `read_timeout` ends the stream.
#[tokio::test]
async fn stream_that_stalls_past_the_read_timeout_ends_in_an_error() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hel"}), Value::Null),
        Step::Hold,
    ])])
    .await;
    let mut config = config(&server);
    config.read_timeout = Duration::from_millis(200);
    let events = run(config, &context()).await;
    assert_eq!(
        summaries(&events),
        vec![
            json!({"type": "start"}),
            json!({"type": "text_start", "contentIndex": 0}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
            json!({"type": "error", "reason": "error", "error": with_error(
                message(json!([{"type": "text", "text": "Hel"}]), no_usage(), "error"),
                "Request timed out: no data received for 200ms")}),
        ]
    );
}

/// A zero read timeout means none, as a zero timeout does in curl and Node:
/// taken as a deadline, it failed every request at once with `Request timed
/// out: no data received for 0ns`.
#[tokio::test]
async fn a_zero_read_timeout_waits_as_long_as_the_stream_takes() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hel"}), Value::Null),
        Step::Pause(Duration::from_millis(50)),
        chunk(json!({"content": "lo"}), json!("stop")),
        done(),
    ])])
    .await;
    let mut config = config(&server);
    config.read_timeout = Duration::ZERO;
    let events = run(config, &context()).await;
    assert_eq!(
        final_message(&events),
        message(
            json!([{"type": "text", "text": "Hello"}]),
            no_usage(),
            "stop"
        )
    );
}

#[tokio::test]
async fn cancelling_mid_stream_ends_at_once_with_aborted() {
    let server = TestServer::start(vec![stream(vec![
        chunk(json!({"content": "Hel"}), Value::Null),
        chunk(json!({"content": "lo"}), Value::Null),
        Step::Hold,
    ])])
    .await;
    let cancel = CancellationToken::new();
    let mut stream =
        OpenAiCompletions::new(config(&server)).stream(&model(), &context(), cancel.clone());
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        if matches!(event, AssistantMessageEvent::TextDelta { .. }) {
            cancel.cancel();
        }
        events.push(event);
    }
    assert_eq!(
        summaries(&events),
        vec![
            json!({"type": "start"}),
            json!({"type": "text_start", "contentIndex": 0}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
            json!({"type": "error", "reason": "aborted", "error": with_error(
                message(json!([{"type": "text", "text": "Hel"}]), no_usage(), "aborted"),
                "Request was aborted")}),
        ]
    );
}

#[tokio::test]
async fn cancelling_during_a_retry_wait_ends_with_aborted() {
    let server = TestServer::start(vec![Reply::Status {
        status: 503,
        headers: vec![("retry-after", "4".into())],
        body: String::new(),
    }])
    .await;
    let mut config = config(&server);
    let cancel = CancellationToken::new();
    let on_cancel = cancel.clone();
    config.on_retry = Some(Arc::new(move |_: &RetryNotice| on_cancel.cancel()));
    let events: Vec<_> = OpenAiCompletions::new(config)
        .stream(&model(), &context(), cancel)
        .collect()
        .await;
    let last = events.last().unwrap().final_message().unwrap();
    assert_eq!(
        (last.stop_reason, last.error_message.as_deref()),
        (StopReason::Aborted, Some("Request was aborted"))
    );
}

// ---------------------------------------------------------------- text tool calls

fn fenced_call_answer() -> Reply {
    stream(vec![
        chunk(
            json!({"content": "```json\n{\"name\": \"read\", "}),
            Value::Null,
        ),
        chunk(
            json!({"content": "\"arguments\": {\"path\": \"README.md\"}}\n```"}),
            Value::Null,
        ),
        chunk(json!({}), json!("stop")),
        done(),
    ])
}

/// Deviation P1: a tool call written as text becomes a tool call.
#[tokio::test]
async fn tool_call_written_as_text_is_recovered_into_a_tool_call() {
    let server = TestServer::start(vec![fenced_call_answer()]).await;
    let events = run(config(&server), &context()).await;

    let mut summaries = summaries(&events);
    let id = summaries[7]["toolCall"]["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("text_call_"), "{id}");
    let block = json!({"type": "toolCall", "id": id, "name": "read",
                       "arguments": {"path": "README.md"}, "recoveredFromText": true});
    let text = "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"README.md\"}}\n```";
    for summary in &mut summaries {
        summary.as_object_mut().unwrap().remove("partialArguments");
    }
    assert_eq!(
        summaries,
        vec![
            json!({"type": "start"}),
            json!({"type": "text_start", "contentIndex": 0}),
            json!({"type": "text_delta", "contentIndex": 0, "delta": "```json\n{\"name\": \"read\", "}),
            json!({"type": "text_delta", "contentIndex": 0,
                   "delta": "\"arguments\": {\"path\": \"README.md\"}}\n```"}),
            json!({"type": "text_end", "contentIndex": 0, "content": text}),
            json!({"type": "toolcall_start", "contentIndex": 0}),
            json!({"type": "toolcall_delta", "contentIndex": 0, "delta": "{\"path\":\"README.md\"}"}),
            json!({"type": "toolcall_end", "contentIndex": 0, "toolCall": block}),
            json!({"type": "done", "reason": "toolUse",
                   "message": message(json!([block]), no_usage(), "toolUse")}),
        ]
    );
}

/// Deviation P1, switched off: Pi's behaviour.
#[tokio::test]
async fn text_tool_call_recovery_can_be_turned_off() {
    let server = TestServer::start(vec![fenced_call_answer()]).await;
    let mut config = config(&server);
    config.recover_text_tool_calls = false;
    let events = run(config, &context()).await;
    assert_eq!(
        final_message(&events),
        message(
            json!([{"type": "text", "text":
                "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"README.md\"}}\n```"}]),
            no_usage(),
            "stop"
        )
    );
}

// ---------------------------------------------------------------- the request

fn text_block(text: &str) -> Content {
    Content::Text(TextContent {
        text: text.into(),
        text_signature: None,
    })
}

fn image(data: &str) -> Content {
    Content::Image(ImageContent {
        data: data.into(),
        mime_type: "image/png".into(),
    })
}

fn assistant(content: Vec<AssistantContent>, stop_reason: StopReason) -> Message {
    let mut message = AssistantMessage::empty(&model());
    message.content = content;
    message.stop_reason = stop_reason;
    Message::Assistant(message)
}

fn result(id: &str, content: Vec<Content>, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content,
        details: None,
        is_error,
        timestamp: 0,
    })
}

#[tokio::test]
async fn request_body_carries_tools_history_tool_results_and_images_as_openai_expects() {
    let server = TestServer::start(vec![text_answer()]).await;
    let mut model = model();
    model.supports_images = true;
    let call = |id: &str, path: &str| {
        AssistantContent::ToolCall(ToolCall::new(id, "read", json!({"path": path})))
    };
    let context = Context {
        system_prompt: Some("You are a test.".into()),
        messages: vec![
            Message::User(UserMessage {
                content: UserContent::Blocks(vec![text_block("What is this?"), image("AAAA")]),
                timestamp: 0,
            }),
            assistant(
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "Look at files.".into(),
                        thinking_signature: Some("reasoning_content".into()),
                        redacted: None,
                    }),
                    AssistantContent::Text(TextContent {
                        text: "Reading.".into(),
                        text_signature: None,
                    }),
                    call("call_1", "a.txt"),
                    call("call_2", "b.png"),
                ],
                StopReason::ToolUse,
            ),
            result(
                "call_1",
                vec![text_block("line 1"), text_block("line 2")],
                false,
            ),
            result("call_2", vec![image("BBBB")], false),
            // A failed turn is not replayed.
            assistant(vec![call("call_x", "x")], StopReason::Error),
            assistant(vec![call("call_3", "c.txt")], StopReason::ToolUse),
            // call_3 never got a result.
            Message::User(UserMessage::text("Go on")),
        ]
        .into(),
        tools: vec![tool("read")].into(),
        reasoning: None,
        max_tokens: None,
    };
    let mut config = config(&server);
    config.temperature = Some(0.5);
    let events: Vec<_> = OpenAiCompletions::new(config)
        .stream(&model, &context, CancellationToken::new())
        .collect()
        .await;
    assert_eq!(
        events.last().unwrap().message().stop_reason,
        StopReason::Stop
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "You are a test."},
                {"role": "user", "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ]},
                {"role": "assistant", "content": "Reading.", "reasoning_content": "Look at files.",
                 "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}},
                    {"id": "call_2", "type": "function",
                     "function": {"name": "read", "arguments": "{\"path\":\"b.png\"}"}}
                 ]},
                {"role": "tool", "content": "line 1\nline 2", "tool_call_id": "call_1"},
                {"role": "tool", "content": "(see attached image)", "tool_call_id": "call_2"},
                {"role": "user", "content": [
                    {"type": "text", "text": "Attached image(s) from tool result:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_3", "type": "function",
                     "function": {"name": "read", "arguments": "{\"path\":\"c.txt\"}"}}
                ]},
                {"role": "tool", "content": "No result provided", "tool_call_id": "call_3"},
                {"role": "user", "content": "Go on"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 8192,
            "temperature": 0.5,
            "tools": [{
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "The read tool.",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string", "description": "Path"}},
                        "required": ["path"]
                    },
                    "strict": false
                }
            }]
        })
    );
}

#[tokio::test]
async fn images_are_left_out_for_a_model_without_image_input() {
    let server = TestServer::start(vec![text_answer()]).await;
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage {
                content: UserContent::Blocks(vec![text_block("Look"), image("AAAA")]),
                timestamp: 0,
            }),
            assistant(
                vec![AssistantContent::ToolCall(ToolCall::new(
                    "c1",
                    "read",
                    json!({}),
                ))],
                StopReason::ToolUse,
            ),
            result("c1", vec![image("BBBB")], false),
        ]
        .into(),
        tools: vec![].into(),
        reasoning: None,
        max_tokens: None,
    };
    run(config(&server), &context).await;
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Look"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ]},
            {"role": "tool", "content": "(see attached image)", "tool_call_id": "c1"}
        ])
    );
    // No tools, but tool history: an empty list (proxies require it).
    assert_eq!(body["tools"], json!([]));
}

/// Deviation P1: the result of a call recovered from text goes back with a
/// line asking for the answer (small models otherwise repeat the call); the
/// result of a real tool call goes back as it is.
#[tokio::test]
async fn results_of_recovered_calls_carry_the_nudge_and_others_do_not() {
    let server = TestServer::start(vec![text_answer()]).await;
    let mut recovered = ToolCall::new("text_call_1", "read", json!({"path": "a.txt"}));
    recovered.recovered_from_text = Some(true);
    let context = Context {
        system_prompt: None,
        messages: vec![
            Message::User(UserMessage::text("Read a.txt and b.txt")),
            assistant(
                vec![AssistantContent::ToolCall(recovered)],
                StopReason::ToolUse,
            ),
            result("text_call_1", vec![text_block("alpha")], false),
            assistant(
                vec![AssistantContent::ToolCall(ToolCall::new(
                    "call_2",
                    "read",
                    json!({"path": "b.txt"}),
                ))],
                StopReason::ToolUse,
            ),
            result("call_2", vec![text_block("beta")], false),
        ]
        .into(),
        tools: vec![tool("read")].into(),
        reasoning: None,
        max_tokens: None,
    };
    run(config(&server), &context).await;

    let body = &server.requests()[0].body;
    let tool_messages: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        tool_messages,
        [
            &json!({"role": "tool", "tool_call_id": "text_call_1",
                    "content": format!("alpha\n\n{RECOVERED_RESULT_NUDGE}")}),
            &json!({"role": "tool", "tool_call_id": "call_2", "content": "beta"}),
        ]
    );
}

// ---------------------------------------------------------------- thinking

/// The `reasoning_effort` of one request per `(model, level)`, in order
/// (`None`: the field was not sent).
async fn reasoning_efforts(cases: &[(Model, Option<ThinkingLevel>)]) -> Vec<Option<String>> {
    let server = TestServer::start(cases.iter().map(|_| text_answer()).collect()).await;
    let provider = OpenAiCompletions::new(config(&server));
    for (model, level) in cases {
        let context = Context {
            reasoning: *level,
            ..context()
        };
        let events: Vec<_> = provider
            .stream(model, &context, CancellationToken::new())
            .collect()
            .await;
        assert_eq!(trace(&events).last().unwrap(), "done stop");
    }
    server
        .requests()
        .iter()
        .map(|request| {
            let effort = request.body.get("reasoning_effort");
            effort.map(|effort| effort.as_str().unwrap().to_owned())
        })
        .collect()
}

#[tokio::test]
async fn thinking_levels_are_sent_as_reasoning_effort_for_reasoning_models_only() {
    use ThinkingLevel::*;
    let mut reasoning = model();
    reasoning.reasoning = true;
    let mut cases: Vec<(Model, Option<ThinkingLevel>)> = ThinkingLevel::ALL
        .into_iter()
        .map(|level| (reasoning.clone(), Some(level)))
        .collect();
    cases.push((reasoning.clone(), None));
    cases.push((model(), Some(High)));
    let sent = reasoning_efforts(&cases).await;
    let expected = [
        None,
        Some("minimal"),
        Some("low"),
        Some("medium"),
        Some("high"),
        // xhigh without the model's map naming it is clamped to high.
        Some("high"),
        None,
        // A model without reasoning gets no effort.
        None,
    ];
    let expected: Vec<Option<String>> = expected.iter().map(|e| e.map(str::to_owned)).collect();
    assert_eq!(sent, expected);
}

#[tokio::test]
async fn the_models_level_map_renames_levels_on_the_wire() {
    use ThinkingLevel::*;
    let mut model = model();
    model.reasoning = true;
    model.thinking_level_map = [
        (Off, Some("none".to_owned())),
        (Xhigh, Some("xhigh".to_owned())),
        (Minimal, None),
    ]
    .into_iter()
    .collect();
    let cases: Vec<_> = [Off, Minimal, Xhigh]
        .into_iter()
        .map(|level| (model.clone(), Some(level)))
        .collect();
    let sent = reasoning_efforts(&cases).await;
    assert_eq!(
        sent,
        [
            Some("none".into()),
            Some("low".into()),
            Some("xhigh".into())
        ],
        "off as the map says, minimal (unsupported) clamped up to low, xhigh named"
    );
}
