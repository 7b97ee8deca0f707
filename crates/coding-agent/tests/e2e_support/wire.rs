//! The two wire formats the binary speaks, byte for byte as the real APIs
//! stream them: OpenAI chat completions (`data: {chunk}` lines, usage in a
//! last chunk with no choices, then `data: [DONE]`) and Anthropic messages
//! (`event: message_start` ... `message_stop`, with a `ping`).
//!
//! [`Answer`] says what the model answers, independent of the format;
//! [`Wire::events`] writes it in one; [`Wire::transcript`] reads back a
//! request body as one line per message part, the same for both formats, so a
//! test states the conversation once.

use std::net::SocketAddr;

use serde_json::{Value, json};

/// The model id every test asks for.
pub const MODEL: &str = "e2e-model";

/// The API key every test passes through the provider's environment variable.
pub const API_KEY: &str = "sk-e2e-dummy";

/// A wire format and the built-in provider that speaks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// `--provider openai`: `POST /v1/chat/completions`.
    OpenAi,
    /// `--provider anthropic`: `POST /v1/messages`.
    Anthropic,
}

/// One tool call the model makes.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Value,
}

/// What the model answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Text, streamed in these pieces.
    Text(Vec<String>),
    /// Tool calls, each with its arguments streamed in two fragments.
    Calls(Vec<Call>),
}

impl Answer {
    /// Text streamed in `pieces`.
    pub fn text(pieces: &[&str]) -> Self {
        Answer::Text(pieces.iter().map(|&p| p.to_owned()).collect())
    }

    /// One tool call.
    pub fn call(id: &str, name: &str, args: Value) -> Self {
        Answer::Calls(vec![Call {
            id: id.into(),
            name: name.into(),
            args,
        }])
    }
}

impl Wire {
    /// The `--provider` name.
    pub fn provider(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
        }
    }

    /// The environment variable the provider reads its key from.
    pub fn key_env(self) -> &'static str {
        match self {
            Wire::OpenAi => "OPENAI_API_KEY",
            Wire::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The `--base-url` for a server at `addr`: OpenAI's includes the API
    /// version, Anthropic's is the host (the provider adds `/v1/messages`).
    pub fn base_url(self, addr: SocketAddr) -> String {
        match self {
            Wire::OpenAi => format!("http://{addr}/v1"),
            Wire::Anthropic => format!("http://{addr}"),
        }
    }

    /// The path requests are sent to.
    pub fn path(self) -> &'static str {
        match self {
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
    }

    /// The header carrying the key, and its expected value.
    pub fn auth_header(self) -> (&'static str, String) {
        match self {
            Wire::OpenAi => ("authorization", format!("Bearer {API_KEY}")),
            Wire::Anthropic => ("x-api-key", API_KEY.to_owned()),
        }
    }

    /// `answer` as this API streams it.
    pub fn events(self, answer: &Answer) -> Vec<String> {
        match self {
            Wire::OpenAi => openai_events(answer),
            Wire::Anthropic => anthropic_events(answer),
        }
    }

    /// The request body's conversation, one line per part, system prompt left
    /// out: `user: TEXT`, `assistant: TEXT`, `assistant: call ID NAME ARGS`
    /// (ARGS as compact JSON), `tool ID: TEXT`.
    pub fn transcript(self, body: &Value) -> Vec<String> {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let mut lines = Vec::new();
        for message in &messages {
            let role = message["role"].as_str().unwrap_or_default();
            match self {
                Wire::OpenAi => openai_transcript(role, message, &mut lines),
                Wire::Anthropic => anthropic_transcript(role, message, &mut lines),
            }
        }
        lines
    }

    /// The names of the tools the request offers, in order.
    pub fn tool_names(self, body: &Value) -> Vec<String> {
        let pointer = match self {
            Wire::OpenAi => "/function/name",
            Wire::Anthropic => "/name",
        };
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|tool| tool.pointer(pointer)?.as_str().map(str::to_owned))
            .collect()
    }
}

fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
    });
    format!("data: {chunk}\n\n")
}

fn openai_events(answer: &Answer) -> Vec<String> {
    let mut events = Vec::new();
    let finish = match answer {
        Answer::Text(pieces) => {
            events.push(openai_chunk(
                json!({"role": "assistant", "content": ""}),
                None,
            ));
            for piece in pieces {
                events.push(openai_chunk(json!({"content": piece}), None));
            }
            "stop"
        }
        Answer::Calls(calls) => {
            events.push(openai_chunk(
                json!({"role": "assistant", "content": null}),
                None,
            ));
            for (index, call) in calls.iter().enumerate() {
                events.push(openai_chunk(
                    json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": ""}}]}),
                    None,
                ));
                for fragment in halves(&call.args.to_string()) {
                    events.push(openai_chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                        None,
                    ));
                }
            }
            "tool_calls"
        }
    };
    events.push(openai_chunk(json!({}), Some(finish)));
    let usage = json!({
        "id": "chatcmpl-e2e",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [],
        "usage": {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128},
    });
    events.push(format!("data: {usage}\n\n"));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn anthropic_event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

fn anthropic_events(answer: &Answer) -> Vec<String> {
    let mut events = vec![
        anthropic_event(json!({"type": "message_start", "message": {
            "id": "msg_e2e", "type": "message", "role": "assistant", "model": MODEL,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 120, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1},
        }})),
        anthropic_event(json!({"type": "ping"})),
    ];
    let stop_reason = match answer {
        Answer::Text(pieces) => {
            events.push(anthropic_event(
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ));
            for piece in pieces {
                events.push(anthropic_event(
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            events.push(anthropic_event(
                json!({"type": "content_block_stop", "index": 0}),
            ));
            "end_turn"
        }
        Answer::Calls(calls) => {
            for (index, call) in calls.iter().enumerate() {
                events.push(anthropic_event(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})));
                let args = call.args.to_string();
                for fragment in std::iter::once("").chain(halves(&args)) {
                    events.push(anthropic_event(
                        json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment}}),
                    ));
                }
                events.push(anthropic_event(
                    json!({"type": "content_block_stop", "index": index}),
                ));
            }
            "tool_use"
        }
    };
    events.push(anthropic_event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 8}})));
    events.push(anthropic_event(json!({"type": "message_stop"})));
    events
}

/// `text` in two pieces, split at a character boundary near the middle.
fn halves(text: &str) -> [&str; 2] {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle += 1;
    }
    [&text[..middle], &text[middle..]]
}

/// Compact JSON of arguments, whether sent as an object or a JSON string.
fn compact(args: &Value) -> String {
    match args {
        Value::String(text) => serde_json::from_str::<Value>(text)
            .map_or_else(|_| text.clone(), |value| value.to_string()),
        other => other.to_string(),
    }
}

/// The text of a content value: a string, or the text blocks joined by newlines.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn openai_transcript(role: &str, message: &Value, lines: &mut Vec<String>) {
    match role {
        "user" => lines.push(format!("user: {}", text_of(&message["content"]))),
        "assistant" => {
            if let Some(text) = message["content"].as_str() {
                lines.push(format!("assistant: {text}"));
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                lines.push(format!(
                    "assistant: call {} {} {}",
                    call["id"].as_str().unwrap_or_default(),
                    call["function"]["name"].as_str().unwrap_or_default(),
                    compact(&call["function"]["arguments"]),
                ));
            }
        }
        "tool" => lines.push(format!(
            "tool {}: {}",
            message["tool_call_id"].as_str().unwrap_or_default(),
            text_of(&message["content"]),
        )),
        _ => {} // the system prompt
    }
}

fn anthropic_transcript(role: &str, message: &Value, lines: &mut Vec<String>) {
    let blocks = match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    };
    for block in blocks {
        let line = match block["type"].as_str().unwrap_or_default() {
            "text" => format!("{role}: {}", block["text"].as_str().unwrap_or_default()),
            "tool_use" => format!(
                "assistant: call {} {} {}",
                block["id"].as_str().unwrap_or_default(),
                block["name"].as_str().unwrap_or_default(),
                compact(&block["input"]),
            ),
            "tool_result" => format!(
                "tool {}: {}",
                block["tool_use_id"].as_str().unwrap_or_default(),
                text_of(&block["content"]),
            ),
            other => format!("{role}: <{other} block>"),
        };
        lines.push(line);
    }
}
