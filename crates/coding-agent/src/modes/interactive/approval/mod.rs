//! Approvals in the interactive mode: when the permission policy asks about
//! a call, a prompt below the transcript shows the call as its renderer draws
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

use std::cell::Cell;
use std::collections::VecDeque;
use std::ops::Range;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

pub use crate::guard::approval::{ApprovalAnswer, ApprovalRequest, Approver, RuleScope};
pub use approver::{ApprovalInbox, ApprovalPrompt, InteractiveApprover};
pub use modal::{ApprovalModal, Choice, ModalView};

use super::theme::to_line;
use super::wrap::{spell_out_hidden, text_width, wrap};
use crate::render::{Style, StyledLine, ToolRenderers};

/// How long a prompt ignores the keys that would answer it (Enter, a
/// number), counted from when it is first drawn and from each key typed
/// since: a person typing a message as it appears ("do it in 3 steps",
/// Enter) must not approve a call with keys meant for the editor. Those
/// keys go to the editor instead, as do the keys the prompt has no use
/// for (letters, Backspace, the cursor keys along a line), so nothing
/// typed is lost. Esc (deny) and Up/Down are taken at once.
pub const APPROVAL_GRACE: Duration = Duration::from_millis(500);

/// The prompts waiting for an answer; the first one is shown.
#[derive(Debug, Default)]
pub struct Approvals {
    waiting: VecDeque<Waiting>,
    /// See [`APPROVAL_GRACE`]; none by default (tests drive the keys).
    grace: Duration,
    /// When a key last went to the editor while a prompt was shown: the
    /// grace counts from there too.
    typed_at: Option<Instant>,
    /// Part of the shown call has not been on the screen yet, or the
    /// choices are not on it now: only a deny is taken.
    call_unseen: Cell<bool>,
    /// How many rows of the call the last draw showed (a page, for PgUp/PgDn).
    page: Cell<usize>,
    /// The last first row the call can be scrolled to.
    last_scroll: Cell<usize>,
}

#[derive(Debug)]
struct Waiting {
    modal: ApprovalModal,
    /// When the prompt was first drawn: the grace counts from there.
    drawn_at: Cell<Option<Instant>>,
    reply: tokio::sync::oneshot::Sender<ApprovalAnswer>,
    /// The first row of the call shown, when it is taller than the prompt.
    scroll: usize,
    /// How far down the call has been shown, in rows.
    seen: Cell<usize>,
}

impl Approvals {
    /// Queues a request behind those already waiting.
    pub fn push(&mut self, prompt: ApprovalPrompt) {
        self.waiting.push_back(Waiting {
            modal: ApprovalModal::new(prompt.request),
            drawn_at: Cell::new(None),
            reply: prompt.reply,
            scroll: 0,
            seen: Cell::new(0),
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

    /// Keys that would answer a prompt go to the editor for `grace` after
    /// it is first drawn and after each key typed ([`APPROVAL_GRACE`] in
    /// the terminal).
    pub fn set_grace(&mut self, grace: Duration) {
        self.grace = grace;
    }

    /// Gives `key` to the prompt shown; an answer goes to its call and the
    /// next prompt shows. False when the key is not taken: no prompt is
    /// shown, or the key is typing meant for the editor ([`APPROVAL_GRACE`]).
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        let grace = self.grace;
        let Some(front) = self.waiting.front_mut() else {
            return false;
        };
        let scroll_to = scrolled(
            key.code,
            front.scroll,
            self.page.get(),
            self.last_scroll.get(),
        );
        if !front.modal.is_typing_reason() {
            let answers = front.modal.answers(key);
            let since = front.drawn_at.get().max(self.typed_at);
            let too_soon = !grace.is_zero() && since.is_none_or(|since| since.elapsed() < grace);
            let typing = scroll_to.is_none() && is_typing(key);
            if (answers && too_soon) || (!answers && typing) {
                self.typed_at = Some(Instant::now());
                return false;
            }
        }
        if let Some(to) = scroll_to {
            front.scroll = to;
        }
        let Some(answer) = front.modal.handle_key(key) else {
            return true;
        };
        if self.call_unseen.get() && !matches!(answer, ApprovalAnswer::Deny { .. }) {
            // Not read to the end, not approved: the prompt says to scroll
            // (or to enlarge the window).
            return true;
        }
        if let Some(done) = self.waiting.pop_front() {
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

    /// Draws the prompt shown in the bottom of `area` (the transcript's),
    /// framed, as tall as it needs; the call is drawn by its tool's
    /// renderer. Where the area is shorter, why the policy asks and the keys
    /// are left out first; where even the call and the choices do not fit,
    /// the call's top shows with a line saying so, and only a deny is taken
    /// until the window grows ([`Approvals::handle_key`]): no call is
    /// approved unseen.
    ///
    /// Returns the rows it took from the bottom of `area` (none without a
    /// prompt), for the transcript to be drawn above them: drawn over it,
    /// the prompt hid the newest rows, the call's own among them.
    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect, renderers: &ToolRenderers) -> u16 {
        let Some(front) = self.waiting.front() else {
            return 0;
        };
        if front.drawn_at.get().is_none() {
            front.drawn_at.set(Some(Instant::now()));
        }
        let inner_width = area.width.saturating_sub(4).max(1);
        let view = front.modal.view(renderers, inner_width);
        let inner_height = usize::from(area.height.saturating_sub(2));
        let Fitted {
            rows,
            cursor,
            call,
            choices_shown,
        } = fit(&view, inner_width, inner_height, front.scroll, &CALL);
        front.seen.set(front.seen.get().max(call.shown.end));
        self.call_unseen
            .set(!choices_shown || front.seen.get() < call.rows);
        self.page.set(call.shown.len());
        self.last_scroll
            .set(call.rows.saturating_sub(call.shown.len()));
        // Never taller than `area`: in a window of a few rows the frame of
        // an empty prompt (two rows in a one-row area) overflowed, its
        // bottom border drawn over by the status line.
        let height = u16::try_from(rows.len() + 2)
            .unwrap_or(u16::MAX)
            .min(area.height);
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
            Paragraph::new(rows.iter().map(to_line).collect::<Vec<_>>()),
            padded,
        );
        if let Some((row, col)) = cursor {
            let x = padded.x + u16::try_from(col).unwrap_or(0);
            let y = padded.y + u16::try_from(row).unwrap_or(0);
            frame.set_cursor_position(Position::new(x.min(padded.right().saturating_sub(1)), y));
        }
        height
    }
}

/// How a prompt names what it shows and what may not be answered until
/// all of it was shown.
struct Subject {
    /// `call`, `question`.
    name: &'static str,
    /// What its yes does: `allowed`, `trusted`.
    accepted: &'static str,
    /// The key that answers no, said: `Esc denies`.
    refusal: &'static str,
}

/// An approval prompt's call.
const CALL: Subject = Subject {
    name: "call",
    accepted: "allowed",
    refusal: "Esc denies",
};

/// What the prompt shows in the rows it has.
struct Fitted {
    rows: Vec<StyledLine>,
    /// Row and column of the cursor, on the reason being typed.
    cursor: Option<(usize, usize)>,
    /// What of the call is shown.
    call: CallRows,
    /// The choices are on the screen.
    choices_shown: bool,
}

/// The call's rows, and which of them are on the screen.
struct CallRows {
    /// How many rows the whole call takes.
    rows: usize,
    /// The rows shown.
    shown: Range<usize>,
}

/// The rows of `view` (a `subject`: a call, the trust question) to draw
/// `width` columns wide in `height` rows: all of them; else the call and
/// the answers alone; else the answers under as many rows of the call and
/// then of why the policy asks as fit, from `scroll` on, with a line saying
/// which and how to see the rest (the prompt takes no approval until every
/// row has been shown); else, in a window too small even for that, the
/// call's first rows and a line saying the rest does not fit. Characters the terminal
/// would hide are spelled out ([`spell_out_hidden`]): what is approved is
/// what runs.
fn fit(view: &ModalView, width: u16, height: usize, scroll: usize, subject: &Subject) -> Fitted {
    let wrapped = |lines: &mut dyn Iterator<Item = usize>| {
        let mut rows = Vec::new();
        let mut cursor = None;
        for i in lines {
            rows.extend(wrap(&spell_out_hidden(&view.lines[i]), width));
            if view.input == Some(i) {
                let last = rows.last().map_or(0, |row| text_width(&row.plain()));
                cursor = Some((rows.len().saturating_sub(1), last));
            }
        }
        (rows, cursor)
    };
    let (call_rows, _) = wrapped(&mut (0..view.call));
    let total = call_rows.len();
    let whole = || CallRows {
        rows: total,
        shown: 0..total,
    };
    for (rows, cursor) in [
        wrapped(&mut (0..view.lines.len())),
        wrapped(&mut (0..view.call).chain(view.answers.clone())),
    ] {
        if rows.len() <= height {
            return Fitted {
                rows,
                cursor,
                call: whole(),
                choices_shown: true,
            };
        }
    }
    let (answers, cursor) = wrapped(&mut view.answers.clone());
    let room = height.saturating_sub(answers.len() + 1);
    if room >= MIN_CALL_ROWS {
        // Why the policy asks is scrolled to after the call: it was left
        // out here, and one row of it would show little of a reason that
        // names a long command.
        let mut scrolled = call_rows;
        let (why, _) = wrapped(&mut (view.call..view.answers.start));
        scrolled.extend(why.into_iter().filter(|row| !row.plain().is_empty()));
        let total = scrolled.len();
        let first = scroll.min(total - room);
        let shown = first..first + room;
        let status = format!(
            "Rows {}-{} of {} · PgUp/PgDn/Home/End scroll; the {} can be {} once every row was shown",
            shown.start + 1,
            shown.end,
            total,
            subject.name,
            subject.accepted,
        );
        let mut rows = scrolled[shown.clone()].to_vec();
        rows.extend(
            wrap(&StyledLine::new(status, Style::Warning), width)
                .into_iter()
                .take(1),
        );
        let at = rows.len();
        rows.extend(answers);
        return Fitted {
            rows,
            cursor: cursor.map(|(row, col)| (row + at, col)),
            call: CallRows { rows: total, shown },
            choices_shown: true,
        };
    }
    let mut rows = call_rows;
    let notice = wrap(
        &StyledLine::new(
            format!(
                "The {} does not fit: enlarge the window to answer · {}",
                subject.name, subject.refusal
            ),
            Style::Warning,
        ),
        width,
    );
    rows.truncate(height.saturating_sub(notice.len()));
    let shown = 0..rows.len();
    rows.extend(notice);
    rows.truncate(height);
    Fitted {
        rows,
        cursor: None,
        call: CallRows { rows: total, shown },
        choices_shown: false,
    }
}

/// The first row of a scrolled call to show after `key`, from `scroll`,
/// `page` rows a screen, `last` the last first row: PgUp/PgDn a page, Home
/// and End the first and the last rows; `None` for other keys, and for Home
/// and End when nothing scrolls (they are then the editor's). A write of
/// 2,000 lines took about 125 PgDn before it could be allowed; End shows
/// its end at once, which counts as read: the user chose to go there.
fn scrolled(key: KeyCode, scroll: usize, page: usize, last: usize) -> Option<usize> {
    let page = page.max(1);
    match key {
        KeyCode::PageDown => Some((scroll + page).min(last)),
        KeyCode::PageUp => Some(scroll.saturating_sub(page)),
        KeyCode::Home if last > 0 => Some(0),
        KeyCode::End if last > 0 => Some(last),
        _ => None,
    }
}

/// The fewest rows of a call worth scrolling through; a window with less
/// room says the call does not fit.
const MIN_CALL_ROWS: usize = 3;

/// A key that edits a line of text (a character, Backspace, Delete, the
/// cursor along the line): the prompt has no use for it, the editor has.
fn is_typing(key: KeyEvent) -> bool {
    let plain = !key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SUPER);
    plain
        && matches!(
            key.code,
            KeyCode::Char(_)
                | KeyCode::Backspace
                | KeyCode::Delete
                | KeyCode::Left
                | KeyCode::Right
                | KeyCode::Home
                | KeyCode::End
        )
}
