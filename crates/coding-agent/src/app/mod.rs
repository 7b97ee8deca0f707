//! The wiring point: the agent as every mode drives it (Pi's `AgentSession`): an
//! [`agent_core::Agent`] with the chosen tools, model and system prompt, tied
//! to a [`SessionManager`] that saves each message as it completes.
//!
//! Modes subscribe to the agent's events and hand each one to
//! [`AgentSession::record`] before showing it, so the file is written in event
//! order. The provider is wrapped so that what the model is sent is always
//! valid ([`replayable_messages`]): resumed or aborted conversations included.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_ai::message::now_millis;
use agent_ai::validate::SchemaError;
use agent_ai::{
    AssistantStream, Content, Context, ImageContent, Message, Model, Provider, StopReason,
    UserContent, UserMessage,
};
use agent_core::{
    Agent, AgentContext, AgentEvent, AgentEvents, LoopConfig, MessageQueue, QueueMode, ToolSet,
};
use tokio_util::sync::CancellationToken;

use crate::ToolContext;
use crate::definition::{ContextFactory, ToolDefinition, wrap_tool_definition};
use crate::session::{
    BashExecution, SessionError, SessionHeader, SessionManager, replayable_messages,
};
use crate::tools::{BUILTIN_TOOL_NAMES, builtin_tool};

/// What an [`AgentSession`] is made from.
pub struct SessionOptions {
    /// Streams the model's answers (a real provider, or a scripted one in tests).
    pub provider: Arc<dyn Provider>,
    /// The model to ask.
    pub model: Model,
    /// The working directory tools run in.
    pub cwd: PathBuf,
    /// The active tools, in order.
    pub tools: Vec<Arc<dyn ToolDefinition>>,
    /// The system prompt (see [`crate::prompt`]).
    pub system_prompt: String,
    /// Where the conversation is saved; its messages are the starting conversation.
    pub session: SessionManager,
}

/// An agent with its session; cheap to clone (clones share both).
#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Inner>,
}

struct Inner {
    agent: Agent,
    session: Mutex<SessionManager>,
    /// The model and provider the next request goes to (the loop's own
    /// model is only the first one: [`SwitchableProvider`] sends each
    /// request to the current pair).
    current: Arc<Mutex<CurrentModel>>,
    cwd: PathBuf,
    steering: MessageQueue,
    follow_up: MessageQueue,
    modes: Mutex<QueueModes>,
    /// User bash runs that finished while the agent ran; added after it.
    pending_bash: Mutex<Vec<BashExecution>>,
}

/// The model in use and the provider that serves it.
struct CurrentModel {
    model: Model,
    provider: Arc<dyn Provider>,
}

/// Why [`AgentSession::set_model`] did not switch.
#[derive(Debug, thiserror::Error)]
pub enum SetModelError {
    /// A run is in progress; models change between runs.
    #[error("cannot switch models while the agent is working")]
    Running,
    /// The switch happened but the session file could not record it.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// The steering and follow-up modes, as `get_state` reports them.
#[derive(Debug, Clone, Copy, Default)]
struct QueueModes {
    steering: QueueMode,
    follow_up: QueueMode,
}

impl AgentSession {
    /// The agent for `options`, holding the session's conversation. Fails
    /// only when a tool's parameter schema does not compile.
    pub fn new(options: SessionOptions) -> Result<Self, SchemaError> {
        let SessionOptions {
            provider,
            model,
            cwd,
            tools,
            system_prompt,
            session,
        } = options;
        let current = Arc::new(Mutex::new(CurrentModel {
            model: model.clone(),
            provider,
        }));
        let ctx_factory: ContextFactory = {
            let cwd = cwd.clone();
            let current = current.clone();
            Arc::new(move |cancel: CancellationToken| ToolContext {
                cancel,
                model: Some(lock(&current).model.clone()),
                ..ToolContext::new(cwd.clone())
            })
        };
        let tools = ToolSet::new(
            tools
                .into_iter()
                .map(|definition| wrap_tool_definition(definition, ctx_factory.clone())),
        )?;
        let steering = MessageQueue::default();
        let follow_up = MessageQueue::default();
        let config = LoopConfig::new(model, Arc::new(SwitchableProvider(current.clone())))
            .with_steering(steering.clone())
            .with_follow_up(follow_up.clone());
        let context = AgentContext {
            system_prompt: Some(system_prompt),
            messages: session.messages(),
            tools: Arc::new(tools),
        };
        Ok(AgentSession {
            inner: Arc::new(Inner {
                agent: Agent::new(config, context),
                session: Mutex::new(session),
                current,
                cwd,
                steering,
                follow_up,
                modes: Mutex::default(),
                pending_bash: Mutex::default(),
            }),
        })
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The agent's events from now on; hand each to [`AgentSession::record`].
    pub fn subscribe(&self) -> AgentEvents {
        self.inner.agent.subscribe()
    }

    /// The model in use.
    pub fn model(&self) -> Model {
        lock(&self.inner.current).model.clone()
    }

    /// Sends the following runs to `model` on `provider` (tools see it too)
    /// and records a `model_change` entry. Refused while a run is in
    /// progress, so a run never changes model halfway.
    pub fn set_model(
        &self,
        model: Model,
        provider: Arc<dyn Provider>,
    ) -> Result<(), SetModelError> {
        if self.inner.agent.is_running() {
            return Err(SetModelError::Running);
        }
        let (provider_name, model_id) = (model.provider.clone(), model.id.clone());
        *lock(&self.inner.current) = CurrentModel { model, provider };
        self.session()
            .append_model_change(&provider_name, &model_id)?;
        Ok(())
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.inner.cwd
    }

    /// The session's header.
    pub fn header(&self) -> SessionHeader {
        self.session().header().clone()
    }

    /// Where the session is saved, if it is.
    pub fn session_file(&self) -> Option<PathBuf> {
        self.session().file().map(Path::to_path_buf)
    }

    /// The session's display name, if one was set.
    pub fn session_name(&self) -> Option<String> {
        self.session().name()
    }

    /// Names the session.
    pub fn set_session_name(&self, name: &str) -> Result<(), SessionError> {
        self.session().append_session_name(name)
    }

    /// Saves what `event` completes: every message at its `message_end`;
    /// at `agent_end`, the user bash runs that waited for the agent.
    pub fn record(&self, event: &AgentEvent) -> Result<(), SessionError> {
        match event {
            AgentEvent::MessageEnd { message } => self.session().append_message(message),
            AgentEvent::AgentEnd { .. } => self.flush_pending_bash(),
            _ => Ok(()),
        }
    }

    /// A user message in Pi's shape: a text block, then the images.
    pub fn user_message(text: &str, images: Vec<ImageContent>) -> Message {
        let mut content = vec![Content::text(text)];
        content.extend(images.into_iter().map(Content::Image));
        Message::User(UserMessage {
            content: UserContent::Blocks(content),
            timestamp: now_millis(),
        })
    }

    /// Runs `message` as a prompt until the agent is done; the run's messages
    /// are saved as the caller records its events.
    pub async fn prompt(&self, message: Message) -> Result<Vec<Message>, agent_core::AgentError> {
        // Bash runs recorded after the last run go before the new prompt.
        if let Err(error) = self.flush_pending_bash() {
            tracing::warn!("{error}");
        }
        self.inner.agent.prompt_messages(vec![message]).await
    }

    /// Queues a message for after the current turn.
    pub fn steer(&self, message: Message) {
        self.inner.steering.push(message);
    }

    /// Queues a message for when the agent would stop.
    pub fn follow_up(&self, message: Message) {
        self.inner.follow_up.push(message);
    }

    /// Messages waiting in the steering and follow-up queues.
    pub fn pending_message_count(&self) -> usize {
        self.inner.steering.len() + self.inner.follow_up.len()
    }

    /// Sets how many steering messages each poll takes.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.steering.set_mode(mode);
        lock(&self.inner.modes).steering = mode;
    }

    /// Sets how many follow-up messages each poll takes.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.follow_up.set_mode(mode);
        lock(&self.inner.modes).follow_up = mode;
    }

    /// The steering and follow-up modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let modes = *lock(&self.inner.modes);
        (modes.steering, modes.follow_up)
    }

    /// Adds a user bash run to the conversation and the session; while the
    /// agent runs, it waits for the run to end (so tool calls and their
    /// results stay adjacent).
    pub fn record_bash(&self, execution: BashExecution) -> Result<(), SessionError> {
        lock(&self.inner.pending_bash).push(execution);
        if self.inner.agent.is_running() {
            return Ok(());
        }
        self.flush_pending_bash()
    }

    fn flush_pending_bash(&self) -> Result<(), SessionError> {
        let pending = std::mem::take(&mut *lock(&self.inner.pending_bash));
        if pending.is_empty() {
            return Ok(());
        }
        let mut messages = self.inner.agent.messages();
        let mut session = self.session();
        for execution in pending {
            if execution.exclude_from_context != Some(true) {
                messages.push(execution.to_user_message());
            }
            session.append_bash_execution(&execution)?;
        }
        self.inner.agent.set_messages(messages);
        Ok(())
    }

    /// Starts a new session: an empty conversation, empty queues, a new file.
    /// Call it while the agent is idle.
    pub fn new_session(&self, parent_session: Option<String>) {
        self.inner.agent.set_messages(Vec::new());
        self.inner.steering.clear();
        self.inner.follow_up.clear();
        lock(&self.inner.pending_bash).clear();
        self.session().new_session(parent_session);
    }

    /// The text of the model's last answer (Pi's `getLastAssistantText`):
    /// aborted answers with no content are skipped; `None` when blank.
    pub fn last_assistant_text(&self) -> Option<String> {
        let messages = self.inner.agent.messages();
        let last = messages.iter().rev().find_map(|message| match message {
            Message::Assistant(a)
                if !(a.stop_reason == StopReason::Aborted && a.content.is_empty()) =>
            {
                Some(a)
            }
            _ => None,
        })?;
        let text = last.text();
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    fn session(&self) -> MutexGuard<'_, SessionManager> {
        lock(&self.inner.session)
    }
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession")
            .field("agent", &self.inner.agent)
            .field("model", &self.model())
            .field("cwd", &self.inner.cwd)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The built-in tools called `names`, in that order (repeats dropped), and
/// the names that are not built-in tools.
pub fn select_tools(names: &[String]) -> (Vec<Arc<dyn ToolDefinition>>, Vec<String>) {
    select_tools_with(names, builtin_tool)
}

/// [`select_tools`] with the tools `make` builds (for example acting on a
/// remote host).
pub fn select_tools_with(
    names: &[String],
    make: impl Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
) -> (Vec<Arc<dyn ToolDefinition>>, Vec<String>) {
    let mut tools: Vec<Arc<dyn ToolDefinition>> = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        if tools.iter().any(|t| &t.tool().name == name) {
            continue;
        }
        match make(name) {
            Some(tool) => tools.push(tool),
            None => unknown.push(name.clone()),
        }
    }
    (tools, unknown)
}

/// The tools active when `--tools` is not given: all seven built-ins.
pub fn default_tool_names() -> Vec<String> {
    BUILTIN_TOOL_NAMES
        .iter()
        .map(|&name| name.to_owned())
        .collect()
}

/// Sends each request to the session's current model and provider (the
/// loop's fixed model is ignored, so [`AgentSession::set_model`] takes effect
/// at the next request), with only what the model can be sent (see
/// [`replayable_messages`]).
struct SwitchableProvider(Arc<Mutex<CurrentModel>>);

impl Provider for SwitchableProvider {
    fn stream(
        &self,
        _model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        let (model, provider) = {
            let current = lock(&self.0);
            (current.model.clone(), current.provider.clone())
        };
        let context = Context {
            messages: replayable_messages(&context.messages),
            ..context.clone()
        };
        provider.stream(&model, &context, cancel)
    }
}
