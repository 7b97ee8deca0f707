//! The conversation as shown: user prompts, the assistant's streaming answers
//! (Markdown, thinking), tool calls drawn by their own renderers with live
//! progress, and notices. Fed by agent events, or by a resumed session's
//! messages; rendered to rows for any width. A block that can no longer
//! change keeps its rows, so a frame renders only what is still moving (the
//! streaming answer, running calls): drawing costs the same at turn 300 as at
//! turn 3 (`benches/transcript.rs`). A moving answer keeps its text's rows
//! too ([`MarkdownRows`]): a frame renders its Markdown only from the last
//! block that may still change, and not at all when it did not change.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agent_ai::{AssistantContent, AssistantMessage, Content, Message, StopReason, UserContent};
use agent_core::{AgentEvent, AgentToolResult};
use serde_json::Value;

use super::markdown::MarkdownRows;
use super::wrap::wrap_all;
use crate::compaction::SummaryKind;
use crate::modes::print::{CUT_OFF, why_no_text};
use crate::modes::user_bash::as_tool_result;
use crate::render::preview::count;
use crate::render::{RenderOptions, Style, StyledLine, ToolRenderers};
use crate::session::{BashExecution, ContextItem};

/// One block of the transcript.
#[derive(Debug, Clone)]
enum Entry {
    /// A prompt or steering message.
    User(String),
    /// An answer (its tool calls are drawn from [`Transcript::tools`]).
    Assistant(Box<AssistantMessage>),
    /// A line from the app itself (errors, command output).
    Notice(Vec<StyledLine>),
    /// A line about the answer being asked: a warning that came while its
    /// request waited (the provider retrying it), or the error it ended
    /// with. When the session asks again, these fold into its retry line
    /// ([`Transcript::retry_scheduled`]).
    AttemptNotice(Vec<StyledLine>),
    /// A summary the session put in the conversation (a compaction's, or a
    /// branch's from `/tree`): a line, and the summary with Ctrl+O.
    Summary(SummaryKind, String),
    /// A command the user ran (`!cmd`), drawn as a bash call from its
    /// [`ToolView`] under this id; `excluded` when the model does not see
    /// it (`!!cmd`).
    UserBash { id: String, excluded: bool },
}

/// An entry and, once it can no longer change, its rows.
#[derive(Debug)]
struct Shown {
    entry: Entry,
    /// Its rows, wrapped as `RowsKey` says; drawn again when the key
    /// differs.
    rows: Option<(RowsKey, Vec<StyledLine>)>,
    /// While it is an answer still moving: its text blocks' rows, by
    /// content index, kept from frame to frame.
    texts: Vec<MarkdownRows>,
}

impl From<Entry> for Shown {
    fn from(entry: Entry) -> Self {
        Shown {
            entry,
            rows: None,
            texts: Vec::new(),
        }
    }
}

impl Shown {
    /// The rows of `piece` of this entry.
    fn piece<'a>(&'a self, piece: &'a Piece) -> &'a [StyledLine] {
        match piece {
            Piece::Rows(rows) => rows,
            Piece::Text(index) => self.texts[*index].rows(),
        }
    }
}

/// A run of an entry's rows drawn for a frame.
#[derive(Debug)]
enum Piece {
    /// Rows drawn for it.
    Rows(Vec<StyledLine>),
    /// The rows of the text block at this content index, kept in
    /// [`Shown::texts`].
    Text(usize),
}

/// What a settled entry's rows depend on besides the entry itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RowsKey {
    width: u16,
    expand_tools: bool,
    show_thinking: bool,
    /// Counts the renderers set ([`Transcript::set_renderers`]).
    renderers: u64,
}

/// A tool call's state, keyed by call id.
#[derive(Debug, Clone, Default)]
struct ToolView {
    name: String,
    args: Value,
    /// The arguments the call ran with when a hook replaced the model's
    /// (`updatedInput`): drawn instead of the model's, and marked.
    hook_args: Option<Value>,
    partial: Option<AgentToolResult>,
    result: Option<AgentToolResult>,
    is_error: bool,
    started: Option<Instant>,
    elapsed: Option<Duration>,
}

/// The transcript and how it is shown.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Shown>,
    tools: HashMap<String, ToolView>,
    /// How many calls' ids a later call reused ([`Transcript::retire_reused_ids`]).
    retired: usize,
    /// The answer still streaming, as an index into `entries`.
    streaming: Option<usize>,
    /// Where the latest answer's entries begin (the notices of its wait go
    /// above it): what a retry folds away.
    attempt_from: Option<usize>,
    /// The session's retry line, while the next attempt may replace it.
    retry_line: Option<usize>,
    /// Ctrl+O: tool results shown whole instead of previews.
    pub expand_tools: bool,
    /// Ctrl+T: thinking shown instead of a one-line placeholder.
    pub show_thinking: bool,
    /// The ids of the calls waiting for the user's approval: drawn as
    /// waiting, not as pending (the guard asks before a call starts).
    pub awaiting_approval: Vec<String>,
    /// The session's tools' renderers (the built-ins' until the app is given
    /// the session's tool set).
    renderers: ToolRenderers,
    /// Bumped with each new set of renderers: rows drawn by the old ones go.
    renderers_set: u64,
    /// While scrolled up: the entry at the top of the view and its rows
    /// from its start to the bottom when last drawn. Rows added below it
    /// (a streaming answer, new calls) add to the scroll, so what is being
    /// read stays where it is.
    pinned: Option<(usize, usize)>,
}

/// The entry holding row `start` of `blocks` (runs of the entries' rows,
/// each with its entry's index, `reached` rows in all), with its rows from
/// its start to the bottom.
fn top_entry(
    blocks: &[(usize, &[StyledLine])],
    start: usize,
    reached: usize,
) -> Option<(usize, usize)> {
    let mut above = 0;
    // The entry of the last run, and the rows above its first.
    let mut entry = (usize::MAX, 0);
    for &(index, rows) in blocks {
        if entry.0 != index {
            entry = (index, above);
        }
        let entry_above = entry.1;
        if start < above + rows.len() {
            return Some((index, reached - entry_above));
        }
        above += rows.len();
    }
    None
}

/// The text of a user message's text blocks.
pub fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => text.clone(),
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Whether two notices are one warning line each, from the same event.
fn same_warning(a: &[StyledLine], b: &[StyledLine]) -> bool {
    match (a, b) {
        ([a], [b]) => crate::warnings::same_event(&a.plain(), &b.plain()),
        _ => false,
    }
}

impl Transcript {
    /// A transcript showing a saved conversation (`--continue`, `--session`,
    /// `/resume`, `/tree`), drawn as it was drawn live.
    pub fn from_items(items: &[ContextItem]) -> Self {
        let mut transcript = Transcript::default();
        for item in items {
            match item {
                ContextItem::Message(message) => transcript.add_message(message),
                ContextItem::Command(run) => transcript.add_user_bash(run),
                ContextItem::Summary { kind, summary, .. } => transcript
                    .entries
                    .push(Entry::Summary(*kind, summary.clone()).into()),
            }
        }
        transcript
    }

    /// A command the user ran, ended, as [`Transcript::user_bash_started`]
    /// and [`Transcript::call_ended`] drew it.
    fn add_user_bash(&mut self, run: &BashExecution) {
        let id = format!("user-bash-{}", self.entries.len());
        let (result, is_error) = as_tool_result(run);
        self.tools.insert(
            id.clone(),
            ToolView {
                name: "bash".into(),
                args: serde_json::json!({ "command": run.command }),
                result: Some(result),
                is_error,
                ..ToolView::default()
            },
        );
        let excluded = run.exclude_from_context == Some(true);
        self.entries.push(Entry::UserBash { id, excluded }.into());
    }

    /// Empties the transcript (a new session).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.tools.clear();
        self.streaming = None;
        self.attempt_from = None;
        self.retry_line = None;
    }

    /// Adds a notice (command output, errors of the app itself). One that
    /// comes while an answer has started but shown nothing yet goes above
    /// it, where the wait is.
    pub fn notice(&mut self, lines: Vec<StyledLine>) {
        match self.waiting_answer() {
            Some(index) => {
                self.entries.insert(index, Entry::Notice(lines).into());
                self.streaming = Some(index + 1);
            }
            None => self.entries.push(Entry::Notice(lines).into()),
        }
    }

    /// Adds a logged warning. One that comes while an answer waits for its
    /// first word (its request being retried), or just after it failed (the
    /// warnings have a channel of their own, so the last one can come after
    /// the failure), belongs to that attempt: it goes above the answer, and
    /// takes the place of the warning before it there when both come from
    /// the same event (`attempt=1`, then `attempt=2`, of one request).
    pub fn warning(&mut self, lines: Vec<StyledLine>) {
        // Above the failed answer, when its error is the last line.
        let failed = match (
            self.entries.last().map(|shown| &shown.entry),
            self.attempt_from,
        ) {
            (Some(Entry::AttemptNotice(_)), Some(from)) => self
                .entries
                .get(from..)
                .and_then(|attempt| {
                    attempt
                        .iter()
                        .rposition(|shown| matches!(shown.entry, Entry::Assistant(_)))
                })
                .map(|at| from + at),
            _ => None,
        };
        let Some(index) = self.waiting_answer().or(failed) else {
            self.entries.push(Entry::Notice(lines).into());
            return;
        };
        let above = index
            .checked_sub(1)
            .filter(|&above| self.attempt_from.is_some_and(|from| above >= from));
        if let Some(above) = above
            && let Entry::AttemptNotice(shown) = &self.entries[above].entry
            && same_warning(shown, &lines)
        {
            self.entries[above] = Entry::AttemptNotice(lines).into();
            return;
        }
        self.entries
            .insert(index, Entry::AttemptNotice(lines).into());
        if let Some(streaming) = &mut self.streaming {
            *streaming += 1;
        }
    }

    /// The run ended: a later warning or retry is about no attempt shown.
    pub fn run_ended(&mut self) {
        self.attempt_from = None;
        self.retry_line = None;
    }

    /// The answer that has started but shown nothing yet, as an index.
    fn waiting_answer(&self) -> Option<usize> {
        let index = self.streaming?;
        match &self.entries.get(index)?.entry {
            Entry::Assistant(answer) if answer.content.is_empty() => Some(index),
            _ => None,
        }
    }

    /// The session asks a failed turn again (`line`: which attempt, when,
    /// and why). The failed answer, its error and the warnings of its wait
    /// fold into `line`, and the next failed attempt's line takes its
    /// place: a request that fails five times is one line, not fifteen, with
    /// the latest error and the countdown in the status line. Anything else
    /// shown meanwhile (a command's output) stays.
    pub fn retry_scheduled(&mut self, line: StyledLine) {
        self.fold_attempt(Entry::Notice(vec![line]));
    }

    /// The session gave up asking again (`line`: after how many attempts,
    /// and the last error): the last attempt and the retry line fold into
    /// it, as into a retry line, so a request that never succeeded ends as
    /// one line saying so, not four repeating its error.
    pub fn retries_failed(&mut self, line: StyledLine) {
        self.fold_attempt(Entry::Notice(vec![line]));
        self.retry_line = None;
    }

    /// Folds the attempt shown since `attempt_from` into `entry`, which
    /// takes the place of the retry line just above it.
    fn fold_attempt(&mut self, entry: Entry) {
        let from = self.attempt_from.take().unwrap_or(self.entries.len());
        let attempt = self.entries.split_off(from.min(self.entries.len()));
        self.entries.extend(
            attempt.into_iter().filter(|shown| {
                !matches!(shown.entry, Entry::Assistant(_) | Entry::AttemptNotice(_))
            }),
        );
        self.streaming = None;
        let entry = entry.into();
        match self.retry_line {
            Some(previous) if previous + 1 == from => self.entries[previous] = entry,
            _ => {
                self.entries.insert(from, entry);
                self.retry_line = Some(from);
            }
        }
    }

    fn add_message(&mut self, message: &Message) {
        match message {
            Message::User(user) => self
                .entries
                .push(Entry::User(user_text(&user.content)).into()),
            Message::Assistant(answer) => {
                self.entries
                    .push(Entry::Assistant(Box::new(answer.clone())).into());
                self.retire_reused_ids(self.entries.len() - 1);
                self.answer_ended(answer);
            }
            Message::ToolResult(result) => {
                let view = self.tools.entry(result.tool_call_id.clone()).or_default();
                view.name.clone_from(&result.tool_name);
                if view.result.is_none() {
                    view.result = Some(AgentToolResult {
                        content: result.content.clone(),
                        details: result.details.clone(),
                        terminate: false,
                    });
                    view.is_error = result.is_error;
                }
            }
        }
    }

    /// Notices after an answer that ended in an error, aborted, was cut off
    /// at the output limit, or holds nothing to show: without them a cut
    /// answer passed for a whole one, and an empty one (a stream of just
    /// `data: [DONE]`) left nothing at all under the prompt.
    fn answer_ended(&mut self, answer: &AssistantMessage) {
        let said = answer.content.iter().any(|block| match block {
            AssistantContent::Text(text) => !text.text.trim().is_empty(),
            AssistantContent::ToolCall(_) => true,
            AssistantContent::Thinking(_) => false,
        });
        let warning = match answer.stop_reason {
            StopReason::Error => {
                let text = answer.error_message.as_deref().unwrap_or("Request error");
                let line = StyledLine::new(format!("Error: {text}"), Style::Error);
                self.entries.push(Entry::AttemptNotice(vec![line]).into());
                return;
            }
            StopReason::Aborted => {
                self.notice(vec![StyledLine::new("Aborted", Style::Error)]);
                return;
            }
            _ if !said => why_no_text(answer),
            StopReason::Length => CUT_OFF,
            _ => return,
        };
        let line = StyledLine::new(warning, Style::Warning);
        self.entries.push(Entry::AttemptNotice(vec![line]).into());
    }

    /// Shows the command the user started (`!cmd`) as running, under `id`.
    pub fn user_bash_started(&mut self, id: &str, command: &str, excluded: bool, now: Instant) {
        self.tools.insert(
            id.to_owned(),
            ToolView {
                name: "bash".into(),
                args: serde_json::json!({ "command": command }),
                started: Some(now),
                ..ToolView::default()
            },
        );
        let id = id.to_owned();
        self.entries.push(Entry::UserBash { id, excluded }.into());
    }

    /// Shows the output of the user's command `id` so far.
    pub fn user_bash_output(&mut self, id: &str, output: AgentToolResult) {
        if let Some(view) = self.tools.get_mut(id) {
            view.partial = Some(output);
        }
    }

    /// Draws call `id` with the arguments a hook gave it in place of the
    /// model's: what ran. Rows drawn before are drawn again.
    pub fn arguments_replaced(&mut self, id: &str, args: Value) {
        self.tools.entry(id.to_owned()).or_default().hook_args = Some(args);
        for shown in &mut self.entries {
            shown.rows = None;
        }
    }

    /// Shows that the call (or the user's command) `id` ended with
    /// `result` at `now`.
    pub fn call_ended(&mut self, id: &str, result: AgentToolResult, is_error: bool, now: Instant) {
        if let Some(view) = self.tools.get_mut(id) {
            view.result = Some(result);
            view.is_error = is_error;
            view.elapsed = view.started.map(|started| now - started);
        }
    }

    /// Applies an agent event; `now` times running tools.
    pub fn apply(&mut self, event: &AgentEvent, now: Instant) {
        match event {
            AgentEvent::MessageStart {
                message: Message::User(user),
            } => self
                .entries
                .push(Entry::User(user_text(&user.content)).into()),
            AgentEvent::MessageStart {
                message: Message::Assistant(answer),
            } => {
                self.streaming = Some(self.entries.len());
                self.attempt_from = self.streaming;
                self.entries
                    .push(Entry::Assistant(Box::new(answer.clone())).into());
            }
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => self.update_answer(assistant_message_event.message()),
            AgentEvent::MessageEnd {
                message: Message::Assistant(answer),
            } => {
                self.update_answer(answer);
                self.streaming = None;
                self.answer_ended(answer);
            }
            AgentEvent::MessageEnd {
                message: message @ Message::ToolResult(_),
            } => self.add_message(message),
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                let view = self.tools.entry(tool_call_id.clone()).or_default();
                view.name.clone_from(tool_name);
                view.args = args.clone();
                view.started = Some(now);
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                if let Some(view) = self.tools.get_mut(tool_call_id) {
                    view.partial = Some(partial_result.clone());
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => self.call_ended(tool_call_id, result.clone(), *is_error, now),
            _ => {}
        }
    }

    fn update_answer(&mut self, answer: &AssistantMessage) {
        match self
            .streaming
            .and_then(|i| self.entries.get_mut(i))
            .map(|s| &mut s.entry)
        {
            Some(Entry::Assistant(shown)) => **shown = answer.clone(),
            _ => {
                self.streaming = Some(self.entries.len());
                self.attempt_from = self.streaming;
                self.entries
                    .push(Entry::Assistant(Box::new(answer.clone())).into());
            }
        }
        if let Some(index) = self.streaming {
            self.retire_reused_ids(index);
        }
    }

    /// Calls are drawn from `tools` by their id, but a server may number
    /// its calls per answer (`call_1` in every one): a call of the answer
    /// at `index` whose id an earlier answer's call already has would be
    /// drawn with that call's result (and after a resume, a denied call
    /// with an old one's output). The earlier call keeps its view under a
    /// name of its own, in the transcript only.
    fn retire_reused_ids(&mut self, index: usize) {
        let Some(Entry::Assistant(answer)) = self.entries.get(index).map(|s| &s.entry) else {
            return;
        };
        let reused: Vec<String> = call_ids(answer)
            .filter(|id| self.tools.contains_key(*id))
            .map(str::to_owned)
            .collect();
        for id in reused {
            let earlier = self.entries[..index].iter_mut().rev().find(|shown| {
                matches!(&shown.entry, Entry::Assistant(answer) if call_ids(answer).any(|c| c == id))
            });
            let Some(earlier) = earlier else { continue };
            let Entry::Assistant(answer) = &mut earlier.entry else {
                continue;
            };
            self.retired += 1;
            let name = format!("{id}\u{0}{}", self.retired);
            for block in &mut answer.content {
                if let AssistantContent::ToolCall(call) = block
                    && call.id == id
                {
                    call.id.clone_from(&name);
                }
            }
            earlier.rows = None;
            if let Some(view) = self.tools.remove(&id) {
                self.tools.insert(name, view);
            }
        }
    }

    /// Draws calls with `renderers` (the session's tool set: its built-ins,
    /// custom and MCP tools) from the next frame on.
    pub fn set_renderers(&mut self, renderers: ToolRenderers) {
        self.renderers = renderers;
        self.renderers_set += 1;
    }

    /// The renderers calls are drawn with.
    pub fn renderers(&self) -> &ToolRenderers {
        &self.renderers
    }

    /// The `height` rows that end `scroll` rows above the bottom of the
    /// transcript wrapped to `width` columns, with `scroll` clamped to how
    /// far the transcript reaches up. Only the entries the window reaches
    /// are drawn, walking up from the bottom: a resumed session of
    /// thousands of turns shows its last screen without drawing the rest,
    /// and a frame costs what it shows. Settled entries are drawn once and
    /// kept; the rest (the streaming answer, calls still running or waiting)
    /// are drawn for this frame.
    pub fn window(
        &mut self,
        width: u16,
        now: Instant,
        height: usize,
        scroll: usize,
    ) -> (Vec<StyledLine>, usize) {
        let key = RowsKey {
            width,
            expand_tools: self.expand_tools,
            show_thinking: self.show_thinking,
            renderers: self.renderers_set,
        };
        let mut scroll = scroll;
        // Scrolled up, the view stays on the entry it showed at its top:
        // the walk goes on to it, and what was added below it adds to the
        // scroll once it is reached.
        let mut pinned = self
            .pinned
            .filter(|&(entry, _)| scroll > 0 && entry < self.entries.len());
        // The entries still moving, drawn for this frame only (bottom up).
        let mut moving: Vec<(usize, Vec<Piece>)> = Vec::new();
        let mut reached = 0;
        let mut first = self.entries.len();
        while first > 0 && (reached < height.saturating_add(scroll) || pinned.is_some()) {
            first -= 1;
            match &self.entries[first].rows {
                Some((drawn_as, rows)) if *drawn_as == key => reached += rows.len(),
                _ => {
                    let mut texts = std::mem::take(&mut self.entries[first].texts);
                    let pieces =
                        self.entry_rows(&self.entries[first].entry, &mut texts, width, now);
                    let shown = &mut self.entries[first];
                    shown.texts = texts;
                    reached += pieces.iter().map(|p| shown.piece(p).len()).sum::<usize>();
                    if self.settled(first) {
                        let shown = &mut self.entries[first];
                        let rows = pieces.iter().flat_map(|p| shown.piece(p)).cloned();
                        shown.rows = Some((key, rows.collect()));
                        shown.texts = Vec::new();
                    } else {
                        moving.push((first, pieces));
                    }
                }
            }
            if let Some((entry, before)) = pinned
                && entry == first
            {
                scroll += reached.saturating_sub(before);
                pinned = None;
            }
        }
        moving.reverse();
        let mut moving = moving.iter().peekable();
        let mut blocks: Vec<(usize, &[StyledLine])> = Vec::new();
        for (index, shown) in (first..).zip(&self.entries[first..]) {
            match moving.next_if(|(at, _)| *at == index) {
                Some((_, pieces)) => {
                    blocks.extend(pieces.iter().map(|piece| (index, shown.piece(piece))));
                }
                None => {
                    let rows = shown.rows.as_ref().map_or(&[][..], |(_, rows)| rows);
                    blocks.push((index, rows));
                }
            }
        }
        let all_rows = || blocks.iter().flat_map(|(_, rows)| rows.iter());
        // The first blank row of the transcript is only a separator.
        let skip =
            usize::from(first == 0 && all_rows().next().is_some_and(|row| row.plain().is_empty()));
        // Short of the top, the walk stopped with `scroll + height` rows.
        let scroll = scroll.min((reached - skip).saturating_sub(height));
        let end = reached - scroll;
        let start = end.saturating_sub(height).max(skip);
        let rows = all_rows().skip(start).take(end - start).cloned().collect();
        self.pinned = (scroll > 0)
            .then(|| top_entry(&blocks, start, reached))
            .flatten();
        (rows, scroll)
    }

    /// Whether entry `index` can no longer change: not the streaming
    /// answer, and every call in it has its result and waits for no one.
    fn settled(&self, index: usize) -> bool {
        match &self.entries[index].entry {
            Entry::User(_) | Entry::Notice(_) | Entry::AttemptNotice(_) | Entry::Summary(..) => {
                true
            }
            Entry::UserBash { id, .. } => self.tools.get(id).is_some_and(|v| v.result.is_some()),
            Entry::Assistant(answer) => {
                self.streaming != Some(index)
                    && answer.content.iter().all(|block| match block {
                        AssistantContent::ToolCall(call) => {
                            !self.awaiting_approval.contains(&call.id)
                                && self
                                    .tools
                                    .get(&call.id)
                                    .is_some_and(|view| view.result.is_some())
                        }
                        _ => true,
                    })
            }
        }
    }

    /// An entry's rows, wrapped to `width` columns: an answer's text blocks
    /// are rendered into `texts`, from where they may have changed.
    fn entry_rows(
        &self,
        entry: &Entry,
        texts: &mut Vec<MarkdownRows>,
        width: u16,
        now: Instant,
    ) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut lines = Vec::new();
        match entry {
            Entry::User(text) => {
                lines.push(StyledLine::default());
                // A skill's command shows as the command; Ctrl+O, as sent.
                let invoked = crate::skills::parse_invocation(text).filter(|_| !self.expand_tools);
                if let Some((name, args)) = invoked {
                    let command = format!("/skill:{name} {args}");
                    lines.push(
                        StyledLine::new("> ", Style::Accent)
                            .push(command.trim_end(), Style::Bold)
                            .push(" · the skill's instructions (Ctrl+O)", Style::Dim),
                    );
                } else {
                    for (i, line) in text.lines().enumerate() {
                        let mark = if i == 0 { "> " } else { "  " };
                        lines.push(StyledLine::new(mark, Style::Accent).push(line, Style::Bold));
                    }
                }
            }
            Entry::Assistant(answer) => {
                texts.resize_with(answer.content.len(), MarkdownRows::default);
                self.answer_lines(answer, width, now, &mut lines, texts, &mut pieces);
            }
            Entry::Summary(kind, summary) => {
                lines.push(StyledLine::default());
                let what = match kind {
                    SummaryKind::Compaction => "Summary of the earlier conversation (compacted)",
                    SummaryKind::Branch => "Summary of the branch left (/tree)",
                };
                if self.expand_tools {
                    lines.push(StyledLine::new(what, Style::Accent));
                    lines.extend(
                        summary
                            .lines()
                            .map(|line| StyledLine::new(line, Style::Dim)),
                    );
                } else {
                    let lines_in = count(summary.lines().count(), "line", "lines");
                    let more = format!(" · {lines_in} (Ctrl+O shows them)");
                    lines.push(StyledLine::new(what, Style::Accent).push(more, Style::Dim));
                }
            }
            Entry::Notice(notice) | Entry::AttemptNotice(notice) => {
                lines.push(StyledLine::default());
                lines.extend(notice.iter().cloned());
            }
            Entry::UserBash { id, excluded } => {
                lines.push(StyledLine::default());
                let view = self.tools.get(id);
                let args = view.map_or(&Value::Null, |view| &view.args);
                let first = lines.len();
                self.tool_lines("bash", args, view, width, now, &mut lines);
                if let Some(header) = lines.get_mut(first) {
                    let mark = if *excluded {
                        USER_BASH_EXCLUDED
                    } else {
                        USER_BASH
                    };
                    *header = std::mem::take(header).push(mark, Style::Dim);
                }
            }
        }
        pieces.push(Piece::Rows(wrap_all(&lines, width)));
        pieces
    }

    /// The lines of `answer` into `out`, but for its text blocks: `out`
    /// goes into `pieces` before each, and the block's rows are rendered
    /// into `texts`.
    fn answer_lines(
        &self,
        answer: &AssistantMessage,
        width: u16,
        now: Instant,
        out: &mut Vec<StyledLine>,
        texts: &mut [MarkdownRows],
        pieces: &mut Vec<Piece>,
    ) {
        for (index, block) in answer.content.iter().enumerate() {
            match block {
                AssistantContent::Text(text) if !text.text.trim().is_empty() => {
                    out.push(StyledLine::default());
                    pieces.push(Piece::Rows(wrap_all(out, width)));
                    out.clear();
                    texts[index].update(&text.text, width);
                    pieces.push(Piece::Text(index));
                }
                AssistantContent::Thinking(thinking) if !thinking.thinking.trim().is_empty() => {
                    out.push(StyledLine::default());
                    if self.show_thinking {
                        out.extend(
                            thinking
                                .thinking
                                .trim()
                                .lines()
                                .map(|l| StyledLine::new(l, Style::Dim)),
                        );
                    } else {
                        out.push(StyledLine::new("Thinking… (Ctrl+T to show)", Style::Dim));
                    }
                }
                AssistantContent::ToolCall(call) if self.awaiting_approval.contains(&call.id) => {
                    out.push(StyledLine::default());
                    out.extend(self.renderers.call_lines(
                        &call.name,
                        &call.arguments,
                        complete_call(width.saturating_sub(2)),
                    ));
                    out.push(indent(StyledLine::new(AWAITING_APPROVAL, Style::Warning)));
                }
                AssistantContent::ToolCall(call) => {
                    let view = self.tools.get(&call.id);
                    out.push(StyledLine::default());
                    let first = out.len();
                    self.tool_lines(&call.name, &call.arguments, view, width, now, out);
                    if call.recovered_from_text == Some(true)
                        && let Some(header) = out.get_mut(first)
                    {
                        // The model wrote this call as text (a small local
                        // model, usually): say so, since it ran all the same.
                        *header = std::mem::take(header).push(RECOVERED_MARK, Style::Dim);
                    }
                }
                _ => {}
            }
        }
    }

    fn tool_lines(
        &self,
        name: &str,
        call_args: &Value,
        view: Option<&ToolView>,
        width: u16,
        now: Instant,
        out: &mut Vec<StyledLine>,
    ) {
        let hook_args = view.and_then(|v| v.hook_args.as_ref());
        let args = hook_args
            .or(view.map(|v| &v.args).filter(|args| !args.is_null()))
            .unwrap_or(call_args);
        let running = view.is_none_or(|v| v.result.is_none());
        let elapsed = view.and_then(|v| {
            v.elapsed.or_else(|| {
                v.started
                    .map(|started| now.saturating_duration_since(started))
            })
        });
        let options = RenderOptions {
            expanded: self.expand_tools,
            is_partial: running,
            width: width.saturating_sub(2),
            elapsed,
        };
        let call_options = RenderOptions {
            is_partial: view.is_none_or(|v| v.started.is_none() && v.result.is_none()),
            ..options
        };
        let first = out.len();
        out.extend(self.renderers.call_lines(name, args, call_options));
        if hook_args.is_some()
            && let Some(header) = out.get_mut(first)
        {
            *header = std::mem::take(header).push(HOOK_ARGS_MARK, Style::Dim);
        }
        let Some(view) = view else { return };
        let body = match (&view.result, &view.partial) {
            (Some(result), _) => Some((result, view.is_error, false)),
            (None, Some(partial)) => Some((partial, false, true)),
            // Bash shows that it runs (and for how long) before any output.
            (None, None) if view.started.is_some() && name == "bash" => {
                Some((&EMPTY_PARTIAL, false, true))
            }
            (None, None) => None,
        };
        if let Some((result, is_error, partial)) = body {
            let options = RenderOptions {
                is_partial: partial,
                ..options
            };
            let lines = self.renderers.result_lines(name, result, is_error, options);
            out.extend(lines.into_iter().map(indent));
        }
    }
}

/// The options of a call whose arguments are complete, drawn `width`
/// columns wide (a call waiting for approval, and the approval prompt).
pub fn complete_call(width: u16) -> RenderOptions {
    RenderOptions {
        width,
        ..RenderOptions::default()
    }
}

/// Under a call while the user is asked whether it may run.
const AWAITING_APPROVAL: &str = "waiting for approval";

/// Set after the header of a call the provider recovered from the answer's
/// text (`recoveredFromText`).
const RECOVERED_MARK: &str = " · recovered from text";

/// Set after the header of a call a hook gave other arguments than the
/// model's (`updatedInput`).
const HOOK_ARGS_MARK: &str = " · arguments from a hook";

/// Set after the header of a command the user ran (`!cmd`).
const USER_BASH: &str = " · run by you";

/// Set after the header of a command the user ran apart from the
/// conversation (`!!cmd`).
const USER_BASH_EXCLUDED: &str = " · run by you, not sent to the model";

/// The progress of a command that has printed nothing yet.
static EMPTY_PARTIAL: AgentToolResult = AgentToolResult {
    content: Vec::new(),
    details: None,
    terminate: false,
};

/// A result line set under its call.
fn indent(line: StyledLine) -> StyledLine {
    let mut indented = StyledLine::new("  ", Style::Normal);
    indented.spans.extend(line.spans);
    indented
}

/// The ids of the tool calls in `answer`.
fn call_ids(answer: &AssistantMessage) -> impl Iterator<Item = &str> {
    answer.content.iter().filter_map(|block| match block {
        AssistantContent::ToolCall(call) => Some(call.id.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use agent_ai::testing::ScriptedProvider;
    use agent_ai::{TextContent, ToolCall, ToolResultMessage, UserMessage};
    use serde_json::json;

    use super::*;

    fn plain(rows: &[StyledLine]) -> Vec<String> {
        rows.iter().map(StyledLine::plain).collect()
    }

    fn answer(text: &str) -> AssistantMessage {
        ScriptedProvider::reply(vec![AssistantContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })])
    }

    /// A prompt, a read of 30 lines (collapsed unless expanded) and an answer.
    fn settled() -> Transcript {
        let mut call = ScriptedProvider::reply(vec![AssistantContent::ToolCall(ToolCall::new(
            "c1",
            "read",
            json!({"path": "notes.txt"}),
        ))]);
        call.stop_reason = StopReason::ToolUse;
        let lines: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        Transcript::from_items(
            &[
                Message::User(UserMessage::text(
                    "a prompt long enough to wrap differently at twenty columns",
                )),
                Message::Assistant(call),
                Message::ToolResult(ToolResultMessage {
                    tool_call_id: "c1".into(),
                    tool_name: "read".into(),
                    content: vec![Content::text(lines)],
                    details: None,
                    is_error: false,
                    timestamp: 0,
                }),
                Message::Assistant(answer("It has thirty lines.")),
            ]
            .map(ContextItem::from),
        )
    }

    fn all_rows(transcript: &mut Transcript, width: u16, now: Instant) -> Vec<String> {
        plain(&transcript.window(width, now, usize::MAX, 0).0)
    }

    #[test]
    fn a_call_a_hook_gave_other_arguments_is_drawn_with_those_and_marked() {
        let now = Instant::now();
        let mut transcript = settled();
        let before = all_rows(&mut transcript, 60, now).join("\n");
        assert!(before.contains("notes.txt"), "{before}");
        assert!(transcript.entries.iter().all(|shown| shown.rows.is_some()));

        transcript.arguments_replaced("c1", json!({"path": "redacted.txt"}));
        let after = all_rows(&mut transcript, 60, now).join("\n");
        assert!(after.contains("redacted.txt"), "{after}");
        assert!(!after.contains("notes.txt"), "{after}");
        assert!(after.contains(HOOK_ARGS_MARK.trim_start()), "{after}");
    }

    /// A server that numbers its calls per answer gives two calls one id:
    /// each is drawn with its own command and result, live and resumed (a
    /// denied call was drawn with an earlier call's output).
    #[test]
    fn calls_that_reuse_an_earlier_calls_id_are_drawn_with_their_own_results() {
        let bash_call = |command: &str| {
            let mut call = ScriptedProvider::reply(vec![AssistantContent::ToolCall(
                ToolCall::new("call_1", "bash", json!({ "command": command })),
            )]);
            call.stop_reason = StopReason::ToolUse;
            call
        };
        let result = |text: &str, is_error: bool| ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            content: vec![Content::text(text)],
            details: None,
            is_error,
            timestamp: 0,
        };
        let now = Instant::now();
        let items = [
            Message::Assistant(bash_call("echo forty-two")),
            Message::ToolResult(result("forty-two", false)),
            Message::Assistant(bash_call("sleep 30")),
            Message::ToolResult(result("Blocked: the user denied this call", true)),
        ];
        let mut resumed = Transcript::from_items(&items.clone().map(ContextItem::from));
        let mut live = Transcript::default();
        for item in &items {
            match item {
                Message::Assistant(answer) => {
                    let Some(AssistantContent::ToolCall(call)) = answer.content.first() else {
                        unreachable!("each answer is one call");
                    };
                    for event in [
                        start(waiting()),
                        end(answer.clone()),
                        AgentEvent::ToolExecutionStart {
                            tool_call_id: "call_1".into(),
                            tool_name: "bash".into(),
                            args: call.arguments.clone(),
                        },
                    ] {
                        live.apply(&event, now);
                    }
                }
                message => live.apply(&end(message.clone()), now),
            }
        }
        for transcript in [&mut resumed, &mut live] {
            let rows = all_rows(transcript, 60, now).join("\n");
            let first = rows.find("echo forty-two").expect(&rows);
            let second = rows.find("sleep 30").expect(&rows);
            let output = rows.find("forty-two\n").expect(&rows);
            let denied = rows.find("Blocked: the user denied").expect(&rows);
            assert!(
                first < output && output < second && second < denied,
                "{rows}"
            );
            assert_eq!(rows.matches("Blocked").count(), 1, "{rows}");
        }
    }

    /// The event for a message that begins.
    fn start(message: impl Into<Message>) -> AgentEvent {
        AgentEvent::MessageStart {
            message: message.into(),
        }
    }

    /// The event for a message that is complete.
    fn end(message: impl Into<Message>) -> AgentEvent {
        AgentEvent::MessageEnd {
            message: message.into(),
        }
    }

    /// An answer that has shown nothing yet.
    fn waiting() -> AssistantMessage {
        ScriptedProvider::reply(Vec::new())
    }

    /// One attempt at an answer that fails with `error` after the provider
    /// retried its request `http_retries` times, as the driver applies it.
    fn failed_attempt(transcript: &mut Transcript, http_retries: u32, error: &str, now: Instant) {
        transcript.apply(&start(waiting()), now);
        for attempt in 1..=http_retries {
            let warning =
                format!("Warning: retrying the request (attempt={attempt}, error={error})");
            transcript.warning(vec![StyledLine::new(warning, Style::Warning)]);
        }
        let mut failed = waiting();
        failed.stop_reason = StopReason::Error;
        failed.error_message = Some(error.into());
        transcript.apply(&end(failed), now);
    }

    fn retry_line(attempt: u32) -> StyledLine {
        StyledLine::new(
            format!("Retrying ({attempt}/3) in {}s: refused", 1 << attempt),
            Style::Warning,
        )
    }

    /// An answer cut at the output limit says so under it, and an answer
    /// with nothing in it says that (both showed nothing: a cut answer
    /// passed for a whole one, and an empty one left no trace of the
    /// prompt being answered), live and resumed alike.
    #[test]
    fn a_cut_off_or_empty_answer_says_so_under_it() {
        let now = Instant::now();
        let mut cut = answer("The plan has three steps: first");
        cut.stop_reason = StopReason::Length;
        let empty = waiting();
        let mut cut_call = ScriptedProvider::reply(vec![AssistantContent::ToolCall(
            ToolCall::new("c1", "write", json!({"path": "a.txt"})),
        )]);
        cut_call.stop_reason = StopReason::Length;
        let cases = [
            (
                cut,
                "The plan has three steps: first\n\
                 The answer was cut off at the output limit (maxTokens)",
            ),
            (empty, "The answer has no text"),
        ];
        for (message, shown) in cases {
            let mut live = Transcript::default();
            live.apply(&start(message.clone()), now);
            live.apply(&end(message.clone()), now);
            let mut resumed =
                Transcript::from_items(&[ContextItem::from(Message::Assistant(message))]);
            for transcript in [&mut live, &mut resumed] {
                let rows = all_rows(transcript, 80, now);
                let rows: Vec<&str> = rows
                    .iter()
                    .map(|r| r.trim_end())
                    .filter(|r| !r.is_empty())
                    .collect();
                assert_eq!(rows.join("\n"), shown);
            }
        }
        let mut live = Transcript::default();
        live.apply(&end(cut_call), now);
        let rows = all_rows(&mut live, 80, now).join("\n");
        assert!(
            rows.ends_with("The answer was cut off at the output limit (maxTokens)"),
            "{rows}"
        );
        let mut whole = Transcript::default();
        whole.apply(&end(answer("Done.")), now);
        assert_eq!(all_rows(&mut whole, 80, now).join("\n").trim(), "Done.");
    }

    /// Scrolled up, the view stays on what is being read while rows are
    /// added below it (it drifted up with every streamed line); at the
    /// bottom it follows them.
    #[test]
    fn scrolled_up_the_view_stays_put_while_rows_are_added_below() {
        let now = Instant::now();
        let mut transcript = Transcript::default();
        let add = |transcript: &mut Transcript, from: usize, to: usize| {
            for n in from..to {
                transcript.notice(vec![StyledLine::new(format!("line {n}"), Style::Normal)]);
            }
        };
        add(&mut transcript, 0, 20);
        let plain =
            |rows: Vec<StyledLine>| -> Vec<String> { rows.iter().map(StyledLine::plain).collect() };
        let (rows, scroll) = transcript.window(80, now, 4, 6);
        let read = plain(rows);
        add(&mut transcript, 20, 23);
        let (rows, moved) = transcript.window(80, now, 4, scroll);
        assert_eq!(plain(rows), read, "the same rows");
        assert!(moved > scroll, "the scroll took in the rows added: {moved}");

        let (rows, bottom) = transcript.window(80, now, 4, 0);
        add(&mut transcript, 23, 24);
        let (after, _) = transcript.window(80, now, 4, bottom);
        assert_ne!(plain(after), plain(rows), "at the bottom the view follows");
    }

    #[test]
    fn a_chain_of_failed_attempts_folds_into_one_retry_line() {
        let now = Instant::now();
        let mut transcript = Transcript::default();
        transcript.apply(&start(UserMessage::text("hello")), now);
        failed_attempt(&mut transcript, 2, "refused", now);
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            [
                "> hello",
                "",
                "Warning: retrying the request (attempt=2, error=refused)",
                "",
                "Error: refused",
            ],
            "one request's retries are one line"
        );
        for attempt in 1..=3 {
            transcript.retry_scheduled(retry_line(attempt));
            assert_eq!(
                all_rows(&mut transcript, 100, now),
                ["> hello", "", &retry_line(attempt).plain()]
            );
            failed_attempt(&mut transcript, 2, "refused", now);
        }
        transcript.retries_failed(StyledLine::new(
            "Retry failed after 3 attempts: refused",
            Style::Error,
        ));
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            ["> hello", "", "Retry failed after 3 attempts: refused"],
            "the last attempt and its retry line fold into the end"
        );
        transcript.run_ended();
        transcript.apply(&start(UserMessage::text("again")), now);
        failed_attempt(&mut transcript, 0, "refused", now);
        transcript.retry_scheduled(retry_line(1));
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            [
                "> hello",
                "",
                "Retry failed after 3 attempts: refused",
                "",
                "> again",
                "",
                "Retrying (1/3) in 2s: refused",
            ],
            "the next prompt's retries start a line of their own"
        );
    }

    #[test]
    fn a_warning_after_its_attempt_failed_goes_with_the_attempt_until_the_run_ends() {
        let now = Instant::now();
        let mut transcript = Transcript::default();
        failed_attempt(&mut transcript, 1, "refused", now);
        // The second retry's warning came on its channel after the failure.
        let late = "Warning: retrying the request (attempt=2, error=refused)";
        transcript.warning(vec![StyledLine::new(late, Style::Warning)]);
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            [late, "", "Error: refused"]
        );
        transcript.retry_scheduled(retry_line(1));
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            ["Retrying (1/3) in 2s: refused"]
        );
        failed_attempt(&mut transcript, 0, "refused", now);
        transcript.run_ended();
        transcript.warning(vec![StyledLine::new("Warning: later", Style::Warning)]);
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            [
                "Retrying (1/3) in 2s: refused",
                "",
                "Error: refused",
                "",
                "Warning: later"
            ]
        );
    }

    #[test]
    fn a_retry_keeps_what_else_was_shown_and_the_answer_that_follows_it() {
        let now = Instant::now();
        let mut transcript = Transcript::default();
        failed_attempt(&mut transcript, 0, "refused", now);
        transcript.notice(vec![StyledLine::new("Session: s1", Style::Normal)]);
        transcript.retry_scheduled(retry_line(1));
        failed_attempt(&mut transcript, 0, "refused", now);
        transcript.retry_scheduled(retry_line(2));
        transcript.apply(&start(waiting()), now);
        // Two warnings of different events are a line each.
        transcript.warning(vec![StyledLine::new("Warning: a (n=1)", Style::Warning)]);
        transcript.warning(vec![StyledLine::new("Warning: b (n=1)", Style::Warning)]);
        transcript.apply(&end(answer("Hi there")), now);
        assert_eq!(
            all_rows(&mut transcript, 100, now),
            [
                "Retrying (1/3) in 2s: refused",
                "",
                "Session: s1",
                "",
                "Retrying (2/3) in 4s: refused",
                "",
                "Warning: a (n=1)",
                "",
                "Warning: b (n=1)",
                "",
                "Hi there",
            ],
            "the command's output stays, so the next retry line is a line of its own"
        );
    }

    #[test]
    fn any_sequence_of_events_notices_and_retries_keeps_the_indexes_sound() {
        let now = Instant::now();
        let mut next = crate::support::seeded::xorshift();
        let mut transcript = Transcript::default();
        let line = |text: &str| vec![StyledLine::new(text, Style::Warning)];
        for step in 0..20_000 {
            match next(12) {
                0 => transcript.apply(&start(UserMessage::text("go")), now),
                1 | 2 => {
                    let answer = if next(2) == 0 {
                        waiting()
                    } else {
                        answer("hi")
                    };
                    let message = Message::Assistant(answer.clone());
                    let event = match next(3) {
                        0 => AgentEvent::MessageStart { message },
                        1 => AgentEvent::MessageUpdate {
                            assistant_message_event: Box::new(
                                agent_ai::AssistantMessageEvent::Start {
                                    partial: answer.into(),
                                },
                            ),
                        },
                        _ => AgentEvent::MessageEnd { message },
                    };
                    transcript.apply(&event, now);
                }
                3 => failed_attempt(&mut transcript, next(3) as u32, "refused", now),
                4 => transcript.notice(line("Session: s1")),
                5 | 6 => {
                    let head = ["Warning: a", "Warning: b"][next(2)];
                    transcript.warning(line(&format!("{head} (n={step})")));
                }
                7 if next(4) == 0 => transcript.retries_failed(line("Retry failed")[0].clone()),
                7 => transcript.retry_scheduled(retry_line(1 + next(3) as u32)),
                8 => transcript.run_ended(),
                9 if next(50) == 0 => transcript.clear(),
                _ => {
                    transcript.window(40, now, 10, next(5));
                }
            }
            let len = transcript.entries.len();
            if let Some(index) = transcript.streaming {
                assert!(
                    matches!(transcript.entries[index].entry, Entry::Assistant(_)),
                    "step {step}: the streaming index is not an answer"
                );
            }
            if let Some(index) = transcript.retry_line {
                assert!(
                    matches!(
                        transcript.entries.get(index).map(|s| &s.entry),
                        Some(Entry::Notice(_))
                    ),
                    "step {step}: the retry line is not a notice"
                );
            }
            assert!(
                transcript.attempt_from.is_none_or(|from| from <= len),
                "step {step}: the attempt begins past the end"
            );
        }
    }

    #[test]
    fn a_skill_command_shows_as_the_command_until_expanded() {
        let now = Instant::now();
        let sent = "<skill name=\"pdf\" location=\"/s/pdf/SKILL.md\">\nReferences are relative to /s/pdf.\n\nRun it\n</skill>\n\nform.pdf";
        let mut transcript =
            Transcript::from_items(&[Message::User(UserMessage::text(sent)).into()]);
        assert_eq!(
            all_rows(&mut transcript, 80, now),
            ["> /skill:pdf form.pdf · the skill's instructions (Ctrl+O)"]
        );
        transcript.expand_tools = true;
        let rows = all_rows(&mut transcript, 80, now);
        assert_eq!(rows.len(), sent.lines().count(), "{rows:?}");
        assert_eq!(rows[3], "  Run it");
    }

    #[test]
    fn a_summary_is_one_line_until_tool_output_is_expanded() {
        let now = Instant::now();
        let mut transcript = Transcript::from_items(&[ContextItem::Summary {
            kind: SummaryKind::Branch,
            summary: "## Goal\ntry X".into(),
            timestamp: 0,
        }]);
        assert_eq!(
            all_rows(&mut transcript, 80, now),
            ["Summary of the branch left (/tree) · 2 lines (Ctrl+O shows them)"]
        );
        transcript.expand_tools = true;
        assert_eq!(
            all_rows(&mut transcript, 80, now),
            ["Summary of the branch left (/tree)", "## Goal", "try X"]
        );
        let mut one = Transcript::from_items(&[ContextItem::Summary {
            kind: SummaryKind::Branch,
            summary: "try X".into(),
            timestamp: 0,
        }]);
        assert_eq!(
            all_rows(&mut one, 80, now),
            ["Summary of the branch left (/tree) · 1 line (Ctrl+O shows them)"]
        );
    }

    #[test]
    fn a_settled_block_is_drawn_again_only_when_how_it_is_shown_changes() {
        let now = Instant::now();
        let mut transcript = settled();
        let first = all_rows(&mut transcript, 60, now);
        assert!(transcript.entries.iter().all(|shown| shown.rows.is_some()));
        assert_eq!(all_rows(&mut transcript, 60, now), first);

        let narrow = all_rows(&mut transcript, 20, now);
        assert_ne!(narrow, first);
        assert!(
            narrow.iter().all(|row| row.chars().count() <= 20),
            "{narrow:?}"
        );

        transcript.expand_tools = true;
        let expanded = all_rows(&mut transcript, 60, now);
        assert!(expanded.len() > first.len(), "{expanded:?}");
        assert!(
            expanded.iter().any(|row| row.trim() == "line 30"),
            "{expanded:?}"
        );
        transcript.expand_tools = false;
        assert_eq!(all_rows(&mut transcript, 60, now), first);

        transcript.set_renderers(ToolRenderers::new([]));
        assert_ne!(all_rows(&mut transcript, 60, now), first);
    }

    #[test]
    fn the_window_is_the_rows_ending_scroll_rows_above_the_bottom() {
        let now = Instant::now();
        let mut transcript = settled();
        let all = all_rows(&mut transcript, 40, now);
        assert!(!all[0].is_empty(), "the leading separator is dropped");
        for height in [1, 5, all.len(), all.len() + 3] {
            for scroll in [0, 2, all.len(), all.len() + 10] {
                let (rows, clamped) = transcript.window(40, now, height, scroll);
                assert_eq!(clamped, scroll.min(all.len().saturating_sub(height)));
                let end = all.len() - clamped;
                let start = end.saturating_sub(height);
                assert_eq!(
                    plain(&rows),
                    all[start..end],
                    "height {height} scroll {scroll}"
                );
            }
        }
    }

    #[test]
    fn only_the_entries_the_window_reaches_are_drawn() {
        let now = Instant::now();
        let items: Vec<ContextItem> = (0..200)
            .map(|n| Message::Assistant(answer(&format!("answer {n}"))).into())
            .collect();
        let mut transcript = Transcript::from_items(&items);
        let drawn = |transcript: &Transcript| {
            let drawn = transcript.entries.iter().filter(|s| s.rows.is_some());
            drawn.count()
        };
        let (rows, _) = transcript.window(40, now, 4, 0);
        assert_eq!(plain(&rows), ["", "answer 198", "", "answer 199"]);
        assert_eq!(drawn(&transcript), 2, "the last screen only");

        let (rows, scroll) = transcript.window(40, now, 2, 10);
        assert_eq!(
            (plain(&rows), scroll),
            (vec!["".into(), "answer 194".into()], 10)
        );
        assert_eq!(drawn(&transcript), 6);

        // Scrolled past the top: clamped, and the leading separator dropped.
        let (rows, scroll) = transcript.window(40, now, 2, 1000);
        assert_eq!(
            (plain(&rows), scroll),
            (vec!["answer 0".into(), "".into()], 397)
        );
        assert_eq!(drawn(&transcript), 200);
    }

    /// The streaming answer keeps the rows of its text that can no longer
    /// change (each frame rendered it whole: a long answer cost the square
    /// of its length), and shows at every point what the answer drawn whole
    /// shows; so does a frame with nothing new, which renders none of it (a
    /// long answer whose call waited for approval was rendered again on
    /// every tick of the spinner).
    #[test]
    fn a_streamed_answer_is_drawn_as_the_whole_answer_at_every_point() {
        let now = Instant::now();
        let text = "# Plan\n\nSteps:\n\n- read\n- edit\n\n  ```sh\n  cargo test\n\n  ```\n\n> note\nlazy\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone\n===\n\n<div>\n\n</div>\n\nAll **done**.";
        let with_call = |text: &str| {
            let mut message = answer(text);
            message
                .content
                .push(AssistantContent::ToolCall(ToolCall::new(
                    "c1",
                    "bash",
                    json!({"command": "ls"}),
                )));
            message
        };
        for width in [80, 13] {
            let mut transcript = Transcript::default();
            transcript.apply(&start(UserMessage::text("go")), now);
            transcript.apply(&start(waiting()), now);
            let ends = (1..=text.len()).filter(|&end| text.is_char_boundary(end));
            for end in ends {
                let partial = with_call(&text[..end]);
                transcript.apply(
                    &AgentEvent::MessageUpdate {
                        assistant_message_event: Box::new(agent_ai::AssistantMessageEvent::Start {
                            partial: partial.clone().into(),
                        }),
                    },
                    now,
                );
                let mut whole = Transcript::default();
                whole.apply(&start(UserMessage::text("go")), now);
                whole.apply(&start(partial), now);
                assert_eq!(
                    transcript.window(width, now, usize::MAX, 0),
                    whole.window(width, now, usize::MAX, 0),
                    "width {width}, streamed up to {:?}",
                    &text[..end]
                );
            }
            transcript.apply(&end(with_call(text)), now);
            transcript.awaiting_approval = vec!["c1".into()];
            let waiting_rows = transcript.window(width, now, usize::MAX, 0);
            let parsed = transcript.entries[1].texts[0].parsed();
            assert_eq!(transcript.window(width, now, usize::MAX, 0), waiting_rows);
            assert_eq!(
                transcript.entries[1].texts[0].parsed(),
                parsed,
                "a frame with nothing new renders none of the text"
            );
            assert!(
                plain(&waiting_rows.0)
                    .iter()
                    .any(|row| row.contains("waiting")),
                "{waiting_rows:?}"
            );
        }
    }

    #[test]
    fn the_streaming_answer_and_a_running_call_are_drawn_anew_each_frame() {
        let now = Instant::now();
        let mut transcript = Transcript::default();
        transcript.apply(&start(answer("Hel")), now);
        assert_eq!(all_rows(&mut transcript, 40, now), ["Hel"]);
        let mut streamed = answer("Hello");
        streamed
            .content
            .push(AssistantContent::ToolCall(ToolCall::new(
                "c1",
                "ls",
                json!({}),
            )));
        for event in [
            end(streamed),
            AgentEvent::ToolExecutionStart {
                tool_call_id: "c1".into(),
                tool_name: "ls".into(),
                args: json!({}),
            },
        ] {
            transcript.apply(&event, now);
        }
        let running = all_rows(&mut transcript, 40, now);
        assert_eq!(running[0], "Hello");
        assert!(transcript.entries[0].rows.is_none(), "a running call moves");
        transcript.apply(
            &AgentEvent::ToolExecutionEnd {
                tool_call_id: "c1".into(),
                result: AgentToolResult::text("a.txt"),
                is_error: false,
                tool_name: "ls".into(),
            },
            now,
        );
        let done = all_rows(&mut transcript, 40, now);
        assert!(done.iter().any(|row| row.trim() == "a.txt"), "{done:?}");
        assert!(transcript.entries[0].rows.is_some());
    }
}
