//! Approvals in the interactive mode: when the permission policy asks about
//! a call, a prompt over the transcript shows the call as its renderer draws
//! it and why it asks, and offers: allow once, allow for this session (the
//! suggested rule, kept in memory), always allow (the rule written to the
//! project's or the global settings) or deny, with a reason the model reads.
//! Esc denies. See `docs/permissions.md`, "Approving in the terminal".
//!
//! - [`approver`]: [`InteractiveApprover`], the [`Approver`] the guard asks;
//!   its requests reach the UI's event loop with a one-shot reply.
//! - [`modal`]: one prompt's keys and lines ([`ApprovalModal`]).
//! - [`trust`]: the question asked once at start when the project's own
//!   settings are ignored because it is not trusted.
//!
//! [`Approvals`] is the queue the app holds: the calls of a parallel batch
//! ask one at a time, in the order they asked.

pub mod approver;
pub mod modal;
pub mod trust;

use std::collections::VecDeque;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

pub use crate::guard::approval::{ApprovalAnswer, ApprovalRequest, Approver, RuleScope};
pub use approver::{ApprovalInbox, ApprovalPrompt, InteractiveApprover};
pub use modal::{ApprovalModal, Choice};

use super::theme::to_line;
use super::wrap::{text_width, wrap};
use crate::render::{Style, StyledLine, ToolRenderers};

/// The prompts waiting for an answer; the first one is shown.
#[derive(Debug, Default)]
pub struct Approvals {
    waiting: VecDeque<Waiting>,
}

#[derive(Debug)]
struct Waiting {
    modal: ApprovalModal,
    reply: tokio::sync::oneshot::Sender<ApprovalAnswer>,
}

impl Approvals {
    /// Queues a request behind those already waiting.
    pub fn push(&mut self, prompt: ApprovalPrompt) {
        self.waiting.push_back(Waiting {
            modal: ApprovalModal::new(prompt.request),
            reply: prompt.reply,
        });
    }

    /// The prompt shown, if any: while there is one it takes every key.
    pub fn current(&self) -> Option<&ApprovalModal> {
        self.waiting.front().map(|w| &w.modal)
    }

    /// The ids of the calls waiting for an answer.
    pub fn call_ids(&self) -> Vec<String> {
        self.waiting
            .iter()
            .map(|w| w.modal.request().tool_call_id.clone())
            .collect()
    }

    /// How many prompts wait behind the one shown.
    pub fn queued(&self) -> usize {
        self.waiting.len().saturating_sub(1)
    }

    /// Gives `key` to the prompt shown; an answer goes to its call and the
    /// next prompt shows. False when no prompt is shown (the key is not
    /// taken).
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        let Some(front) = self.waiting.front_mut() else {
            return false;
        };
        if let Some(answer) = front.modal.handle_key(key)
            && let Some(done) = self.waiting.pop_front()
        {
            // The call may have stopped waiting (its run was cancelled):
            // then nobody needs the answer.
            let _ = done.reply.send(answer);
        }
        true
    }

    /// Gives pasted text to the prompt shown; false when there is none.
    pub fn paste(&mut self, text: &str) -> bool {
        match self.waiting.front_mut() {
            Some(front) => {
                front.modal.paste(text);
                true
            }
            None => false,
        }
    }

    /// Drops the prompts whose calls no longer wait (their run was
    /// cancelled); true when one was dropped.
    pub fn drop_abandoned(&mut self) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|w| !w.reply.is_closed());
        self.waiting.len() != before
    }

    /// Draws the prompt shown over the bottom of `area` (the transcript),
    /// framed, as tall as it needs (its last rows, the choices, when the
    /// area is shorter); the call is drawn by its tool's renderer.
    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect, renderers: &ToolRenderers) {
        let Some(modal) = self.current() else {
            return;
        };
        let inner_width = area.width.saturating_sub(4).max(1);
        let view = modal.view(renderers, inner_width);
        let mut rows: Vec<StyledLine> = Vec::new();
        let mut cursor = None;
        for (i, line) in view.lines.iter().enumerate() {
            rows.extend(wrap(line, inner_width));
            if view.input == Some(i) {
                let last = rows.last().map_or(0, |row| text_width(&row.plain()));
                cursor = Some((rows.len().saturating_sub(1), last));
            }
        }
        let inner_height = usize::from(area.height.saturating_sub(2));
        let skip = rows.len().saturating_sub(inner_height);
        let height = u16::try_from(rows.len() - skip + 2).unwrap_or(area.height);
        let modal_area = Rect {
            y: area.bottom().saturating_sub(height),
            height,
            ..area
        };
        let title = match self.queued() {
            0 => " Permission needed ".to_owned(),
            n => format!(" Permission needed ({n} more waiting) "),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(to_line(&StyledLine::new(title, Style::Bold)));
        let inner = block.inner(modal_area);
        let padded = Rect {
            x: inner.x + 1,
            width: inner.width.saturating_sub(2),
            ..inner
        };
        frame.render_widget(Clear, modal_area);
        frame.render_widget(block, modal_area);
        frame.render_widget(
            Paragraph::new(rows[skip..].iter().map(to_line).collect::<Vec<_>>()),
            padded,
        );
        if let Some((row, col)) = cursor.filter(|(row, _)| *row >= skip) {
            let x = padded.x + u16::try_from(col).unwrap_or(0);
            let y = padded.y + u16::try_from(row - skip).unwrap_or(0);
            frame.set_cursor_position(Position::new(x.min(padded.right().saturating_sub(1)), y));
        }
    }
}
