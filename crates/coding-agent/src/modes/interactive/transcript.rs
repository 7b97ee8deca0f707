//! The conversation as shown: user prompts, the assistant's streaming answers
//! (Markdown, thinking), tool calls drawn by their own renderers with live
//! progress, and notices. Fed by agent events, or by a resumed session's
//! messages; rendered to styled lines for any width.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agent_ai::{AssistantContent, AssistantMessage, Content, Message, StopReason, UserContent};
use agent_core::{AgentEvent, AgentToolResult};
use serde_json::Value;

use super::markdown::render_markdown;
use crate::render::{RenderOptions, Style, StyledLine, ToolRenderers};

/// One block of the transcript.
#[derive(Debug, Clone)]
enum Entry {
    /// A prompt or steering message.
    User(String),
    /// An answer (its tool calls are drawn from [`Transcript::tools`]).
    Assistant(Box<AssistantMessage>),
    /// A line from the app itself (errors, command output).
    Notice(Vec<StyledLine>),
}

/// A tool call's state, keyed by call id.
#[derive(Debug, Clone, Default)]
struct ToolView {
    name: String,
    args: Value,
    partial: Option<AgentToolResult>,
    result: Option<AgentToolResult>,
    is_error: bool,
    started: Option<Instant>,
    elapsed: Option<Duration>,
}

/// The transcript and how it is shown.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    tools: HashMap<String, ToolView>,
    /// The answer still streaming, as an index into `entries`.
    streaming: Option<usize>,
    /// Ctrl+O: tool results shown whole instead of previews.
    pub expand_tools: bool,
    /// Ctrl+T: thinking shown instead of a one-line placeholder.
    pub show_thinking: bool,
    /// The ids of the calls waiting for the user's approval: drawn as
    /// waiting, not as pending (the guard asks before a call starts).
    pub awaiting_approval: Vec<String>,
    /// The session's tools' renderers (the built-ins' until the app is given
    /// the session's tool set).
    pub renderers: ToolRenderers,
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

impl Transcript {
    /// A transcript showing a saved conversation (`--continue`, `--session`).
    pub fn from_messages(messages: &[Message]) -> Self {
        let mut transcript = Transcript::default();
        for message in messages {
            transcript.add_message(message);
        }
        transcript
    }

    /// Empties the transcript (a new session).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.tools.clear();
        self.streaming = None;
    }

    /// Adds a notice (command output, errors of the app itself, warnings).
    /// One that comes while an answer has started but shown nothing yet (a
    /// request being retried) goes above it, where the wait is.
    pub fn notice(&mut self, lines: Vec<StyledLine>) {
        if let Some(index) = self.streaming
            && let Some(Entry::Assistant(answer)) = self.entries.get(index)
            && answer.content.is_empty()
        {
            self.entries.insert(index, Entry::Notice(lines));
            self.streaming = Some(index + 1);
            return;
        }
        self.entries.push(Entry::Notice(lines));
    }

    fn add_message(&mut self, message: &Message) {
        match message {
            Message::User(user) => self.entries.push(Entry::User(user_text(&user.content))),
            Message::Assistant(answer) => {
                self.entries
                    .push(Entry::Assistant(Box::new(answer.clone())));
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

    /// Error and abort notices after an answer that ended that way.
    fn answer_ended(&mut self, answer: &AssistantMessage) {
        match answer.stop_reason {
            StopReason::Error => {
                let text = answer.error_message.as_deref().unwrap_or("Request error");
                self.notice(vec![StyledLine::new(
                    format!("Error: {text}"),
                    Style::Error,
                )]);
            }
            StopReason::Aborted => {
                self.notice(vec![StyledLine::new("Aborted", Style::Error)]);
            }
            _ => {}
        }
    }

    /// Applies an agent event; `now` times running tools.
    pub fn apply(&mut self, event: &AgentEvent, now: Instant) {
        match event {
            AgentEvent::MessageStart {
                message: Message::User(user),
            } => self.entries.push(Entry::User(user_text(&user.content))),
            AgentEvent::MessageStart {
                message: Message::Assistant(answer),
            } => {
                self.streaming = Some(self.entries.len());
                self.entries
                    .push(Entry::Assistant(Box::new(answer.clone())));
            }
            AgentEvent::MessageUpdate {
                message: Message::Assistant(answer),
                ..
            } => self.update_answer(answer),
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
            } => {
                if let Some(view) = self.tools.get_mut(tool_call_id) {
                    view.result = Some(result.clone());
                    view.is_error = *is_error;
                    view.elapsed = view.started.map(|started| now - started);
                }
            }
            _ => {}
        }
    }

    fn update_answer(&mut self, answer: &AssistantMessage) {
        match self.streaming.and_then(|i| self.entries.get_mut(i)) {
            Some(Entry::Assistant(shown)) => **shown = answer.clone(),
            _ => {
                self.streaming = Some(self.entries.len());
                self.entries
                    .push(Entry::Assistant(Box::new(answer.clone())));
            }
        }
    }

    /// Every line of the transcript for `width` columns (not yet wrapped).
    pub fn lines(&self, width: u16, now: Instant) -> Vec<StyledLine> {
        let mut out = Vec::new();
        for entry in &self.entries {
            match entry {
                Entry::User(text) => {
                    out.push(StyledLine::default());
                    for (i, line) in text.lines().enumerate() {
                        let mark = if i == 0 { "> " } else { "  " };
                        out.push(StyledLine::new(mark, Style::Accent).push(line, Style::Bold));
                    }
                }
                Entry::Assistant(answer) => self.answer_lines(answer, width, now, &mut out),
                Entry::Notice(lines) => {
                    out.push(StyledLine::default());
                    out.extend(lines.iter().cloned());
                }
            }
        }
        out
    }

    fn answer_lines(
        &self,
        answer: &AssistantMessage,
        width: u16,
        now: Instant,
        out: &mut Vec<StyledLine>,
    ) {
        for block in &answer.content {
            match block {
                AssistantContent::Text(text) if !text.text.trim().is_empty() => {
                    out.push(StyledLine::default());
                    out.extend(render_markdown(&text.text));
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
        let args = view
            .filter(|v| !v.args.is_null())
            .map_or(call_args, |v| &v.args);
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
        out.extend(self.renderers.call_lines(name, args, call_options));
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
