//! The wiring point: the agent as every mode drives it (Pi's `AgentSession`): an
//! [`agent_core::Agent`] with the chosen tools, model and system prompt, tied
//! to a [`SessionManager`] that saves each message as it completes.
//!
//! The session saves each message as the agent emits it (synchronously, in
//! event order, before any mode sees it). Modes subscribe to the session's
//! events ([`AgentSession::subscribe_all`]): the agent's, with the session's
//! own auto-retry and compaction events in order between them. A prompt runs
//! under the session-level recoveries ([`crate::recovery`]). The provider is
//! wrapped so that a model switch takes effect at the next request; what it
//! sends of the history is repaired by the provider itself
//! ([`agent_ai::providers::transform`], the one replay repair).

pub mod models;
mod stats;
pub mod tools_host;
mod tree;

pub use models::ModelCatalog;
pub use stats::{ContextUsage, SessionStats, TokenTotals};
pub use tree::{TreeError, TreeMove};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use agent_ai::message::now_millis;
use agent_ai::thinking::{clamp, next_level, supported_levels};
use agent_ai::validate::SchemaError;
use agent_ai::{
    Content, Context, ImageContent, Message, Model, Provider, StopReason, ThinkingLevel,
    UserContent, UserMessage,
};
use agent_core::{
    Agent, AgentContext, AgentEvent, AgentEvents, LoopConfig, MessageQueue, ModelHandle, QueueMode,
    ToolSet, Updates,
};
use tokio_util::sync::CancellationToken;

use crate::ToolContext;
use crate::compaction::oversize::{Room, fit_tool_results};
use crate::compaction::tokens::{EstimateScale, fixed_tokens, request_size, scaled};
use crate::compaction::{CompactionError, CompactionSettings};
use crate::definition::{ContextFactory, ToolDefinition, wrap_tool_definition};
use crate::export::ExportError;
use crate::guard::Guard;
use crate::guard::record::{CallDecision, DECISION_TYPE};
use crate::hooks::lifecycle::{CompactTrigger, SessionEndReason};
pub use crate::hooks::prompt::PromptError;
use crate::hooks::prompt::PromptHooks;
use crate::hooks::{CommandHooks, DEFAULT_PERMISSION_MODE, SessionInfo};
use crate::recovery::RecoverySettings;
use crate::session::CompactionResult;
use crate::session::{BashExecution, SessionError, SessionHeader, SessionManager};
use crate::session_event::{CompactionReason, Listener, SessionEvent, SessionEvents};
use crate::support::sync::lock;
use crate::templates::PromptTemplate;
use crate::thinking::ThinkingOptions;
use crate::tools::{BUILTIN_TOOL_NAMES, builtin_tool};

#[cfg(feature = "mcp")]
mod mcp;

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
    /// Command hooks from the settings (`None`: no hooks).
    pub hooks: Option<Arc<CommandHooks>>,
    /// The permission guard: policy, then `hooks` (give the guard the same
    /// ones), then approval ([`crate::guard::gate`]). `None`: no policy,
    /// every call runs unless a hook blocks it (a library user's default).
    /// A mode that can ask a person sets its approver with
    /// [`Guard::set_approver`].
    pub guard: Option<Arc<Guard>>,
    /// `--thinking` and the settings' default level (see [`crate::thinking`]).
    pub thinking: ThinkingOptions,
    /// The templates a prompt may name (`/review a.rs`; see
    /// [`crate::templates`]).
    pub prompt_templates: Vec<PromptTemplate>,
    /// Where the tools act: the `--remote` host, `None` for this machine.
    /// Recorded in the session file, so a session going on elsewhere is
    /// warned about ([`tools_host`]).
    pub tools_host: Option<tools_host::ToolsHost>,
}

/// What the model is told besides the conversation, as a session's files
/// give it: the system prompt and the `/name` commands (prompt templates and
/// skills). The binary builds it at start and again for `/reload`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    /// The system prompt (see [`crate::prompt`]).
    pub system_prompt: String,
    /// The commands a prompt may name.
    pub prompt_templates: Vec<PromptTemplate>,
    /// How many context files (`AGENTS.md`, `CLAUDE.md`) the prompt holds.
    pub context_files: usize,
    /// How many skills the prompt lists or the commands offer.
    pub skills: usize,
}

/// Which session something started in: a user command's result is
/// recorded there ([`AgentSession::mark`]).
#[derive(Debug, Clone)]
pub struct SessionMark {
    id: String,
    file: Option<PathBuf>,
}

/// An agent with its session; cheap to clone (clones share both).
#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Inner>,
}

/// An [`AgentSession`] that does not keep it alive: what the agent's own
/// listeners hold, since a listener holding the session is a cycle (the
/// agent holds its listeners) that keeps the session, its tools and their
/// connections (a `--remote` one's control socket) past the end of the
/// process.
#[derive(Clone)]
pub(crate) struct WeakSession(Weak<Inner>);

impl WeakSession {
    /// The session, while something else holds it.
    pub(crate) fn upgrade(&self) -> Option<AgentSession> {
        self.0.upgrade().map(|inner| AgentSession { inner })
    }
}

struct Inner {
    agent: Agent,
    /// See [`SessionOptions::prompt_templates`]; replaced by
    /// [`AgentSession::set_instructions`].
    prompt_templates: Mutex<Arc<[PromptTemplate]>>,
    /// The tools given at construction; [`AgentSession::set_extra_tools`]
    /// offers them first, then the extra ones.
    definitions: Vec<Arc<dyn ToolDefinition>>,
    /// The tools that arrived at run time ([`AgentSession::set_extra_tools`]).
    extra_definitions: Mutex<Vec<Arc<dyn ToolDefinition>>>,
    /// Makes each call's [`ToolContext`].
    ctx_factory: ContextFactory,
    /// The MCP servers whose tools the session offers (see `app/mcp.rs`).
    #[cfg(feature = "mcp")]
    mcp: Mutex<Option<crate::mcp::McpServers>>,
    session: Mutex<SessionManager>,
    /// The model, provider and thinking level the next request goes to:
    /// the loop's own handle, shared (the thinking level is always one the
    /// model supports).
    model: ModelHandle,
    cwd: PathBuf,
    /// See [`SessionOptions::tools_host`].
    tools_host: Option<tools_host::ToolsHost>,
    steering: MessageQueue,
    follow_up: MessageQueue,
    modes: Mutex<QueueModes>,
    /// User bash runs that finished while the agent ran; added after it.
    pending_bash: Mutex<Vec<BashExecution>>,
    /// SessionStart, UserPromptSubmit and Stop hooks around each prompt.
    prompt_hooks: Option<PromptHooks>,
    /// Cancels the hooks around the prompt now running (see
    /// [`AgentSession::abort`]).
    prompt_hooks_cancel: Mutex<Option<CancellationToken>>,
    /// Where the session's own events go (see [`AgentSession::subscribe_all`]).
    listeners: Mutex<Vec<Listener>>,
    /// Retry and compaction settings, and the model's window.
    recovery: Arc<Mutex<RecoverySettings>>,
    /// What refused requests taught of the token estimate (see
    /// [`AgentSession::learn_request_size`]).
    estimate_scale: Arc<EstimateScale>,
    /// Cancels the retry wait or the compaction in progress.
    waiting: Mutex<Option<CancellationToken>>,
    /// A compaction runs.
    compacting: Mutex<bool>,
    /// The run stopped after a turn of tool calls for a compaction
    /// ([`AgentSession::stop_to_compact`]).
    stopped_to_compact: AtomicBool,
    /// A threshold compaction failed during the prompt now running; none
    /// is tried again until the next one
    /// ([`AgentSession::threshold_compaction_failed`]).
    threshold_failed: AtomicBool,
    /// What RPC's model commands choose from.
    models: Mutex<Option<ModelCatalog>>,
    /// The queue texts last reported in `queue_update`.
    reported_queues: Mutex<(Vec<String>, Vec<String>)>,
    /// The permission guard, when the session has one.
    guard: Option<Arc<Guard>>,
    /// Where a level comes from when the session or a model switch needs one.
    thinking: ThinkingOptions,
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
            mut session,
            hooks,
            guard,
            thinking,
            prompt_templates,
            tools_host,
        } = options;
        tools_host::note(&mut session, tools_host.as_ref());
        let level = thinking.initial_level(&model, session.thinking_level());
        if session.thinking_level() != Some(level)
            && let Err(error) = session.append_thinking_level_change(level)
        {
            tracing::warn!("cannot save the session: {error}");
        }
        let handle = ModelHandle::new(model, provider);
        handle.set_reasoning(Some(level));
        let ctx_factory: ContextFactory = {
            let cwd = cwd.clone();
            let handle = handle.clone();
            Arc::new(move |cancel: CancellationToken| ToolContext {
                cancel,
                model: Some(handle.model()),
                ..ToolContext::new(cwd.clone())
            })
        };
        let definitions = tools;
        let tools = ToolSet::new(
            definitions
                .iter()
                .map(|definition| wrap_tool_definition(definition.clone(), ctx_factory.clone())),
        )?;
        let steering = MessageQueue::default();
        let follow_up = MessageQueue::default();
        let recovery = Arc::new(Mutex::new(RecoverySettings::default()));
        let estimate_scale = Arc::new(EstimateScale::default());
        let (fit, scale) = (recovery.clone(), estimate_scale.clone());
        let mut config = LoopConfig::with_model_handle(handle.clone())
            .with_transform_context(move |model, context| {
                fit_to_window(&fit, &scale, model, context)
            })
            .with_steering(steering.clone())
            .with_follow_up(follow_up.clone());
        match (&guard, &hooks) {
            (Some(guard), _) => config = config.with_hooks(guard.clone()),
            (None, Some(hooks)) => config = config.with_hooks(hooks.clone()),
            (None, None) => {}
        }
        let messages = session.messages();
        let resumed = !messages.is_empty();
        if let Some(hooks) = &hooks {
            // `prompt` hooks ask the model this session asks.
            hooks.set_model(handle.clone());
        }
        let prompt_hooks = hooks.map(|hooks| PromptHooks::new(hooks, resumed));
        let context =
            AgentContext::new(Some(system_prompt), Arc::new(tools)).with_messages(messages);
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let weak = weak.clone();
            // A run of tool calls past the threshold stops for a compaction
            // before the model reads the results (see `recovery`).
            let config = config.with_should_stop_after_turn(move |turn| {
                turn.results_pending
                    && weak
                        .upgrade()
                        .is_some_and(|inner| AgentSession { inner }.stop_to_compact())
            });
            Inner {
                agent: Agent::new(config, context),
                definitions,
                extra_definitions: Mutex::default(),
                ctx_factory,
                #[cfg(feature = "mcp")]
                mcp: Mutex::default(),
                session: Mutex::new(session),
                model: handle,
                cwd,
                tools_host,
                steering,
                follow_up,
                modes: Mutex::default(),
                pending_bash: Mutex::default(),
                listeners: Mutex::default(),
                recovery,
                estimate_scale,
                waiting: Mutex::default(),
                compacting: Mutex::default(),
                reported_queues: Mutex::default(),
                models: Mutex::default(),
                prompt_hooks,
                prompt_hooks_cancel: Mutex::default(),
                guard,
                thinking,
                prompt_templates: Mutex::new(prompt_templates.into()),
                stopped_to_compact: AtomicBool::new(false),
                threshold_failed: AtomicBool::new(false),
            }
        });
        if let Some(guard) = &inner.guard {
            // The guard serves this session now (an interactive /resume
            // builds a new one around it): the last one's "allow for this
            // session" rules do not carry over.
            guard.end_session();
            let weak = Arc::downgrade(&inner);
            guard.set_decision_sink(Arc::new(move |decision| {
                if let Some(inner) = weak.upgrade() {
                    AgentSession { inner }.record_decision(decision);
                }
            }));
        }
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        inner
            .agent
            .subscribe_with(move |event| match weak.upgrade() {
                Some(inner) => {
                    let session = AgentSession { inner };
                    if let Err(error) = session.record(event) {
                        tracing::warn!("cannot save the session: {error}");
                    }
                    true
                }
                None => false,
            });
        Ok(AgentSession { inner })
    }

    /// The permission guard, when the session has one (RPC sets its
    /// approver through it).
    pub fn guard(&self) -> Option<&Arc<Guard>> {
        self.inner.guard.as_ref()
    }

    /// Saves a guard decision in the session file and tells the modes.
    fn record_decision(&self, decision: CallDecision) {
        let data = serde_json::to_value(&decision).unwrap_or_default();
        if let Err(error) = self.session().append_custom(DECISION_TYPE, data) {
            tracing::warn!("cannot save the session: {error}");
        }
        self.notify(SessionEvent::PermissionDecision(decision));
    }

    /// A handle to this session that does not keep it alive.
    pub(crate) fn downgrade(&self) -> WeakSession {
        WeakSession(Arc::downgrade(&self.inner))
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// Resolves at once: without the `mcp` feature no tools arrive at run
    /// time (`app/mcp.rs` has the version that waits for MCP servers).
    #[cfg(not(feature = "mcp"))]
    pub fn extra_tools_listed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        std::future::ready(())
    }

    /// Offers the session's own tools followed by `extra` (tools that arrive
    /// at run time, such as MCP servers'), from the next request on (see
    /// [`Agent::set_tools`]). Fails when a tool's schema does not compile;
    /// the tools offered stay as they were.
    pub fn set_extra_tools(&self, extra: Vec<Arc<dyn ToolDefinition>>) -> Result<(), SchemaError> {
        let factory = &self.inner.ctx_factory;
        let tools = ToolSet::new(
            self.inner
                .definitions
                .iter()
                .cloned()
                .chain(extra.iter().cloned())
                .map(|definition| wrap_tool_definition(definition, factory.clone())),
        )?;
        // The definitions first: a UI that sees the new set
        // (`Agent::tools`) reads its definitions right after.
        *lock(&self.inner.extra_definitions) = extra;
        self.inner.agent.set_tools(Arc::new(tools));
        Ok(())
    }

    /// The definitions of the tools offered: the session's own, then the
    /// extra ones; what a UI draws calls with.
    pub fn tool_definitions(&self) -> Vec<Arc<dyn ToolDefinition>> {
        self.inner
            .definitions
            .iter()
            .chain(lock(&self.inner.extra_definitions).iter())
            .cloned()
            .collect()
    }

    /// The agent's events from now on (the session saves them itself).
    pub fn subscribe(&self) -> AgentEvents {
        self.inner.agent.subscribe()
    }

    /// The agent's events and the session's own (auto-retry, compaction),
    /// in the order they happened: every one, for a mode that passes them
    /// on (json, rpc); a streaming message's deltas merged by block once
    /// the mode is far behind ([`Updates::Merged`]).
    pub fn subscribe_all(&self) -> SessionEvents {
        self.subscribe_listener(Updates::Merged)
    }

    /// As [`AgentSession::subscribe_all`], but of a streaming message's
    /// updates only the newest not yet received: for a view that draws the
    /// message so far, not its deltas (the terminal UI).
    /// Memory then stays bounded when the stream outruns the view.
    pub fn subscribe_coalesced(&self) -> SessionEvents {
        self.subscribe_listener(Updates::Newest)
    }

    /// As [`AgentSession::subscribe_all`], but without a streaming
    /// message's updates: for a mode that shows a message once it ends
    /// (print's text). An update that waits for its reader holds the
    /// message, which the provider then copies for its next delta.
    pub fn subscribe_settled(&self) -> SessionEvents {
        self.subscribe_listener(Updates::None)
    }

    fn subscribe_listener(&self, updates: Updates) -> SessionEvents {
        let (listener, events) = Listener::new(updates);
        let agent_listener = listener.clone();
        self.inner.agent.subscribe_with(move |event| {
            agent_listener.send(SessionEvent::Agent(Box::new(event.clone())))
        });
        lock(&self.inner.listeners).push(listener);
        events
    }

    /// Tells the subscribers of [`AgentSession::subscribe_all`].
    pub(crate) fn notify(&self, event: SessionEvent) {
        if let SessionEvent::AutoRetryEnd {
            failed: Some(message),
            ..
        } = &event
            && let Err(error) = self
                .session()
                .append_message(&Message::Assistant((**message).clone()))
        {
            tracing::warn!("cannot save the session: {error}");
        }
        lock(&self.inner.listeners).retain(|listener| listener.send(event.clone()));
    }

    /// Sets what RPC `set_model`, `cycle_model` and `get_available_models`
    /// choose from.
    pub fn set_models(&self, models: ModelCatalog) {
        *lock(&self.inner.models) = Some(models);
    }

    /// What the model commands choose from (the session's own provider only,
    /// when none was set).
    pub fn models(&self) -> Option<ModelCatalog> {
        lock(&self.inner.models).clone()
    }

    /// Sets the retry and compaction settings and the model's window.
    pub fn set_recovery(&self, recovery: RecoverySettings) {
        *lock(&self.inner.recovery) = recovery;
    }

    /// The retry and compaction settings and the model's window.
    pub fn recovery(&self) -> RecoverySettings {
        *lock(&self.inner.recovery)
    }

    /// Sets the context window of the model in use (`None`: the known
    /// table's, else Pi's default): a model switch brings its own.
    pub fn set_context_window(&self, window: Option<u64>) {
        lock(&self.inner.recovery).context_window = window;
    }

    /// Sets the `maxTokens` setting of the model in use (`None`: its answer
    /// asks for what the window leaves, [`RecoverySettings::answer_limit`]):
    /// a model switch brings its own.
    pub fn set_max_tokens(&self, max_tokens: Option<u32>) {
        lock(&self.inner.recovery).max_tokens = max_tokens;
    }

    /// Turns auto-retry on or off (RPC `set_auto_retry`).
    pub fn set_auto_retry(&self, enabled: bool) {
        lock(&self.inner.recovery).retry.enabled = enabled;
    }

    /// Turns auto-compaction on or off (RPC `set_auto_compaction`).
    pub fn set_auto_compaction(&self, enabled: bool) {
        lock(&self.inner.recovery).compaction.enabled = enabled;
    }

    /// Cancels the wait before a retry, if one is under way (RPC
    /// `abort_retry`); the run ends with the failed turn.
    pub fn abort_retry(&self) {
        if let Some(waiting) = lock(&self.inner.waiting).as_ref() {
            waiting.cancel();
        }
    }

    /// Cancels whatever runs: the agent's turn, a retry wait, a compaction,
    /// the hooks around a prompt.
    pub fn abort(&self) {
        self.abort_retry();
        if let Some(hooks) = lock(&self.inner.prompt_hooks_cancel).as_ref() {
            hooks.cancel();
        }
        self.inner.agent.abort();
    }

    /// A fresh token for a retry wait or a compaction, cancelled by
    /// [`AgentSession::abort_retry`] and [`AgentSession::abort`] until
    /// [`AgentSession::end_wait`].
    pub(crate) fn begin_wait(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *lock(&self.inner.waiting) = Some(token.clone());
        token
    }

    /// The wait begun by [`AgentSession::begin_wait`] is over.
    pub(crate) fn end_wait(&self) {
        *lock(&self.inner.waiting) = None;
    }

    /// True while a retry wait or a compaction is under way (a wait that
    /// [`AgentSession::abort_retry`] would cancel).
    pub fn is_waiting(&self) -> bool {
        lock(&self.inner.waiting).is_some()
    }

    /// True while a run holds the model: the agent's turns, the wait before
    /// a retry, a compaction. A model switch is refused then
    /// ([`SetModelError::Running`]): taken during the wait before a retry,
    /// the retry went to the new model, one run split between two.
    pub fn is_working(&self) -> bool {
        self.inner.agent.is_running() || self.is_waiting()
    }

    /// True while a compaction runs.
    pub fn is_compacting(&self) -> bool {
        *lock(&self.inner.compacting)
    }

    /// The model and provider the next request goes to.
    pub(crate) fn current(&self) -> (Model, Arc<dyn Provider>) {
        let choice = self.inner.model.current();
        (choice.model, choice.provider)
    }

    /// Compacts the conversation now, as `/compact [focus]` and RPC
    /// `compact` do: the summariser writes the summary (told to mind
    /// `focus`), the session file gets the entry, and the agent continues
    /// from the summary and the kept messages. Emits `compaction_start` and
    /// `compaction_end` whatever the outcome; the error is what the user
    /// reads.
    pub async fn compact(&self, focus: Option<&str>) -> Result<CompactionResult, CompactionError> {
        let outcome = self.start_compaction(CompactionReason::Manual, focus).await;
        crate::recovery::end_compaction(self, CompactionReason::Manual, &outcome, false);
        outcome
    }

    /// Compacts the conversation for `reason`, emitting `compaction_start`;
    /// the caller emits `compaction_end` ([`crate::recovery`]), whose
    /// `will_retry` it decides. A threshold compaction with nothing to
    /// compact is not announced at all: it would end with no outcome to
    /// tell, and print mode and the terminal UI showed "Auto-compacting..."
    /// for good.
    pub(crate) async fn start_compaction(
        &self,
        reason: CompactionReason,
        focus: Option<&str>,
    ) -> Result<CompactionResult, CompactionError> {
        // Planned first: PreCompact hooks run only when there is something
        // to compact (they ran, then "Nothing to compact" followed).
        let plan = self.compaction_plan();
        if reason == CompactionReason::Threshold
            && let Err(nothing) = plan
        {
            return Err(nothing);
        }
        let cancel = self.begin_wait();
        // Set before anyone hears of it: a client that reads
        // `compaction_start` and asks (RPC `get_state`, a `prompt` that
        // waits for a compaction) finds it compacting.
        *lock(&self.inner.compacting) = true;
        self.notify(SessionEvent::CompactionStart { reason });
        let outcome = match plan {
            Ok(plan) => match self.pre_compact(reason, focus, &cancel).await {
                Ok(()) => self.compact_with(plan, focus, &cancel).await,
                Err(blocked) => Err(CompactionError::Blocked(blocked)),
            },
            Err(nothing) => Err(nothing),
        };
        *lock(&self.inner.compacting) = false;
        self.end_wait();
        if outcome.is_ok()
            && let Some(hooks) = &self.inner.prompt_hooks
        {
            hooks.compacted();
        }
        outcome
    }

    /// The PreCompact hooks, which may refuse the compaction.
    async fn pre_compact(
        &self,
        reason: CompactionReason,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let Some(hooks) = self.hooks_now() else {
            return Ok(());
        };
        let trigger = match reason {
            CompactionReason::Manual => CompactTrigger::Manual,
            CompactionReason::Threshold | CompactionReason::Overflow => CompactTrigger::Auto,
        };
        hooks.hooks().pre_compact(trigger, focus, cancel).await
    }

    /// Runs the SessionEnd hooks for the session now open, and waits for
    /// them: call it before [`AgentSession::new_session`] (`clear`);
    /// [`AgentSession::close`] calls it when the process is about to end.
    pub async fn end_session(&self, reason: SessionEndReason) {
        if let Some(hooks) = self.hooks_now() {
            hooks.hooks().session_end(reason).await;
        }
    }

    /// Ends the session for good, as the process is about to exit: the
    /// SessionEnd hooks run, then the MCP servers are stopped (one that
    /// ignores its closed stdin would outlive the process).
    pub async fn close(&self, reason: SessionEndReason) {
        self.end_session(reason).await;
        #[cfg(feature = "mcp")]
        self.shut_down_mcp().await;
    }

    /// Runs the Notification hooks for an `idle_prompt` (the interactive
    /// UI has waited for the next prompt past its threshold).
    pub async fn notify_idle(&self) {
        if let Some(hooks) = self.hooks_now() {
            hooks.hooks().idle_prompt().await;
        }
    }

    /// What a compaction now would summarise and keep.
    pub(crate) fn compaction_plan(&self) -> Result<crate::compaction::Plan, CompactionError> {
        let settings = self.recovery();
        let window = settings.window_for(&self.model());
        let budget = settings
            .compaction
            .budget(window, self.fixed_tokens())
            .with_estimate_scale(self.inner.estimate_scale.get());
        let tokens_before = self.context_tokens();
        let session = self.session();
        crate::compaction::plan(&session.branch(), budget, tokens_before)
    }

    async fn compact_with(
        &self,
        plan: crate::compaction::Plan,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<CompactionResult, CompactionError> {
        let (model, provider) = self.current();
        let reasoning = Some(self.thinking_level());
        let progress = |done, of| self.notify(SessionEvent::CompactionProgress { done, of });
        let mut result = crate::compaction::summarise(
            plan,
            focus,
            &model,
            &provider,
            reasoning,
            &self.inner.estimate_scale,
            cancel,
            &progress,
        )
        .await?;
        let mut session = self.session();
        session.append_compaction(&mut result)?;
        self.inner.agent.set_messages(session.messages());
        Ok(result)
    }

    /// What every answer saved in the session reported, added up
    /// ([`SessionManager::usage_total`]).
    pub fn usage_total(&self) -> agent_ai::Usage {
        self.session().usage_total()
    }

    /// True when the context was compacted and no answer since reported
    /// its usage: its size is then only estimated
    /// ([`AgentSession::next_request_tokens`]).
    pub fn context_is_estimated(&self) -> bool {
        let compacted_at = self.session().last_compaction_time();
        compacted_at > 0
            && !crate::compaction::tokens::counted_since(
                &self.inner.agent.history().snapshot(),
                compacted_at,
            )
    }

    /// What the next request would take, in tokens: the server's count up
    /// to the last answer plus estimates of what followed (or the estimate
    /// of all of it), the system prompt and tools included
    /// ([`request_size`]). Right after a compaction it is all estimated.
    pub fn next_request_tokens(&self) -> u64 {
        let scale = self.inner.estimate_scale.get();
        request_size(
            &self.inner.agent.history().snapshot(),
            self.fixed_tokens(),
            scale,
        )
        .tokens(scale)
    }

    /// Learns from a refused request that the server counted `said` tokens
    /// in it: the request is the context now, the refused answer taken out.
    /// Later requests scale their estimates by what it shows
    /// ([`EstimateScale`]), so a result that overflowed is cut to fit when
    /// the model reads it again. (A result that was cut on the way counts
    /// whole here: the scale learned is then too small, never too large.)
    pub fn learn_request_size(&self, said: u64) {
        let scale = &self.inner.estimate_scale;
        let size = request_size(
            &self.inner.agent.history().snapshot(),
            self.fixed_tokens(),
            scale.get(),
        );
        scale.learn(said, size);
    }

    /// The tokens every request carries besides the messages: the system
    /// prompt and the tool definitions.
    pub fn fixed_tokens(&self) -> u64 {
        fixed_tokens(
            self.inner.agent.system_prompt().as_deref(),
            self.inner.agent.tools().definitions(),
        )
    }

    /// The context window of the model in use, in tokens.
    pub fn context_window(&self) -> u64 {
        self.recovery().window_for(&self.model())
    }

    /// The context's size in tokens now (see [`crate::compaction::tokens`]).
    pub fn context_tokens(&self) -> u64 {
        let compacted_at = self.session().last_compaction_time();
        crate::compaction::tokens::context_tokens(
            &self.inner.agent.history().snapshot(),
            compacted_at,
        )
    }

    /// Whether a run should stop after a turn of tool calls to compact
    /// before the model reads the results:
    /// the context is past the threshold, and a compaction would summarise
    /// at least half of it. Checked after the run only, a long run of tool
    /// calls went on past the threshold until the server refused a request
    /// (or, a server that cuts a long prompt silently, lost its beginning).
    /// A context filled by the turn's own results is not compacted mid-run:
    /// summarising the little before them frees nothing, and a result too
    /// large for the window is cut to fit on its way ([`fit_to_window`]).
    fn stop_to_compact(&self) -> bool {
        if self.threshold_compaction_failed() {
            return false;
        }
        let tokens = self.context_tokens();
        let due = self
            .compaction_settings()
            .should_compact(tokens, self.context_window())
            && self
                .compaction_plan()
                .is_ok_and(|plan| plan.summarised_tokens().saturating_mul(2) >= tokens);
        if due {
            self.inner.stopped_to_compact.store(true, Ordering::SeqCst);
        }
        due
    }

    /// Whether the run that just ended stopped for a compaction (the flag
    /// is cleared).
    pub(crate) fn take_stopped_to_compact(&self) -> bool {
        self.inner.stopped_to_compact.swap(false, Ordering::SeqCst)
    }

    /// Whether a threshold compaction failed during this prompt: none is
    /// tried again before the next prompt (an overflow's still is). A
    /// summariser that always failed was asked again after every later
    /// turn: six failed compactions, each a wasted summary request, in a
    /// run of eight reads.
    pub(crate) fn threshold_compaction_failed(&self) -> bool {
        self.inner.threshold_failed.load(Ordering::SeqCst)
    }

    /// Records that a threshold compaction failed (true) or, as a prompt
    /// begins, forgets it (false); whether it was recorded already.
    pub(crate) fn set_threshold_compaction_failed(&self, failed: bool) -> bool {
        self.inner.threshold_failed.swap(failed, Ordering::SeqCst)
    }

    /// The compaction settings in force.
    pub fn compaction_settings(&self) -> CompactionSettings {
        self.recovery().compaction
    }

    /// The model in use.
    pub fn model(&self) -> Model {
        self.inner.model.model()
    }

    /// Sends the following runs to `model` on `provider` (tools see it too)
    /// and records a `model_change` entry. Refused while a run is in
    /// progress, so a run never changes model halfway.
    pub fn set_model(
        &self,
        model: Model,
        provider: Arc<dyn Provider>,
    ) -> Result<(), SetModelError> {
        self.use_model(model, provider, true)
    }

    /// [`AgentSession::set_model`], recording the change in the session
    /// file only when `record`: going back to the model a file records
    /// (`switch_session`) must not write to a file only looked at.
    pub(crate) fn use_model(
        &self,
        model: Model,
        provider: Arc<dyn Provider>,
        record: bool,
    ) -> Result<(), SetModelError> {
        if self.is_working() {
            return Err(SetModelError::Running);
        }
        let (provider_name, model_id) = (model.provider.clone(), model.id.clone());
        let level = self.inner.model.update(|choice| {
            let level = self.inner.thinking.level_after_switch(
                &choice.model,
                choice.reasoning.unwrap_or(ThinkingLevel::Off),
                &model,
            );
            choice.model = model;
            choice.provider = provider;
            level
        });
        // Another model counts with another tokenizer.
        self.inner.estimate_scale.reset();
        if record {
            self.session()
                .append_model_change(&provider_name, &model_id)?;
        }
        self.set_thinking_level(level)?;
        Ok(())
    }

    /// The thinking level requests ask for.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.inner.model.reasoning().unwrap_or(ThinkingLevel::Off)
    }

    /// The levels the current model supports, in order.
    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        supported_levels(&self.model())
    }

    /// Sets the thinking level, clamped to what the model supports (RPC
    /// `set_thinking_level`); when it changes, records a
    /// `thinking_level_change` entry and tells `thinking_level_changed`.
    /// Returns the level in force.
    pub fn set_thinking_level(&self, wanted: ThinkingLevel) -> Result<ThinkingLevel, SessionError> {
        let (level, changed) = self.inner.model.update(|choice| {
            let level = clamp(&choice.model, wanted);
            let changed = Some(level) != choice.reasoning;
            choice.reasoning = Some(level);
            (level, changed)
        });
        if changed {
            self.session().append_thinking_level_change(level)?;
            self.notify(SessionEvent::ThinkingLevelChanged { level });
        }
        Ok(level)
    }

    /// Moves to the next level the model supports, wrapping (RPC
    /// `cycle_thinking_level`, Shift+Tab); `None` for a model without
    /// reasoning.
    pub fn cycle_thinking_level(&self) -> Result<Option<ThinkingLevel>, SessionError> {
        let choice = self.inner.model.current();
        let next = next_level(
            &choice.model,
            choice.reasoning.unwrap_or(ThinkingLevel::Off),
        );
        next.map(|level| self.set_thinking_level(level)).transpose()
    }

    /// The model the session's branch used last, `(provider, id)`, as its
    /// file records it.
    pub fn saved_model(&self) -> Option<(String, String)> {
        self.session().model()
    }

    /// After another session file was loaded: the model its branch used
    /// last, as Pi's `switchSession` restores it (it went on with the model
    /// in use); one that cannot be used now is said, and the current one
    /// stays.
    fn restore_model(&self) {
        let Some((provider, id)) = self.saved_model() else {
            return;
        };
        let current = self.model();
        let Some(catalog) = self.models() else {
            return;
        };
        if (current.provider.as_str(), current.id.as_str()) == (provider.as_str(), id.as_str()) {
            return;
        }
        let env = |name: &str| std::env::var(name).ok();
        if let Err(error) = catalog.restore(self, &format!("{provider}/{id}"), &env) {
            tracing::warn!(
                "the session last used {provider}/{id}, which cannot be used now ({error}); going on with {}/{}",
                current.provider,
                current.id
            );
        }
    }

    /// Where the branch now goes on (a tree move, a fork), records the level
    /// in force when the branch's last record says another: the session
    /// goes on at this level, and resumed it would have gone on at that one.
    pub(crate) fn record_level_in_force(
        &self,
        session: &mut SessionManager,
    ) -> Result<(), SessionError> {
        let level = self.thinking_level();
        if session.thinking_level() == Some(level) {
            return Ok(());
        }
        session.append_thinking_level_change(level)
    }

    /// After another session file was loaded: its recorded level (or the
    /// default), clamped, recorded there when it has none.
    fn restore_thinking_level(&self) {
        let recorded = self.session().thinking_level();
        let level = self.inner.thinking.initial_level(&self.model(), recorded);
        self.inner.model.set_reasoning(Some(level));
        if recorded != Some(level)
            && let Err(error) = self.session().append_thinking_level_change(level)
        {
            tracing::warn!("cannot save the session: {error}");
        }
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

    /// Writes the session file though no answer is in it yet (a retry's
    /// wait: [`SessionManager::write_unanswered`]).
    pub(crate) fn save_unanswered(&self) {
        if let Err(error) = self.session().write_unanswered() {
            tracing::warn!("cannot save the session: {error}");
        }
    }

    /// Saves what `event` completes: every message at its `message_end`
    /// (except a failed answer that will be asked again: no half message in
    /// the file; it is saved if the retries give up); at `agent_end`, the
    /// user bash runs that waited for the agent.
    fn record(&self, event: &AgentEvent) -> Result<(), SessionError> {
        match event {
            AgentEvent::MessageEnd {
                message: Message::Assistant(answer),
            } if self.will_retry(answer) => Ok(()),
            AgentEvent::MessageEnd { message } => self.session().append_message(message),
            AgentEvent::AgentEnd { .. } => self.flush_pending_bash(),
            AgentEvent::MessageStart {
                message: Message::User(_),
            } => {
                // A queued message may have just been delivered.
                self.report_queues();
                Ok(())
            }
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

    /// Whether a failed answer will be asked again (so it is not saved yet),
    /// by the rule the retries follow
    /// ([`crate::retry::RetrySettings::retry_delay`]).
    fn will_retry(&self, answer: &agent_ai::AssistantMessage) -> bool {
        self.recovery().retry.retry_delay(answer, 1).is_some()
    }

    /// Runs `message` as a prompt until the agent is done, retrying failed
    /// turns and compacting as [`crate::recovery`] says; the run's messages
    /// are saved as they complete.
    pub async fn prompt(&self, message: Message) -> Result<Vec<Message>, PromptError> {
        let message = self.expand_template(message);
        self.warn_of_unsent_images(&message);
        // Bash runs recorded after the last run go before the new prompt.
        if let Err(error) = self.flush_pending_bash() {
            tracing::warn!("{error}");
        }
        let run = |messages| crate::recovery::run_messages(self, messages);
        let Some(hooks) = self.hooks_now() else {
            return Ok(run(vec![message]).await?);
        };
        self.with_hooks_cancel(async |cancel| {
            let ready = hooks.prompt(message, cancel).await?;
            hooks.run(ready, run, cancel).await
        })
        .await
    }

    /// Sends the messages queued while no run could take them (during a
    /// compaction, or as a run ended), as a prompt with the recoveries and
    /// the hooks (see [`PromptHooks::queued`]): the first steering messages,
    /// else the follow-ups. Nothing when none are queued.
    pub async fn send_queued(&self) -> Result<Vec<Message>, PromptError> {
        let queued = self.take_next_queued();
        if queued.is_empty() {
            return Ok(Vec::new());
        }
        let run = |messages| crate::recovery::run_messages(self, messages);
        let Some(hooks) = self.hooks_now() else {
            return Ok(run(queued).await?);
        };
        self.with_hooks_cancel(async |cancel| {
            let ready = hooks.queued(queued, cancel).await?;
            hooks.run(ready, run, cancel).await
        })
        .await
    }

    /// Runs `work`, the hooks around a prompt, with a token the user's abort
    /// cancels. Claimed at the first poll, so an abort that follows reaches
    /// the hooks before the run as well as the run.
    async fn with_hooks_cancel(
        &self,
        work: impl AsyncFnOnce(&CancellationToken) -> Result<Vec<Message>, PromptError>,
    ) -> Result<Vec<Message>, PromptError> {
        let cancel = CancellationToken::new();
        *lock(&self.inner.prompt_hooks_cancel) = Some(cancel.clone());
        let outcome = work(&cancel).await;
        *lock(&self.inner.prompt_hooks_cancel) = None;
        outcome
    }

    /// Runs `message` as a prompt aborted before its run began (RPC's
    /// `abort` while the prompt waited for the MCP servers): it is recorded
    /// and its run ends aborted, as a started one would, but its request is
    /// never sent: the run is cancelled as it starts, before the provider
    /// is called (an abort given once the run ran raced its request).
    pub async fn prompt_aborted(&self, message: Message) -> Result<Vec<Message>, PromptError> {
        let armed = Arc::new(AtomicBool::new(true));
        let agent = self.agent().clone();
        let fired = Arc::clone(&armed);
        self.agent().subscribe_with(move |event| {
            if !fired.load(Ordering::SeqCst) {
                return false;
            }
            if matches!(event, AgentEvent::AgentStart) {
                agent.abort();
                fired.store(false, Ordering::SeqCst);
                return false;
            }
            true
        });
        let outcome = self.prompt(message).await;
        // Refused before its run (a hook): the next run is not this one.
        armed.store(false, Ordering::SeqCst);
        outcome
    }

    /// The session's command hooks, told which session they now run for
    /// (its id and file change with `/new`, `/resume` and a fork).
    fn hooks_now(&self) -> Option<&PromptHooks> {
        let hooks = self.inner.prompt_hooks.as_ref()?;
        hooks.hooks().set_session(self.hook_session());
        Some(hooks)
    }

    /// What command hooks are told about this session.
    fn hook_session(&self) -> SessionInfo {
        let session = self.session();
        SessionInfo {
            session_id: session.header().id.clone(),
            transcript_path: session.file().map(Path::to_path_buf),
            permission_mode: self
                .inner
                .guard
                .as_ref()
                .map_or(DEFAULT_PERMISSION_MODE, |guard| {
                    guard.policy().mode().hook_name()
                })
                .to_owned(),
        }
    }

    /// Queues a message for after the current turn, once the
    /// UserPromptSubmit hooks let it (their context joins it); a refused
    /// message is not queued.
    pub async fn steer(&self, message: Message) -> Result<(), PromptError> {
        let message = self.submitted(message).await?;
        self.inner.steering.push(message);
        self.report_queues();
        Ok(())
    }

    /// `message` as it is queued: its template put in, and passed by the
    /// UserPromptSubmit hooks, as a prompt is.
    async fn submitted(&self, message: Message) -> Result<Message, PromptError> {
        let message = self.expand_template(message);
        self.warn_of_unsent_images(&message);
        match self.hooks_now() {
            Some(hooks) => hooks.submit_queued(message).await,
            None => Ok(message),
        }
    }

    /// Says so when `message` has images the model does not take: the
    /// provider leaves them out of the request, and without a word the user
    /// would take the answer for one about the image.
    fn warn_of_unsent_images(&self, message: &Message) {
        let Message::User(UserMessage {
            content: UserContent::Blocks(blocks),
            ..
        }) = message
        else {
            return;
        };
        let images = blocks
            .iter()
            .filter(|block| matches!(block, Content::Image(_)))
            .count();
        let model = self.model();
        if images > 0 && !model.supports_images {
            let (count, verb) = match images {
                1 => ("The image".to_owned(), "is"),
                n => (format!("The {n} images"), "are"),
            };
            tracing::warn!(
                "{count} attached {verb} not sent: the model {}/{} does not take images (if it does, set \"images\": true on its provider in settings.json)",
                model.provider,
                model.id
            );
        }
    }

    /// The templates a prompt may name.
    pub fn prompt_templates(&self) -> Arc<[PromptTemplate]> {
        lock(&self.inner.prompt_templates).clone()
    }

    /// Replaces the system prompt and the commands a prompt may name, built
    /// again from the files as they are now (`/reload`): the next run sends
    /// the new prompt, and the next prompt may name the new commands.
    pub fn set_instructions(&self, instructions: Instructions) {
        self.inner
            .agent
            .set_system_prompt(Some(instructions.system_prompt));
        *lock(&self.inner.prompt_templates) = instructions.prompt_templates.into();
    }

    /// `message` with the template its text names put in (`/review a.rs`),
    /// or as it is.
    fn expand_template(&self, message: Message) -> Message {
        let Message::User(mut user) = message else {
            return message;
        };
        let first = match &mut user.content {
            UserContent::Text(text) => Some(text),
            UserContent::Blocks(blocks) => blocks.iter_mut().find_map(|block| match block {
                Content::Text(text) => Some(&mut text.text),
                _ => None,
            }),
        };
        if let Some(text) = first
            && let Some(expanded) = crate::templates::expand(text, &self.prompt_templates())
        {
            *text = expanded;
        }
        Message::User(user)
    }

    /// Queues a message for when the agent would stop, once the
    /// UserPromptSubmit hooks let it (see [`AgentSession::steer`]).
    pub async fn follow_up(&self, message: Message) -> Result<(), PromptError> {
        let message = self.submitted(message).await?;
        self.inner.follow_up.push(message);
        self.report_queues();
        Ok(())
    }

    /// Emits `queue_update` (the texts waiting in both queues) when they
    /// changed since the last report.
    fn report_queues(&self) {
        let texts = |queue: &MessageQueue| -> Vec<String> {
            queue
                .messages()
                .iter()
                .map(|message| match message {
                    Message::User(user) => crate::session::user_text(&user.content),
                    _ => String::new(),
                })
                .collect()
        };
        // Read, compared and sent under the one lock: the client queuing a
        // message and the run delivering it report from two threads, and
        // each report must go out in the order the queues changed.
        let mut reported = lock(&self.inner.reported_queues);
        let now = (texts(&self.inner.steering), texts(&self.inner.follow_up));
        if *reported == now {
            return;
        }
        *reported = now.clone();
        self.notify(SessionEvent::QueueUpdate {
            steering: now.0,
            follow_up: now.1,
        });
    }

    /// Empties both queues (and says so in `queue_update`): what was queued
    /// for the conversation left must not reach the one gone on with. A
    /// fork and a move in the tree sent the old branch's steering into the
    /// new one.
    fn drop_queued(&self) {
        self.inner.steering.clear();
        self.inner.follow_up.clear();
        self.report_queues();
    }

    /// Takes back every queued message, steering first, then follow-ups
    /// (the interactive Alt+Up puts them back in the editor): none of them
    /// reaches the model.
    pub fn take_queued(&self) -> Vec<Message> {
        let mut messages = self.inner.steering.drain();
        messages.extend(self.inner.follow_up.drain());
        self.report_queues();
        messages
    }

    /// Messages waiting in the steering and follow-up queues.
    pub fn pending_message_count(&self) -> usize {
        self.inner.steering.len() + self.inner.follow_up.len()
    }

    /// What the next poll of the queues gets: steering messages first, else
    /// follow-ups (as each queue's mode says).
    pub fn take_next_queued(&self) -> Vec<Message> {
        let mut messages = self.inner.steering.take();
        if messages.is_empty() {
            messages = self.inner.follow_up.take();
        }
        if !messages.is_empty() {
            self.report_queues();
        }
        messages
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

    /// The session now, for a user command to be recorded in when it ends
    /// ([`AgentSession::record_bash`]).
    pub fn mark(&self) -> SessionMark {
        let session = self.session();
        SessionMark {
            id: session.header().id.clone(),
            file: session.file().map(Path::to_path_buf),
        }
    }

    /// Adds a user bash run to the conversation and the session it started
    /// in (`ran_in`); while the agent runs, it waits for the run to end (so
    /// tool calls and their results stay adjacent). A run that outlived its
    /// session (the user started a new one, switched, forked) is added to
    /// that session's file, if it was saved, not to the one in use now: it
    /// ran in the other one's conversation.
    pub fn record_bash(
        &self,
        execution: BashExecution,
        ran_in: &SessionMark,
    ) -> Result<(), SessionError> {
        if self.session().header().id != ran_in.id {
            return match &ran_in.file {
                Some(file) => {
                    SessionManager::open(file, &self.inner.cwd)?.append_bash_execution(&execution)
                }
                None => Ok(()),
            };
        }
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
            messages.extend(execution.context_message());
            session.append_bash_execution(&execution)?;
        }
        self.inner.agent.set_messages(messages);
        Ok(())
    }

    /// Starts a new session: an empty conversation, empty queues, a new
    /// file, and no rule allowed for the last session alone. Call it while
    /// the agent is idle.
    pub fn new_session(&self, parent_session: Option<String>) {
        self.end_session_rules();
        self.inner.agent.set_messages(Vec::new());
        lock(&self.inner.pending_bash).clear();
        self.session().new_session(parent_session);
        // Pi starts every session file with the level in force.
        let level = self.thinking_level();
        if let Err(error) = self.session().append_thinking_level_change(level) {
            tracing::warn!("cannot save the session: {error}");
        }
        tools_host::note(&mut self.session(), self.inner.tools_host.as_ref());
        if let Some(hooks) = &self.inner.prompt_hooks {
            hooks.session_cleared();
        }
        self.drop_queued();
    }

    /// Loads the session saved in `path` (RPC `switch_session`): its
    /// conversation replaces the agent's, and the rules allowed for the
    /// last session alone go. Call it while the agent is idle.
    pub fn switch_session(&self, path: &Path) -> Result<(), SessionError> {
        let path = crate::support::paths::normalize_lexically(&self.inner.cwd.join(path));
        let mut manager = SessionManager::open(&path, &self.inner.cwd)?;
        manager.save_new_sessions_as(&self.session());
        tools_host::note(&mut manager, self.inner.tools_host.as_ref());
        self.end_session_rules();
        self.inner.agent.set_messages(manager.messages());
        *self.session() = manager;
        self.restore_model();
        self.restore_thinking_level();
        self.drop_queued();
        Ok(())
    }

    /// Drops the permission rules the user allowed for this session alone
    /// ("Allow for this session"); a fork or clone keeps them, being the
    /// same work gone on with.
    fn end_session_rules(&self) {
        if let Some(guard) = &self.inner.guard {
            guard.end_session();
        }
    }

    /// The context as the user sees it, for drawing a resumed session
    /// ([`SessionManager::context_items`]).
    pub fn context_items(&self) -> Vec<crate::session::ContextItem> {
        self.session().context_items()
    }

    /// The calls of the branch a hook gave other arguments than the
    /// model's, `(call id, arguments)`, as the guard's decisions recorded
    /// them (a resumed transcript draws what ran).
    pub fn hook_arguments(&self) -> Vec<(String, Value)> {
        self.session()
            .custom_data(DECISION_TYPE)
            .into_iter()
            .filter_map(|mut decision| {
                let args = decision.get_mut("updatedInput")?.take();
                let id = decision.get("toolCallId")?.as_str()?.to_owned();
                (!args.is_null()).then_some((id, args))
            })
            .collect()
    }

    /// The user messages of the branch, `(entry id, text)`, to fork from.
    pub fn fork_messages(&self) -> Vec<(String, String)> {
        self.session().user_messages()
    }

    /// Fails as [`AgentSession::switch_session`] would on `path` (a file
    /// that is not a session), or for a new session in a folder that is
    /// not there, without switching: checked before the running prompt is
    /// aborted for the switch, as a fork's entry is.
    pub fn check_switch(&self, path: &Path) -> Result<(), SessionError> {
        let path = self.inner.cwd.join(path);
        // A new session starts in a folder that is there: a mistyped path
        // made its folders anywhere, and the switch said success.
        if let Some(folder) = path.parent()
            && !path.exists()
            && !folder.is_dir()
        {
            let error = std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "no folder {}: a new session starts only in a folder that exists",
                    folder.display()
                ),
            );
            return Err(SessionError::Io { path, error });
        }
        SessionManager::check(&path)
    }

    /// Fails as [`AgentSession::fork`] would for an `entry_id` that is not
    /// a user message of the branch: checked before a run is stopped for
    /// the fork, so a wrong id leaves it running.
    pub fn check_fork(&self, entry_id: &str) -> Result<(), SessionError> {
        self.session().fork_point(entry_id).map(|_| ())
    }

    /// Continues in a new session holding the branch before the user
    /// message `entry_id`, with nothing queued; returns that message's
    /// text. Call it while idle.
    pub fn fork(&self, entry_id: &str) -> Result<String, SessionError> {
        let mut session = self.session();
        let text = session.fork_before(entry_id)?;
        self.record_level_in_force(&mut session)?;
        self.inner.agent.set_messages(session.messages());
        drop(session);
        self.drop_queued();
        Ok(text)
    }

    /// Continues in a new session holding the whole branch (a copy to go on
    /// in apart). Call it while idle.
    pub fn clone_session(&self) -> Result<(), SessionError> {
        self.session().clone_branch()
    }

    /// Writes the session's whole history (compacted parts included) as
    /// one self-contained HTML page to `path` (relative to the cwd), or to
    /// the default name in the cwd; returns where. A file already there is
    /// replaced whole or not at all; the session's own file is refused.
    pub fn export_html(&self, path: Option<&Path>) -> Result<PathBuf, ExportError> {
        crate::export::write_session_html(&self.inner.cwd, &self.session(), path)
    }

    /// The text of the model's last answer (Pi's `getLastAssistantText`):
    /// aborted answers with no content are skipped; `None` when blank.
    pub fn last_assistant_text(&self) -> Option<String> {
        let messages = self.inner.agent.history().snapshot();
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

/// The built-in tools called `names`, in that order (repeats dropped), and
/// the names that are not built-in tools.
pub fn select_tools(names: &[String]) -> (Vec<Arc<dyn ToolDefinition>>, Vec<String>) {
    select_tools_from(names, builtin_tool)
}

/// [`select_tools`] with the tools `lookup` makes (for example, confined to
/// a sandbox: [`crate::sandbox::Sandbox::builtin_tool`]).
pub fn select_tools_from(
    names: &[String],
    lookup: impl Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
) -> (Vec<Arc<dyn ToolDefinition>>, Vec<String>) {
    let mut tools: Vec<Arc<dyn ToolDefinition>> = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        if tools.iter().any(|t| &t.tool().name == name) {
            continue;
        }
        match lookup(name) {
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

/// Limits the request's tokens to what `model`'s window leaves the answer
/// ([`RecoverySettings::answer_limit`]: the window in force, which a
/// refusal may have just taught), and cuts tool results far larger than
/// what is left of the window ([`fit_tool_results`]) before a request is
/// sent; a history that fits is sent as it is shared (nothing to cut, no
/// copy). What is left for the messages is the window less the reserve
/// and less the system prompt and tool definitions every request carries:
/// in a small window those are a large share (about 1,700 of 4,096 tokens
/// with the seven tools). What the messages take is the server's count where it gave one
/// ([`request_size`]): an estimate alone can be a third short, and a result
/// that fits by it can still overflow the window. Estimates are scaled by
/// what earlier refusals taught (`scale`, [`EstimateScale`]).
fn fit_to_window(
    recovery: &Mutex<RecoverySettings>,
    scale: &EstimateScale,
    model: &Model,
    context: Context,
) -> Context {
    let settings = *lock(recovery);
    let context = Context {
        max_tokens: Some(context.max_tokens_within(settings.answer_limit(model))),
        ..context
    };
    let window = settings.window_for(model);
    let (reserve, _) = settings.compaction.scaled(window);
    let scale = scale.get();
    let fixed = fixed_tokens(context.system_prompt.as_deref(), &context.tools);
    let total = request_size(&context.messages, fixed, scale).tokens(scale);
    let usable = window.saturating_sub(reserve);
    if total <= usable {
        return context;
    }
    let fixed = scaled(fixed, scale);
    let room = Room {
        total: total.saturating_sub(fixed),
        usable: usable.saturating_sub(fixed),
        scale,
    };
    let messages = fit_tool_results(context.messages.to_vec(), room, &std::env::temp_dir());
    Context {
        messages: Arc::new(messages),
        ..context
    }
}
