//! The events of Anthropic's Messages stream, as the `data:` JSON of each
//! server-sent event (the `type` field names the event, like `event:`).
//!
//! Anthropic may add event, block and delta types at any time; those parse as
//! `Unknown` and are ignored rather than failing the stream.

use serde::Deserialize;
use serde_json::Value;

use crate::providers::http::ApiError;

/// One streamed event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum StreamEvent {
    /// The response began; carries the id, model and input usage.
    MessageStart {
        /// The message shell.
        message: MessageStart,
    },
    /// A content block began at `index`.
    ContentBlockStart {
        /// Anthropic's block index.
        index: usize,
        /// The block's kind and initial fields.
        content_block: BlockStart,
    },
    /// More of block `index`.
    ContentBlockDelta {
        /// Anthropic's block index.
        index: usize,
        /// What was added.
        delta: BlockDelta,
    },
    /// Block `index` is complete.
    ContentBlockStop {
        /// Anthropic's block index.
        index: usize,
    },
    /// Top-level changes: the stop reason, cumulative usage.
    MessageDelta {
        /// The stop reason, once known.
        delta: MessageDelta,
        /// Cumulative token counts.
        usage: Option<WireUsage>,
    },
    /// The response is complete.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// The server failed mid-stream (e.g. `overloaded_error`).
    Error {
        /// What failed.
        error: ApiError,
    },
    /// An event type this code does not know.
    #[serde(other)]
    Unknown,
}

/// `message_start.message`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct MessageStart {
    /// The response id.
    pub(super) id: Option<String>,
    /// The model that answers.
    pub(super) model: Option<String>,
    /// Input usage (output so far is usually 1).
    pub(super) usage: Option<WireUsage>,
}

/// Token counts; every field may be absent or null (proxies omit some).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct WireUsage {
    /// Input tokens not read from or written to the cache.
    pub(super) input_tokens: Option<u64>,
    /// Output tokens.
    pub(super) output_tokens: Option<u64>,
    /// Input tokens read from the cache.
    pub(super) cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the cache.
    pub(super) cache_creation_input_tokens: Option<u64>,
}

/// `content_block_start.content_block`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockStart {
    /// Visible text (normally empty at the start).
    Text {
        /// Initial text.
        #[serde(default)]
        text: String,
    },
    /// Extended thinking.
    Thinking {
        /// Initial thinking text.
        #[serde(default)]
        thinking: String,
    },
    /// Thinking the safety system encrypted; `data` must be replayed as is.
    RedactedThinking {
        /// The encrypted reasoning.
        #[serde(default)]
        data: String,
    },
    /// A tool call; its input streams as JSON text.
    ToolUse {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The input given whole here (`{}` from Anthropic, which streams
        /// it; some proxies send all of it here and no delta).
        #[serde(default)]
        input: Value,
    },
    /// A block type this code does not know (e.g. server tools).
    #[serde(other)]
    Unknown,
}

/// `content_block_delta.delta`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum BlockDelta {
    /// More text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More thinking.
    ThinkingDelta {
        /// The new thinking.
        thinking: String,
    },
    /// The thinking block's signature (sent just before its stop).
    SignatureDelta {
        /// Signature text to append.
        signature: String,
    },
    /// More of a tool call's input JSON.
    InputJsonDelta {
        /// JSON text to append.
        partial_json: String,
    },
    /// A delta type this code does not know (e.g. citations).
    #[serde(other)]
    Unknown,
}

/// `message_delta.delta`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct MessageDelta {
    /// Why the model stopped.
    pub(super) stop_reason: Option<String>,
}

/// Whether an `error` event says "try again later": the event forms of
/// 429, 500 and 529.
pub(super) fn is_busy(error: &ApiError) -> bool {
    matches!(
        error.kind.as_deref(),
        Some("overloaded_error" | "rate_limit_error" | "api_error")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_null_fields_read_as_none() {
        let start = r#"{"type": "message_start", "message": {"usage": {"input_tokens": null}}}"#;
        assert_eq!(
            serde_json::from_str::<StreamEvent>(start).unwrap(),
            StreamEvent::MessageStart {
                message: MessageStart {
                    id: None,
                    model: None,
                    usage: Some(WireUsage::default()),
                },
            }
        );
        let delta = r#"{"type": "message_delta", "delta": {}}"#;
        assert_eq!(
            serde_json::from_str::<StreamEvent>(delta).unwrap(),
            StreamEvent::MessageDelta {
                delta: MessageDelta { stop_reason: None },
                usage: None,
            }
        );
    }
}
