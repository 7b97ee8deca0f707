//! One question to a model and its answer's text, with no tools and no
//! history: the compaction's summaries and the `prompt` hooks' verdicts.

use std::sync::Arc;

use agent_ai::{
    AssistantMessageEvent, Context, Model, Provider, StopReason, ThinkingLevel, UserMessage,
};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

/// What to ask.
#[derive(Debug, Clone)]
pub struct Question<'a> {
    /// What the model is told it is doing.
    pub system_prompt: &'a str,
    /// The one user message.
    pub request: String,
    /// The answer's length at the most.
    pub max_tokens: u32,
    /// The thinking level (only a level other than `off` is sent, and only
    /// to a model that reasons).
    pub reasoning: Option<ThinkingLevel>,
}

/// Why there is no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unanswered {
    /// The call was cancelled.
    Cancelled,
    /// The provider failed; its error message.
    Failed(String),
}

/// Asks `model` on `provider` `question`; the answer's text.
pub async fn ask_once(
    model: &Model,
    provider: &Arc<dyn Provider>,
    question: Question<'_>,
    cancel: &CancellationToken,
) -> Result<String, Unanswered> {
    let context = Context {
        system_prompt: Some(question.system_prompt.into()),
        messages: vec![UserMessage::text(question.request).into()].into(),
        tools: Arc::from([]),
        reasoning: question
            .reasoning
            .filter(|level| model.reasoning && *level != ThinkingLevel::Off),
        max_tokens: Some(question.max_tokens),
    };
    let mut stream = provider.stream(model, &context, cancel.clone());
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event {
            AssistantMessageEvent::Done { message, .. } => last = Some(message),
            AssistantMessageEvent::Error { error, .. } => last = Some(error),
            _ => {}
        }
    }
    let Some(message) = last else {
        return Err(Unanswered::Failed(
            "the provider ended without an answer".to_owned(),
        ));
    };
    match message.stop_reason {
        StopReason::Aborted => Err(Unanswered::Cancelled),
        StopReason::Error => Err(Unanswered::Failed(
            message
                .error_message
                .unwrap_or_else(|| "unknown error".to_owned()),
        )),
        _ => Ok(message.text()),
    }
}
