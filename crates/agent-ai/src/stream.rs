//! The streaming contract between the agent loop and a model provider.
//!
//! A [`Provider`] turns a [`Context`] into a stream of [`AssistantMessageEvent`]s.
//! The contract, as in Pi: the stream **never fails outside itself**. Whatever goes
//! wrong (network, HTTP status, bad JSON, cancellation) ends the stream with an
//! [`AssistantMessageEvent::Error`] whose message has `stopReason` `error` or
//! `aborted` and an `errorMessage`. The final event is always `Done` or `Error`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::message::{AssistantContent, AssistantMessage, Message, StopReason, ToolCall};
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
}

impl Model {
    /// A model description.
    pub fn new(id: impl Into<String>, provider: impl Into<String>, api: impl Into<String>) -> Self {
        Model {
            id: id.into(),
            provider: provider.into(),
            api: api.into(),
            supports_images: false,
        }
    }
}

/// Everything a provider needs for one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Vec<Tool>,
}

/// One event of a streaming assistant response (Pi's `AssistantMessageEvent`).
///
/// Every event but the last carries `partial`: the message as assembled so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    /// The response began.
    Start {
        /// The message so far.
        partial: AssistantMessage,
    },
    /// A text block began at `content_index`.
    TextStart {
        /// Index of the block in `partial.content`.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// More text.
    TextDelta {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new text.
        delta: String,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// A text block is complete.
    TextEnd {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The whole text of the block.
        content: String,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// A thinking block began.
    ThinkingStart {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// More thinking.
    ThinkingDelta {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The new reasoning text.
        delta: String,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// A thinking block is complete.
    ThinkingEnd {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The whole reasoning of the block.
        content: String,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// A tool call began.
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The message so far.
        partial: AssistantMessage,
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
        partial: AssistantMessage,
    },
    /// A tool call is complete.
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        /// Index of the block.
        #[serde(rename = "contentIndex")]
        content_index: usize,
        /// The complete call.
        #[serde(rename = "toolCall")]
        tool_call: ToolCall,
        /// The message so far.
        partial: AssistantMessage,
    },
    /// The response finished; `reason` is `stop`, `length` or `toolUse`.
    Done {
        /// Why it stopped.
        reason: StopReason,
        /// The final message.
        message: AssistantMessage,
    },
    /// The response failed; `reason` is `error` or `aborted`.
    Error {
        /// `error` or `aborted`.
        reason: StopReason,
        /// The final message, with `errorMessage` set.
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
            | AssistantMessageEvent::ToolCallEnd { partial, .. } => partial,
            AssistantMessageEvent::Done { message, .. } => message,
            AssistantMessageEvent::Error { error, .. } => error,
        }
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

/// One scripted response of a [`ScriptedProvider`].
#[derive(Debug, Clone)]
pub enum ScriptedResponse {
    /// Stream this message block by block, then `Done` (or `Error` when its
    /// `stopReason` is `error`/`aborted`).
    Message(AssistantMessage),
    /// Wait this long before streaming the message (for ordering tests).
    Delayed(Duration, AssistantMessage),
    /// Never answer; end with `aborted` once cancelled.
    Hang,
}

/// A provider that replays a list of responses instead of calling a model.
///
/// It lets tests of the loop run without a network, and records the context of
/// every request so tests can assert what the model would have seen. When the
/// script runs out, the stream ends with an `error` event saying so.
#[derive(Clone, Default)]
pub struct ScriptedProvider {
    script: Arc<Mutex<VecDeque<ScriptedResponse>>>,
    requests: Arc<Mutex<Vec<Context>>>,
}

impl ScriptedProvider {
    /// A provider answering with `responses`, in order.
    pub fn new(responses: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        ScriptedProvider {
            script: Arc::new(Mutex::new(responses.into_iter().collect())),
            requests: Arc::default(),
        }
    }

    /// A provider answering with these messages, in order.
    pub fn from_messages(messages: impl IntoIterator<Item = AssistantMessage>) -> Self {
        Self::new(messages.into_iter().map(ScriptedResponse::Message))
    }

    /// Appends a response to the script.
    pub fn push(&self, response: ScriptedResponse) {
        lock(&self.script).push_back(response);
    }

    /// The contexts of all requests so far.
    pub fn requests(&self) -> Vec<Context> {
        lock(&self.requests).clone()
    }

    /// An assistant message for the scripted model holding `content`.
    ///
    /// `stopReason` is `toolUse` when the content has a tool call, else `stop`.
    pub fn reply(content: Vec<AssistantContent>) -> AssistantMessage {
        let mut message = AssistantMessage::empty(&Self::model());
        message.stop_reason = if content
            .iter()
            .any(|c| matches!(c, AssistantContent::ToolCall(_)))
        {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
        message.content = content;
        message
    }

    /// The model the scripted provider claims to be.
    pub fn model() -> Model {
        Model::new("scripted", "scripted", "scripted")
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Provider for ScriptedProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        lock(&self.requests).push(context.clone());
        let next = lock(&self.script).pop_front();
        let model = model.clone();
        let aborted = {
            let model = model.clone();
            move || {
                AssistantMessageEvent::failure(&model, StopReason::Aborted, "Request was aborted")
            }
        };
        match next {
            None => futures::stream::iter([AssistantMessageEvent::failure(
                &model,
                StopReason::Error,
                "Scripted provider has no more responses",
            )])
            .boxed(),
            Some(ScriptedResponse::Hang) => futures::stream::once(async move {
                cancel.cancelled().await;
                aborted()
            })
            .boxed(),
            Some(ScriptedResponse::Message(message)) => {
                if cancel.is_cancelled() {
                    return futures::stream::iter([aborted()]).boxed();
                }
                futures::stream::iter(events_for(message)).boxed()
            }
            Some(ScriptedResponse::Delayed(delay, message)) => futures::stream::once(async move {
                tokio::select! {
                    () = cancel.cancelled() => vec![aborted()],
                    () = tokio::time::sleep(delay) => events_for(message),
                }
            })
            .flat_map(futures::stream::iter)
            .boxed(),
        }
    }
}

/// The events a real provider would send while streaming `message`.
fn events_for(message: AssistantMessage) -> Vec<AssistantMessageEvent> {
    let mut partial = message.clone();
    partial.content.clear();
    let mut events = vec![AssistantMessageEvent::Start {
        partial: partial.clone(),
    }];
    for (content_index, block) in message.content.iter().enumerate() {
        partial.content.push(block.clone());
        let (start, delta, end) = match block {
            AssistantContent::Text(t) => (
                AssistantMessageEvent::TextStart {
                    content_index,
                    partial: partial.clone(),
                },
                AssistantMessageEvent::TextDelta {
                    content_index,
                    delta: t.text.clone(),
                    partial: partial.clone(),
                },
                AssistantMessageEvent::TextEnd {
                    content_index,
                    content: t.text.clone(),
                    partial: partial.clone(),
                },
            ),
            AssistantContent::Thinking(t) => (
                AssistantMessageEvent::ThinkingStart {
                    content_index,
                    partial: partial.clone(),
                },
                AssistantMessageEvent::ThinkingDelta {
                    content_index,
                    delta: t.thinking.clone(),
                    partial: partial.clone(),
                },
                AssistantMessageEvent::ThinkingEnd {
                    content_index,
                    content: t.thinking.clone(),
                    partial: partial.clone(),
                },
            ),
            AssistantContent::ToolCall(call) => (
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
                    partial: partial.clone(),
                },
            ),
        };
        events.extend([start, delta, end]);
    }
    let reason = message.stop_reason;
    events.push(match reason {
        StopReason::Error | StopReason::Aborted => AssistantMessageEvent::Error {
            reason,
            error: message,
        },
        _ => AssistantMessageEvent::Done { reason, message },
    });
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::TextContent;

    fn text(t: &str) -> AssistantContent {
        AssistantContent::Text(TextContent {
            text: t.into(),
            text_signature: None,
        })
    }

    #[tokio::test]
    async fn scripted_provider_streams_blocks_then_done() {
        let provider = ScriptedProvider::from_messages([ScriptedProvider::reply(vec![text("hi")])]);
        let events: Vec<_> = provider
            .stream(
                &ScriptedProvider::model(),
                &Context::default(),
                CancellationToken::new(),
            )
            .collect()
            .await;
        let kinds: Vec<String> = events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            ["start", "text_start", "text_delta", "text_end", "done"]
        );
        assert_eq!(events.last().unwrap().message().text(), "hi");
    }

    #[tokio::test]
    async fn exhausted_script_ends_with_an_error_event_not_a_panic() {
        let provider = ScriptedProvider::default();
        let events: Vec<_> = provider
            .stream(
                &ScriptedProvider::model(),
                &Context::default(),
                CancellationToken::new(),
            )
            .collect()
            .await;
        assert_eq!(events.len(), 1);
        let last = events[0].final_message().unwrap();
        assert_eq!(last.stop_reason, StopReason::Error);
        assert_eq!(
            last.error_message.as_deref(),
            Some("Scripted provider has no more responses")
        );
    }

    #[tokio::test]
    async fn hanging_response_ends_aborted_on_cancel() {
        let provider = ScriptedProvider::new([ScriptedResponse::Hang]);
        let cancel = CancellationToken::new();
        let stream = provider.stream(
            &ScriptedProvider::model(),
            &Context::default(),
            cancel.clone(),
        );
        cancel.cancel();
        let events: Vec<_> = stream.collect().await;
        assert_eq!(
            events[0].final_message().unwrap().stop_reason,
            StopReason::Aborted
        );
    }
}
