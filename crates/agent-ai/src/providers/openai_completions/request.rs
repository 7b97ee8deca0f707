//! The body of `POST /chat/completions`: Pi's conversation in the
//! OpenAI-compatible shape.
//!
//! As Pi's `openai-completions.ts`: tools as `{type: "function", function:
//! {name, description, parameters, strict: false}}`; the history through
//! [`transform_messages`], then user text and images, assistant text +
//! `tool_calls` (arguments as a JSON string) with reasoning echoed in the
//! field it came in, tool results as `role: "tool"` messages with their
//! images in one following user message.

use serde_json::{Map, Value, json};

use super::wire::REASONING_FIELDS;
use crate::message::{
    AssistantContent, AssistantMessage, Content, Message, ThinkingContent, ToolResultMessage,
    UserContent,
};
use crate::providers::ProviderConfig;
use crate::providers::text_tool_calls::{RECOVERED_RESULT_NUDGE, recovered_call_ids};
use crate::providers::transform::{IMAGE_ONLY_RESULT, transform_messages};
use crate::stream::{Context, Model};
use crate::thinking::{self, ThinkingLevel};
use crate::tool::Tool;

/// Text of the user message that carries tool-result images (Pi's).
const TOOL_IMAGES_TEXT: &str = "Attached image(s) from tool result:";
/// The JSON body of a chat-completions request for `context`.
pub(super) fn request_body(model: &Model, context: &Context, config: &ProviderConfig) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, context)),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    let limit = json!(context.max_tokens_within(config.max_tokens));
    // OpenAI's own API (and Azure's) takes `max_completion_tokens` (its
    // reasoning models refuse `max_tokens`); the servers that speak its
    // format elsewhere read `max_tokens`, Ollama only that, and some refuse
    // the other name outright (Mistral's 422 `extra_forbidden`, vLLM with
    // extra fields forbidden): each gets the one name it takes.
    let name = if is_openai_itself(&config.base_url) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body.insert(name.into(), limit);
    if let Some(temperature) = config.temperature_json() {
        body.insert("temperature".into(), temperature);
    }
    if let Some(effort) = reasoning_effort(model, context.reasoning) {
        body.insert("reasoning_effort".into(), json!(effort));
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

/// Whether `base_url` is OpenAI's API or Azure's OpenAI service.
fn is_openai_itself(base_url: &str) -> bool {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let host = rest
        .split(['/', ':'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    host == "api.openai.com" || host.ends_with(".openai.azure.com")
}

/// Pi's `reasoning_effort`: for a reasoning model, the level (clamped to
/// those it supports) by its wire name; `off` is left out unless the
/// model's level map names it.
fn reasoning_effort(model: &Model, level: Option<ThinkingLevel>) -> Option<String> {
    let level = level.filter(|_| model.reasoning)?;
    match thinking::clamp(model, level) {
        ThinkingLevel::Off => model
            .thinking_level_map
            .get(&ThinkingLevel::Off)
            .cloned()
            .flatten(),
        level => thinking::wire_name(model, level),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenAI's API refuses `max_tokens` for its reasoning models; Ollama
    /// reads only `max_tokens`, and Mistral refuses `max_completion_tokens`.
    #[test]
    fn the_limit_goes_by_the_one_name_each_server_takes() {
        let model = Model::new("m", "p", "openai-completions");
        let context = Context::new(None, Vec::new(), Vec::new());
        let limits = |base_url: &str| {
            let body = request_body(&model, &context, &ProviderConfig::new(base_url, None));
            (
                body.get("max_tokens").cloned(),
                body.get("max_completion_tokens").cloned(),
            )
        };
        let limit = json!(ProviderConfig::new("x", None).max_tokens);
        assert_eq!(
            limits("https://api.openai.com/v1"),
            (None, Some(limit.clone()))
        );
        assert_eq!(
            limits("https://me.openai.azure.com/openai"),
            (None, Some(limit.clone()))
        );
        for elsewhere in ["http://127.0.0.1:11434/v1", "https://api.mistral.ai/v1"] {
            assert_eq!(limits(elsewhere), (Some(limit.clone()), None));
        }
    }
}
