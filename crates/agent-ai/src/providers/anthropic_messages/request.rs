//! The body of `POST /v1/messages`: Pi's conversation in Anthropic's shape.
//!
//! As Pi's `buildParams`/`convertMessages`/`convertTools`:
//! - the system prompt is one text block; it, the last tool and the last block
//!   of the last user message carry `cache_control: {type: "ephemeral"}` so the
//!   conversation so far is cached between turns (Pi's default retention);
//! - tools send only `properties` and `required` of their schema;
//! - consecutive tool results merge into ONE user message of `tool_result`
//!   blocks (text-only content as one string, images as blocks);
//! - empty text and thinking blocks are left out, thinking without a signature
//!   is replayed as text, redacted thinking as `redacted_thinking`.

use serde_json::{Map, Value, json};

use crate::message::{AssistantContent, AssistantMessage, Content, Message, UserContent};
use crate::providers::ProviderConfig;
use crate::providers::transform::{IMAGE_ONLY_RESULT, transform_messages};
use crate::stream::{Context, Model};
use crate::thinking;
use crate::tool::Tool;

/// The JSON request for one streamed response.
pub(super) fn request_body(model: &Model, context: &Context, config: &ProviderConfig) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(&context.messages, model)),
    );
    let thinking = thinking(model, context, config);
    let max_tokens = match &thinking {
        Some(Thinking::Enabled { max_tokens, .. }) => *max_tokens,
        _ => context.max_tokens_within(config.max_tokens),
    };
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if let Some(system) = context.system_prompt.as_deref() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": system, "cache_control": cache_control()}]),
        );
    }
    match thinking {
        Some(Thinking::Enabled { budget, .. }) => {
            // The API rejects a temperature with thinking on.
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        Some(Thinking::Disabled) | None => {
            if let Some(temperature) = config.temperature_json() {
                body.insert("temperature".into(), temperature);
            }
            if thinking.is_some() {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
        }
    }
    if !context.tools.is_empty() {
        body.insert("tools".into(), Value::Array(convert_tools(&context.tools)));
    }
    Value::Object(body)
}

/// What a request says about thinking.
enum Thinking {
    /// `thinking: {type: "disabled"}`.
    Disabled,
    /// `thinking: {type: "enabled", budget_tokens}`, with `max_tokens`
    /// raised to hold the budget and the answer.
    Enabled { max_tokens: u32, budget: u32 },
}

/// Pi's budget mode: for a reasoning model with a level asked for, `off` is
/// sent as disabled and the others as a budget ([`ThinkingBudgets`] on top
/// of the provider's `max_tokens`, within the request's limit,
/// [`Context::max_tokens`]); nothing for other models or without a level.
///
/// [`ThinkingBudgets`]: crate::thinking::ThinkingBudgets
fn thinking(model: &Model, context: &Context, config: &ProviderConfig) -> Option<Thinking> {
    let level = context.reasoning.filter(|_| model.reasoning)?;
    let level = thinking::clamp(model, level);
    let limit = context.max_tokens.unwrap_or(u32::MAX);
    Some(
        match config
            .thinking_budgets
            .adjust_max_tokens(config.max_tokens, limit, level)
        {
            Some((max_tokens, budget)) => Thinking::Enabled { max_tokens, budget },
            None => Thinking::Disabled,
        },
    )
}

fn cache_control() -> Value {
    json!({"type": "ephemeral"})
}

/// Anthropic accepts tool ids matching `^[a-zA-Z0-9_-]+$`, at most 64 long;
/// ids from other providers are rewritten to fit.
fn normalize_tool_call_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn convert_tools(tools: &[Tool]) -> Vec<Value> {
    let mut converted: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": input_schema(&tool.parameters),
            })
        })
        .collect();
    if let Some(Value::Object(last)) = converted.last_mut() {
        last.insert("cache_control".into(), cache_control());
    }
    converted
}

/// The object schema Anthropic takes, as Pi builds it: `type`, `properties`
/// and `required`. The definitions a `$ref` in them points to come along: an
/// MCP server's schema for a nested argument (the Python SDK's for any model
/// inside a model) reached the API with `"$ref": "#/$defs/Point"` and no
/// `$defs`, so the model could not see what the argument holds.
fn input_schema(parameters: &Value) -> Value {
    let mut schema = serde_json::Map::from_iter([
        ("type".to_owned(), json!("object")),
        (
            "properties".to_owned(),
            parameters
                .get("properties")
                .cloned()
                .unwrap_or_else(|| json!({})),
        ),
        (
            "required".to_owned(),
            parameters
                .get("required")
                .cloned()
                .unwrap_or_else(|| json!([])),
        ),
    ]);
    for definitions in ["$defs", "definitions"] {
        if let Some(value) = parameters.get(definitions) {
            schema.insert(definitions.to_owned(), value.clone());
        }
    }
    Value::Object(schema)
}

fn convert_messages(messages: &[Message], model: &Model) -> Vec<Value> {
    let messages = transform_messages(messages, model, Some(normalize_tool_call_id));
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut index = 0;
    while let Some(message) = messages.get(index) {
        index += 1;
        match message {
            Message::User(user) => {
                if let Some(content) = user_content(&user.content, model) {
                    out.push(json!({"role": "user", "content": content}));
                }
            }
            Message::Assistant(assistant) => {
                let blocks = assistant_blocks(assistant);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            Message::ToolResult(first) => {
                let mut results = vec![tool_result(first)];
                while let Some(Message::ToolResult(next)) = messages.get(index) {
                    results.push(tool_result(next));
                    index += 1;
                }
                out.push(json!({"role": "user", "content": results}));
            }
        }
    }
    mark_last_user_message_for_caching(&mut out);
    out
}

fn user_content(content: &UserContent, model: &Model) -> Option<Value> {
    match content {
        UserContent::Text(text) => (!text.trim().is_empty()).then(|| json!(text)),
        UserContent::Blocks(blocks) => {
            let blocks: Vec<Value> = blocks
                .iter()
                .filter(|block| match block {
                    Content::Text(text) => !text.text.trim().is_empty(),
                    // Pi leaves images out for a model without image input.
                    Content::Image(_) => model.supports_images,
                })
                .map(content_block)
                .collect();
            (!blocks.is_empty()).then_some(Value::Array(blocks))
        }
    }
}

fn content_block(block: &Content) -> Value {
    match block {
        Content::Text(text) => json!({"type": "text", "text": text.text}),
        Content::Image(image) => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        }),
    }
}

fn assistant_blocks(assistant: &AssistantMessage) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(assistant.content.len());
    for block in &assistant.content {
        match block {
            AssistantContent::Text(text) => {
                if !text.text.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": text.text}));
                }
            }
            AssistantContent::Thinking(thinking) => {
                let signature = thinking.thinking_signature.as_deref().unwrap_or("");
                if thinking.redacted == Some(true) {
                    blocks.push(json!({"type": "redacted_thinking", "data": signature}));
                } else if thinking.thinking.trim().is_empty() {
                } else if signature.trim().is_empty() {
                    // Without its signature the API rejects a thinking block
                    // (an aborted stream); plain text keeps what was thought.
                    blocks.push(json!({"type": "text", "text": thinking.thinking}));
                } else {
                    blocks.push(json!({
                        "type": "thinking",
                        "thinking": thinking.thinking,
                        "signature": signature,
                    }));
                }
            }
            AssistantContent::ToolCall(call) => {
                let input = if call.arguments.is_object() {
                    call.arguments.clone()
                } else {
                    json!({})
                };
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": input,
                }));
            }
        }
    }
    blocks
}

fn tool_result(result: &crate::message::ToolResultMessage) -> Value {
    json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": tool_result_content(&result.content),
        "is_error": result.is_error,
    })
}

/// Text-only content as one string (blocks joined by newlines); with images,
/// a list of blocks that starts with text.
fn tool_result_content(content: &[Content]) -> Value {
    if !content.iter().any(|c| matches!(c, Content::Image(_))) {
        let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        return json!(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content.iter().map(content_block).collect();
    if !content.iter().any(|c| matches!(c, Content::Text(_))) {
        blocks.insert(0, json!({"type": "text", "text": IMAGE_ONLY_RESULT}));
    }
    Value::Array(blocks)
}

fn mark_last_user_message_for_caching(messages: &mut [Value]) {
    let Some(last) = messages.last_mut() else {
        return;
    };
    if last["role"] != "user" {
        return;
    }
    let content = &mut last["content"];
    if let Value::String(text) = content {
        *content = json!([{"type": "text", "text": text, "cache_control": cache_control()}]);
    } else if let Some(Value::Object(block)) = content.as_array_mut().and_then(|b| b.last_mut()) {
        block.insert("cache_control".into(), cache_control());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_keeps_the_definitions_its_references_point_to() {
        let point = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let tool = Tool {
            name: "move".into(),
            description: "Move.".into(),
            parameters: json!({
                "type": "object",
                "title": "moveArguments",
                "properties": {"to": {"$ref": "#/$defs/Point"}},
                "required": ["to"],
                "$defs": {"Point": point},
                "definitions": {"Old": {"type": "string"}},
            }),
        };
        assert_eq!(
            convert_tools(&[tool])[0]["input_schema"],
            json!({
                "type": "object",
                "properties": {"to": {"$ref": "#/$defs/Point"}},
                "required": ["to"],
                "$defs": {"Point": point},
                "definitions": {"Old": {"type": "string"}},
            })
        );
    }

    #[test]
    fn foreign_tool_call_ids_are_made_safe_for_anthropic() {
        assert_eq!(normalize_tool_call_id("call_abc|123.x"), "call_abc_123_x");
        assert_eq!(normalize_tool_call_id(&"a".repeat(80)), "a".repeat(64));
    }
}
