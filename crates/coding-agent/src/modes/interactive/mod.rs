//! Interactive mode: `coding-agent` with no prompt, in a terminal (Pi's
//! interactive TUI), on ratatui and crossterm.
//!
//! - [`app`]: the state, keys to actions, drawing (terminal-free, so tests
//!   render it into a `TestBackend`).
//! - [`transcript`]: the conversation as shown, fed by agent events;
//!   [`markdown`]: the assistant's Markdown ([`highlight`]: its code blocks'
//!   syntax colours); [`wrap`]: lines cut to the width;
//!   [`theme`]: semantic styles to colours.
//! - [`editor`]: the multi-line input; [`complete`]: `@path` completion.
//! - [`approval`]: the prompt over the transcript when a call needs the
//!   user's approval, and the trust question asked at start.
//!
//! The driver here owns the terminal and the [`AgentSession`]: it feeds
//! terminal and agent events to the [`App`] and performs the [`Action`]s it
//! returns (prompt, steer, follow up, abort, new or resumed session, model
//! switch, quit); `session_commands.rs` holds `/session`, `/name`,
//! `/export`, `/fork` and `/copy`.

pub mod app;
pub mod approval;
mod command_menu;
pub mod complete;
pub mod editor;
mod external_editor;
mod frames;
pub mod highlight;
mod idle;
pub mod markdown;
mod mcp_start;
mod saved_sessions;
mod session_commands;
pub mod theme;
pub mod transcript;
mod tree;
mod user_command;
pub mod wrap;

use std::io::{self, Stdout};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use agent_ai::{Message, Model};
use agent_core::ToolSet;
use anyhow::Context as _;
use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, EventStream, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use app::{Action, App, QUIT_WINDOW};

use crate::app::{
    AgentSession, Instructions, ModelCatalog, PromptError, SessionOptions, TreeError, TreeMove,
};
use crate::hooks::lifecycle::SessionEndReason;
use crate::render::{Style, StyledLine};
use crate::session::SessionManager;
use crate::session_event::{SessionEvent, SessionEvents};
use crate::tools::bash::ops::{BashOperations, LocalBashOperations};
use crate::tools::ls::ops::LsOperations;
use complete::{AtCompletion, complete_at_word_with};
use frames::Frames;
use idle::IdleTimer;
use mcp_start::McpStart;
use user_command::UserCommands;

/// How long quitting waits for a cancelled run to wind down.
const QUIT_GRACE: Duration = Duration::from_secs(5);

/// What interactive mode needs besides the session's parts.
#[derive(Default)]
pub struct InteractiveOptions {
    /// Where this cwd's sessions are saved, for `/resume`; `None` when
    /// sessions are not saved.
    pub session_dir: Option<PathBuf>,
    /// What `/model` lists and switches to.
    pub models: ModelCatalog,
    /// Warnings to show as notices (from a
    /// [`LineLayer`](crate::warnings::LineLayer)), since stderr is the
    /// screen here.
    pub warnings: Option<crate::warnings::WarningReceiver>,
    /// `[user@]host[:port]` when the tools act on a remote host (`--remote`).
    pub remote_host: Option<String>,
    /// The context window the model's server reported (llama.cpp, Ollama:
    /// [`agent_ai::providers::probe`]), for when settings give none.
    pub served_window: Option<u64>,
    /// Where the session's [`InteractiveApprover`](approval::InteractiveApprover)
    /// sends the calls the user must approve.
    pub approvals: Option<approval::ApprovalInbox>,
    /// Start with the list of saved sessions, as `/resume` shows it
    /// (`--resume`).
    pub list_sessions: bool,
    /// Where `!cmd` runs: the shell the bash tool uses (sandboxed, or on
    /// the remote host); `None`: this machine's, unconfined.
    pub user_bash: Option<Arc<dyn BashOperations>>,
    /// Where Tab completes `@path` words when the tools act on another
    /// host (`--remote`); `None`: this machine's files.
    pub files: Option<Arc<dyn LsOperations>>,
    /// The MCP servers started for the run (`/mcp` lists them); every
    /// session of the UI offers their tools.
    #[cfg(feature = "mcp")]
    pub mcp: Option<crate::mcp::McpServers>,
    /// Builds the instructions again from the files (`/reload`); `None`:
    /// `/reload` says there is nothing to reload from.
    pub reload: Option<Reloader>,
}

/// Builds a session's [`Instructions`] again from the files as they are now
/// (context files, `SYSTEM.md`, prompt templates, skills).
pub type Reloader =
    Arc<dyn Fn() -> futures::future::BoxFuture<'static, Instructions> + Send + Sync>;

impl std::fmt::Debug for InteractiveOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InteractiveOptions")
            .field("session_dir", &self.session_dir)
            .field("models", &self.models)
            .field("remote_host", &self.remote_host)
            .field("served_window", &self.served_window)
            .field("list_sessions", &self.list_sessions)
            .field("user_bash", &self.user_bash.is_some())
            .field("files", &self.files.is_some())
            .finish_non_exhaustive()
    }
}

/// Runs interactive mode until the user quits; returns the exit status.
pub async fn run_interactive(
    options: SessionOptions,
    interactive: InteractiveOptions,
) -> anyhow::Result<u8> {
    let parts = Parts::from(&options);
    let session = AgentSession::new(options).context("a built-in tool's schema")?;
    #[cfg(feature = "mcp")]
    let mcp = McpStart::begin(&session, interactive.mcp.clone());
    #[cfg(not(feature = "mcp"))]
    let mcp = McpStart::default();
    let model = session.model();
    let mut recovery = interactive.models.settings.recovery(&model.provider);
    recovery.context_window = recovery.context_window.or(interactive.served_window);
    session.set_recovery(recovery);
    // The tools are named when the driver first draws (`Driver::sync_tools`).
    let items = session.context_items();
    let mut app = App::new(
        format!("{}/{}", model.provider, model.id),
        session.cwd(),
        Vec::new(),
        &items,
    );
    app.set_model(
        format!("{}/{}", model.provider, model.id),
        recovery.context_window,
    );
    app.approvals.set_grace(approval::APPROVAL_GRACE);
    if let Some(host) = interactive.remote_host.clone() {
        app.set_remote_host(host);
    }
    show_saved(&session, &mut app);
    app.set_templates(&session.prompt_templates());
    let env = |name: &str| std::env::var(name).ok();
    app.set_model_names(&interactive.models.cycle, &interactive.models.choices(&env));
    if items.is_empty() {
        app.notice(vec![welcome_line()]);
    }
    drop(items);
    let user_bash = interactive
        .user_bash
        .clone()
        .unwrap_or_else(|| Arc::new(LocalBashOperations::new()));
    let mut terminal = TerminalGuard::enter()?;
    let served_models = Some(list_served_models(&interactive.models, &model));
    let mut driver = Driver {
        served_models,
        idle: IdleTimer::new(interactive.models.settings.idle_notification()),
        tree_listed: tree::Listed::default(),
        resume_listed: saved_sessions::Listed::default(),
        events: session.subscribe_coalesced(),
        session,
        run: None,
        aborted: false,
        parts,
        interactive,
        shown_tools: None,
        mcp,
        prompt_waits: None,
        user_commands: UserCommands::new(user_bash),
        queuing: None,
        tree_move: None,
        completing: None,
    };
    if driver.interactive.list_sessions {
        driver.resume(&mut app, None)?;
    }
    let result = driver.run(&mut app, &mut terminal).await;
    drop(terminal);
    result.map(|()| 0)
}

/// What a session is rebuilt from when another one is resumed.
struct Parts {
    provider: std::sync::Arc<dyn agent_ai::Provider>,
    model: agent_ai::Model,
    cwd: PathBuf,
    tools: Vec<std::sync::Arc<dyn crate::ToolDefinition>>,
    system_prompt: String,
    hooks: Option<std::sync::Arc<crate::hooks::CommandHooks>>,
    guard: Option<std::sync::Arc<crate::guard::Guard>>,
    thinking: crate::thinking::ThinkingOptions,
    prompt_templates: Vec<crate::templates::PromptTemplate>,
    tools_host: Option<crate::app::tools_host::ToolsHost>,
}

impl Parts {
    fn from(options: &SessionOptions) -> Self {
        Parts {
            provider: options.provider.clone(),
            model: options.model.clone(),
            cwd: options.cwd.clone(),
            tools: options.tools.clone(),
            system_prompt: options.system_prompt.clone(),
            hooks: options.hooks.clone(),
            guard: options.guard.clone(),
            thinking: options.thinking,
            prompt_templates: options.prompt_templates.clone(),
            tools_host: options.tools_host.clone(),
        }
    }

    fn session(&self, session: SessionManager) -> anyhow::Result<AgentSession> {
        AgentSession::new(SessionOptions {
            provider: self.provider.clone(),
            model: self.model.clone(),
            cwd: self.cwd.clone(),
            tools: self.tools.clone(),
            system_prompt: self.system_prompt.clone(),
            session,
            hooks: self.hooks.clone(),
            guard: self.guard.clone(),
            // A resumed session's own level wins over `--thinking`.
            thinking: crate::thinking::ThinkingOptions {
                explicit: None,
                ..self.thinking
            },
            prompt_templates: self.prompt_templates.clone(),
            tools_host: self.tools_host.clone(),
        })
        .context("a built-in tool's schema")
    }
}

struct Driver {
    session: AgentSession,
    events: SessionEvents,
    run: Option<JoinHandle<Result<Vec<Message>, PromptError>>>,
    /// The user cancelled the current run: queued messages go back to the editor.
    aborted: bool,
    parts: Parts,
    interactive: InteractiveOptions,
    /// The tool set the app names and draws calls with; the session's
    /// changes as MCP servers come up or change their lists.
    shown_tools: Option<Arc<ToolSet>>,
    mcp: McpStart,
    /// Cancelled when the prompt that waits for the MCP servers goes out
    /// (they are up, or Esc sent it without them).
    prompt_waits: Option<CancellationToken>,
    /// `!cmd`: the command the user runs.
    user_commands: UserCommands,
    /// The last message typed while the agent works, on its way through the
    /// UserPromptSubmit hooks into the queue (each waits for the one
    /// before, so they queue in the order typed; the screen stays live).
    queuing: Option<JoinHandle<()>>,
    /// `/tree N summarize`: the row chosen, and the move under way.
    tree_move: Option<(usize, JoinHandle<Result<TreeMove, TreeError>>)>,
    /// Tab's listing on another host: the `@` word, and its completion.
    completing: Option<JoinHandle<(String, Option<AtCompletion>)>>,
    /// The wait for the next prompt after an answer (`idle_prompt`).
    idle: IdleTimer,
    /// The rows `/tree` last listed, which `/tree N` numbers.
    tree_listed: tree::Listed,
    /// The sessions `/resume` last listed, which `/resume N` numbers.
    resume_listed: saved_sessions::Listed,
    /// What the providers' servers list at `/models`, until they answer.
    served_models: Option<oneshot::Receiver<Vec<Model>>>,
}

type Term = Terminal<CrosstermBackend<Stdout>>;

impl Driver {
    async fn run(&mut self, app: &mut App, guard: &mut TerminalGuard) -> anyhow::Result<()> {
        let mut input = EventStream::new();
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut warnings = self.interactive.warnings.take();
        let mut approvals = self.interactive.approvals.take();
        let mut signals = QuitSignals::watch();
        let mut frames = Frames::default();
        loop {
            self.show_thinking(app);
            self.sync_tools(app);
            app.set_mcp_start(self.mcp.starting(), self.prompt_is_waiting());
            app.approvals.drop_abandoned();
            if let Err(error) = guard.terminal.draw(|frame| app.draw(frame, Instant::now())) {
                return self.terminal_lost(app, error.into()).await;
            }
            frames.drawn(tokio::time::Instant::now());
            let action = tokio::select! {
                event = input.next() => match event {
                    Some(Ok(Event::Key(key))) => {
                        self.idle.stop();
                        // `/tools` names the set as it is now.
                        self.sync_tools(app);
                        app.handle_key(key)
                    }
                    Some(Ok(Event::Paste(text))) => {
                        self.idle.stop();
                        app.paste(&text);
                        Action::None
                    }
                    Some(Ok(_)) => Action::None,
                    Some(Err(error)) => return self.terminal_lost(app, error.into()).await,
                    None => Action::Quit,
                },
                () = signals.next() => Action::Quit,
                Some(event) = self.events.recv() => {
                    self.on_agent_event(app, &event);
                    // What comes within the frame is drawn with it.
                    if let Some(wait) = frames.wait(tokio::time::Instant::now()) {
                        tokio::time::sleep(wait).await;
                    }
                    // Apply everything already waiting before redrawing.
                    self.apply_waiting_events(app);
                    Action::None
                }
                done = async { self.run.as_mut().map_or_else(|| futures::future::Either::Left(std::future::pending()), futures::future::Either::Right).await }, if self.run.is_some() => {
                    self.run = None;
                    self.apply_waiting_events(app);
                    self.run_ended(app, done);
                    Action::None
                }
                (row, moved) = async {
                    match self.tree_move.as_mut() {
                        Some((row, task)) => (*row, task.await),
                        None => std::future::pending().await,
                    }
                }, if self.tree_move.is_some() => {
                    self.tree_move = None;
                    let moved = moved.unwrap_or_else(|error| {
                        Err(TreeError::Summary(crate::compaction::CompactionError::Summary(error.to_string())))
                    });
                    app.set_running(false, Instant::now());
                    tree::show(&self.session, app, row, moved);
                    // Messages typed meanwhile go out now, as after a run.
                    self.run_ended(app, Ok(Ok(Vec::new())));
                    Action::None
                }
                done = async {
                    match self.completing.as_mut() {
                        Some(task) => task.await,
                        None => std::future::pending().await,
                    }
                }, if self.completing.is_some() => {
                    self.completing = None;
                    if let Ok((word, completion)) = done {
                        app.completed(&word, completion);
                    }
                    Action::None
                }
                Some(line) = next_warning(&mut warnings) => {
                    // The events sent before the warning (the prompt, the
                    // answer's start) are waiting already: they come first.
                    self.apply_waiting_events(app);
                    app.warning(&line);
                    Action::None
                }
                Some(prompt) = next_approval(&mut approvals) => {
                    // The call's own events (its answer) are drawn first.
                    self.apply_waiting_events(app);
                    app.approvals.push(prompt);
                    Action::None
                }
                served = next_served_models(&mut self.served_models) => {
                    self.served_models = None;
                    app.add_served_models(&served);
                    Action::None
                }
                lines = self.mcp.ended() => {
                    self.sync_tools(app);
                    for line in lines {
                        app.notice(vec![line]);
                    }
                    Action::None
                }
                event = self.user_commands.next() => {
                    match event {
                        user_command::Event::Output(output) => app.user_bash_output(output),
                        user_command::Event::Ended {
                            outcome,
                            excluded,
                            ran_in,
                        } => {
                            UserCommands::finish(&self.session, app, outcome, excluded, &ran_in);
                        }
                    }
                    Action::None
                }
                () = self.idle.passed(), if self.idle.is_waiting() => {
                    // Beside the UI, as the permission prompt's: the user
                    // may come back while the hooks run.
                    let session = self.session.clone();
                    tokio::spawn(async move { session.notify_idle().await });
                    Action::None
                }
                _ = tick.tick(), if app.is_running() || app.mcp_starting() || app.user_bash_running() || app.quit_hint_shown() => Action::None,
            };
            if matches!(action, Action::ExternalEditor | Action::Suspend) {
                // The editor or the shell reads the keys meanwhile: the UI
                // stops reading.
                drop(input);
                if action == Action::Suspend {
                    guard.stop_to_shell()?;
                } else {
                    external_editor::edit_prompt(app, guard).await?;
                }
                input = EventStream::new();
                continue;
            }
            if self.perform(app, action).await? {
                return Ok(());
            }
        }
    }

    /// The terminal can no longer be drawn on or read (its window closed, the
    /// connection to it dropped): quits as the user would, so the run is
    /// aborted, its commands killed and the session saved; then `error`.
    async fn terminal_lost(&mut self, app: &mut App, error: anyhow::Error) -> anyhow::Result<()> {
        self.perform(app, Action::Quit).await?;
        Err(error.context("the terminal was lost"))
    }

    /// The footer's thinking level: the session's, for a model that reasons.
    fn show_thinking(&self, app: &mut App) {
        let reasons = self.session.model().reasoning;
        app.set_thinking(reasons.then(|| self.session.thinking_level()));
    }

    /// Names the session's tools and draws their calls with their own
    /// renderers, when the set changed since the last look (a server came
    /// up, changed its list, or another session was resumed).
    fn sync_tools(&mut self, app: &mut App) {
        let tools = self.session.agent().tools();
        if self
            .shown_tools
            .as_ref()
            .is_some_and(|shown| Arc::ptr_eq(shown, &tools))
        {
            return;
        }
        app.set_tools(self.session.tool_definitions());
        self.shown_tools = Some(tools);
    }

    /// True while a prompt waits for the MCP servers to come up.
    fn prompt_is_waiting(&self) -> bool {
        self.prompt_waits
            .as_ref()
            .is_some_and(|waits| !waits.is_cancelled())
    }

    /// Shift+Tab: the next level the model supports (Pi's texts).
    fn cycle_thinking(&self, app: &mut App) {
        let line = match self.session.cycle_thinking_level() {
            Ok(Some(level)) => StyledLine::new(format!("Thinking level: {level}"), Style::Dim),
            Ok(None) => StyledLine::new("Current model does not support thinking", Style::Dim),
            Err(error) => StyledLine::new(error.to_string(), Style::Error),
        };
        app.notice(vec![line]);
    }

    /// Applies the agent events already received, without waiting.
    fn apply_waiting_events(&mut self, app: &mut App) {
        while let Some(event) = self.events.try_recv() {
            self.on_agent_event(app, &event);
        }
    }

    /// The agent's events go to the transcript; the session's retries and
    /// compactions are notices (Esc cancels a retry's wait), the progress of
    /// a compaction in several requests a status line.
    fn on_agent_event(&self, app: &mut App, event: &SessionEvent) {
        show_retry_wait(app, event);
        match event {
            // Counted in the status line, not a line each.
            SessionEvent::CompactionProgress { done, of } => {
                return app.compaction_progress(Some((*done, *of)));
            }
            SessionEvent::CompactionStart { .. } => app.compaction_started(),
            SessionEvent::CompactionEnd { .. } => app.compaction_progress(None),
            _ => {}
        }
        if let SessionEvent::CompactionEnd {
            result: Some(_), ..
        } = event
        {
            app.context_compacted(self.session.next_request_tokens());
        }
        match event {
            SessionEvent::Agent(event) => app.apply_event(event, Instant::now()),
            SessionEvent::PermissionDecision(decision) => {
                if let Some(args) = &decision.updated_input {
                    app.arguments_replaced([(decision.tool_call_id.clone(), args.clone())]);
                }
            }
            own => {
                let Some(line) = own.describe() else { return };
                match own {
                    // The wait itself is counted down in the status line.
                    SessionEvent::AutoRetryStart { .. } => {
                        app.retry_scheduled(StyledLine::new(line, Style::Warning));
                    }
                    // The line ends the chain with its last error; a
                    // cancelled chain keeps its last retry line, which
                    // holds the error the cancel line does not.
                    _ if own.retries_exhausted() => {
                        app.retries_failed(StyledLine::new(line, Style::Error));
                    }
                    _ => app.notice(vec![StyledLine::new(line, Style::Warning)]),
                }
            }
        }
    }

    fn run_ended(
        &mut self,
        app: &mut App,
        done: Result<Result<Vec<Message>, PromptError>, tokio::task::JoinError>,
    ) {
        app.set_running(false, Instant::now());
        let error = match done {
            Ok(Ok(_)) => None,
            Ok(Err(error)) => Some(error.to_string()),
            Err(error) => Some(format!("The run failed: {error}")),
        };
        if let Some(error) = error {
            app.notice(vec![StyledLine::new(error, Style::Error)]);
        }
        // Messages queued as the run ended are delivered now, as a prompt
        // is (the recoveries, the hooks' context and Stop). A cancelled
        // run's go back to the editor, as in Pi: they were written for the
        // run the user stopped, not for whatever the next prompt is.
        let queued = self.session.pending_message_count() > 0;
        if queued && !self.aborted {
            let session = self.session.clone();
            app.set_running(true, Instant::now());
            self.run = Some(tokio::spawn(async move { session.send_queued().await }));
        } else {
            if queued {
                self.restore_queued(app);
            }
            self.idle.start();
        }
        self.aborted = false;
    }

    /// Takes the queued steering and follow-up messages back into the
    /// editor (Alt+Up, or the run they waited for was cancelled).
    fn restore_queued(&self, app: &mut App) {
        let taken = self.session.take_queued();
        let texts = taken.iter().filter_map(|message| match message {
            Message::User(user) => Some(transcript::user_text(&user.content)),
            _ => None,
        });
        app.restore_queued(texts.collect());
    }

    /// Does what the app asked; true when the app should quit.
    async fn perform(&mut self, app: &mut App, action: Action) -> anyhow::Result<bool> {
        match action {
            Action::None => {}
            Action::Prompt(text) => {
                let session = self.session.clone();
                let message = AgentSession::user_message(&text, Vec::new());
                app.set_running(true, Instant::now());
                self.aborted = false;
                if self.mcp.starting().is_empty() {
                    self.run = Some(tokio::spawn(async move { session.prompt(message).await }));
                } else {
                    app.wait_to_send(text);
                    let waits = CancellationToken::new();
                    self.prompt_waits = Some(waits.clone());
                    let all_up = session.extra_tools_listed();
                    self.run = Some(tokio::spawn(async move {
                        tokio::select! {
                            () = all_up => {}
                            () = waits.cancelled() => {}
                        }
                        waits.cancel();
                        session.prompt(message).await
                    }));
                }
            }
            Action::Steer(text) => self.queue(text, true),
            Action::FollowUp(text) => self.queue(text, false),
            // Esc while the prompt waits for the MCP servers sends it now.
            Action::Abort if self.prompt_is_waiting() => {
                if let Some(waits) = &self.prompt_waits {
                    waits.cancel();
                }
            }
            Action::Abort => {
                self.user_commands.cancel();
                if app.is_running() {
                    self.aborted = true;
                    self.session.abort();
                }
            }
            Action::Bash { command, excluded } => {
                let cwd = self.session.cwd().to_path_buf();
                let ran_in = self.session.mark();
                self.user_commands
                    .start(app, command, excluded, &cwd, ran_in);
            }
            Action::Compact(focus) => {
                let session = self.session.clone();
                app.set_running(true, Instant::now());
                // The outcome is shown by the compaction events.
                self.run = Some(tokio::spawn(async move {
                    let _ = session.compact(focus.as_deref()).await;
                    Ok(Vec::new())
                }));
            }
            Action::Tree(None) => app.notice(tree::lines(&self.session, &mut self.tree_listed)),
            Action::Tree(Some(choice)) => {
                let id = match tree::target(&self.session, &self.tree_listed, choice.row) {
                    Ok(id) => id,
                    Err(line) => {
                        app.notice(vec![line]);
                        return Ok(false);
                    }
                };
                match choice.summary {
                    None => {
                        let moved = self.session.navigate_tree(&id, false, None).await;
                        tree::show(&self.session, app, choice.row, moved);
                    }
                    // The summariser takes a while: the UI goes on, and Esc
                    // cancels it (and the move).
                    Some(focus) => {
                        let session = self.session.clone();
                        app.set_running(true, Instant::now());
                        app.notice(vec![StyledLine::new(
                            "Summarising the branch left… (Esc cancels)",
                            Style::Dim,
                        )]);
                        self.tree_move = Some((
                            choice.row,
                            tokio::spawn(async move {
                                session.navigate_tree(&id, true, focus.as_deref()).await
                            }),
                        ));
                    }
                }
            }
            Action::Reload => self.reload(app).await,
            Action::NewSession => {
                self.session.end_session(SessionEndReason::Clear).await;
                self.session.new_session(None);
                app.reset(&[]);
                app.notice(vec![StyledLine::new("New session started", Style::Dim)]);
            }
            Action::Resume(choice) => self.resume(app, choice)?,
            Action::ResumeSearch(text) => self.list_sessions(app, Some(&text)),
            Action::Model(None) => {
                let env = |name: &str| std::env::var(name).ok();
                app.show_models(&self.interactive.models.choices(&env));
            }
            Action::Model(Some(name)) => self.choose_model(app, &name).await,
            // The run loop opens the editor or stops: it holds the terminal.
            Action::ExternalEditor | Action::Suspend => {}
            Action::Dequeue => self.restore_queued(app),
            Action::CycleThinking => self.cycle_thinking(app),
            Action::CycleModel { back } => {
                let env = |name: &str| std::env::var(name).ok();
                let models = &self.interactive.models;
                match models.next_after_current(&self.session, &env, back).await {
                    Some((next, level)) => {
                        self.switch_model(app, &format!("{}/{}", next.provider, next.id));
                        let set = level.map(|level| self.session.set_thinking_level(level));
                        if let Some(Err(error)) = set {
                            app.notice(vec![StyledLine::new(error.to_string(), Style::Error)]);
                        }
                    }
                    None => app.notice(vec![StyledLine::new(
                        "No other model to switch to (/model lists the providers)",
                        Style::Dim,
                    )]),
                }
            }
            Action::Mcp => app.notice(mcp_lines(&self.session)),
            Action::CompleteElsewhere(word) => {
                if let Some(files) = self.interactive.files.clone() {
                    let cwd = self.parts.cwd.clone();
                    // A Tab pressed again takes the place of the last.
                    if let Some(last) = self.completing.take() {
                        last.abort();
                    }
                    self.completing = Some(tokio::spawn(async move {
                        let completion = complete_at_word_with(files.as_ref(), &cwd, &word).await;
                        (word, completion)
                    }));
                }
            }
            Action::Session(command) => session_commands::perform(&self.session, app, command),
            Action::Quit => {
                self.session.abort();
                // A command of yours is killed before the UI goes.
                self.user_commands.cancel();
                let _ = tokio::time::timeout(QUIT_GRACE, self.user_commands.wait()).await;
                // A prompt still waiting for the MCP servers is never sent.
                if self.prompt_is_waiting()
                    && let Some(run) = self.run.take()
                {
                    run.abort();
                }
                if let Some(run) = self.run.take() {
                    let _ = tokio::time::timeout(QUIT_GRACE, run).await;
                }
                self.apply_waiting_events(app);
                self.session.close(SessionEndReason::PromptInputExit).await;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A message typed while the agent works: steering (`steer`) or a
    /// follow-up, queued once the hooks let it; a refusal shows as a
    /// warning.
    fn queue(&mut self, text: String, steer: bool) {
        let (session, before) = (self.session.clone(), self.queuing.take());
        self.queuing = Some(tokio::spawn(async move {
            if let Some(before) = before {
                let _ = before.await;
            }
            let message = AgentSession::user_message(&text, Vec::new());
            let queued = if steer {
                session.steer(message).await
            } else {
                session.follow_up(message).await
            };
            if let Err(refused) = queued {
                tracing::warn!("{refused}");
            }
        }));
    }

    /// `/reload`: the instructions built again from the files; the next
    /// prompt sends them. A resumed session gets them too.
    async fn reload(&mut self, app: &mut App) {
        let Some(reload) = &self.interactive.reload else {
            app.notice(vec![StyledLine::new(
                "Nothing to reload: this session's instructions were not read from files",
                Style::Error,
            )]);
            return;
        };
        let instructions = reload().await;
        let said = format!(
            "Reloaded the system prompt (context files: {}, skills: {}) and the commands ({}); the next prompt uses them",
            instructions.context_files,
            instructions.skills,
            instructions.prompt_templates.len()
        );
        self.parts.system_prompt = instructions.system_prompt.clone();
        self.parts.prompt_templates = instructions.prompt_templates.clone();
        self.session.set_instructions(instructions);
        app.set_templates(&self.session.prompt_templates());
        app.notice(vec![StyledLine::new(said, Style::Dim)]);
    }

    /// `/model NAME`: the following runs use the model `name` resolves to,
    /// one its provider's server lists where it lists its models
    /// ([`ModelCatalog::switch_offered`], as RPC's `set_model` checks).
    /// Refused, the command goes back into the editor to be corrected (the
    /// menu then offers the models it begins).
    async fn choose_model(&mut self, app: &mut App, name: &str) {
        let env = |name: &str| std::env::var(name).ok();
        let models = &self.interactive.models;
        match models.switch_offered(&self.session, name, &env).await {
            Ok((model, provider)) => self.switched(app, model, provider),
            Err(error) => {
                app.notice(vec![StyledLine::new(
                    format!("{error}; the text is back in the editor"),
                    Style::Error,
                )]);
                app.editor.set_text(&format!("/model {name}"));
            }
        }
    }

    /// Switches to `name`, a model the catalog listed (Ctrl+P).
    fn switch_model(&mut self, app: &mut App, name: &str) {
        let env = |name: &str| std::env::var(name).ok();
        match self.interactive.models.switch(&self.session, name, &env) {
            Ok((model, provider)) => self.switched(app, model, provider),
            Err(error) => app.notice(vec![StyledLine::new(error.to_string(), Style::Error)]),
        }
    }

    /// Shows the switch to `model`.
    fn switched(
        &mut self,
        app: &mut App,
        model: agent_ai::Model,
        provider: std::sync::Arc<dyn agent_ai::Provider>,
    ) {
        let shown = self.use_model(app, model, provider);
        app.notice(vec![StyledLine::new(
            format!("Switched to {shown}"),
            Style::Dim,
        )]);
    }

    /// A resumed session goes on with the model its branch used last, as
    /// at start (`-c`) and in RPC's `switch_session`, as Pi restores it: a
    /// session held on a local model must not quietly move to another.
    /// One that cannot be used now is said, and the current one stays.
    fn restore_model(&mut self, app: &mut App) {
        let Some((provider, id)) = self.session.saved_model() else {
            return;
        };
        let current = self.session.model();
        if (current.provider.as_str(), current.id.as_str()) == (provider.as_str(), id.as_str()) {
            return;
        }
        let env = |name: &str| std::env::var(name).ok();
        let saved = format!("{provider}/{id}");
        match self.interactive.models.restore(&self.session, &saved, &env) {
            Ok((model, provider)) => {
                self.use_model(app, model, provider);
            }
            Err(error) => app.notice(vec![StyledLine::new(
                format!(
                    "The session last used {saved}, which cannot be used now ({error}); going on with {}/{}",
                    current.provider, current.id
                ),
                Style::Warning,
            )]),
        }
    }

    /// Shows `model` as the one in use and keeps it for the sessions built
    /// later (`/new`, `/resume`); its name as shown.
    fn use_model(
        &mut self,
        app: &mut App,
        model: agent_ai::Model,
        provider: std::sync::Arc<dyn agent_ai::Provider>,
    ) -> String {
        let shown = format!("{}/{}", model.provider, model.id);
        app.set_model(
            shown.clone(),
            self.interactive.models.context_window(&model),
        );
        self.parts.model = model;
        self.parts.provider = provider;
        shown
    }

    /// The directory sessions are saved in; `None` (and said) with
    /// `--no-session`.
    fn session_dir(&self, app: &mut App) -> Option<PathBuf> {
        let dir = self.interactive.session_dir.clone();
        if dir.is_none() {
            app.notice(vec![StyledLine::new(
                "Sessions are not saved (--no-session)",
                Style::Error,
            )]);
        }
        dir
    }

    /// `/resume` lists this directory's newest sessions, `/resume TEXT`
    /// those whose title holds the text; `/resume N` then opens one.
    fn list_sessions(&mut self, app: &mut App, search: Option<&str>) {
        let Some(dir) = self.session_dir(app) else {
            return;
        };
        let (sessions, more) = match search {
            Some(text) => saved_sessions::matching_sessions(&dir, text),
            None => saved_sessions::recent_sessions(&dir),
        };
        self.resume_listed.remember(&sessions);
        if sessions.is_empty() {
            let none = match search {
                Some(text) => format!("No saved session's title holds \"{text}\""),
                None => "No saved sessions".to_owned(),
            };
            app.notice(vec![StyledLine::new(none, Style::Dim)]);
            return;
        }
        let lines = saved_sessions::list_lines(&sessions, more, search, &dir, SystemTime::now());
        app.notice(lines);
    }

    /// `/resume N`: opens the session the last listing numbered `N`.
    fn resume(&mut self, app: &mut App, choice: Option<usize>) -> anyhow::Result<()> {
        let Some(n) = choice else {
            self.list_sessions(app, None);
            return Ok(());
        };
        let Some(dir) = self.session_dir(app) else {
            return Ok(());
        };
        let Some(path) = self.resume_listed.pick(n, &dir) else {
            app.notice(vec![StyledLine::new(
                format!("No session number {n}"),
                Style::Error,
            )]);
            return Ok(());
        };
        let manager = match SessionManager::open(&path, &self.parts.cwd) {
            Ok(manager) => manager,
            Err(error) => {
                app.notice(vec![StyledLine::new(error.to_string(), Style::Error)]);
                return Ok(());
            }
        };
        let recovery = self.session.recovery();
        self.session = self.parts.session(manager)?;
        self.session.set_recovery(recovery);
        #[cfg(feature = "mcp")]
        if let Some(servers) = &self.interactive.mcp {
            self.session.set_mcp(servers.clone());
        }
        self.events = self.session.subscribe_coalesced();
        app.reset(&self.session.context_items());
        show_saved(&self.session, app);
        self.restore_model(app);
        app.notice(vec![StyledLine::new(
            format!("Resumed {}", path.display()),
            Style::Dim,
        )]);
        Ok(())
    }
}

/// The line a new session starts with: the few keys a newcomer needs
/// before anything else, and where the rest are.
fn welcome_line() -> StyledLine {
    StyledLine::new(
        format!(
            "coding-agent {}: Enter sends, Esc cancels, Ctrl+C twice quits; /help lists keys and commands",
            env!("CARGO_PKG_VERSION")
        ),
        Style::Dim,
    )
}

/// The footer of a resumed session: the totals of its whole file (the
/// messages shown are only its context), and, when it was compacted with no
/// answer since, the estimate of the next request (the last usage in it
/// counted the context before).
fn show_saved(session: &AgentSession, app: &mut App) {
    app.arguments_replaced(session.hook_arguments());
    app.set_usage_total(session.usage_total());
    if session.context_is_estimated() {
        app.context_compacted(session.next_request_tokens());
    }
}

/// What `/mcp` shows.
#[cfg(feature = "mcp")]
fn mcp_lines(session: &AgentSession) -> Vec<StyledLine> {
    crate::mcp::report::status_lines(&session.mcp_status())
}

#[cfg(not(feature = "mcp"))]
fn mcp_lines(_session: &AgentSession) -> Vec<StyledLine> {
    vec![StyledLine::new(
        "MCP is not in this build (the mcp cargo feature is off)",
        Style::Error,
    )]
}

/// Starts the countdown of a retry's wait, or ends it once the turn is
/// asked again (its first agent event) or the retries end.
fn show_retry_wait(app: &mut App, event: &SessionEvent) {
    match event {
        SessionEvent::AutoRetryStart {
            attempt,
            max_attempts,
            delay_ms,
            ..
        } => app.retry_waiting(
            *attempt,
            *max_attempts,
            Duration::from_millis(*delay_ms),
            Instant::now(),
        ),
        SessionEvent::Agent(_) | SessionEvent::AutoRetryEnd { .. } => app.retry_wait_over(),
        _ => {}
    }
}

/// The next warning line; never, without a receiver.
async fn next_warning(warnings: &mut Option<crate::warnings::WarningReceiver>) -> Option<String> {
    match warnings {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// Asks the providers' servers for their models in the background
/// ([`ModelCatalog::served`]): a local server that is slow or down delays
/// nothing.
fn list_served_models(catalog: &ModelCatalog, current: &Model) -> oneshot::Receiver<Vec<Model>> {
    let (send, receive) = oneshot::channel();
    let catalog = catalog.clone();
    let current = current.clone();
    tokio::spawn(async move {
        let env = |name: &str| std::env::var(name).ok();
        // The UI may have ended already.
        let _ = send.send(catalog.served(&current, &env).await);
    });
    receive
}

/// SIGHUP (the terminal closed) and SIGTERM: the interactive UI quits on
/// them as on Ctrl+C twice. Left to their default, they ended the process
/// at once: a running command outlived it, and the session lost the call.
struct QuitSignals(Option<(Signal, Signal)>);

impl QuitSignals {
    fn watch() -> Self {
        match (
            signal(SignalKind::hangup()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(hangup), Ok(terminate)) => QuitSignals(Some((hangup, terminate))),
            _ => {
                tracing::warn!(
                    "cannot watch for SIGHUP and SIGTERM: they will end the agent without saving the running call"
                );
                QuitSignals(None)
            }
        }
    }

    /// The next of them; never, when they are not watched.
    async fn next(&mut self) {
        match &mut self.0 {
            Some((hangup, terminate)) => {
                tokio::select! {
                    _ = hangup.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            None => std::future::pending().await,
        }
    }
}

/// The models the servers listed, once (none when the task failed); never,
/// once they have been received.
async fn next_served_models(served: &mut Option<oneshot::Receiver<Vec<Model>>>) -> Vec<Model> {
    match served {
        Some(receiver) => receiver.await.unwrap_or_default(),
        None => std::future::pending().await,
    }
}

/// The next call asking for approval; never, without an inbox.
async fn next_approval(
    approvals: &mut Option<approval::ApprovalInbox>,
) -> Option<approval::ApprovalPrompt> {
    match approvals {
        Some(inbox) => inbox.recv().await,
        None => std::future::pending().await,
    }
}

/// The terminal in raw mode on the alternate screen, restored when dropped
/// (and on panic).
pub(crate) struct TerminalGuard {
    pub(crate) terminal: Term,
    enhanced_keys: bool,
}

impl TerminalGuard {
    pub(crate) fn enter() -> anyhow::Result<Self> {
        enable_raw_mode().context("cannot put the terminal in raw mode")?;
        // Asked in raw mode; where supported, Shift+Enter arrives as such.
        let enhanced_keys = supports_keyboard_enhancement().unwrap_or(false);
        take_over(enhanced_keys)?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore(enhanced_keys);
            previous(info);
        }));
        let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        Ok(TerminalGuard {
            terminal,
            enhanced_keys,
        })
    }
}

impl TerminalGuard {
    /// Hands the terminal to another program (the external editor): the
    /// normal screen, cooked mode.
    pub(crate) fn suspend(&mut self) {
        restore(self.enhanced_keys);
        let _ = self.terminal.show_cursor();
    }

    /// Ctrl+Z: the terminal as it was, then the process stops (SIGTSTP)
    /// until the shell's `fg` continues it, and the UI takes the terminal
    /// back. Where no shell can continue it (an orphaned process group),
    /// the kernel drops the signal and the UI comes back at once.
    pub(crate) fn stop_to_shell(&mut self) -> anyhow::Result<()> {
        self.suspend();
        if let Err(error) = nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP) {
            tracing::warn!("Ctrl+Z: cannot stop the process: {error}");
        }
        self.resume()
    }

    /// Takes the terminal back after [`TerminalGuard::suspend`]; the next
    /// frame is drawn whole.
    pub(crate) fn resume(&mut self) -> anyhow::Result<()> {
        take_over(self.enhanced_keys)?;
        self.terminal.clear()?;
        Ok(())
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore(self.enhanced_keys);
        let _ = self.terminal.show_cursor();
    }
}

/// Raw mode, the alternate screen, bracketed paste, and the keyboard
/// enhancement when the terminal has it: what [`restore`] undoes.
fn take_over(enhanced_keys: bool) -> anyhow::Result<()> {
    enable_raw_mode().context("cannot put the terminal in raw mode")?;
    let mut stdout = io::stdout();
    execute!(stdout, EnterAlternateScreen, EnableBracketedPaste)?;
    if enhanced_keys {
        execute!(
            stdout,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
    }
    Ok(())
}

fn restore(enhanced_keys: bool) {
    let mut stdout = io::stdout();
    if enhanced_keys {
        let _ = execute!(stdout, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(stdout, DisableBracketedPaste, LeaveAlternateScreen);
    let _ = disable_raw_mode();
}
