//! The interactive app's state, without a terminal or an agent: keys in,
//! [`Action`]s out, agent events applied, and the whole screen drawn into a
//! ratatui frame. The driver ([`super::run_interactive`]) performs the
//! actions; tests drive this type directly and read a `TestBackend`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_ai::{Message, Model, ThinkingLevel, Usage};
use agent_core::{AgentEvent, AgentToolResult};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use serde_json::Value;

use super::command_menu::{CommandMenu, MenuEntry, argument_matching, matching};
use super::complete::{AtCompletion, complete_at_word};
use super::theme::to_line;
use super::transcript::{Transcript, user_text};
use super::wrap::{break_ranges, text_width, wrap};
use crate::ToolDefinition;
use crate::app::models::ModelChoice;
use crate::render::{Style, StyledLine, ToolRenderers};
use crate::session::ContextItem;
use crate::support::paths::home_dir;
use crate::templates::PromptTemplate;

/// The built-in commands (`App::command` does them) and what each does,
/// for the command menu and `/help`.
const COMMANDS: [(&str, &str); 16] = [
    ("/compact", "compact the conversation now [FOCUS]"),
    ("/copy", "copy the last answer to the clipboard"),
    ("/exit", "quit"),
    ("/export", "write the session as an HTML page [PATH]"),
    ("/fork", "go on in a copy, from an earlier prompt [N]"),
    ("/help", "the keys and the commands"),
    ("/mcp", "the MCP servers, their state and tools"),
    ("/model", "list the models, or switch to one [NAME]"),
    ("/name", "show or set the session's name [NAME]"),
    ("/new", "start a new session"),
    ("/quit", "quit"),
    (
        "/reload",
        "read AGENTS.md, SYSTEM.md, templates and skills again",
    ),
    ("/resume", "list or search the saved sessions [N | TEXT]"),
    ("/session", "the session's file, id, name and totals"),
    ("/tools", "the tools the model has"),
    (
        "/tree",
        "the session's branches; go on from one [N [summarize [FOCUS]]]",
    ),
];

/// Most editor rows shown; longer texts scroll.
const MAX_EDITOR_ROWS: usize = 8;

/// Most rows a wrapped status line takes above the editor.
const MAX_STATUS_ROWS: usize = 4;

/// What the user asked for, for the driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond redrawing.
    None,
    /// Run a prompt (the agent is idle).
    Prompt(String),
    /// Queue a message for after the current turn (the agent is running).
    Steer(String),
    /// Queue a message for when the agent would stop.
    FollowUp(String),
    /// Cancel the running turn, and the user's command.
    Abort,
    /// Run a command for the user (`!cmd`).
    Bash {
        /// The command line.
        command: String,
        /// `!!cmd`: kept out of the model's context.
        excluded: bool,
    },
    /// Start a new session.
    NewSession,
    /// List saved sessions, or resume the one numbered.
    Resume(Option<usize>),
    /// List the saved sessions whose title holds the text.
    ResumeSearch(String),
    /// List the models (`None`), or switch to the one named.
    Model(Option<String>),
    /// Compact the conversation now, with what the summary should focus on.
    Compact(Option<String>),
    /// Show the session's tree (`None`), or go on from the row numbered.
    Tree(Option<TreeChoice>),
    /// Build the system prompt and the commands again from the files.
    Reload,
    /// Move to the next thinking level (Shift+Tab).
    CycleThinking,
    /// Switch to the next model (Ctrl+P), or the one before (`back`:
    /// Ctrl+Shift+P, where the terminal tells it from Ctrl+P).
    CycleModel {
        /// Step backwards.
        back: bool,
    },
    /// Edit the prompt in `$VISUAL`/`$EDITOR` (Ctrl+G).
    ExternalEditor,
    /// Stop to the shell that started the app, until `fg` (Ctrl+Z).
    Suspend,
    /// Take the queued steering and follow-up messages back into the
    /// editor (Alt+Up).
    Dequeue,
    /// List the MCP servers, their state and tools.
    Mcp,
    /// Complete the `@` word before the cursor against another host's
    /// files (`--remote`): listed there, then given to
    /// [`App::completed`].
    CompleteElsewhere(String),
    /// Show, name, export, fork or copy from the session.
    Session(SessionCommand),
    /// Leave.
    Quit,
}

/// `/session`, `/name`, `/export`, `/fork`, `/copy`: about the session
/// itself (done by `session_commands.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionCommand {
    /// Show the session's file, id, name and totals.
    Info,
    /// Show the session's name (`None`), or name it.
    Name(Option<String>),
    /// Write the conversation as HTML, to the path given or the default one.
    Export(Option<String>),
    /// List the user messages to fork from, or fork before the one numbered.
    Fork(Option<usize>),
    /// Copy the model's last answer to the clipboard.
    Copy,
}

/// `/tree N [summarize [FOCUS]]`: where to go on from, and whether the
/// branch left is summarised first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChoice {
    /// The row's number, as `/tree` lists them.
    pub row: usize,
    /// `None`: no summary; `Some(focus)`: summarise, stressing `focus`.
    pub summary: Option<Option<String>>,
}

/// A compaction under way, as the status line shows it.
#[derive(Debug, Clone, Copy)]
enum Compacting {
    /// Its summary request is out.
    Started,
    /// It takes several requests: `done` of `of` are answered.
    Requests { done: usize, of: usize },
}

/// An automatic retry waiting to ask again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RetryWait {
    attempt: u32,
    max_attempts: u32,
    /// When the turn is asked again.
    until: Instant,
}

/// A message not yet delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    kind: PendingKind,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingKind {
    Steering,
    FollowUp,
    /// A prompt waiting for the MCP servers to come up.
    Prompt,
}

/// The MCP servers' start, as the status line tells it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct McpStartShown {
    /// The servers not up yet.
    starting: Vec<String>,
    /// The prompt waits for them.
    prompt_waits: bool,
}

/// How soon a second Ctrl+C must follow the first to quit, as in Pi; the
/// hint saying so shows that long.
pub const QUIT_WINDOW: Duration = Duration::from_millis(500);

/// The interactive app.
#[derive(Debug)]
pub struct App {
    /// The conversation shown.
    pub transcript: Transcript,
    /// The input editor.
    pub editor: super::editor::Editor,
    /// Calls waiting for the user's approval; while one is shown it takes
    /// the keys, not the editor.
    pub approvals: super::approval::Approvals,
    model: String,
    /// The model's context window in tokens, when known.
    context_window: Option<u64>,
    /// The thinking level, for a model that reasons.
    thinking: Option<ThinkingLevel>,
    /// The wait before an automatic retry, counted down in the status line.
    retry_wait: Option<RetryWait>,
    /// A compaction under way, shown in the status line.
    compaction: Option<Compacting>,
    cwd: PathBuf,
    /// `[user@]host[:port]` when the tools act on a remote host.
    remote_host: Option<String>,
    tools: Vec<String>,
    /// The prompt templates' names and descriptions (`/name` is sent as a
    /// prompt, which the session expands).
    templates: Vec<(String, String)>,
    mcp_start: McpStartShown,
    usage: Usage,
    /// Tokens of the last answer's context (input, cache and output), or
    /// an estimate after a compaction (`context_estimated`).
    context_tokens: u64,
    /// `context_tokens` is an estimate: no answer since the last compaction.
    context_estimated: bool,
    running: bool,
    /// The id of the command the user runs (`!cmd`), while it runs.
    user_bash: Option<String>,
    pending: Vec<Pending>,
    /// When Ctrl+C last cleared the editor: another within [`QUIT_WINDOW`] quits.
    ctrl_c_armed: Option<Instant>,
    /// A hint above the editor (Tab's candidates, errors of a command),
    /// wrapped over a few rows.
    hint: Option<StyledLine>,
    /// The command menu's choice (shown while the prompt is a `/word`).
    menu: CommandMenu,
    /// The models `/model ` offers in the menu, with a word on each.
    model_names: Vec<(String, String)>,
    /// Rows scrolled up from the bottom of the transcript.
    scroll: usize,
    /// Rows PageUp/PageDown scroll: the transcript's height as last drawn,
    /// less two rows kept in view for context.
    page_rows: usize,
    run_started: Option<Instant>,
}

impl App {
    /// An app for `model` (shown as `provider/id`) in `cwd`, with the earlier
    /// conversation `items` and the active `tools`.
    pub fn new(model: String, cwd: &Path, tools: Vec<String>, items: &[ContextItem]) -> Self {
        let mut app = App {
            transcript: Transcript::from_items(items),
            editor: super::editor::Editor::default(),
            approvals: super::approval::Approvals::default(),
            model,
            context_window: None,
            thinking: None,
            retry_wait: None,
            compaction: None,
            cwd: cwd.to_path_buf(),
            remote_host: None,
            tools,
            templates: Vec::new(),
            mcp_start: McpStartShown::default(),
            usage: Usage::default(),
            context_tokens: 0,
            context_estimated: false,
            running: false,
            user_bash: None,
            pending: Vec::new(),
            ctrl_c_armed: None,
            hint: None,
            menu: CommandMenu::default(),
            model_names: Vec::new(),
            scroll: 0,
            page_rows: 10,
            run_started: None,
        };
        app.recall(items);
        app
    }

    /// The session's tools (its built-ins, custom and MCP tools): `/tools`
    /// names them, and their calls are drawn with their own renderers
    /// instead of the built-ins' alone.
    pub fn set_tools(&mut self, tools: Vec<Arc<dyn ToolDefinition>>) {
        self.tools = tools.iter().map(|tool| tool.tool().name.clone()).collect();
        self.transcript.set_renderers(ToolRenderers::new(tools));
    }

    /// The MCP servers not up yet, and whether the prompt sent waits for
    /// them: the status line says so.
    pub fn set_mcp_start(&mut self, starting: Vec<String>, prompt_waits: bool) {
        self.mcp_start = McpStartShown {
            starting,
            prompt_waits,
        };
    }

    /// True while MCP servers are starting (the status line names them).
    pub fn mcp_starting(&self) -> bool {
        !self.mcp_start.starting.is_empty()
    }

    /// Shows `text`, a prompt the driver holds back until the MCP servers
    /// are up, as waiting to be sent until it is.
    pub fn wait_to_send(&mut self, text: String) {
        self.pending.push(Pending {
            kind: PendingKind::Prompt,
            text,
        });
    }

    /// Names the remote host the tools act on; the footer shows
    /// `host:/dir` (the directory is the remote one, never shortened with
    /// the local `~`).
    pub fn set_remote_host(&mut self, host: String) {
        self.remote_host = Some(host);
    }

    /// True while a run is in progress.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The prompt templates a prompt may name (`/help` lists them).
    pub fn set_templates(&mut self, templates: &[PromptTemplate]) {
        self.templates = templates
            .iter()
            .map(|template| (template.name.clone(), template.description.clone()))
            .collect();
    }

    /// Shows the command the user started (`!cmd`) running, under `id`.
    pub fn user_bash_started(&mut self, id: &str, command: &str, excluded: bool, now: Instant) {
        self.transcript
            .user_bash_started(id, command, excluded, now);
        self.user_bash = Some(id.to_owned());
    }

    /// Shows how the user's command ended: as the bash tool's `result`
    /// would read.
    pub fn user_bash_ended(&mut self, result: AgentToolResult, failed: bool, now: Instant) {
        if let Some(id) = self.user_bash.take() {
            self.transcript.call_ended(&id, result, failed, now);
        }
    }

    /// Shows the output of the user's command so far.
    pub fn user_bash_output(&mut self, output: AgentToolResult) {
        if let Some(id) = &self.user_bash {
            self.transcript.user_bash_output(id, output);
        }
    }

    /// Whether a command the user started runs.
    pub fn user_bash_running(&self) -> bool {
        self.user_bash.is_some()
    }

    /// Marks a run started or ended (the driver knows when its task ends).
    pub fn set_running(&mut self, running: bool, now: Instant) {
        self.running = running;
        self.run_started = running.then_some(now);
        if !running {
            self.retry_wait = None;
            self.transcript.run_ended();
            // A prompt a hook refused or rewrote never starts as itself.
            self.pending.retain(|p| p.kind != PendingKind::Prompt);
        }
    }

    /// Retry `attempt` of `max_attempts` asks again after `delay`: the
    /// status line counts the seconds down until then (Pi's `Retrying (1/3)
    /// in 2s... (Esc to cancel)`).
    pub fn retry_waiting(
        &mut self,
        attempt: u32,
        max_attempts: u32,
        delay: Duration,
        now: Instant,
    ) {
        self.retry_wait = Some(RetryWait {
            attempt,
            max_attempts,
            until: now + delay,
        });
    }

    /// The session asks a failed turn again: the failed attempt's lines in
    /// the transcript fold into `line` ([`Transcript::retry_scheduled`]).
    pub fn retry_scheduled(&mut self, line: StyledLine) {
        self.transcript.retry_scheduled(line);
        self.scroll = 0;
    }

    /// The session gave up asking again: the last attempt and its retry
    /// line fold into `line` ([`Transcript::retries_failed`]).
    pub fn retries_failed(&mut self, line: StyledLine) {
        self.transcript.retries_failed(line);
        self.scroll = 0;
    }

    /// The retry's wait is over (it asks again, succeeded, failed or was
    /// cancelled).
    pub fn retry_wait_over(&mut self) {
        self.retry_wait = None;
    }

    /// A compaction began: the status line says so (Pi's `Compacting
    /// context... (Esc to cancel)`) rather than offering to steer a run.
    pub fn compaction_started(&mut self) {
        self.compaction = Some(Compacting::Started);
    }

    /// A compaction in several requests got `done` of `of` answered (shown
    /// in the status line); `None` once it ended.
    pub fn compaction_progress(&mut self, progress: Option<(usize, usize)>) {
        self.compaction = progress.map(|(done, of)| Compacting::Requests { done, of });
    }

    /// The footer's token and cost totals are `usage`: a resumed session's
    /// whole file, where the messages shown are only its context.
    pub fn set_usage_total(&mut self, usage: Usage) {
        self.usage = usage;
    }

    /// A compaction replaced the context: the footer shows `tokens`, what
    /// the next request is estimated to take, marked `~` until an answer
    /// reports its usage (the last one counted the context before).
    pub fn context_compacted(&mut self, tokens: u64) {
        self.context_tokens = tokens;
        self.context_estimated = true;
    }

    /// Shows `model` (`provider/id`) in the footer, with its context window
    /// in tokens when known (the fill is then shown as a percentage).
    pub fn set_model(&mut self, model: String, context_window: Option<u64>) {
        self.model = model;
        self.context_window = context_window;
    }

    /// Shows `level` in the footer after the model (`None`: the model does
    /// not reason, nothing is shown).
    pub fn set_thinking(&mut self, level: Option<ThinkingLevel>) {
        self.thinking = level;
    }

    /// `/model`'s list: the current model, then what `/model` can switch to:
    /// each provider's default, then the other models the `/model ` menu
    /// offers (cycled by Ctrl+P, listed by a server), the current one marked
    /// with `*`. (It showed the defaults alone: after switching to a model a
    /// server listed, no row was marked.)
    pub fn show_models(&mut self, choices: &[ModelChoice]) {
        let mut lines = vec![
            StyledLine::new("Model: ", Style::Bold).push(self.model.clone(), Style::Accent),
            StyledLine::new(
                "Switch with /model PROVIDER/ID, or /model PROVIDER for its default:",
                Style::Dim,
            ),
        ];
        let mut listed = Vec::new();
        for choice in choices {
            let name = match &choice.model {
                Some(model) => format!("{}/{model}", choice.provider),
                None => format!("{}/(no default model)", choice.provider),
            };
            let mark = if name == self.model { "* " } else { "  " };
            let mut line = StyledLine::new(mark, Style::Accent).push(name.clone(), Style::Normal);
            if let Some(var) = &choice.missing_key {
                line = line.push(format!("  (no key: set {var})"), Style::Warning);
            }
            lines.push(line);
            listed.push(name);
        }
        let current = (self.model.clone(), String::new());
        let others = self.model_names.iter().chain([&current]);
        for (name, description) in others {
            if listed.contains(name) {
                continue;
            }
            let mark = if *name == self.model { "* " } else { "  " };
            let mut line = StyledLine::new(mark, Style::Accent).push(name.clone(), Style::Normal);
            if !description.is_empty() {
                line = line.push(format!("  ({description})"), Style::Dim);
            }
            lines.push(line);
            listed.push(name.clone());
        }
        self.notice(lines);
    }

    /// The models the command menu offers after `/model `: the ones
    /// cycling goes through (`cycle`), then each provider's default.
    pub fn set_model_names(&mut self, cycle: &[String], choices: &[ModelChoice]) {
        let defaults = choices.iter().filter_map(|choice| {
            let model = choice.model.as_ref()?;
            let description = match &choice.missing_key {
                Some(var) => format!("no key: set {var}"),
                None => format!("{}'s default", choice.provider),
            };
            Some((format!("{}/{model}", choice.provider), description))
        });
        let mut names: Vec<(String, String)> = cycle
            .iter()
            .map(|name| (name.clone(), "cycled by Ctrl+P".to_owned()))
            .chain(defaults)
            .collect();
        let mut seen = std::collections::HashSet::new();
        names.retain(|(name, _)| seen.insert(name.clone()));
        self.model_names = names;
    }

    /// The models the providers' servers list at `/models` (a local
    /// server's, asked in the background at start) join the menu after
    /// those it has.
    pub fn add_served_models(&mut self, models: &[Model]) {
        for model in models {
            let name = format!("{}/{}", model.provider, model.id);
            if !self.model_names.iter().any(|(known, _)| *known == name) {
                let description = format!("served by {}", model.provider);
                self.model_names.push((name, description));
            }
        }
    }

    /// Replaces what is shown with `items` (a new or resumed session).
    pub fn reset(&mut self, items: &[ContextItem]) {
        let shown = std::mem::replace(&mut self.transcript, Transcript::from_items(items));
        self.transcript.expand_tools = shown.expand_tools;
        self.transcript.show_thinking = shown.show_thinking;
        self.transcript.set_renderers(shown.renderers().clone());
        self.usage = Usage::default();
        self.context_tokens = 0;
        self.context_estimated = false;
        self.pending.clear();
        self.scroll = 0;
        self.recall(items);
    }

    /// What a loaded session brings besides its transcript: its usage, and
    /// its prompts and commands in the editor's history (Up recalls them
    /// after `--continue` as after typing them).
    fn recall(&mut self, items: &[ContextItem]) {
        for item in items {
            match item {
                ContextItem::Message(message) => {
                    self.count_usage(message);
                    if let Message::User(user) = message {
                        self.editor.remember(&user_text(&user.content));
                    }
                }
                ContextItem::Command(run) => {
                    let marks = if run.exclude_from_context == Some(true) {
                        "!!"
                    } else {
                        "!"
                    };
                    self.editor.remember(&format!("{marks}{}", run.command));
                }
                ContextItem::Summary { .. } => {}
            }
        }
    }

    fn count_usage(&mut self, message: &Message) {
        if let Message::Assistant(answer) = message {
            let u = &answer.usage;
            self.usage += u;
            let context = u.input + u.output + u.cache_read + u.cache_write;
            if context > 0 {
                self.context_tokens = context;
                self.context_estimated = false;
            }
        }
    }

    /// Applies an agent event (after the driver saved it).
    pub fn apply_event(&mut self, event: &AgentEvent, now: Instant) {
        match event {
            AgentEvent::AgentStart => self.set_running(true, now),
            AgentEvent::MessageStart {
                message: Message::User(user),
            } => {
                let text = user_text(&user.content);
                if let Some(i) = self.pending.iter().position(|p| p.text == text) {
                    self.pending.remove(i);
                }
            }
            AgentEvent::MessageEnd { message } => self.count_usage(message),
            _ => {}
        }
        self.transcript.apply(event, now);
    }

    /// Draws the calls a hook gave other arguments than the model's with
    /// those (`(call id, arguments)`: live, or saved in a resumed session).
    pub fn arguments_replaced(&mut self, replaced: impl IntoIterator<Item = (String, Value)>) {
        for (id, args) in replaced {
            self.transcript.arguments_replaced(&id, args);
        }
    }

    /// Shows lines in the transcript (command output).
    pub fn notice(&mut self, lines: Vec<StyledLine>) {
        self.transcript.notice(lines);
        self.scroll = 0;
    }

    /// Shows a logged warning in the transcript, with the request attempt it
    /// is about ([`Transcript::warning`]); each of its lines (a server's
    /// stderr it quotes) stays a line of its own.
    pub fn warning(&mut self, text: &str) {
        let lines = text
            .lines()
            .map(|line| StyledLine::new(line, Style::Warning))
            .collect();
        self.transcript.warning(lines);
        self.scroll = 0;
    }

    /// Alt+Up: `texts`, the queued messages taken back, go into the editor
    /// before what is typed there (one paragraph each, as Pi does).
    pub fn restore_queued(&mut self, texts: Vec<String>) {
        self.pending
            .retain(|p| !matches!(p.kind, PendingKind::Steering | PendingKind::FollowUp));
        if texts.is_empty() {
            self.notice(vec![StyledLine::new(
                "No queued messages to restore",
                Style::Dim,
            )]);
            return;
        }
        let restored = texts.len();
        let typed = self.editor.text();
        let all: Vec<String> = texts
            .into_iter()
            .chain(Some(typed))
            .filter(|text| !text.trim().is_empty())
            .collect();
        self.editor.set_text(&all.join("\n\n"));
        let plural = if restored == 1 { "" } else { "s" };
        self.notice(vec![StyledLine::new(
            format!("Restored {restored} queued message{plural} to the editor"),
            Style::Dim,
        )]);
    }

    /// Records a message the driver queued, shown as pending until delivered.
    fn queue(&mut self, text: String, follow_up: bool) -> Action {
        self.pending.push(Pending {
            kind: if follow_up {
                PendingKind::FollowUp
            } else {
                PendingKind::Steering
            },
            text: text.clone(),
        });
        if follow_up {
            Action::FollowUp(text)
        } else {
            Action::Steer(text)
        }
    }

    /// A pasted text.
    pub fn paste(&mut self, text: &str) {
        if self.approvals.paste(text) {
            return;
        }
        self.editor.paste(text);
        self.ctrl_c_armed = None;
    }

    /// A key press; returns what the driver must do.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        if ctrl && key.code == KeyCode::Char('c') {
            if self.quit_armed(Instant::now()) {
                return Action::Quit;
            }
            self.editor.clear();
            self.ctrl_c_armed = Some(Instant::now());
            self.hint = Some(StyledLine::new(
                "Press Ctrl+C again to quit",
                Style::Warning,
            ));
            return Action::None;
        }
        self.ctrl_c_armed = None;
        self.hint = None;
        if self.approvals.handle_key(key) {
            return Action::None;
        }
        if let Some(action) = self.menu_key(key) {
            return action;
        }
        match key.code {
            KeyCode::Enter if alt && self.running => match self.editor.take() {
                Some(text) => self.queue(text, true),
                None => Action::None,
            },
            KeyCode::Enter if !(alt || shift) => self.submit(),
            KeyCode::Esc if self.running || self.user_bash.is_some() => Action::Abort,
            KeyCode::Char('d') if ctrl && self.editor.is_empty() => Action::Quit,
            KeyCode::Char('g') if ctrl => Action::ExternalEditor,
            KeyCode::Char('z') if ctrl => Action::Suspend,
            KeyCode::Up if alt => Action::Dequeue,
            KeyCode::BackTab => Action::CycleThinking,
            // The tools act on another host: so does the listing.
            KeyCode::Tab if self.remote_host.is_some() => {
                Action::CompleteElsewhere(self.editor.word_before_cursor().to_owned())
            }
            // Pi's model selector: the `/model ` menu on an empty prompt;
            // over a typed one (kept), the list `/model` prints.
            KeyCode::Char('l') if ctrl && self.editor.is_empty() => {
                self.editor.set_text("/model ");
                Action::None
            }
            KeyCode::Char('l') if ctrl => Action::Model(None),
            KeyCode::Char('p' | 'P') if ctrl && self.running => self.refuse("Ctrl+P", None),
            KeyCode::Char('p' | 'P') if ctrl => Action::CycleModel { back: shift },
            _ => {
                self.edit(key);
                Action::None
            }
        }
    }

    /// The keys that change only the view, the scroll or the editor
    /// (Enter reaches here with Alt or Shift: a new line).
    fn edit(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('o') if ctrl => {
                self.transcript.expand_tools = !self.transcript.expand_tools;
            }
            KeyCode::Char('t') if ctrl => {
                self.transcript.show_thinking = !self.transcript.show_thinking;
            }
            KeyCode::Tab => self.complete(),
            KeyCode::PageUp => self.scroll += self.page_rows,
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(self.page_rows),
            _ => {
                self.editor.handle_key(key);
            }
        }
    }

    fn submit(&mut self) -> Action {
        let Some(text) = self.editor.take() else {
            return Action::None;
        };
        self.scroll = 0;
        // `/usr/bin/env fails, why?` or a pasted `/home/me/app.py:12: ...`
        // is a path, not a command: no command's name holds a `/`.
        let first_word = text.split_whitespace().next().unwrap_or_default();
        if text.starts_with('/') && !text.contains('\n') && !first_word[1..].contains('/') {
            return self.command(&text);
        }
        if let Some(command) = text.strip_prefix('!') {
            let (command, excluded) = match command.strip_prefix('!') {
                Some(command) => (command, true),
                None => (command, false),
            };
            let command = command.trim();
            if command.is_empty() {
                return self.usage("!COMMAND runs it for you; !!COMMAND keeps it from the model");
            }
            if self.user_bash.is_some() {
                self.notice(vec![StyledLine::new(
                    "A command of yours is running (Esc cancels it)",
                    Style::Error,
                )]);
                return Action::None;
            }
            return Action::Bash {
                command: command.to_owned(),
                excluded,
            };
        }
        if self.running {
            self.queue(text, false)
        } else {
            Action::Prompt(text)
        }
    }

    /// A slash command.
    fn command(&mut self, line: &str) -> Action {
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        let arg = words.next();
        match name {
            "/quit" | "/exit" => Action::Quit,
            "/new" if self.busy() => self.refuse("/new", Some(line)),
            "/new" => Action::NewSession,
            "/resume" if self.busy() => self.refuse("/resume", Some(line)),
            "/resume" => match arg.map(str::parse::<usize>) {
                None => Action::Resume(None),
                Some(Ok(n)) if n > 0 => Action::Resume(Some(n)),
                Some(Ok(_)) => self.usage("/resume [NUMBER | TEXT]"),
                Some(Err(_)) => Action::ResumeSearch(rest_of(line, name).unwrap_or_default()),
            },
            "/help" => {
                let mut lines = help_lines();
                lines.extend(self.templates.iter().map(|(name, description)| {
                    StyledLine::new(format!("{:<22}", format!("/{name}")), Style::Accent)
                        .push(description.clone(), Style::Normal)
                }));
                self.notice(lines);
                Action::None
            }
            "/tools" => {
                let list = if self.tools.is_empty() {
                    "(none)".to_owned()
                } else {
                    self.tools.join(", ")
                };
                self.notice(vec![
                    StyledLine::new("Active tools: ", Style::Bold).push(list, Style::Normal),
                ]);
                Action::None
            }
            "/mcp" => Action::Mcp,
            "/session" => Action::Session(SessionCommand::Info),
            "/name" => Action::Session(SessionCommand::Name(rest_of(line, name))),
            "/export" => Action::Session(SessionCommand::Export(
                rest_of(line, name).map(|path| unquoted(&path).to_owned()),
            )),
            "/fork" if self.busy() => self.refuse("/fork", Some(line)),
            "/fork" => match arg.map(str::parse::<usize>) {
                None => Action::Session(SessionCommand::Fork(None)),
                Some(Ok(n)) if n > 0 => Action::Session(SessionCommand::Fork(Some(n))),
                Some(_) => self.usage("/fork [NUMBER]"),
            },
            "/copy" => Action::Session(SessionCommand::Copy),
            "/reload" => Action::Reload,
            "/tree" if arg.is_some() && self.busy() => self.refuse("/tree", Some(line)),
            "/tree" => match tree_choice(line) {
                Some(choice) => Action::Tree(choice),
                None => self.usage("/tree [NUMBER [summarize [FOCUS]]]"),
            },
            "/model" if arg.is_some() && self.running => self.refuse("/model", Some(line)),
            "/model" => Action::Model(arg.map(str::to_owned)),
            "/compact" if self.running => self.refuse("/compact", Some(line)),
            "/compact" => Action::Compact(rest_of(line, name)),
            // A prompt template: sent as a prompt, which the session expands.
            _ if self
                .templates
                .iter()
                .any(|(known, _)| name.strip_prefix('/') == Some(known)) =>
            {
                if self.running {
                    self.queue(line.to_owned(), false)
                } else {
                    Action::Prompt(line.to_owned())
                }
            }
            _ => {
                self.notice(vec![StyledLine::new(
                    format!(
                        "Unknown command {name}; /help lists them (the text is back in the editor)"
                    ),
                    Style::Error,
                )]);
                // Typed, not lost: the name can be fixed.
                self.editor.set_text(line);
                Action::None
            }
        }
    }

    fn usage(&mut self, usage: &str) -> Action {
        self.notice(vec![StyledLine::new(
            format!("Usage: {usage}"),
            Style::Error,
        )]);
        Action::None
    }

    /// Says `what` (a command, a key) waits for the agent or the user's
    /// command; the command line `typed` goes back into the editor, to be
    /// sent once they are done: it was dropped, and `/model NAME` or a
    /// `/compact` focus typed during a run had to be typed again.
    fn refuse(&mut self, what: &str, typed: Option<&str>) -> Action {
        let busy = match self.running {
            true => "the agent is working",
            false => "your command runs",
        };
        let back = match typed {
            Some(_) => "; the text is back in the editor",
            None => "",
        };
        self.notice(vec![StyledLine::new(
            format!("{what} is not available while {busy} (Esc cancels it{back})"),
            Style::Error,
        )]);
        if let Some(line) = typed {
            self.editor.set_text(line);
        }
        Action::None
    }

    /// The agent works or a command of the user's (`!cmd`) runs: what ends
    /// is recorded in the session, so commands that leave it wait (the
    /// command's output went into the session switched to).
    fn busy(&self) -> bool {
        self.running || self.user_bash.is_some()
    }

    /// The command menu's entries for the prompt as typed: the built-in
    /// commands and the templates (skills among them) it begins.
    fn menu_entries(&self) -> Vec<MenuEntry> {
        // A command recalled from history is not being typed: Up goes on
        // through the history.
        let lines = self.editor.lines();
        if lines.len() != 1 || !lines[0].starts_with('/') || self.editor.browsing_history() {
            return Vec::new();
        }
        let templates: Vec<(String, &str)> = self
            .templates
            .iter()
            .map(|(name, description)| (format!("/{name}"), description.as_str()))
            .collect();
        let templates = templates.iter().map(|(name, d)| (name.as_str(), *d));
        let typed = self.editor.text();
        // The current model first: Enter on `/model ` keeps it.
        let others = self
            .model_names
            .iter()
            .filter(|(name, _)| *name != self.model);
        let models = std::iter::once((self.model.as_str(), "current"))
            .chain(others.map(|(name, description)| (name.as_str(), description.as_str())));
        let mut entries = argument_matching(&typed, "/model", models);
        if entries.is_empty() {
            entries = matching(&typed, COMMANDS.into_iter().chain(templates));
        }
        entries
    }

    /// A key for the command menu, when it is open: Up/Down choose, Tab
    /// takes the chosen command, Enter sends it, Esc closes the menu.
    fn menu_key(&mut self, key: KeyEvent) -> Option<Action> {
        let typed = self.editor.text();
        let entries = self.menu_entries();
        if !self.menu.is_open(&typed, &entries) || key.modifiers.contains(KeyModifiers::ALT) {
            return None;
        }
        let chosen = &entries[self.menu.chosen(&typed, &entries)].name;
        match key.code {
            KeyCode::Up => self.menu.step(&typed, &entries, -1),
            KeyCode::Down => self.menu.step(&typed, &entries, 1),
            KeyCode::Esc => self.menu.dismiss(&typed),
            KeyCode::Tab => self.editor.set_text(&format!("{chosen} ")),
            KeyCode::Enter if key.modifiers.is_empty() => {
                if !self.menu.enter_sends(&typed) {
                    self.hint = Some(StyledLine::new(
                        "Type a command or choose one with ↑↓, then Enter",
                        Style::Dim,
                    ));
                    return Some(Action::None);
                }
                self.editor.set_text(chosen);
                // The choice is spent: the next lone `/` starts unchosen.
                self.menu = CommandMenu::default();
                return Some(self.submit());
            }
            _ => return None,
        }
        Some(Action::None)
    }

    /// Tab: completes an `@path` word against the files under the cwd.
    fn complete(&mut self) {
        if let Some(completion) = complete_at_word(&self.cwd, self.editor.word_before_cursor()) {
            self.complete_with(completion);
        }
    }

    /// The completion of the `@` word `word` listed on another host
    /// ([`Action::CompleteElsewhere`]); nothing when the word before the
    /// cursor is no longer `word` (typed on meanwhile).
    pub fn completed(&mut self, word: &str, completion: Option<AtCompletion>) {
        if let Some(completion) = completion
            && self.editor.word_before_cursor() == word
        {
            self.complete_with(completion);
        }
    }

    /// Puts `replacement` in place of the word before the cursor, and lists
    /// the candidates when there are several.
    fn complete_with(&mut self, (replacement, candidates): AtCompletion) {
        if let Some(replacement) = replacement {
            self.editor.replace_word_before_cursor(&replacement);
        }
        if candidates.len() > 1 {
            self.hint = Some(StyledLine::new(candidates.join("  "), Style::Dim));
        }
    }

    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame<'_>, now: Instant) {
        let area = frame.area();
        let width = area.width.max(1);
        let editor_rows = self.editor_rows(width);
        let shown_editor = editor_rows.len().clamp(1, MAX_EDITOR_ROWS);
        let status = self.status_line(now);
        let pending: Vec<StyledLine> = self
            .pending
            .iter()
            .map(|p| {
                let label = match p.kind {
                    PendingKind::Steering => "Queued steering: ",
                    PendingKind::FollowUp => "Queued follow-up: ",
                    PendingKind::Prompt => "Waiting to send: ",
                };
                let first = p.text.lines().next().unwrap_or_default();
                StyledLine::new(label, Style::Warning).push(first, Style::Dim)
            })
            .collect();
        // A long status (Tab's candidates, a command's error) wraps, up to
        // a few rows: past the width, cut, it would hide what it lists.
        let status: Vec<StyledLine> = status
            .map(|status| {
                let mut rows = wrap(&status, width);
                rows.truncate(MAX_STATUS_ROWS);
                rows
            })
            .unwrap_or_default();
        let status_rows = u16::try_from(status.len()).unwrap_or(1);
        let menu = match self.approvals.current() {
            None => self
                .menu
                .rows(&self.editor.text(), &self.menu_entries(), width),
            Some(_) => Vec::new(),
        };
        // Rows go first to what the user types into, then to what says
        // what is going on, then to the rest; the transcript takes what is
        // left, at least a row. (Left to the layout's solver, a window of
        // five rows during a run gave the editor none: typing was unseen.)
        let rows = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        let mut left = area.height.saturating_sub(1);
        let mut take = |want: u16| {
            let got = want.min(left);
            left -= got;
            got
        };
        let editor_first = take(1);
        let status_len = take(status_rows);
        let menu_len = take(rows(menu.len()));
        let rule_top_len = take(1);
        let rule_bottom_len = take(1);
        let editor_len = editor_first + take(rows(shown_editor).saturating_sub(1));
        let footer_len = take(2);
        let pending_len = take(rows(pending.len()));
        let [
            transcript_area,
            pending_area,
            menu_area,
            status_area,
            rule_top,
            editor_area,
            rule_bottom,
            footer_area,
        ] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(pending_len),
            Constraint::Length(menu_len),
            Constraint::Length(status_len),
            Constraint::Length(rule_top_len),
            Constraint::Length(editor_len),
            Constraint::Length(rule_bottom_len),
            Constraint::Length(footer_len),
        ])
        .areas(area);

        self.transcript.awaiting_approval = self.approvals.call_ids();
        let prompt_rows = self
            .approvals
            .draw(frame, transcript_area, self.transcript.renderers());
        let above_prompt = Rect {
            height: transcript_area.height.saturating_sub(prompt_rows),
            ..transcript_area
        };
        self.draw_transcript(frame, above_prompt, now);
        frame.render_widget(
            Paragraph::new(pending.iter().map(to_line).collect::<Vec<_>>()),
            pending_area,
        );
        frame.render_widget(
            Paragraph::new(menu.iter().map(to_line).collect::<Vec<_>>()),
            menu_area,
        );
        frame.render_widget(
            Paragraph::new(status.iter().map(to_line).collect::<Vec<_>>()),
            status_area,
        );
        let rule = to_line(&StyledLine::new(
            "─".repeat(usize::from(width)),
            self.editor_rule_style(),
        ));
        frame.render_widget(Paragraph::new(rule.clone()), rule_top);
        frame.render_widget(Paragraph::new(rule), rule_bottom);
        self.draw_editor(frame, editor_area, &editor_rows);
        frame.render_widget(
            Paragraph::new(
                self.footer_lines(width)
                    .iter()
                    .map(to_line)
                    .collect::<Vec<_>>(),
            ),
            footer_area,
        );
    }

    /// Whether a Ctrl+C now quits: the last one was at most [`QUIT_WINDOW`] ago.
    fn quit_armed(&self, now: Instant) -> bool {
        self.ctrl_c_armed
            .is_some_and(|armed| now.saturating_duration_since(armed) <= QUIT_WINDOW)
    }

    /// True while the quit hint shows and must be taken down when the
    /// window closes: the driver wakes the UI for it.
    pub fn quit_hint_shown(&self) -> bool {
        let redrawn = QUIT_WINDOW + Duration::from_millis(200);
        self.ctrl_c_armed
            .is_some_and(|armed| armed.elapsed() <= redrawn)
    }

    fn status_line(&self, now: Instant) -> Option<StyledLine> {
        // The quit hint goes with its window (it hid the spinner of a run
        // for good, and a Ctrl+C minutes later still quit).
        let hint_over = self.ctrl_c_armed.is_some() && !self.quit_armed(now);
        if let Some(hint) = self.hint.as_ref().filter(|_| !hint_over) {
            return Some(hint.clone());
        }
        if self.approvals.current().is_some() {
            return Some(StyledLine::new(
                "Waiting for your approval (Esc denies)",
                Style::Warning,
            ));
        }
        let starting = self.mcp_start.starting.join(", ");
        if self.running && self.mcp_start.prompt_waits {
            return Some(StyledLine::new(
                format!("Waiting for MCP servers to start: {starting} (Esc sends without them)"),
                Style::Warning,
            ));
        }
        if !self.running && !starting.is_empty() {
            return Some(StyledLine::new(
                format!("Starting MCP servers: {starting}"),
                Style::Dim,
            ));
        }
        if self.user_bash.is_some() && !self.running {
            return Some(StyledLine::new(
                "Running your command… (Esc to cancel)",
                Style::Accent,
            ));
        }
        match self.compaction {
            Some(Compacting::Started) => {
                return Some(StyledLine::new(
                    "Compacting context… (Esc to cancel)",
                    Style::Accent,
                ));
            }
            Some(Compacting::Requests { done, of }) => {
                return Some(StyledLine::new(
                    format!("Compacting: {done} of {of} summary requests done… (Esc to cancel)"),
                    Style::Accent,
                ));
            }
            None => {}
        }
        let started = self.run_started.filter(|_| self.running)?;
        if let Some(wait) = self.retry_wait {
            let left = wait.until.saturating_duration_since(now);
            let seconds = left.as_millis().div_ceil(1000);
            return Some(StyledLine::new(
                format!(
                    "Retrying ({}/{}) in {seconds}s... (Esc to cancel)",
                    wait.attempt, wait.max_attempts
                ),
                Style::Warning,
            ));
        }
        const FRAMES: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
        let tick = now.saturating_duration_since(started).as_millis() / 100;
        let frame = FRAMES[usize::try_from(tick).unwrap_or(0) % FRAMES.len()];
        Some(
            StyledLine::new(format!("{frame} Working… "), Style::Accent).push(
                "(Esc to cancel, Enter to steer, Alt+Enter to follow up)",
                Style::Dim,
            ),
        )
    }

    fn draw_transcript(&mut self, frame: &mut Frame<'_>, area: Rect, now: Instant) {
        let (rows, scroll) =
            self.transcript
                .window(area.width, now, usize::from(area.height), self.scroll);
        self.scroll = scroll;
        self.page_rows = usize::from(area.height).saturating_sub(2).max(1);
        frame.render_widget(
            Paragraph::new(rows.iter().map(to_line).collect::<Vec<_>>()),
            area,
        );
    }

    /// The style of the rules around the editor: a prompt that is a
    /// command of yours (`!cmd`, `!!cmd`) shows them in the warning colour,
    /// as Pi's bash mode does, so Enter is not mistaken for a message to
    /// the model.
    fn editor_rule_style(&self) -> Style {
        if self.editor.lines()[0].starts_with('!') {
            Style::Warning
        } else {
            Style::Dim
        }
    }

    /// The editor's text cut into rows of the width, with the cursor's row
    /// and column.
    fn editor_rows(&self, width: u16) -> Vec<(String, Option<usize>)> {
        let width = usize::from(width.saturating_sub(2).max(1));
        let (cursor_row, cursor_col) = self.editor.cursor();
        let mut rows = Vec::new();
        for (r, line) in self.editor.lines().iter().enumerate() {
            let chars: Vec<char> = line.chars().collect();
            let widths: Vec<usize> = chars.iter().map(|c| text_width(&c.to_string())).collect();
            let cuts = break_ranges(&chars, &widths, width);
            for (k, cut) in cuts.iter().enumerate() {
                let text: String = chars[cut.clone()].iter().collect();
                let last = k + 1 == cuts.len();
                let cursor = (r == cursor_row
                    && (cut.contains(&cursor_col) || (last && cursor_col >= chars.len())))
                .then(|| {
                    widths[cut.start..cursor_col.min(chars.len())]
                        .iter()
                        .sum::<usize>()
                });
                match cursor {
                    // At the end of a full row, the cursor opens the next.
                    Some(at) if at >= width => {
                        rows.extend([(text, None), (String::new(), Some(0))])
                    }
                    _ => rows.push((text, cursor)),
                }
            }
        }
        rows
    }

    fn draw_editor(&self, frame: &mut Frame<'_>, area: Rect, rows: &[(String, Option<usize>)]) {
        let cursor_index = rows.iter().position(|(_, c)| c.is_some()).unwrap_or(0);
        let height = usize::from(area.height).max(1);
        let start = (cursor_index + 1).saturating_sub(height);
        let lines: Vec<Line<'static>> = rows
            .iter()
            .skip(start)
            .take(height)
            .enumerate()
            .map(|(i, (text, _))| {
                let mark = if start + i == 0 { "> " } else { "  " };
                to_line(&StyledLine::new(mark, Style::Accent).push(text.clone(), Style::Normal))
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), area);
        // A prompt below the transcript has the keys (and the cursor, when it has an input).
        if let Some((_, Some(col))) = rows.get(cursor_index)
            && self.approvals.current().is_none()
        {
            let x = area.x + 2 + u16::try_from(*col).unwrap_or(0);
            let y = area.y + u16::try_from(cursor_index - start).unwrap_or(0);
            frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), y));
        }
    }

    /// The footer: the cwd, then usage, cost and context, and the model.
    pub fn footer_lines(&self, width: u16) -> Vec<StyledLine> {
        let width = usize::from(width);
        let cwd = match &self.remote_host {
            Some(host) => format!("{host}:{}", self.cwd.display()),
            None => display_path(&self.cwd),
        };
        let cwd = if text_width(&cwd) > width {
            let skip = cwd.chars().count().saturating_sub(width.saturating_sub(1));
            format!("…{}", cwd.chars().skip(skip).collect::<String>())
        } else {
            cwd
        };
        let u = &self.usage;
        let about = if self.context_estimated { "~" } else { "" };
        let context = match self.context_window.filter(|&w| w > 0) {
            Some(window) => format!(
                "{about}{}/{} ({}%)",
                tokens(self.context_tokens),
                tokens(window),
                (self.context_tokens * 100 + window / 2) / window
            ),
            None => format!("{about}{}", tokens(self.context_tokens)),
        };
        let stats = format!(
            "↑{} ↓{} R{} W{} ${:.3} ctx {context}",
            tokens(u.input),
            tokens(u.output),
            tokens(u.cache_read),
            tokens(u.cache_write),
            u.cost.total,
        );
        // Pi's `model • level` (`thinking off` for a reasoning model at
        // off). The level is shown whole or not at all: cut at the window's
        // edge, `• thinking off` read `• thinking`, as if thinking were on.
        let level = match self.thinking {
            Some(ThinkingLevel::Off) => Some("thinking off".to_owned()),
            Some(level) => Some(level.to_string()),
            None => None,
        };
        let room = width.saturating_sub(text_width(&stats) + 1);
        let model = match level {
            Some(level) if text_width(&self.model) + 3 + text_width(&level) <= room => {
                format!("{} • {level}", self.model)
            }
            _ => self.model.clone(),
        };
        let gap = width
            .saturating_sub(text_width(&stats) + text_width(&model))
            .max(1);
        vec![
            StyledLine::new(cwd, Style::Dim),
            StyledLine::new(stats, Style::Dim)
                .push(" ".repeat(gap), Style::Normal)
                .push(model, Style::Dim),
        ]
    }
}

/// What follows the command `name` on `line`, trimmed; `None` when blank.
fn rest_of(line: &str, name: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix(name).map(str::trim);
    rest.filter(|rest| !rest.is_empty()).map(str::to_owned)
}

/// `path` without one pair of quotes around it (`/export "my file.html"`,
/// as a shell would take it).
fn unquoted(path: &str) -> &str {
    ['"', '\'']
        .into_iter()
        .find_map(|quote| path.strip_prefix(quote)?.strip_suffix(quote))
        .filter(|inner| !inner.is_empty())
        .unwrap_or(path)
}

/// `/tree`'s words: none (list), a row number, then optionally
/// `summarize` (or `summarise`) and what the summary should stress.
fn tree_choice(line: &str) -> Option<Option<TreeChoice>> {
    let mut words = line.split_whitespace().skip(1);
    let Some(row) = words.next() else {
        return Some(None);
    };
    let row = row.parse::<usize>().ok().filter(|&n| n > 0)?;
    let summary = match words.next() {
        None => None,
        Some("summarize" | "summarise") => {
            let focus: Vec<&str> = words.collect();
            Some((!focus.is_empty()).then(|| focus.join(" ")))
        }
        Some(_) => return None,
    };
    Some(Some(TreeChoice { row, summary }))
}

/// `/help`'s text.
fn help_lines() -> Vec<StyledLine> {
    let rows = [
        (
            "Enter",
            "send (while the agent works: steer it after this turn)",
        ),
        (
            "Alt+Enter",
            "new line (while the agent works: queue a follow-up)",
        ),
        ("Shift+Enter, Ctrl+J", "new line"),
        ("Esc", "cancel the running turn"),
        ("Ctrl+C twice, Ctrl+D", "quit"),
        ("Ctrl+O", "expand or collapse tool output"),
        ("Ctrl+T", "show or hide thinking"),
        (
            "Up/Down",
            "history (Up from the first line's start); PageUp/PageDown scroll",
        ),
        (
            "Ctrl+A/E, Alt+B/F",
            "line start/end; a word back/forward (also Ctrl+Left/Right)",
        ),
        (
            "Ctrl+W, Alt+D",
            "delete a word back/forward; Ctrl+U/K: to the line's start/end",
        ),
        (
            "Ctrl+Y, Alt+Y",
            "put back what they deleted; then older ones",
        ),
        ("Ctrl+-", "undo (a prompt Ctrl+C cleared too)"),
        (
            "Ctrl+], Ctrl+Alt+]",
            "jump to the next (previous) place of the character typed next",
        ),
        ("Tab", "complete an @path"),
        ("/", "the command menu: Up/Down, Tab or Enter, Esc"),
        ("Shift+Tab", "next thinking level"),
        (
            "Ctrl+P",
            "next model (--models, enabledModels, else all with a key)",
        ),
        (
            "Ctrl+Shift+P",
            "previous model (in terminals with the kitty keyboard protocol)",
        ),
        (
            "Ctrl+L",
            "the model menu (over a typed prompt: the models, as /model)",
        ),
        ("Alt+Up", "take the queued messages back into the editor"),
        ("Ctrl+G", "edit the prompt in $VISUAL or $EDITOR"),
        ("Ctrl+Z", "stop to the shell; `fg` brings the app back"),
        ("!CMD, !!CMD", "run a command; !! keeps it from the model"),
    ];
    rows.iter()
        .chain(COMMANDS.iter())
        .map(|(key, what)| {
            StyledLine::new(format!("{key:<22}"), Style::Accent).push(*what, Style::Normal)
        })
        .collect()
}

/// A token count in a few characters: 999, 1.2k, 12k, 1.2M.
pub(super) fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => format!("{:.1}k", n as f64 / 1_000.0),
        10_000..1_000_000 => format!("{}k", n / 1_000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// A path with the home directory ([`home_dir`]) as `~`. `$HOME` as such
/// was taken: an empty one is a prefix of every path, and the footer read
/// `~//tmp/work`.
fn display_path(path: &Path) -> String {
    match home_dir().and_then(|home| path.strip_prefix(&home).ok().map(Path::to_path_buf)) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::interactive::command_menu::MENU_ROWS;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn app() -> App {
        App::new("p/m".into(), Path::new("/"), Vec::new(), &[])
    }

    /// A quoted path is the path inside the quotes, as a shell reads it;
    /// the quotes used to be taken for part of the file's name.
    #[test]
    fn export_takes_a_quoted_path_without_its_quotes() {
        for line in [
            "/export \"/tmp/with space.html\"",
            "/export '/tmp/with space.html'",
            "/export /tmp/with space.html",
        ] {
            assert_eq!(
                app().command(line),
                Action::Session(SessionCommand::Export(Some("/tmp/with space.html".into()))),
                "{line}"
            );
        }
    }

    #[test]
    fn every_listed_command_is_one_the_app_does() {
        for (command, _) in COMMANDS {
            let mut app = app();
            app.command(command);
            let said = app.transcript.window(100, Instant::now(), 50, 0).0;
            let said: Vec<String> = said.iter().map(StyledLine::plain).collect();
            assert!(
                !said.iter().any(|line| line.starts_with("Unknown command")),
                "{command}: {said:?}"
            );
        }
    }

    #[test]
    fn the_command_menu_offers_commands_and_templates_and_enter_sends_the_chosen_one() {
        let mut app = app();
        app.set_templates(&[PromptTemplate {
            name: "review".into(),
            description: "Review a file".into(),
            body: "Review $1.".into(),
            location: crate::templates::TemplateLocation::User,
            path: PathBuf::from("/prompts/review.md"),
            kind: crate::templates::TemplateKind::Prompt,
        }]);
        let shown = |app: &App| -> Vec<String> {
            let typed = app.editor.text();
            let rows = app.menu.rows(&typed, &app.menu_entries(), 60);
            rows.iter().map(StyledLine::plain).collect()
        };
        app.editor.set_text("/re");
        assert_eq!(
            shown(&app),
            [
                "→ /reload  read AGENTS.md, SYSTEM.md, templates and skills…",
                "  /resume  list or search the saved sessions [N | TEXT]",
                "  /review  Review a file",
            ]
        );
        app.handle_key(key(KeyCode::Up));
        assert!(shown(&app)[2].starts_with("→ /review"));
        app.handle_key(key(KeyCode::Tab));
        assert_eq!(app.editor.text(), "/review ");
        assert!(shown(&app).is_empty(), "a space closes the menu");
        // Enter sends the chosen command, not the prefix typed.
        app.editor.set_text("/ses");
        assert_eq!(
            app.handle_key(key(KeyCode::Enter)),
            Action::Session(SessionCommand::Info)
        );
        // Up through the history passes a command without opening the menu;
        // typing opens it.
        app.editor.set_text("/tools");
        app.editor.take();
        app.editor.set_text("fix it");
        app.editor.take();
        app.handle_key(key(KeyCode::Up));
        app.handle_key(key(KeyCode::Up));
        assert_eq!(
            (app.editor.text().as_str(), shown(&app).len()),
            ("/tools", 0)
        );
        app.handle_key(key(KeyCode::Backspace));
        assert_eq!(shown(&app), ["→ /tools  the tools the model has"]);
        // Esc puts the menu away; Up is the editor's again.
        app.editor.set_text("/n");
        app.handle_key(key(KeyCode::Esc));
        assert!(shown(&app).is_empty());
        app.handle_key(key(KeyCode::Backspace));
        assert_eq!(shown(&app).len(), MENU_ROWS, "a new text opens it again");
    }

    #[test]
    fn after_slash_model_the_menu_offers_the_current_model_first_then_the_others() {
        let mut app = app();
        let choices = [
            ModelChoice {
                provider: "anthropic".into(),
                model: Some("claude-x".into()),
                missing_key: Some("ANTHROPIC_API_KEY".into()),
            },
            ModelChoice {
                provider: "p".into(),
                model: Some("m".into()),
                missing_key: None,
            },
        ];
        app.set_model_names(&["openai/gpt-4o".into()], &choices);
        assert_eq!(
            model_menu(&mut app),
            [
                "→ p/m                 current",
                "  openai/gpt-4o       cycled by Ctrl+P",
                "  anthropic/claude-x  no key: set ANTHROPIC_API_KEY",
            ]
        );
        app.handle_key(key(KeyCode::Down));
        assert_eq!(
            app.handle_key(key(KeyCode::Enter)),
            Action::Model(Some("openai/gpt-4o".into()))
        );
    }

    /// The menu's rows, 60 columns wide, after `/model `.
    fn model_menu(app: &mut App) -> Vec<String> {
        app.editor.set_text("/model ");
        let rows = app.menu.rows("/model ", &app.menu_entries(), 60);
        rows.iter().map(StyledLine::plain).collect()
    }

    #[test]
    fn ctrl_p_cycles_the_models_and_ctrl_shift_p_goes_back() {
        let mut app = app();
        let ctrl = KeyModifiers::CONTROL;
        let press = |app: &mut App, code, modifiers| app.handle_key(KeyEvent::new(code, modifiers));
        assert_eq!(
            press(&mut app, KeyCode::Char('p'), ctrl),
            Action::CycleModel { back: false }
        );
        // Terminals speaking the kitty keyboard protocol send either case.
        for code in [KeyCode::Char('P'), KeyCode::Char('p')] {
            assert_eq!(
                press(&mut app, code, ctrl | KeyModifiers::SHIFT),
                Action::CycleModel { back: true }
            );
        }
    }

    #[test]
    fn ctrl_l_opens_the_model_menu_and_keeps_a_typed_prompt() {
        let mut app = app();
        let ctrl_l = KeyEvent::new(KeyCode::Char('l'), KeyModifiers::CONTROL);
        assert_eq!(app.handle_key(ctrl_l), Action::None);
        assert_eq!(app.editor.text(), "/model ");
        assert!(!app.menu_entries().is_empty(), "the menu is open");
        app.editor.set_text("half a prompt");
        assert_eq!(app.handle_key(ctrl_l), Action::Model(None));
        assert_eq!(app.editor.text(), "half a prompt");
    }

    #[test]
    fn the_models_a_server_lists_join_the_model_menu_once() {
        let mut app = app();
        let choices = [ModelChoice {
            provider: "local".into(),
            model: Some("qwen".into()),
            missing_key: None,
        }];
        app.set_model_names(&[], &choices);
        let served = |id: &str| Model::new(id, "local", "openai-completions");
        app.add_served_models(&[served("qwen"), served("llama3:8b")]);
        app.add_served_models(&[served("llama3:8b")]);
        assert_eq!(
            model_menu(&mut app),
            [
                "→ p/m              current",
                "  local/qwen       local's default",
                "  local/llama3:8b  served by local",
            ]
        );
    }

    #[test]
    fn the_editor_wraps_at_spaces_and_keeps_the_cursor_where_it_is() {
        let mut app = app();
        app.editor.set_text("hello wonderful world");
        // 12 columns: 10 for the text.
        let rows = |app: &App| app.editor_rows(12);
        assert_eq!(
            rows(&app),
            [
                ("hello ".to_owned(), None),
                ("wonderful ".to_owned(), None),
                ("world".to_owned(), Some(5)),
            ]
        );
        app.editor.set_text("a_very_long_word_indeed x");
        app.handle_key(key(KeyCode::Home));
        app.handle_key(key(KeyCode::Right));
        assert_eq!(
            rows(&app),
            [
                ("a_very_lon".to_owned(), Some(1)),
                ("g_word_ind".to_owned(), None),
                ("eed x".to_owned(), None),
            ],
            "a word longer than a row is cut"
        );
        app.editor.set_text("0123456789");
        assert_eq!(
            rows(&app),
            [("0123456789".to_owned(), None), (String::new(), Some(0))],
            "the cursor after a full row opens the next"
        );
    }

    #[test]
    fn the_rules_around_the_editor_say_when_enter_runs_a_command_of_yours() {
        let mut app = app();
        app.editor.set_text("ls");
        assert_eq!(app.editor_rule_style(), Style::Dim);
        app.editor.set_text("!ls");
        assert_eq!(app.editor_rule_style(), Style::Warning);
        app.editor.set_text("!!ls\nmore");
        assert_eq!(app.editor_rule_style(), Style::Warning);
    }

    #[test]
    fn tokens_are_shown_in_a_few_characters() {
        assert_eq!(
            [tokens(999), tokens(1234), tokens(45_678), tokens(2_500_000)],
            ["999", "1.2k", "45k", "2.5M"]
        );
    }
}
