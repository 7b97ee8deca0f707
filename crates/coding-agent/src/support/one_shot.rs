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

/// Asks `model` on `provider` `question`; the answer's text. An answer with
/// no text (the length limit reached while thinking, a tool call instead)
/// is a failure, not an empty answer: an empty summary would replace the
/// whole conversation it was to summarise.
pub async fn ask_once(
    model: &Model,
    provider: &Arc<dyn Provider>,
    question: Question<'_>,
    cancel: &CancellationToken,
) -> Result<String, Unanswered> {
    let max_tokens = question.max_tokens;
    let context = Context {
        system_prompt: Some(question.system_prompt.into()),
        messages: vec![UserMessage::text(question.request).into()].into(),
        tools: Arc::from([]),
        reasoning: question
            .reasoning
            .filter(|level| model.reasoning && *level != ThinkingLevel::Off),
        max_tokens: Some(max_tokens),
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
        reason => {
            let text = message.text();
            if !text.trim().is_empty() {
                return Ok(text);
            }
            Err(Unanswered::Failed(match reason {
                StopReason::Length => format!(
                    "the answer reached its length limit ({max_tokens} tokens) before any text"
                ),
                StopReason::ToolUse => "the model answered with a tool call, not text".to_owned(),
                _ => "the model answered with no text".to_owned(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_ai::testing::ScriptedProvider;
    use agent_ai::{AssistantContent, AssistantMessage, TextContent, ThinkingContent, ToolCall};

    use super::*;

    fn ask(answer: AssistantMessage) -> Result<String, Unanswered> {
        let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::from_messages([answer]));
        let question = Question {
            system_prompt: "Summarise.",
            request: "the conversation".into(),
            max_tokens: 800,
            reasoning: None,
        };
        futures::executor::block_on(ask_once(
            &ScriptedProvider::model(),
            &provider,
            question,
            &CancellationToken::new(),
        ))
    }

    fn text(text: &str) -> AssistantContent {
        AssistantContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    #[test]
    fn an_answer_without_text_is_a_failure_that_says_why() {
        assert_eq!(
            ask(ScriptedProvider::reply(vec![text("Goal: x")])),
            Ok("Goal: x".into())
        );
        assert_eq!(
            ask(ScriptedProvider::reply(vec![text(" \n")])),
            Err(Unanswered::Failed("the model answered with no text".into()))
        );

        let mut thinking_only =
            ScriptedProvider::reply(vec![AssistantContent::Thinking(ThinkingContent {
                thinking: "Let me think about the whole conversation".into(),
                thinking_signature: None,
                redacted: None,
            })]);
        thinking_only.stop_reason = StopReason::Length;
        assert_eq!(
            ask(thinking_only),
            Err(Unanswered::Failed(
                "the answer reached its length limit (800 tokens) before any text".into()
            ))
        );

        let call = ScriptedProvider::reply(vec![AssistantContent::ToolCall(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": "a"}),
            thought_signature: None,
            recovered_from_text: None,
        })]);
        assert_eq!(
            ask(call),
            Err(Unanswered::Failed(
                "the model answered with a tool call, not text".into()
            ))
        );
    }
}
