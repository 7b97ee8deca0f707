//! A provider for tests and examples: scripted answers instead of a model
//! (feature `testing`; not part of the default public API).
//!
//! [`ScriptedProvider`] streams each scripted message block by block, as a
//! real provider would, and records the context of every request so a test
//! can assert what the model would have seen.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::message::{AssistantContent, AssistantMessage, StopReason};
use crate::stream::{AssistantMessageEvent, AssistantStream, Context, Model, Provider};

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

/// What is left of the script and how many requests were made: each
/// request's whole context, history and tools, would drown the rest.
impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("script", &*lock(&self.script))
            .field("requests", &lock(&self.requests).len())
            .finish()
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
    let mut partial = Arc::new(AssistantMessage {
        content: Vec::new(),
        ..message.clone()
    });
    let mut events = vec![AssistantMessageEvent::Start {
        partial: partial.clone(),
    }];
    for (content_index, block) in message.content.iter().enumerate() {
        Arc::make_mut(&mut partial).content.push(block.clone());
        events.extend(
            AssistantMessageEvent::whole_block(&partial, content_index)
                .into_iter()
                .flatten(),
        );
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

    /// Every event of the provider's next answer, to the end of its stream.
    async fn all_events(provider: &ScriptedProvider) -> Vec<AssistantMessageEvent> {
        provider
            .stream(
                &ScriptedProvider::model(),
                &Context::default(),
                CancellationToken::new(),
            )
            .collect()
            .await
    }

    #[tokio::test]
    async fn scripted_provider_streams_blocks_then_done() {
        let provider = ScriptedProvider::from_messages([ScriptedProvider::reply(vec![text("hi")])]);
        let events = all_events(&provider).await;
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
        let events = all_events(&provider).await;
        assert_eq!(events.len(), 1);
        let last = events[0].final_message().unwrap();
        assert_eq!(last.stop_reason, StopReason::Error);
        assert_eq!(
            last.error_message.as_deref(),
            Some("Scripted provider has no more responses")
        );
    }

    /// A test that holds the provider in a `#[derive(Debug)]` struct, or
    /// prints it on failure, needs `Debug`: what is left of the script and
    /// how many requests were made, not every request's whole history.
    #[test]
    fn debug_shows_the_script_left_and_the_requests_made() {
        let provider = ScriptedProvider::new([ScriptedResponse::Hang, ScriptedResponse::Hang]);
        drop(provider.stream(
            &ScriptedProvider::model(),
            &Context::default(),
            CancellationToken::new(),
        ));
        assert_eq!(
            format!("{provider:?}"),
            "ScriptedProvider { script: [Hang], requests: 1 }"
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
