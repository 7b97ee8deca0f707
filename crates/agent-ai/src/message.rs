//! Messages and content blocks in Pi's JSON shape (camelCase fields, `role` and
//! `type` tags), so sessions and fixtures written by Pi round-trip unchanged.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

/// Milliseconds since the Unix epoch, as Pi stamps its messages.
pub fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A block of plain text.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text itself.
    pub text: String,
    /// Provider signature for the block, when the provider sends one.
    pub text_signature: Option<String>,
}

/// An image, base64-encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 of the image bytes (no `data:` prefix), shared: a message is
    /// cloned for the history, the session, each event and the run's
    /// result, and a copy of megabytes each time held 5 of every image a
    /// session read (150 reads of a screenshot: 1.7 GB).
    pub data: Arc<str>,
    /// For example `image/png`.
    pub mime_type: String,
}

/// Model reasoning shown as thinking.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Provider signature needed to replay the block.
    pub thinking_signature: Option<String>,
    /// True when the provider redacted the reasoning.
    pub redacted: Option<bool>,
}

/// A request from the model to run one tool.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Provider-assigned id; the result refers back to it.
    pub id: String,
    /// Name of the tool to run.
    pub name: String,
    /// Raw arguments as the model sent them (normally an object).
    pub arguments: Value,
    /// Provider signature (Gemini) to replay with the call.
    pub thought_signature: Option<String>,
    /// `Some(true)` when the model wrote this call as text (a JSON object or a
    /// `<tool_call>` block) and the provider recovered it; serialized as
    /// `recoveredFromText` only when true, so Pi's shape is unchanged otherwise.
    #[serde(default, skip_serializing_if = "is_not_true")]
    pub recovered_from_text: Option<bool>,
}

impl ToolCall {
    /// A call as a provider streams it: no signature, not recovered from text.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
            recovered_from_text: None,
        }
    }
}

fn is_not_true(flag: &Option<bool>) -> bool {
    *flag != Some(true)
}

/// Content of user messages and tool results: text or images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Content {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// An image block.
    pub fn image(data: impl Into<Arc<str>>, mime_type: impl Into<String>) -> Self {
        Content::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text(t) => Some(&t.text),
            Content::Image(_) => None,
        }
    }
}

/// Content of assistant messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    /// Visible text.
    Text(TextContent),
    /// Reasoning.
    Thinking(ThinkingContent),
    /// A tool call.
    ToolCall(ToolCall),
}

/// A user message's content: Pi accepts a bare string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// A plain string.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<Content>),
}

/// Why the assistant stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// Finished normally.
    Stop,
    /// Hit the output token limit.
    Length,
    /// Stopped to have tools run.
    ToolUse,
    /// The provider failed; see `errorMessage`.
    Error,
    /// The run was cancelled.
    Aborted,
}

/// Cost of a response in dollars, by kind of token.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cached input read.
    pub cache_read: f64,
    /// Cache written.
    pub cache_write: f64,
    /// Sum of the above.
    pub total: f64,
}

/// Token counts of one response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache.
    pub cache_write: u64,
    /// All tokens.
    pub total_tokens: u64,
    /// Their cost.
    pub cost: UsageCost,
}

/// Adds another response's counts and cost, for totals over a session.
impl std::ops::AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

/// A message from the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// What the user said.
    pub content: UserContent,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
}

impl UserMessage {
    /// A text message stamped now.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            content: UserContent::Text(text.into()),
            timestamp: now_millis(),
        }
    }
}

/// A message from the model.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks in the order the model produced them.
    pub content: Vec<AssistantContent>,
    /// The wire API, e.g. `openai-completions`.
    pub api: String,
    /// The provider, e.g. `openai`.
    pub provider: String,
    /// The model id requested.
    pub model: String,
    /// The model id the provider reported, when different.
    pub response_model: Option<String>,
    /// The provider's id for the response.
    pub response_id: Option<String>,
    /// Token usage.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// What went wrong, when `stop_reason` is `error` or `aborted`.
    pub error_message: Option<String>,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
    /// What kind of failure `error_message` describes, when the provider
    /// knows (retry decisions read this, never the text). Not part of Pi's
    /// JSON: a message read back from a file has none.
    #[serde(skip)]
    pub error_kind: Option<crate::failure::ErrorKind>,
}

impl AssistantMessage {
    /// An empty message for `model`, to be filled while streaming.
    pub fn empty(model: &crate::Model) -> Self {
        AssistantMessage {
            content: Vec::new(),
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            response_model: None,
            response_id: None,
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: now_millis(),
            error_kind: None,
        }
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|c| match c {
            AssistantContent::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// All text blocks joined, without thinking.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                AssistantContent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }
}

/// The result of one tool call, sent back to the model.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The call this answers.
    pub tool_call_id: String,
    /// The tool that ran.
    pub tool_name: String,
    /// What the model reads.
    pub content: Vec<Content>,
    /// Structured data for UIs and logs; never sent to the model.
    pub details: Option<Value>,
    /// True when the call failed at any step.
    pub is_error: bool,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
}

/// Any message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// From the user.
    User(UserMessage),
    /// From the model.
    Assistant(AssistantMessage),
    /// A tool's answer.
    ToolResult(ToolResultMessage),
}

impl From<UserMessage> for Message {
    fn from(m: UserMessage) -> Self {
        Message::User(m)
    }
}

impl From<AssistantMessage> for Message {
    fn from(m: AssistantMessage) -> Self {
        Message::Assistant(m)
    }
}

impl From<ToolResultMessage> for Message {
    fn from(m: ToolResultMessage) -> Self {
        Message::ToolResult(m)
    }
}

/// A [`Message`] borrowed: serialises exactly as the owned one does, for
/// writing a message out (Pi's JSON lines) without copying it first.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum MessageRef<'a> {
    /// From the user.
    User(&'a UserMessage),
    /// From the model.
    Assistant(&'a AssistantMessage),
    /// A tool's answer.
    ToolResult(&'a ToolResultMessage),
}

impl<'a> From<&'a Message> for MessageRef<'a> {
    fn from(message: &'a Message) -> Self {
        match message {
            Message::User(m) => MessageRef::User(m),
            Message::Assistant(m) => MessageRef::Assistant(m),
            Message::ToolResult(m) => MessageRef::ToolResult(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(value: Value) {
        let message: Message = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), value);
        assert_eq!(
            serde_json::to_string(&MessageRef::from(&message)).unwrap(),
            serde_json::to_string(&message).unwrap(),
            "a borrowed message serialises as the owned one"
        );
    }

    #[test]
    fn user_message_with_string_content_round_trips() {
        round_trip(json!({"role": "user", "content": "hi", "timestamp": 1}));
    }

    #[test]
    fn user_message_with_blocks_round_trips() {
        round_trip(json!({"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ], "timestamp": 2}));
    }

    #[test]
    fn assistant_message_in_pi_shape_round_trips() {
        round_trip(json!({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "text", "text": "Reading."},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}
            ],
            "api": "openai-completions",
            "provider": "openai",
            "model": "gpt-4o",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "toolUse",
            "timestamp": 3
        }));
    }

    #[test]
    fn failed_assistant_message_keeps_error_message() {
        round_trip(json!({
            "role": "assistant", "content": [], "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "error", "errorMessage": "overloaded", "timestamp": 4
        }));
    }

    #[test]
    fn tool_result_round_trips_with_details_and_error_flag() {
        round_trip(json!({
            "role": "toolResult", "toolCallId": "call_1", "toolName": "read",
            "content": [{"type": "text", "text": "Offset 100 is beyond end of file (3 lines total)"}],
            "details": {}, "isError": true, "timestamp": 5
        }));
    }

    #[test]
    fn tool_calls_are_listed_in_order() {
        let message: AssistantMessage = serde_json::from_value(json!({
            "content": [
                {"type": "toolCall", "id": "a", "name": "read", "arguments": {}},
                {"type": "text", "text": "and"},
                {"type": "toolCall", "id": "b", "name": "ls", "arguments": {}}
            ],
            "api": "x", "provider": "y", "model": "z", "stopReason": "toolUse", "timestamp": 0
        }))
        .unwrap();
        let ids: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }
}
