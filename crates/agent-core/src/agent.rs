//! The `Agent` handle: a conversation that runs the loop on request and can be
//! steered, followed up, aborted and watched while it runs.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_ai::{Message, UserMessage};
use tokio_util::sync::CancellationToken;

use crate::agent_loop::{
    AgentContext, ContinueError, LoopConfig, RunOptions, ToolUpdates, answer_abandoned_calls,
    continue_loop, run_with_prompts,
};
use crate::event::AgentEvent;
use crate::history::History;
use crate::listener::{AgentEvents, Listener, Updates};
use crate::model::ModelHandle;
use crate::pipeline::panic_text;
use crate::queue::MessageQueue;
use crate::sync::lock;
use crate::tool_set::ToolSet;

/// Why the agent refused a request (Pi's texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// `prompt` while a run is in progress.
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyProcessingPrompt,
    /// `continue_run` while a run is in progress.
    #[error("Agent is already processing. Wait for completion before continuing.")]
    AlreadyProcessing,
    /// `continue_run` on an empty conversation.
    #[error("No messages to continue from")]
    NoMessages,
    /// `continue_run` after the model's last word, with nothing queued.
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
}

/// A conversation with a model and its tools.
///
/// Cheap to clone; clones share the conversation. A run executes inside the
/// future returned by [`Agent::prompt`] (or [`Agent::continue_run`]): tools run
/// in that future's task, and dropping the future stops the run and drops its
/// tools. Meanwhile other clones can [`steer`](Agent::steer),
/// [`follow_up`](Agent::follow_up), [`abort`](Agent::abort) or read
/// [`messages`](Agent::messages).
///
/// A run dropped while tools ran (a `tokio::time::timeout` around `prompt`)
/// leaves its tool calls answered as an abort answers them (error results
/// `Operation aborted`, each with its `message_start` and `message_end`),
/// so the history stays one the model can be asked about again; the
/// `tool_execution_end`s, `turn_end` and `agent_end` of that run never
/// come. To stop a run and get all its events, [`abort`](Agent::abort) it
/// and await its future.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    config: LoopConfig,
    state: Mutex<State>,
    /// This agent's own: tools given to [`Agent::set_tools`] during a run.
    /// Not in the [`LoopConfig`], whose clones share what they hold: two
    /// agents built from clones of one config offered each other's tools.
    tool_updates: ToolUpdates,
    /// The subscribers events are handed to, locked while an event is.
    subscribers: Mutex<Vec<Subscriber>>,
    /// Subscribers not yet handed an event: a subscriber may subscribe
    /// while it is called (the list it is in is locked then), and the new
    /// one joins the others at the next event.
    joining: Mutex<Vec<Subscriber>>,
}

/// Told each event; `false` unsubscribes it.
type Subscriber = Box<dyn Fn(&AgentEvent) -> bool + Send>;

struct State {
    /// The conversation, the system prompt and the tools; a run shares its
    /// history (the one owner of the messages), so readers see each message
    /// as soon as its `message_end` is sent.
    context: AgentContext,
    /// The token of the run in progress, if any.
    run: Option<CancellationToken>,
}

impl Agent {
    /// An idle agent with the conversation in `context`.
    pub fn new(config: LoopConfig, context: AgentContext) -> Self {
        Agent {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State { context, run: None }),
                tool_updates: ToolUpdates::default(),
                subscribers: Mutex::new(Vec::new()),
                joining: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Sends a user message and runs until the model is done; returns the
    /// messages the run added.
    pub async fn prompt(&self, text: impl Into<String>) -> Result<Vec<Message>, AgentError> {
        self.prompt_messages(vec![UserMessage::text(text).into()])
            .await
    }

    /// Like [`Agent::prompt`] with any messages (images, several at once).
    ///
    /// With no messages, asks the model again with nothing new, as Pi's
    /// `prompt([])` does; [`Agent::continue_run`] is the checked way to
    /// resume (it refuses when the model spoke last).
    pub async fn prompt_messages(
        &self,
        messages: Vec<Message>,
    ) -> Result<Vec<Message>, AgentError> {
        let (mut context, cancel) = self.begin(AgentError::AlreadyProcessingPrompt)?;
        let guard = RunGuard::new(self, &context);
        Ok(guard
            .watch(self.run(messages, &mut context, &cancel, false))
            .await)
    }

    /// Resumes the conversation with a tool result or user message last
    /// (a run stopped by `should_stop_after_turn`, a conversation set with
    /// [`Agent::set_messages`]). When the model spoke last, runs a queued
    /// steering message (or else a queued follow-up) instead; with nothing
    /// queued, fails with [`AgentError::ContinueFromAssistant`].
    ///
    /// That includes an answer that failed (`stopReason` `error` or
    /// `aborted`): as in Pi, retrying it is the caller's decision, made by
    /// removing it first ([`Agent::set_messages`] with the messages before
    /// it), then continuing. The failed answer stays until then because
    /// subscribers have already been told it (a session saved it).
    pub async fn continue_run(&self) -> Result<Vec<Message>, AgentError> {
        let (mut context, cancel) = self.begin(AgentError::AlreadyProcessing)?;
        let guard = RunGuard::new(self, &context);
        let last = context.messages.snapshot().last().cloned();
        let run = async {
            match last {
                None => Err(AgentError::NoMessages),
                Some(Message::Assistant(_)) => {
                    let steering = self.inner.config.steering.take();
                    if !steering.is_empty() {
                        // The steering message is the prompt: no second poll before the turn.
                        return Ok(self.run(steering, &mut context, &cancel, true).await);
                    }
                    let follow_ups = self.inner.config.follow_up.take();
                    if !follow_ups.is_empty() {
                        return Ok(self.run(follow_ups, &mut context, &cancel, false).await);
                    }
                    Err(AgentError::ContinueFromAssistant)
                }
                Some(_) => {
                    let emit = |event: AgentEvent| self.dispatch(event);
                    continue_loop(
                        &mut context,
                        &self.inner.config,
                        &cancel,
                        &emit,
                        self.run_options(false),
                    )
                    .await
                    .map_err(|error| match error {
                        ContinueError::NoMessages => AgentError::NoMessages,
                        ContinueError::FromAssistant => AgentError::ContinueFromAssistant,
                    })
                }
            }
        };
        guard.watch(run).await
    }

    /// Queues a message for the model to read after the current turn.
    pub fn steer(&self, message: impl Into<Message>) {
        self.inner.config.steering.push(message);
    }

    /// Queues a message for when the model would otherwise stop.
    pub fn follow_up(&self, message: impl Into<Message>) {
        self.inner.config.follow_up.push(message);
    }

    /// The queue [`Agent::steer`] adds to: what still waits there, to show
    /// or to take back. An aborted run leaves its steering queued, and the
    /// next prompt's first turn reads it; a caller that would rather give it
    /// back to the user `drain`s it after the abort.
    pub fn steering(&self) -> &MessageQueue {
        &self.inner.config.steering
    }

    /// The queue [`Agent::follow_up`] adds to (see [`Agent::steering`]).
    pub fn follow_ups(&self) -> &MessageQueue {
        &self.inner.config.follow_up
    }

    /// Cancels the run in progress, if any: the provider stream and every
    /// running tool see the cancellation; the run ends with `stopReason`
    /// `aborted`. Never fails.
    pub fn abort(&self) {
        if let Some(run) = &self.state().run {
            run.cancel();
        }
    }

    /// Every event of every later run, until the returned stream is
    /// dropped: [`Agent::subscribe_to`] with [`Updates::Every`].
    ///
    /// The stream is unbounded and each `message_update` it holds holds
    /// the message so far, which the provider then copies to append its
    /// next delta: read after the run, a 200,000-character answer streamed
    /// in 20-character pieces took 1 GB. A reader that keeps up costs
    /// nothing; one that may fall behind, or reads after the run, takes
    /// [`Updates::Newest`] (it draws the message so far) or
    /// [`Updates::None`] (it reads messages at their `message_end`).
    pub fn subscribe(&self) -> AgentEvents {
        self.subscribe_to(Updates::Every)
    }

    /// The events of every later run with, of a streaming message's
    /// updates, those `updates` says; until the returned stream is dropped.
    pub fn subscribe_to(&self, updates: Updates) -> AgentEvents {
        let (listener, events) = Listener::new(updates);
        self.subscribe_with(move |event| listener.send(event.clone()));
        events
    }

    /// Calls `subscriber` with every later event, in order, as it is
    /// emitted, until it returns `false`. For a caller that merges the
    /// agent's events with its own into one ordered stream (a [`Listener`]
    /// of its own event type keeps what [`Agent::subscribe_to`] keeps).
    ///
    /// A subscriber may subscribe others while it is called: they get the
    /// events after the one being handed out. A subscriber that panics is
    /// unsubscribed (and the panic logged); the run and the other
    /// subscribers go on.
    pub fn subscribe_with(&self, subscriber: impl Fn(&AgentEvent) -> bool + Send + 'static) {
        lock(&self.inner.joining).push(Box::new(subscriber));
    }

    /// The conversation (updated at every `message_end`, so mid-run too).
    pub fn messages(&self) -> Vec<Message> {
        self.history().snapshot().to_vec()
    }

    /// The conversation itself, shared: take a [`History::snapshot`] to read it
    /// without copying.
    pub fn history(&self) -> History {
        self.state().context.messages.clone()
    }

    /// Replaces the conversation. During a run, the run goes on from the
    /// new one: the messages it adds from then on are appended to it (as
    /// Pi appends them to its replaced list), and its next request sends
    /// it. (It replaced a conversation the run no longer appended to: a
    /// run's messages were lost from [`Agent::messages`].)
    pub fn set_messages(&self, messages: Vec<Message>) {
        self.state().context.messages.replace(messages);
    }

    /// Replaces the tools the model is offered (a tool server's list
    /// changed, tools were added at run time). Takes effect at the next
    /// request: a run in progress offers them from its next turn on, and a
    /// batch already running finishes with the tools its calls were made
    /// against.
    pub fn set_tools(&self, tools: Arc<ToolSet>) {
        let mut state = self.state();
        state.context.tools = tools.clone();
        self.inner.tool_updates.offer(tools);
    }

    /// The model the next request goes to, its provider and thinking level:
    /// the loop's own handle, so a switch through it (or a clone of it)
    /// takes effect at the next request, during a run or between runs.
    pub fn model(&self) -> &ModelHandle {
        &self.inner.config.model
    }

    /// Replaces the system prompt (the instructions were edited and
    /// reloaded). Takes effect at the next run: a run in progress keeps the
    /// prompt it started with.
    pub fn set_system_prompt(&self, prompt: Option<String>) {
        self.state().context.system_prompt = prompt.map(Arc::from);
    }

    /// The system prompt the next request sends.
    pub fn system_prompt(&self) -> Option<Arc<str>> {
        self.state().context.system_prompt.clone()
    }

    /// The tools the next request offers.
    pub fn tools(&self) -> Arc<ToolSet> {
        self.state().context.tools.clone()
    }

    /// True while a run is in progress.
    pub fn is_running(&self) -> bool {
        self.state().run.is_some()
    }

    /// Claims the agent for a run; fails with `busy` when one is in progress.
    fn begin(&self, busy: AgentError) -> Result<(AgentContext, CancellationToken), AgentError> {
        let mut state = self.state();
        if state.run.is_some() {
            return Err(busy);
        }
        let cancel = CancellationToken::new();
        state.run = Some(cancel.clone());
        Ok((state.context.clone(), cancel))
    }

    /// Runs the loop from `prompts`, reducing its events into the state.
    async fn run(
        &self,
        prompts: Vec<Message>,
        context: &mut AgentContext,
        cancel: &CancellationToken,
        skip_initial_steering: bool,
    ) -> Vec<Message> {
        let emit = |event: AgentEvent| self.dispatch(event);
        run_with_prompts(
            prompts,
            context,
            &self.inner.config,
            cancel,
            &emit,
            self.run_options(skip_initial_steering),
        )
        .await
    }

    /// What this agent's runs add to the bare loop.
    fn run_options(&self, skip_initial_steering: bool) -> RunOptions<'_> {
        RunOptions {
            skip_initial_steering,
            tool_updates: Some(&self.inner.tool_updates),
        }
    }

    /// Hands an event to the subscribers (the loop has already appended any
    /// message it ends to the shared history), in the order they subscribed.
    ///
    /// A panic is caught here because the loop calls this between its
    /// steps: one that escaped left a tool call without its result in the
    /// history and the other subscribers without their `agent_end`.
    fn dispatch(&self, event: AgentEvent) {
        let mut subscribers = lock(&self.inner.subscribers);
        subscribers.append(&mut lock(&self.inner.joining));
        subscribers.retain(|subscriber| {
            std::panic::catch_unwind(AssertUnwindSafe(|| subscriber(&event))).unwrap_or_else(
                |panic| {
                    tracing::error!(
                        "an agent event subscriber panicked and was unsubscribed: {}",
                        panic_text(panic.as_ref()).unwrap_or("(no message)")
                    );
                    false
                },
            )
        });
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("Agent")
            .field("config", &self.inner.config)
            .field("messages", &state.context.messages.len())
            .field("tools", &state.context.tools)
            .field("running", &state.run.is_some())
            .finish()
    }
}

/// Marks the agent idle again when a run ends, however it ends; first, for
/// a run whose future was dropped midway, answers the tool calls it left
/// without results.
struct RunGuard<'a> {
    agent: &'a Agent,
    /// The history the run appends to.
    history: History,
    /// The run's future completed (it was not dropped midway).
    completed: bool,
}

impl<'a> RunGuard<'a> {
    fn new(agent: &'a Agent, context: &AgentContext) -> Self {
        RunGuard {
            agent,
            history: context.messages.clone(),
            completed: false,
        }
    }

    /// Awaits `run`; the guard is dropped with it if it is dropped first.
    async fn watch<T>(mut self, run: impl Future<Output = T>) -> T {
        let output = run.await;
        self.completed = true;
        output
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        // Before the agent is idle again, so no run starts from the
        // history with the calls unanswered.
        if !self.completed {
            answer_abandoned_calls(&self.history, &|event| self.agent.dispatch(event));
        }
        self.agent.state().run = None;
    }
}
