//! The `openai-completions` API: `POST {base_url}/chat/completions` with
//! `stream: true`, as OpenAI and most OpenAI-compatible servers (vLLM,
//! llama.cpp, Ollama, LM Studio, OpenRouter, Groq, ...) speak it.
//!
//! The request follows Pi's `openai-completions.ts`: tools as
//! `{type: "function", function: {name, description, parameters, strict:
//! false}}`; the history through [`transform_messages`], then user text and
//! images, assistant text + `tool_calls` (arguments as a JSON string), tool
//! results as `role: "tool"` messages with their images in one following user
//! message.
//!
//! The response is assembled from `data:` chunks into Pi's event sequence:
//! text and reasoning (`reasoning_content`, `reasoning`, `reasoning_text`)
//! blocks one after another, tool calls by their `index` so fragments of
//! parallel calls may interleave, usage from the final chunk. A completed
//! answer with no tool calls whose text is a tool call written out is turned
//! into one ([`super::text_tool_calls`]) unless the config turns that off.
//! Sending, retrying and reading the events is the shared
//! [`driver`](super::driver); this file is the request and the `Decoder`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::Client;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::ProviderConfig;
use super::driver::{Decoder, Flow, drive};
use super::http::{ApiError, HttpError, JsonPost, build_client};
use super::retry::is_retryable_status;
use super::sse::SseEvent;
use super::text_tool_calls::{RECOVERED_RESULT_NUDGE, recover_text_tool_calls, recovered_call_ids};
use super::transform::{IMAGE_ONLY_RESULT, transform_messages};
use crate::message::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage, Usage, UserContent, now_millis,
};
use crate::partial_json::StreamingJson;
use crate::stream::{AssistantMessageEvent, AssistantStream, Context, Model, Provider};
use crate::tool::Tool;

/// The wire API name this provider implements.
pub const API: &str = "openai-completions";

/// Text of the user message that carries tool-result images (Pi's).
const TOOL_IMAGES_TEXT: &str = "Attached image(s) from tool result:";

/// Delta fields that carry reasoning, in the order they are looked for
/// (llama.cpp and DeepSeek use `reasoning_content`, others `reasoning`).
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// A provider for `openai-completions` endpoints.
pub struct OpenAiCompletions {
    config: Arc<ProviderConfig>,
    client: Result<Client, HttpError>,
}

impl OpenAiCompletions {
    /// A provider sending to `config.base_url` (e.g. `https://api.openai.com/v1`
    /// or `http://127.0.0.1:8080/v1`). The HTTP client (connection pool) is
    /// built once here and shared by all requests.
    pub fn new(config: ProviderConfig) -> Self {
        OpenAiCompletions {
            config: Arc::new(config),
            client: build_client(),
        }
    }

    /// The POST of one request: `{base_url}/chat/completions` with the key
    /// as a bearer token.
    fn post(&self, model: &Model, context: &Context) -> Result<JsonPost, HttpError> {
        let client = self.client.clone()?;
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let authorization = self
            .config
            .api_key
            .as_ref()
            .map(|key| format!("Bearer {key}"));
        let headers = authorization
            .as_deref()
            .map(|value| ("authorization", value));
        let body = request_body(model, context, &self.config);
        JsonPost::new(client, url, headers, &body)
    }
}

impl Provider for OpenAiCompletions {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        let tools = if self.config.recover_text_tool_calls {
            context.tools.clone()
        } else {
            Arc::from([])
        };
        drive(
            Arc::clone(&self.config),
            self.post(model, context),
            Assembler::new(model, tools),
            cancel,
        )
    }
}

/// The JSON body of a chat-completions request for `context`.
pub fn request_body(model: &Model, context: &Context, config: &ProviderConfig) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context)),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.insert("max_completion_tokens".into(), json!(config.max_tokens));
    if let Some(temperature) = config.temperature_json() {
        body.insert("temperature".into(), temperature);
    }
    if !context.tools.is_empty() {
        body.insert("tools".into(), Value::Array(convert_tools(&context.tools)));
    } else if has_tool_history(&context.messages) {
        // Proxies in front of Anthropic (LiteLLM) require `tools` whenever the
        // history holds tool calls or results.
        body.insert("tools".into(), json!([]));
    }
    Value::Object(body)
}

fn convert_tools(tools: &[Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": false,
                }
            })
        })
        .collect()
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|message| match message {
        Message::ToolResult(_) => true,
        Message::Assistant(assistant) => assistant.tool_calls().next().is_some(),
        Message::User(_) => false,
    })
}

/// The `messages` array: the system prompt, then the transformed history.
fn convert_messages(model: &Model, context: &Context) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = &context.system_prompt {
        out.push(json!({"role": "system", "content": system}));
    }
    let messages = transform_messages(&context.messages, model, None);
    let recovered = recovered_call_ids(&messages);
    let mut index = 0;
    while index < messages.len() {
        match &messages[index] {
            Message::User(user) => out.extend(convert_user(model, &user.content)),
            Message::Assistant(assistant) => out.extend(convert_assistant(assistant)),
            Message::ToolResult(_) => {
                // Consecutive results go together so their images share one
                // user message after the last of them.
                let mut images = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(index) {
                    let nudge = recovered.contains(result.tool_call_id.as_str());
                    out.push(convert_tool_result(result, nudge));
                    if model.supports_images {
                        images.extend(result.content.iter().filter_map(image_part));
                    }
                    index += 1;
                }
                if !images.is_empty() {
                    let mut content = vec![json!({"type": "text", "text": TOOL_IMAGES_TEXT})];
                    content.extend(images);
                    out.push(json!({"role": "user", "content": content}));
                }
                continue;
            }
        }
        index += 1;
    }
    out
}

fn image_part(content: &Content) -> Option<Value> {
    match content {
        Content::Image(image) => Some(json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{};base64,{}", image.mime_type, image.data)},
        })),
        Content::Text(_) => None,
    }
}

fn convert_user(model: &Model, content: &UserContent) -> Option<Value> {
    match content {
        UserContent::Text(text) => Some(json!({"role": "user", "content": text})),
        UserContent::Blocks(blocks) => {
            let parts: Vec<Value> = blocks
                .iter()
                .filter_map(|block| match block {
                    Content::Text(text) => Some(json!({"type": "text", "text": text.text})),
                    Content::Image(_) if model.supports_images => image_part(block),
                    Content::Image(_) => None,
                })
                .collect();
            (!parts.is_empty()).then(|| json!({"role": "user", "content": parts}))
        }
    }
}

fn convert_assistant(message: &AssistantMessage) -> Option<Value> {
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    let text: String = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Text(text) if !text.text.trim().is_empty() => {
                Some(text.text.as_str())
            }
            _ => None,
        })
        .collect();
    out.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    let thinking: Vec<&ThinkingContent> = message
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => Some(t),
            _ => None,
        })
        .collect();
    // The signature of reasoning from this API is the delta field it came in
    // (`reasoning_content`, ...); servers like llama.cpp want it back there.
    if let Some(field) = thinking
        .first()
        .and_then(|t| t.thinking_signature.as_deref())
        .filter(|field| REASONING_FIELDS.contains(field))
    {
        let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
        out.insert(field.into(), json!(joined.join("\n")));
    }
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments.to_string()},
            })
        })
        .collect();
    let has_calls = !calls.is_empty();
    if has_calls {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    // An assistant message with neither text nor calls is rejected by most
    // servers (it comes from an aborted turn that got no content).
    (!text.is_empty() || has_calls).then_some(Value::Object(out))
}

/// A `role: "tool"` message; `nudge` adds [`RECOVERED_RESULT_NUDGE`] for a
/// call that was recovered from text.
fn convert_tool_result(result: &ToolResultMessage, nudge: bool) -> Value {
    let text: Vec<&str> = result.content.iter().filter_map(Content::as_text).collect();
    let mut text = text.join("\n");
    if text.is_empty() {
        text = IMAGE_ONLY_RESULT.to_owned();
    }
    if nudge {
        text = format!("{text}\n\n{RECOVERED_RESULT_NUDGE}");
    }
    json!({
        "role": "tool",
        "content": text,
        "tool_call_id": result.tool_call_id,
    })
}

/// A text or thinking block still receiving deltas.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OpenBlock {
    Text(usize),
    Thinking(usize),
}

/// A tool call still receiving argument fragments.
#[derive(Clone)]
struct OpenCall {
    /// The call's `index` in the response's `tool_calls`.
    wire_index: u64,
    /// Its place in the message content.
    content_index: usize,
    /// The JSON arguments so far.
    arguments: StreamingJson,
}

/// Builds the assistant message from chunks and says what changed, as events.
#[derive(Clone)]
struct Assembler {
    output: AssistantMessage,
    /// The tools sent with the request, for text tool-call recovery (empty
    /// when recovery is off).
    tools: Arc<[Tool]>,
    open: Option<OpenBlock>,
    calls: Vec<OpenCall>,
    finish_reason_seen: bool,
    /// A finish reason that means the provider refused (`content_filter`).
    failed_finish_reason: Option<String>,
}

impl Assembler {
    fn new(model: &Model, tools: Arc<[Tool]>) -> Self {
        Assembler {
            output: AssistantMessage::empty(model),
            tools,
            open: None,
            calls: Vec::new(),
            finish_reason_seen: false,
            failed_finish_reason: None,
        }
    }

    fn apply(
        &mut self,
        chunk: &Value,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) -> Result<(), HttpError> {
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if self.output.response_id.is_none() {
            self.output.response_id = chunk.get("id").and_then(Value::as_str).map(str::to_owned);
        }
        if let Some(reported) = chunk.get("model").and_then(Value::as_str)
            && reported != self.output.model
        {
            self.output.response_model = Some(reported.to_owned());
        }
        let choice = chunk.pointer("/choices/0");
        // Some servers (Moonshot) put usage in the choice instead.
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()).or_else(|| {
            choice
                .and_then(|c| c.get("usage"))
                .filter(|u| u.is_object())
        }) {
            self.output.usage = parse_usage(usage);
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason_seen = true;
            self.output.stop_reason = map_finish_reason(reason);
            if self.output.stop_reason == StopReason::Error {
                self.failed_finish_reason = Some(reason.to_owned());
            }
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = non_empty_str(delta.get("content")) {
            self.text_delta(text, events);
        }
        if let Some((field, text)) = REASONING_FIELDS
            .iter()
            .find_map(|field| non_empty_str(delta.get(*field)).map(|text| (*field, text)))
        {
            self.thinking_delta(field, text, events);
        }
        if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
            for fragment in fragments {
                self.tool_call_fragment(fragment, events);
            }
        }
        Ok(())
    }

    fn text_delta(&mut self, text: &str, events: &mut VecDeque<AssistantMessageEvent>) {
        let index = match self.open {
            Some(OpenBlock::Text(index)) => index,
            _ => {
                self.close_all(events);
                self.output
                    .content
                    .push(AssistantContent::Text(TextContent {
                        text: String::new(),
                        text_signature: None,
                    }));
                let index = self.output.content.len() - 1;
                self.open = Some(OpenBlock::Text(index));
                events.push_back(AssistantMessageEvent::TextStart {
                    content_index: index,
                    partial: self.output.clone(),
                });
                index
            }
        };
        if let Some(AssistantContent::Text(block)) = self.output.content.get_mut(index) {
            block.text.push_str(text);
        }
        events.push_back(AssistantMessageEvent::TextDelta {
            content_index: index,
            delta: text.to_owned(),
            partial: self.output.clone(),
        });
    }

    fn thinking_delta(
        &mut self,
        field: &str,
        text: &str,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) {
        let index = match self.open {
            Some(OpenBlock::Thinking(index)) => index,
            _ => {
                self.close_all(events);
                self.output
                    .content
                    .push(AssistantContent::Thinking(ThinkingContent {
                        thinking: String::new(),
                        thinking_signature: Some(field.to_owned()),
                        redacted: None,
                    }));
                let index = self.output.content.len() - 1;
                self.open = Some(OpenBlock::Thinking(index));
                events.push_back(AssistantMessageEvent::ThinkingStart {
                    content_index: index,
                    partial: self.output.clone(),
                });
                index
            }
        };
        if let Some(AssistantContent::Thinking(block)) = self.output.content.get_mut(index) {
            block.thinking.push_str(text);
        }
        events.push_back(AssistantMessageEvent::ThinkingDelta {
            content_index: index,
            delta: text.to_owned(),
            partial: self.output.clone(),
        });
    }

    /// One entry of `delta.tool_calls`. Fragments belong to the open call
    /// with the same `index`; a fragment bringing a new `id` under an index
    /// already in use (servers that number every call 0) starts a new call.
    fn tool_call_fragment(
        &mut self,
        fragment: &Value,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) {
        if let Some(open) = self.open.take() {
            self.close_block(open, events);
        }
        let id = non_empty_str(fragment.get("id"));
        let name = non_empty_str(fragment.pointer("/function/name"));
        let wire_index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            // No index: the same (or no) id continues the last call, a new id
            // starts another.
            None => match self.calls.last() {
                Some(last) if id.is_none() || id == Some(self.call_id(last)) => last.wire_index,
                _ => self
                    .calls
                    .iter()
                    .map(|c| c.wire_index + 1)
                    .max()
                    .unwrap_or(0),
            },
        };
        let existing = self.calls.iter().position(|c| c.wire_index == wire_index);
        let existing = match existing {
            Some(position) => {
                let current_id = self.call_id(&self.calls[position]);
                if id.is_some_and(|id| !current_id.is_empty() && id != current_id) {
                    let call = self.calls.remove(position);
                    self.close_call(call, events);
                    None
                } else {
                    Some(position)
                }
            }
            None => None,
        };
        let position = match existing {
            Some(position) => position,
            None => {
                self.output
                    .content
                    .push(AssistantContent::ToolCall(ToolCall::new(
                        id.unwrap_or_default(),
                        name.unwrap_or_default(),
                        Value::Object(Map::new()),
                    )));
                let content_index = self.output.content.len() - 1;
                self.calls.push(OpenCall {
                    wire_index,
                    content_index,
                    arguments: StreamingJson::new(),
                });
                events.push_back(AssistantMessageEvent::ToolCallStart {
                    content_index,
                    partial: self.output.clone(),
                });
                self.calls.len() - 1
            }
        };
        let open = &mut self.calls[position];
        let delta = fragment
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parsed = open.arguments.push(delta);
        let content_index = open.content_index;
        if let Some(AssistantContent::ToolCall(call)) = self.output.content.get_mut(content_index) {
            if let Some(id) = id {
                id.clone_into(&mut call.id);
            }
            if let Some(name) = name {
                name.clone_into(&mut call.name);
            }
            if let Some(arguments) = parsed {
                call.arguments = arguments;
            }
        }
        events.push_back(AssistantMessageEvent::ToolCallDelta {
            content_index,
            delta: delta.to_owned(),
            partial: self.output.clone(),
        });
    }

    /// The id an open call has so far (empty until the server sends one).
    fn call_id(&self, open: &OpenCall) -> &str {
        match self.output.content.get(open.content_index) {
            Some(AssistantContent::ToolCall(call)) => &call.id,
            _ => "",
        }
    }

    /// Ends the open text or thinking block and every open tool call.
    fn close_all(&mut self, events: &mut VecDeque<AssistantMessageEvent>) {
        if let Some(open) = self.open.take() {
            self.close_block(open, events);
        }
        for call in std::mem::take(&mut self.calls) {
            self.close_call(call, events);
        }
    }

    fn close_block(&mut self, open: OpenBlock, events: &mut VecDeque<AssistantMessageEvent>) {
        let event = match (open, &self.output.content) {
            (OpenBlock::Text(content_index), content) => match content.get(content_index) {
                Some(AssistantContent::Text(block)) => AssistantMessageEvent::TextEnd {
                    content_index,
                    content: block.text.clone(),
                    partial: self.output.clone(),
                },
                _ => return,
            },
            (OpenBlock::Thinking(content_index), content) => match content.get(content_index) {
                Some(AssistantContent::Thinking(block)) => AssistantMessageEvent::ThinkingEnd {
                    content_index,
                    content: block.thinking.clone(),
                    partial: self.output.clone(),
                },
                _ => return,
            },
        };
        events.push_back(event);
    }

    /// Ends a tool call: its arguments are parsed once more, repaired.
    fn close_call(&mut self, open: OpenCall, events: &mut VecDeque<AssistantMessageEvent>) {
        let Some(call) = self.settle_call(&open) else {
            return;
        };
        let tool_call = call.clone();
        events.push_back(AssistantMessageEvent::ToolCallEnd {
            content_index: open.content_index,
            tool_call,
            partial: self.output.clone(),
        });
    }

    /// Parses a call's arguments from all their text; the call, when `open`
    /// is one.
    fn settle_call(&mut self, open: &OpenCall) -> Option<&ToolCall> {
        let Some(AssistantContent::ToolCall(call)) =
            self.output.content.get_mut(open.content_index)
        else {
            return None;
        };
        call.arguments = open.arguments.finish();
        Some(call)
    }

    /// Turns a text-only answer that spells out tool calls into real calls
    /// (when recovery is on and the answer completed normally), with the
    /// tool-call events a streamed call would have had.
    fn recover_text_tool_calls(&mut self, events: &mut VecDeque<AssistantMessageEvent>) {
        if self.tools.is_empty() || self.output.stop_reason != StopReason::Stop {
            return;
        }
        let indexes = recover_text_tool_calls(&mut self.output, &self.tools, &mut new_call_id);
        for content_index in indexes {
            let Some(AssistantContent::ToolCall(call)) = self.output.content.get(content_index)
            else {
                continue;
            };
            let partial = self.output.clone();
            events.extend([
                AssistantMessageEvent::ToolCallStart {
                    content_index,
                    partial: partial.clone(),
                },
                AssistantMessageEvent::ToolCallDelta {
                    content_index,
                    delta: call.arguments.to_string(),
                    partial: partial.clone(),
                },
                AssistantMessageEvent::ToolCallEnd {
                    content_index,
                    tool_call: call.clone(),
                    partial,
                },
            ]);
        }
    }
}

impl Decoder for Assembler {
    fn message(&self) -> &AssistantMessage {
        &self.output
    }

    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) -> Result<Flow, HttpError> {
        if event.data.trim() == "[DONE]" {
            return Ok(Flow::End);
        }
        self.apply(&event.json()?, out)?;
        Ok(Flow::More)
    }

    /// Servers that omit `[DONE]` still send a finish reason; without either
    /// the connection was cut short (deviation P2).
    fn body_ended(&self) -> Result<(), HttpError> {
        if self.finish_reason_seen {
            Ok(())
        } else {
            Err(HttpError::Incomplete)
        }
    }

    fn finish(&mut self, out: &mut VecDeque<AssistantMessageEvent>) -> Result<(), HttpError> {
        self.close_all(out);
        if let Some(reason) = self.failed_finish_reason.take() {
            return Err(HttpError::Stopped(reason));
        }
        self.recover_text_tool_calls(out);
        Ok(())
    }

    fn abandon(&mut self) {
        self.open = None;
        for call in std::mem::take(&mut self.calls) {
            self.settle_call(&call);
        }
    }
}

/// A fresh id for a tool call recovered from text, unique in this process
/// and across runs (`text_call_<ms>_<n>`).
fn new_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "text_call_{}_{}",
        now_millis(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// An `error` member sent inside the stream (OpenRouter and others report
/// failures after the 200 this way), quoted as `type: message`; one whose
/// numeric `code` says "not now" (429, 5xx) is retried when it comes before
/// any content.
fn stream_error(error: &Value) -> HttpError {
    let text = ApiError::deserialize(error)
        .ok()
        .and_then(|e| e.describe())
        .or_else(|| error.as_str().map(str::to_owned))
        .unwrap_or_else(|| error.to_string());
    let code = error.get("code").and_then(Value::as_u64);
    if code
        .and_then(|c| u16::try_from(c).ok())
        .is_some_and(is_retryable_status)
    {
        HttpError::ProviderBusy(text)
    } else {
        HttpError::Provider(text)
    }
}

/// `finish_reason` as a stop reason (Pi's mapping; unknown reasons such as
/// Ollama's `end` mean the answer is complete).
fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::Error,
        _ => StopReason::Stop,
    }
}

/// Pi's usage accounting: cached prompt tokens are reported apart from
/// input, reasoning tokens are added to output, and the total is recomputed
/// (some servers leave reasoning out of theirs).
fn parse_usage(usage: &Value) -> Usage {
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("/prompt_tokens_details/cached_tokens");
    let reasoning = count("/completion_tokens_details/reasoning_tokens");
    let input = count("/prompt_tokens").saturating_sub(cached);
    let output = count("/completion_tokens").saturating_add(reasoning);
    Usage {
        input,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: input.saturating_add(output).saturating_add(cached),
        cost: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_map_to_pis_stop_reasons() {
        let mapped: Vec<StopReason> = [
            "stop",
            "end",
            "length",
            "tool_calls",
            "function_call",
            "content_filter",
        ]
        .into_iter()
        .map(map_finish_reason)
        .collect();
        assert_eq!(
            mapped,
            [
                StopReason::Stop,
                StopReason::Stop,
                StopReason::Length,
                StopReason::ToolUse,
                StopReason::ToolUse,
                StopReason::Error,
            ]
        );
    }

    #[test]
    fn usage_separates_cached_input_and_adds_reasoning_to_output() {
        let usage = parse_usage(&json!({
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 30},
            "completion_tokens_details": {"reasoning_tokens": 5}
        }));
        assert_eq!(
            usage,
            Usage {
                input: 70,
                output: 25,
                cache_read: 30,
                cache_write: 0,
                total_tokens: 125,
                cost: Default::default(),
            }
        );
    }
}
