//! The streaming contract between the agent loop and a model provider.
//!
//! A [`Provider`] turns a [`Context`] into a stream of [`AssistantMessageEvent`]s.
//! The contract, as in Pi: the stream **never fails outside itself**. Whatever goes
//! wrong (network, HTTP status, bad JSON, cancellation) ends the stream with an
//! [`AssistantMessageEvent::Error`] whose message has `stopReason` `error` or
//! `aborted` and an `errorMessage`. The final event is always `Done` or `Error`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;
use tokio_util::sync::CancellationToken;

use crate::message::{AssistantContent, AssistantMessage, Message, StopReason, ToolCall};
use crate::thinking::ThinkingLevel;
use crate::tool::Tool;

/// Which model to call and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// Model id sent to the provider, e.g. `gpt-4o`.
    pub id: String,
    /// Provider name, e.g. `openai`.
    pub provider: String,
    /// Wire API, e.g. `openai-completions` or `anthropic-messages`.
    pub api: String,
    /// Whether the model accepts image input.
    #[serde(default)]
    pub supports_images: bool,
    /// Whether the model reasons before answering (Pi's `reasoning`): only
    /// then is a thinking level other than `off` sent (see [`crate::thinking`]).
    #[serde(default)]
    pub reasoning: bool,
    /// What each thinking level is called on the wire, when not its own name;
    /// `null` marks a level the model does not support, and `xhigh` exists
    /// only when named here (Pi's `thinkingLevelMap`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thinking_level_map: BTreeMap<ThinkingLevel, Option<String>>,
}

impl Model {
    /// A model description.
    pub fn new(id: impl Into<String>, provider: impl Into<String>, api: impl Into<String>) -> Self {
        Model {
            id: id.into(),
            provider: provider.into(),
            api: api.into(),
            supports_images: false,
            reasoning: false,
            thinking_level_map: BTreeMap::new(),
        }
    }
}

/// Everything a provider needs for one request.
///
/// The conversation and the tools are shared, not copied: a request holds
/// the same `Arc`s as the agent that sends it, so building one costs the same
/// at turn 300 as at turn 1. Build it with [`Context::new`] from owned
/// vectors, or share existing `Arc`s through the fields.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The system prompt.
    pub system_prompt: Option<Arc<str>>,
    /// The conversation so far.
    pub messages: Arc<Vec<Message>>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Arc<[Tool]>,
    /// How hard a reasoning model should think (`None` or `off`: the wire
    /// default); ignored for a model without [`Model::reasoning`].
    pub reasoning: Option<ThinkingLevel>,
    /// At most this many tokens for the request's `max_tokens`, below the
    /// provider's own limit, and with Anthropic's thinking budget included
    /// (as Pi's model `maxTokens` caps it): the answer's room counts
    /// against the window, so a session asks for what its window leaves,
    /// and a compaction's summary request caps the summary so that it fits
    /// the window it is written for. `None`: the provider's limit, plus the
    /// thinking budget.
    pub max_tokens: Option<u32>,
}

impl Context {
    /// A request with this system prompt, conversation and tools.
    pub fn new(system_prompt: Option<&str>, messages: Vec<Message>, tools: Vec<Tool>) -> Self {
        Context {
            system_prompt: system_prompt.map(Arc::from),
            messages: Arc::new(messages),
            tools: tools.into(),
            reasoning: None,
            max_tokens: None,
        }
    }

    /// The answer's token limit for a provider whose own is `provider_max`:
    /// the lower of the two.
    pub fn max_tokens_within(&self, provider_max: u32) -> u32 {
        self.max_tokens
            .map_or(provider_max, |cap| cap.min(provider_max))
    }
}

/// One event of a streaming assistant response (Pi's `AssistantMessageEvent`).
///
/// Every event but the last carries `partial`: the message as assembled so far,
/// shared, not copied. A provider appends to its message in place while no
/// consumer holds the last `partial` it sent (`Arc::make_mut`), so a long
/// answer streams in time linear in its length; a consumer that keeps an
/// event copies out what it needs (or accepts that the provider's next
/// delta copies the message once). A provider changes its message only to
/// send an event about it: a consumer may hold the message of its last
/// event weakly and count on it being the newest until the next event. Serialised in Pi's shape: each message whole (`role` included) and the
/// `toolCall` of `toolcall_end` a whole content block (`type` included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    /// The response began.
    Start {
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// A text block began at `content_index`.
    TextStart {
        /// Index of the block in `partial.content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// More text.
    TextDelta {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// A text block is complete.
    TextEnd {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The whole text of the block.
        content: String,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// A thinking block began.
    ThinkingStart {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// More thinking.
    ThinkingDelta {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new reasoning text.
        delta: String,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// A thinking block is complete.
    ThinkingEnd {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The whole reasoning of the block.
        content: String,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// A tool call began.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// More of a tool call's JSON arguments.
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// Raw JSON text appended to the arguments.
        delta: String,
        /// The message so far (arguments parsed leniently from what arrived).
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// A tool call is complete.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The complete call.
        #[serde(rename = "toolCall", serialize_with = "pi_shape::tool_call")]
        tool_call: ToolCall,
        /// The message so far.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        partial: Arc<AssistantMessage>,
    },
    /// The response finished; `reason` is `stop`, `length` or `toolUse`.
    Done {
        /// Why it stopped.
        reason: StopReason,
        /// The final message.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        message: AssistantMessage,
    },
    /// The response failed; `reason` is `error` or `aborted`.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The final message, with `errorMessage` set.
        #[serde(serialize_with = "pi_shape::assistant_message")]
        error: AssistantMessage,
    },
}

impl AssistantMessageEvent {
    /// The final message, if this event ends the stream.
    pub fn final_message(&self) -> Option<&AssistantMessage> {
        match self {
            AssistantMessageEvent::Done { message, .. } => Some(message),
            AssistantMessageEvent::Error { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The message as assembled so far (or the final one).
    pub fn message(&self) -> &AssistantMessage {
        match self {
            AssistantMessageEvent::Start { partial }
            | AssistantMessageEvent::TextStart { partial, .. }
            | AssistantMessageEvent::TextDelta { partial, .. }
            | AssistantMessageEvent::TextEnd { partial, .. }
            | AssistantMessageEvent::ThinkingStart { partial, .. }
            | AssistantMessageEvent::ThinkingDelta { partial, .. }
            | AssistantMessageEvent::ThinkingEnd { partial, .. }
            | AssistantMessageEvent::ToolCallStart { partial, .. }
            | AssistantMessageEvent::ToolCallDelta { partial, .. }
            | AssistantMessageEvent::ToolCallEnd { partial, .. } => partial.as_ref(),
            AssistantMessageEvent::Done { message, .. } => message,
            AssistantMessageEvent::Error { error, .. } => error,
        }
    }

    /// The `*Start` event of the block at `content_index` of `partial`, of
    /// that block's kind; `None` when `partial` holds no block there.
    pub fn block_start(partial: Arc<AssistantMessage>, content_index: usize) -> Option<Self> {
        Some(match partial.content.get(content_index)? {
            AssistantContent::Text(_) => Self::TextStart {
                content_index,
                partial,
            },
            AssistantContent::Thinking(_) => Self::ThinkingStart {
                content_index,
                partial,
            },
            AssistantContent::ToolCall(_) => Self::ToolCallStart {
                content_index,
                partial,
            },
        })
    }

    /// The `*Delta` event bringing `delta` to the block at `content_index` of
    /// `partial` (which already holds it), of that block's kind.
    pub fn block_delta(
        partial: Arc<AssistantMessage>,
        content_index: usize,
        delta: String,
    ) -> Option<Self> {
        Some(match partial.content.get(content_index)? {
            AssistantContent::Text(_) => Self::TextDelta {
                content_index,
                delta,
                partial,
            },
            AssistantContent::Thinking(_) => Self::ThinkingDelta {
                content_index,
                delta,
                partial,
            },
            AssistantContent::ToolCall(_) => Self::ToolCallDelta {
                content_index,
                delta,
                partial,
            },
        })
    }

    /// The `*End` event of the block at `content_index` of `partial`, with
    /// the block's whole content (its text, its reasoning, the tool call).
    pub fn block_end(partial: Arc<AssistantMessage>, content_index: usize) -> Option<Self> {
        Some(match partial.content.get(content_index)? {
            AssistantContent::Text(text) => Self::TextEnd {
                content_index,
                content: text.text.clone(),
                partial,
            },
            AssistantContent::Thinking(thinking) => Self::ThinkingEnd {
                content_index,
                content: thinking.thinking.clone(),
                partial,
            },
            AssistantContent::ToolCall(call) => Self::ToolCallEnd {
                content_index,
                tool_call: call.clone(),
                partial,
            },
        })
    }

    /// The events of a block that arrives whole (a scripted answer, tool
    /// calls recovered from text, a custom provider's answer), as if it had
    /// streamed: its start, one delta with all of it, its end. `partial` is
    /// the message holding the block at `content_index`; `None` when it
    /// holds none there.
    pub fn whole_block(partial: &Arc<AssistantMessage>, content_index: usize) -> Option<[Self; 3]> {
        let delta = match partial.content.get(content_index)? {
            AssistantContent::Text(text) => text.text.clone(),
            AssistantContent::Thinking(thinking) => thinking.thinking.clone(),
            AssistantContent::ToolCall(call) => call.arguments.to_string(),
        };
        Some([
            Self::block_start(partial.clone(), content_index)?,
            Self::block_delta(partial.clone(), content_index, delta)?,
            Self::block_end(partial.clone(), content_index)?,
        ])
    }

    /// An `Error` event for `model` with `stopReason` `error` or `aborted`.
    pub fn failure(model: &Model, reason: StopReason, message: impl Into<String>) -> Self {
        let mut error = AssistantMessage::empty(model);
        error.stop_reason = reason;
        error.error_message = Some(message.into());
        AssistantMessageEvent::Error { reason, error }
    }
}

/// A stream of assistant events; see the module docs for its contract.
pub type AssistantStream = BoxStream<'static, AssistantMessageEvent>;

/// A model provider.
///
/// Implementations must end every stream with exactly one `Done` or `Error` event
/// and must end it promptly, with `stopReason` `aborted`, once `cancel` fires.
pub trait Provider: Send + Sync {
    /// Starts one response.
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream;
}

/// How events serialise their messages and calls: as Pi's objects, tagged
/// like the [`Message`] and [`crate::AssistantContent`] they are, without a
/// copy (the bare structs carry no tag of their own).
mod pi_shape {
    use std::borrow::Borrow;

    use serde::{Serialize, Serializer};

    use crate::message::{AssistantMessage, MessageRef, ToolCall};

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum AsContent<'a> {
        ToolCall(&'a ToolCall),
    }

    /// The message whole, `role` included; owned or shared alike.
    pub fn assistant_message<S: Serializer, M: Borrow<AssistantMessage>>(
        message: &M,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        MessageRef::Assistant(message.borrow()).serialize(serializer)
    }

    pub fn tool_call<S: Serializer>(call: &ToolCall, serializer: S) -> Result<S::Ok, S::Error> {
        AsContent::ToolCall(call).serialize(serializer)
    }
}
