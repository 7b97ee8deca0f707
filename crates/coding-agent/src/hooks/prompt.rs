//! The hooks around one prompt: `SessionStart` (before the first prompt of a
//! session, and the first after a compaction, its text given to the model
//! with that prompt), `UserPromptSubmit`
//! (may refuse the prompt or add context to it) and `Stop` (when the run
//! ends, may make the agent go on with the hook's reason, at most
//! [`MAX_STOP_CONTINUATIONS`] times a prompt).

use std::sync::{Arc, Mutex};

use agent_ai::{Content, Message, StopReason, UserContent, UserMessage};
use agent_core::AgentError;
use tokio_util::sync::CancellationToken;

use super::io::EventInput;
use super::{CommandHooks, HookEvent, context_text, feedback_text, lock};

/// How many times Stop hooks may make the agent go on after one prompt; a
/// hook that always blocks must not keep the agent running forever.
pub const MAX_STOP_CONTINUATIONS: usize = 5;

/// Why a session starts, as SessionStart hooks are told (`source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    /// A new session.
    Startup,
    /// A saved session resumed.
    Resume,
    /// A new session replacing the last one (`/new`, RPC `new_session`).
    Clear,
    /// The conversation was compacted: a hook may give back what the
    /// summary left out.
    Compact,
}

impl SessionSource {
    fn name(self) -> &'static str {
        match self {
            SessionSource::Startup => "startup",
            SessionSource::Resume => "resume",
            SessionSource::Clear => "clear",
            SessionSource::Compact => "compact",
        }
    }
}

/// Why a prompt produced no run, or its run failed to start.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The agent refused the run (one is already going, nothing to
    /// continue from).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// A UserPromptSubmit hook refused the prompt: the model never saw it.
    /// The text says which hook and why.
    #[error("{0}")]
    Blocked(String),
    /// The user aborted while the hooks before the run ran: nothing was
    /// sent.
    #[error("Aborted before the prompt was sent")]
    Aborted,
}

/// What UserPromptSubmit hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptDecision {
    /// The prompt is not sent; the user reads why.
    Blocked(String),
    /// The prompt goes on with these texts for the model.
    Proceed(Vec<String>),
}

impl CommandHooks {
    /// Runs the SessionStart hooks; the texts for the model.
    pub async fn session_start(
        &self,
        source: SessionSource,
        cancel: &CancellationToken,
    ) -> Vec<String> {
        let fields = EventInput::SessionStart {
            source: source.name().to_owned(),
        };
        let outcome = self.run(fields, cancel).await.unwrap_or_default();
        contexts(HookEvent::SessionStart, &outcome.context)
    }

    /// Runs the UserPromptSubmit hooks for `prompt`.
    pub async fn user_prompt_submit(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> PromptDecision {
        let fields = EventInput::UserPromptSubmit {
            prompt: prompt.to_owned(),
        };
        let outcome = self.run(fields, cancel).await.unwrap_or_default();
        let mut blocks = outcome.blocks;
        blocks.extend(outcome.stop);
        if blocks.is_empty() {
            PromptDecision::Proceed(contexts(HookEvent::UserPromptSubmit, &outcome.context))
        } else {
            PromptDecision::Blocked(format!(
                "Prompt blocked by UserPromptSubmit hook: {}",
                blocks.join("\n")
            ))
        }
    }

    /// Runs the Stop hooks; the message that makes the agent go on, if one
    /// blocked (`continue: false` from any hook lets it stop).
    pub async fn stop(
        &self,
        last_assistant_message: String,
        stop_hook_active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let fields = EventInput::Stop {
            stop_hook_active,
            last_assistant_message,
        };
        let outcome = self.run(fields, cancel).await?;
        if let Some(reason) = &outcome.stop {
            // For the user, as PostToolUse's `continue: false` shows it
            // (Claude Code shows `stopReason`; it was dropped unseen).
            tracing::warn!("{reason}");
            return None;
        }
        (!outcome.blocks.is_empty())
            .then(|| feedback_text(HookEvent::Stop, &outcome.blocks.join("\n")))
    }
}

fn contexts(event: HookEvent, texts: &[String]) -> Vec<String> {
    texts.iter().map(|text| context_text(event, text)).collect()
}

/// Messages the hooks before a run let go, with their context: what
/// [`PromptHooks::run`] sends.
#[derive(Debug)]
pub struct Ready {
    messages: Vec<Message>,
    /// The SessionStart runs whose context they carry: due again when they
    /// are not sent.
    start: Vec<SessionSource>,
}

/// A session's hooks around its prompts: remembers which SessionStart runs
/// are due.
#[derive(Debug)]
pub struct PromptHooks {
    hooks: Arc<CommandHooks>,
    /// The sources SessionStart runs with before the next prompt, in order:
    /// the session's start, then a compaction.
    start: Mutex<Vec<SessionSource>>,
}

impl PromptHooks {
    /// The hooks of a session that starts (`resumed`: from a saved file).
    pub fn new(hooks: Arc<CommandHooks>, resumed: bool) -> Self {
        let source = if resumed {
            SessionSource::Resume
        } else {
            SessionSource::Startup
        };
        PromptHooks {
            hooks,
            start: Mutex::new(vec![source]),
        }
    }

    /// The hooks themselves.
    pub fn hooks(&self) -> &Arc<CommandHooks> {
        &self.hooks
    }

    /// A new session replaced the last: SessionStart runs again (`clear`).
    pub fn session_cleared(&self) {
        *lock(&self.start) = vec![SessionSource::Clear];
    }

    /// The conversation was compacted: SessionStart runs (`compact`) before
    /// the next prompt.
    pub fn compacted(&self) {
        let mut start = lock(&self.start);
        if !start.contains(&SessionSource::Compact) {
            start.push(SessionSource::Compact);
        }
    }

    /// Runs the UserPromptSubmit hooks for a message the user sends while
    /// the agent works (steering or a follow-up): every prompt the user
    /// submits passes them, or a prompt guard would be skipped by typing
    /// while a command runs. The message with their context, or the refusal.
    pub async fn submit_queued(&self, message: Message) -> Result<Message, PromptError> {
        let cancel = CancellationToken::new();
        match self
            .hooks
            .user_prompt_submit(&prompt_text(&message), &cancel)
            .await
        {
            PromptDecision::Blocked(reason) => Err(PromptError::Blocked(reason)),
            PromptDecision::Proceed(texts) => Ok(with_context(message, texts)),
        }
    }

    /// The hooks before `message` is sent: SessionStart if due and
    /// UserPromptSubmit (their texts join the prompt; a block is
    /// [`PromptError::Blocked`]). `cancel` (the user's abort) kills the
    /// hooks running, and nothing is sent ([`PromptError::Aborted`]).
    /// [`PromptHooks::run`] sends what this gives.
    pub async fn prompt(
        &self,
        message: Message,
        cancel: &CancellationToken,
    ) -> Result<Ready, PromptError> {
        let (start, mut context) = self.start_due(cancel).await;
        let decision = self
            .hooks
            .user_prompt_submit(&prompt_text(&message), cancel)
            .await;
        if cancel.is_cancelled() {
            return Err(self.not_sent(&start, PromptError::Aborted));
        }
        match decision {
            PromptDecision::Blocked(reason) => {
                Err(self.not_sent(&start, PromptError::Blocked(reason)))
            }
            PromptDecision::Proceed(texts) => {
                context.extend(texts);
                Ok(Ready {
                    messages: vec![with_context(message, context)],
                    start,
                })
            }
        }
    }

    /// The hooks before `messages`, queued while no run could take them,
    /// are sent (they passed UserPromptSubmit as they were queued): the
    /// context of the SessionStart runs due joins the first (a message typed
    /// during a compaction went out without what the `compact` hooks give
    /// back).
    pub async fn queued(
        &self,
        mut messages: Vec<Message>,
        cancel: &CancellationToken,
    ) -> Result<Ready, PromptError> {
        let (start, context) = self.start_due(cancel).await;
        if cancel.is_cancelled() {
            return Err(self.not_sent(&start, PromptError::Aborted));
        }
        if let Some(first) = messages.first_mut() {
            let message = std::mem::replace(first, UserMessage::text("").into());
            *first = with_context(message, context);
        }
        Ok(Ready { messages, start })
    }

    /// Runs the SessionStart hooks due, which are then no longer due: the
    /// sources they ran for, and their texts for the model.
    async fn start_due(&self, cancel: &CancellationToken) -> (Vec<SessionSource>, Vec<String>) {
        let start = std::mem::take(&mut *lock(&self.start));
        let mut context = Vec::new();
        for source in &start {
            context.extend(self.hooks.session_start(*source, cancel).await);
        }
        (start, context)
    }

    /// A prompt that is not sent leaves SessionStart due (`start`, the
    /// sources run for it): its context goes with the next prompt (it was
    /// lost). `error` says why.
    fn not_sent(&self, start: &[SessionSource], error: PromptError) -> PromptError {
        let mut due = lock(&self.start);
        for source in start.iter().rev() {
            if !due.contains(source) {
                due.insert(0, *source);
            }
        }
        error
    }

    /// Sends what is `ready` with `run` (one run of the agent), then runs
    /// the Stop hooks after each run that ended normally (their feedback
    /// runs as the next prompt). `cancel` (the user's abort) stops the
    /// agent going on. The messages of every run, in order.
    pub async fn run<F, Fut>(
        &self,
        ready: Ready,
        run: F,
        cancel: &CancellationToken,
    ) -> Result<Vec<Message>, PromptError>
    where
        F: Fn(Vec<Message>) -> Fut,
        Fut: Future<Output = Result<Vec<Message>, AgentError>>,
    {
        // A run the agent refused (one still going) sent nothing either.
        let mut messages = match run(ready.messages).await {
            Ok(messages) => messages,
            Err(refused) => return Err(self.not_sent(&ready.start, PromptError::Agent(refused))),
        };
        for round in 0..=MAX_STOP_CONTINUATIONS {
            let Some(last) = finished_answer(&messages) else {
                break;
            };
            let Some(feedback) = self.hooks.stop(last, round > 0, cancel).await else {
                break;
            };
            if cancel.is_cancelled() {
                break;
            }
            if round == MAX_STOP_CONTINUATIONS {
                tracing::warn!("{}", too_many_continuations());
                break;
            }
            messages.extend(run(vec![UserMessage::text(feedback).into()]).await?);
        }
        Ok(messages)
    }
}

/// What the user reads when Stop hooks would keep the agent going on.
fn too_many_continuations() -> String {
    format!(
        "Stop hooks blocked {} times in a row; the agent stops here",
        MAX_STOP_CONTINUATIONS + 1
    )
}

/// The text of the run's last answer, when it ended normally (not aborted,
/// not failed).
fn finished_answer(messages: &[Message]) -> Option<String> {
    match messages.last()? {
        Message::Assistant(answer)
            if !matches!(answer.stop_reason, StopReason::Aborted | StopReason::Error) =>
        {
            Some(answer.text())
        }
        _ => None,
    }
}

/// The text of a user message (its text blocks joined).
fn prompt_text(message: &Message) -> String {
    match message {
        Message::User(UserMessage {
            content: UserContent::Text(text),
            ..
        }) => text.clone(),
        Message::User(UserMessage {
            content: UserContent::Blocks(blocks),
            ..
        }) => blocks
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `message` with `context` as further text blocks.
fn with_context(message: Message, context: Vec<String>) -> Message {
    if context.is_empty() {
        return message;
    }
    match message {
        Message::User(UserMessage { content, timestamp }) => {
            let mut blocks = match content {
                UserContent::Text(text) => vec![Content::text(text)],
                UserContent::Blocks(blocks) => blocks,
            };
            blocks.extend(context.into_iter().map(Content::text));
            Message::User(UserMessage {
                content: UserContent::Blocks(blocks),
                timestamp,
            })
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::policy::Places;
    use crate::hooks::config::HooksSettings;

    /// A prompt the agent refuses (a run still going: RPC sends it again)
    /// was never sent: SessionStart's context goes with the next one. It
    /// was lost, so the prompt after a compaction could miss it.
    #[tokio::test]
    async fn a_refused_run_leaves_session_start_due() {
        let dir = tempfile::tempdir().unwrap();
        let settings: HooksSettings = serde_json::from_value(serde_json::json!({
            "SessionStart": [{"hooks": [{"type": "command", "command": "echo re-read NOTES.md"}]}]
        }))
        .unwrap();
        let (config, _) = settings.compile(&Places::for_cwd(dir.path())).unwrap();
        let hooks = Arc::new(CommandHooks::new(config, dir.path().to_path_buf()));
        let prompt_hooks = PromptHooks::new(hooks, false);
        let cancel = CancellationToken::new();
        let sent = Mutex::new(Vec::new());
        let ready = prompt_hooks
            .prompt(UserMessage::text("first").into(), &cancel)
            .await
            .unwrap();
        let busy = prompt_hooks
            .run(
                ready,
                |_| async { Err(AgentError::AlreadyProcessingPrompt) },
                &cancel,
            )
            .await;
        assert!(matches!(busy, Err(PromptError::Agent(_))), "{busy:?}");
        let ready = prompt_hooks
            .prompt(UserMessage::text("again").into(), &cancel)
            .await
            .unwrap();
        prompt_hooks
            .run(
                ready,
                |messages: Vec<Message>| {
                    lock(&sent).extend(messages.iter().map(prompt_text));
                    async { Ok(Vec::new()) }
                },
                &cancel,
            )
            .await
            .unwrap();
        assert_eq!(
            *lock(&sent),
            ["again\nSessionStart hook additional context: re-read NOTES.md"]
        );
    }
}
