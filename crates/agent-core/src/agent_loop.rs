//! Turns: ask the model, run its tool calls, repeat; steering and follow-up
//! queues; stopping; cancellation.
//!
//! This follows Pi 0.73.1's `runLoop` (`docs/tool-behaviour.md` §2.1). The loop never checks
//! cancellation itself: it hands the token to the provider and to every tool and
//! hook. A cancelled provider answers with `stopReason: aborted`, which ends the
//! run; cancelled tools return their own abort errors, the loop asks the model
//! once more, gets `aborted` at once, and ends.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agent_ai::{
    AssistantMessage, AssistantMessageEvent, AssistantStream, Context, Message, Model, Provider,
    StopReason, ThinkingLevel, ToolCall, ToolResultMessage,
};
use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::batch::execute_tool_calls;
use crate::event::{AgentEvent, Emit};
use crate::history::History;
use crate::hooks::{NoHooks, ToolCallHooks};
use crate::model::{ModelChoice, ModelHandle, TransformContext};
use crate::pipeline::{ABORTED_TEXT, Outcome, ToolCallScope, panic_text, tool_result_message};
use crate::queue::MessageQueue;
use crate::sync::lock;
use crate::tool::ExecutionMode;
use crate::tool_set::ToolSet;

/// Text of the error message when a provider breaks its contract and ends a
/// stream without `Done` or `Error`.
const STREAM_ENDED_EARLY: &str = "Provider stream ended without a final event";

/// Text of the error message when a provider panics (followed by the
/// panic's message when it has one).
const PROVIDER_PANICKED: &str = "Provider panicked";

/// Text of the error message when [`LoopConfig::transform_context`] panics
/// (followed by the panic's message when it has one).
const TRANSFORM_PANICKED: &str = "transform_context panicked";

/// What the model sees: system prompt, conversation and tools.
///
/// Clones share the conversation (see [`History`]): the loop appends to the
/// same history an [`crate::Agent`] and its readers see.
#[derive(Debug, Clone)]
pub struct AgentContext {
    /// The system prompt.
    pub system_prompt: Option<Arc<str>>,
    /// The conversation; the loop appends to it.
    pub messages: History,
    /// The tools the model may call.
    pub tools: Arc<ToolSet>,
}

impl AgentContext {
    /// A context with no messages.
    pub fn new(system_prompt: Option<String>, tools: Arc<ToolSet>) -> Self {
        AgentContext {
            system_prompt: system_prompt.map(Arc::from),
            messages: History::default(),
            tools,
        }
    }

    /// Sets the conversation it starts from.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = History::new(messages);
        self
    }
}

/// What `should_stop_after_turn` is shown.
#[derive(Debug, Clone, Copy)]
pub struct TurnSummary<'a> {
    /// The turn's assistant message.
    pub message: &'a AssistantMessage,
    /// Its tool results, in call order.
    pub tool_results: &'a [ToolResultMessage],
    /// The whole conversation.
    pub messages: &'a [Message],
    /// What this run added so far.
    pub new_messages: &'a [Message],
    /// The loop asks the model about the turn's tool results next (false
    /// when the turn called no tool, or its tools asked the run to stop):
    /// a caller that stops here to change the context (a compaction) goes
    /// on with [`Agent::continue_run`](crate::Agent::continue_run).
    pub results_pending: bool,
}

/// Decides after each turn whether the run stops there.
pub type StopAfterTurn = Arc<dyn Fn(&TurnSummary<'_>) -> bool + Send + Sync>;

/// How the loop runs: the model, its provider, hooks, batch mode and queues.
///
/// Clones share the model handle and the steering and follow-up queues: a
/// model switched or a message queued through one is the model or the
/// message of all. The rest is settings, and the hooks and callbacks are
/// shared as they are (`Arc`). Nothing else passes between agents built from
/// clones: each [`Agent`](crate::Agent) keeps its conversation, its tools
/// and its subscribers.
#[derive(Clone)]
pub struct LoopConfig {
    /// The model to ask, its provider and thinking level, read once per
    /// request: switching it through a clone of the handle takes effect at
    /// the next request.
    pub model: ModelHandle,
    /// Rewrites each request just before it is sent (see [`TransformContext`]).
    pub transform_context: Option<TransformContext>,
    /// `before_tool_call` and `after_tool_call`.
    pub hooks: Arc<dyn ToolCallHooks>,
    /// `Sequential` runs every batch one call at a time (default `Parallel`).
    pub tool_execution: ExecutionMode,
    /// Messages injected after the current turn (polled after each turn).
    pub steering: MessageQueue,
    /// Messages that start another round when the loop would stop.
    pub follow_up: MessageQueue,
    /// Asked after each turn; `true` ends the run.
    pub should_stop_after_turn: Option<StopAfterTurn>,
}

/// The newest tool set handed over while a run may be in progress (an
/// [`Agent`](crate::Agent)'s own): each turn takes it (if any) before it asks
/// the model, so a change takes effect at the next request and never in the
/// middle of a batch, whose calls run against the set the model was offered.
#[derive(Default)]
pub(crate) struct ToolUpdates(std::sync::Mutex<Option<Arc<ToolSet>>>);

impl ToolUpdates {
    /// Hands `tools` to the run (replacing any not yet taken).
    pub(crate) fn offer(&self, tools: Arc<ToolSet>) {
        *lock(&self.0) = Some(tools);
    }

    /// The tools handed over since the last take, if any.
    fn take(&self) -> Option<Arc<ToolSet>> {
        lock(&self.0).take()
    }
}

impl LoopConfig {
    /// Parallel batches, no hooks, one-at-a-time queues, no stop predicate.
    pub fn new(model: Model, provider: Arc<dyn Provider>) -> Self {
        Self::with_model_handle(ModelHandle::new(model, provider))
    }

    /// As [`LoopConfig::new`], asking whatever `model` holds at each request.
    pub fn with_model_handle(model: ModelHandle) -> Self {
        LoopConfig {
            model,
            transform_context: None,
            hooks: Arc::new(NoHooks),
            tool_execution: ExecutionMode::Parallel,
            steering: MessageQueue::default(),
            follow_up: MessageQueue::default(),
            should_stop_after_turn: None,
        }
    }

    /// Sets the thinking level requests ask for.
    #[must_use]
    pub fn with_reasoning(self, level: ThinkingLevel) -> Self {
        self.model.set_reasoning(Some(level));
        self
    }

    /// Sets the request rewrite.
    #[must_use]
    pub fn with_transform_context(
        mut self,
        transform: impl Fn(&Model, Context) -> Context + Send + Sync + 'static,
    ) -> Self {
        self.transform_context = Some(Arc::new(transform));
        self
    }

    /// Sets the hooks.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Arc<dyn ToolCallHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Sets the batch mode.
    #[must_use]
    pub fn with_tool_execution(mut self, mode: ExecutionMode) -> Self {
        self.tool_execution = mode;
        self
    }

    /// Sets the steering queue (share a clone to queue into it).
    #[must_use]
    pub fn with_steering(mut self, queue: MessageQueue) -> Self {
        self.steering = queue;
        self
    }

    /// Sets the follow-up queue (share a clone to queue into it).
    #[must_use]
    pub fn with_follow_up(mut self, queue: MessageQueue) -> Self {
        self.follow_up = queue;
        self
    }

    /// Sets the stop predicate.
    #[must_use]
    pub fn with_should_stop_after_turn(
        mut self,
        predicate: impl Fn(&TurnSummary<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.should_stop_after_turn = Some(Arc::new(predicate));
        self
    }
}

impl std::fmt::Debug for LoopConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopConfig")
            .field("model", &self.model)
            .field("tool_execution", &self.tool_execution)
            .field("steering", &self.steering)
            .field("follow_up", &self.follow_up)
            .finish_non_exhaustive()
    }
}

/// Why a run cannot continue (Pi's texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContinueError {
    /// The context is empty.
    #[error("Cannot continue: no messages in context")]
    NoMessages,
    /// The last message is the model's: there is nothing for it to answer.
    #[error("Cannot continue from message role: assistant")]
    FromAssistant,
}

/// Runs the loop from `prompts`: emits their message events, then turns until
/// the model is done. Appends to `context.messages`; returns what the run
/// added (prompts, assistant messages, tool results, injected messages).
pub async fn agent_loop(
    prompts: Vec<Message>,
    context: &mut AgentContext,
    config: &LoopConfig,
    cancel: &CancellationToken,
    emit: &Emit<'_>,
) -> Vec<Message> {
    run_with_prompts(
        prompts,
        context,
        config,
        cancel,
        emit,
        RunOptions::default(),
    )
    .await
}

/// Runs the loop from the existing context, without prompt events: with a
/// tool result or user message last (a run stopped by
/// `should_stop_after_turn`; a retry, once the caller has removed the failed
/// answer).
///
/// Fails before emitting anything when the context is empty or ends with an
/// assistant message, a failed one (`stopReason` `error` or `aborted`)
/// included, as in Pi.
pub async fn agent_loop_continue(
    context: &mut AgentContext,
    config: &LoopConfig,
    cancel: &CancellationToken,
    emit: &Emit<'_>,
) -> Result<Vec<Message>, ContinueError> {
    continue_loop(context, config, cancel, emit, RunOptions::default()).await
}

/// What an [`Agent`](crate::Agent) run adds to the bare loop.
#[derive(Default, Clone, Copy)]
pub(crate) struct RunOptions<'a> {
    /// No steering poll before the first turn (the prompts are themselves
    /// steering messages).
    pub(crate) skip_initial_steering: bool,
    /// Where the agent hands the run tools set while it runs.
    pub(crate) tool_updates: Option<&'a ToolUpdates>,
}

/// [`agent_loop_continue`] with `options`.
pub(crate) async fn continue_loop(
    context: &mut AgentContext,
    config: &LoopConfig,
    cancel: &CancellationToken,
    emit: &Emit<'_>,
    options: RunOptions<'_>,
) -> Result<Vec<Message>, ContinueError> {
    match context.messages.snapshot().last() {
        None => return Err(ContinueError::NoMessages),
        Some(Message::Assistant(_)) => return Err(ContinueError::FromAssistant),
        Some(_) => {}
    }
    emit(AgentEvent::AgentStart);
    emit(AgentEvent::TurnStart);
    Ok(run_loop(context, Vec::new(), config, cancel, emit, options).await)
}

/// [`agent_loop`] with `options`.
pub(crate) async fn run_with_prompts(
    prompts: Vec<Message>,
    context: &mut AgentContext,
    config: &LoopConfig,
    cancel: &CancellationToken,
    emit: &Emit<'_>,
    options: RunOptions<'_>,
) -> Vec<Message> {
    emit(AgentEvent::AgentStart);
    emit(AgentEvent::TurnStart);
    let mut new_messages = Vec::new();
    for prompt in prompts {
        add_message(prompt, context, &mut new_messages, emit);
    }
    run_loop(context, new_messages, config, cancel, emit, options).await
}

/// Pi's `runLoop`.
async fn run_loop(
    context: &mut AgentContext,
    mut new_messages: Vec<Message>,
    config: &LoopConfig,
    cancel: &CancellationToken,
    emit: &Emit<'_>,
    options: RunOptions<'_>,
) -> Vec<Message> {
    let mut first_turn = true;
    let mut pending = if options.skip_initial_steering {
        Vec::new()
    } else {
        config.steering.take()
    };
    loop {
        let mut more_tool_calls = true;
        while more_tool_calls || !pending.is_empty() {
            if first_turn {
                first_turn = false;
            } else {
                emit(AgentEvent::TurnStart);
            }
            for message in pending.drain(..) {
                add_message(message, context, &mut new_messages, emit);
            }
            if let Some(tools) = options.tool_updates.and_then(ToolUpdates::take) {
                context.tools = tools;
            }
            let assistant = stream_assistant_response(context, config, cancel, emit).await;
            new_messages.push(Message::Assistant(assistant.clone()));
            if matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Aborted
            ) {
                emit(AgentEvent::TurnEnd {
                    message: Message::Assistant(assistant),
                    tool_results: Vec::new(),
                });
                emit(AgentEvent::AgentEnd {
                    messages: new_messages.clone(),
                });
                return new_messages;
            }
            let calls: Vec<_> = assistant.tool_calls().cloned().collect();
            more_tool_calls = false;
            let mut tool_results = Vec::new();
            if !calls.is_empty() {
                let messages = context.messages.snapshot();
                let scope = ToolCallScope {
                    tools: &context.tools,
                    hooks: config.hooks.as_ref(),
                    execution: config.tool_execution,
                    assistant_message: Some(&assistant),
                    messages: &messages,
                    cancel,
                };
                let batch = execute_tool_calls(&scope, &calls, emit).await;
                // Released before the results are appended, so appending
                // does not copy the history.
                drop(messages);
                more_tool_calls = !batch.terminate;
                tool_results = batch.results;
                for result in &tool_results {
                    context.messages.push(result.clone().into());
                    new_messages.push(result.clone().into());
                }
            }
            emit(AgentEvent::TurnEnd {
                message: Message::Assistant(assistant.clone()),
                tool_results: tool_results.clone(),
            });
            if let Some(should_stop) = &config.should_stop_after_turn {
                let messages = context.messages.snapshot();
                let summary = TurnSummary {
                    message: &assistant,
                    tool_results: &tool_results,
                    messages: &messages,
                    new_messages: &new_messages,
                    results_pending: more_tool_calls,
                };
                if should_stop(&summary) {
                    emit(AgentEvent::AgentEnd {
                        messages: new_messages.clone(),
                    });
                    return new_messages;
                }
            }
            // A cancelled run asks the model once more only to end: the
            // messages queued for it stay queued (the caller may give them
            // back to the user), not added to a conversation that stops.
            if !cancel.is_cancelled() {
                pending = config.steering.take();
            }
        }
        let follow_ups = config.follow_up.take();
        if follow_ups.is_empty() {
            break;
        }
        pending = follow_ups;
    }
    emit(AgentEvent::AgentEnd {
        messages: new_messages.clone(),
    });
    new_messages
}

/// Emits `message_start`/`message_end` for a message entering the conversation.
fn add_message(
    message: Message,
    context: &mut AgentContext,
    new_messages: &mut Vec<Message>,
    emit: &Emit<'_>,
) {
    enter_history(message.clone(), &context.messages, emit);
    new_messages.push(message);
}

/// Appends `message` to `history` between its `message_start` and
/// `message_end`.
fn enter_history(message: Message, history: &History, emit: &Emit<'_>) {
    emit(AgentEvent::MessageStart {
        message: message.clone(),
    });
    // In the history before `message_end` is seen, so a reader woken by it
    // finds the message there.
    history.push(message.clone());
    emit(AgentEvent::MessageEnd { message });
}

/// Answers, as an abort does ([`ABORTED_TEXT`], an error result), the tool
/// calls of a run whose future was dropped while they ran (a caller's
/// timeout around `prompt`), each with its message events.
///
/// Such a run stops at an await of its batch: the model's answer is the
/// last message (the batch appends its results only once all have
/// settled), and its calls have no results. Left so, the next prompt sent
/// `user, assistant{toolCall}, user`, which real APIs refuse, and
/// `continue_run` failed with `Cannot continue from message role:
/// assistant`. The HTTP providers' replay repair
/// (`agent_ai::providers::transform`) would close the calls at each
/// request, with `No result provided`; it repairs what is sent, for
/// histories from elsewhere (a session file of a process that was killed),
/// while this keeps the agent's own history whole for every reader, every
/// provider and the session that saves it.
pub(crate) fn answer_abandoned_calls(history: &History, emit: &Emit<'_>) {
    let calls: Vec<ToolCall> = match history.snapshot().last() {
        Some(Message::Assistant(answer)) => answer.tool_calls().cloned().collect(),
        _ => return,
    };
    for call in &calls {
        let result = tool_result_message(call, &Outcome::error(ABORTED_TEXT));
        enter_history(result.into(), history, emit);
    }
}

/// Streams one assistant response, emitting its message events; appends the
/// final message to the context and returns it.
async fn stream_assistant_response(
    context: &mut AgentContext,
    config: &LoopConfig,
    cancel: &CancellationToken,
    emit: &Emit<'_>,
) -> AssistantMessage {
    let ModelChoice {
        model,
        provider,
        reasoning,
    } = config.model.current();
    let request = Context {
        system_prompt: context.system_prompt.clone(),
        messages: context.messages.snapshot(),
        tools: context.tools.shared_definitions(),
        reasoning,
        max_tokens: None,
    };
    // The caller's transform and the provider's panics are caught like a
    // tool's: they escaped `prompt` with no `agent_end`, and took the task
    // of a caller that spawned the run. The request is dropped before the
    // answer is read: it holds a snapshot of the history.
    let transformed = match &config.transform_context {
        Some(transform) => {
            std::panic::catch_unwind(AssertUnwindSafe(|| transform(&model, request)))
                .map_err(|panic| NoAnswer::Panicked(TRANSFORM_PANICKED, panic))
        }
        None => Ok(request),
    };
    let stream = transformed.and_then(|request| {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            provider.stream(&model, &request, cancel.clone())
        }))
        .map_err(|panic| NoAnswer::Panicked(PROVIDER_PANICKED, panic))
    });
    let mut started = false;
    let answer = match stream {
        Ok(stream) => read_answer(stream, &mut started, emit).await,
        Err(failure) => Err(failure),
    };
    let message = answer.unwrap_or_else(|failure| failure.into_answer(&model, cancel));
    if !started {
        emit(AgentEvent::MessageStart {
            message: message.clone().into(),
        });
    }
    context.messages.push(message.clone().into());
    emit(AgentEvent::MessageEnd {
        message: message.clone().into(),
    });
    message
}

/// Why a provider gave no final message: a broken contract, or a bug.
enum NoAnswer {
    /// The stream ended without `Done` or `Error`.
    EndedEarly,
    /// What panicked (the start of the error text: `transform_context`,
    /// `stream` or a poll of its stream), with the panic's payload.
    Panicked(&'static str, Box<dyn std::any::Any + Send>),
}

impl NoAnswer {
    /// The error answer that stands in for the missing one: a stream cut
    /// short in a cancelled run is an abort; a panic is always an error,
    /// and says what panicked.
    fn into_answer(self, model: &Model, cancel: &CancellationToken) -> AssistantMessage {
        let mut answer = AssistantMessage::empty(model);
        let text = match self {
            NoAnswer::EndedEarly => {
                answer.stop_reason = if cancel.is_cancelled() {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                STREAM_ENDED_EARLY.to_owned()
            }
            NoAnswer::Panicked(what, payload) => {
                answer.stop_reason = StopReason::Error;
                match panic_text(payload.as_ref()) {
                    Some(message) => format!("{what}: {message}"),
                    None => what.to_owned(),
                }
            }
        };
        answer.error_message = Some(text);
        answer
    }
}

/// Reads `stream` to its final message, emitting `message_start` (setting
/// `started`) and the updates. The stream is dropped before this returns:
/// it may hold the request (and so the history) until then, and the answer
/// is appended after.
async fn read_answer(
    mut stream: AssistantStream,
    started: &mut bool,
    emit: &Emit<'_>,
) -> Result<AssistantMessage, NoAnswer> {
    loop {
        let event = AssertUnwindSafe(stream.next())
            .catch_unwind()
            .await
            .map_err(|panic| NoAnswer::Panicked(PROVIDER_PANICKED, panic))?;
        match event {
            None => return Err(NoAnswer::EndedEarly),
            Some(AssistantMessageEvent::Start { partial }) => {
                *started = true;
                emit(AgentEvent::MessageStart {
                    message: Arc::unwrap_or_clone(partial).into(),
                });
            }
            Some(AssistantMessageEvent::Done { message, .. }) => return Ok(message),
            Some(AssistantMessageEvent::Error { error, .. }) => return Ok(error),
            Some(update) => emit(AgentEvent::MessageUpdate {
                assistant_message_event: Box::new(update),
            }),
        }
    }
}
