//! `/tree`: the session's tree, numbered, and going on from the row chosen
//! ([`AgentSession::navigate_tree`]); the transcript is then the
//! conversation from the root to that point.

use super::app::App;
use super::session_commands::preview;
use super::show_saved;
use crate::app::{AgentSession, TreeError, TreeMove};
use crate::render::{Style, StyledLine};
use crate::session::TreeItem;

/// The rows `/tree` last listed, so `/tree N` goes to the row the user
/// read even when the tree grew since (new rows land in the middle of the
/// numbering when the current branch is not the last one).
#[derive(Debug, Default)]
pub(super) struct Listed {
    /// The session listed; another session's numbers mean nothing.
    session_id: String,
    /// The entry of each row, in order.
    ids: Vec<String>,
}

/// `/tree`: every row of the tree, numbered for `/tree N`; rows off the
/// current branch are dim, and the current position is marked.
pub(super) fn lines(session: &AgentSession, listed: &mut Listed) -> Vec<StyledLine> {
    let rows = session.tree();
    *listed = Listed {
        session_id: session.header().id,
        ids: rows.iter().map(|row| row.id.clone()).collect(),
    };
    if rows.is_empty() {
        return vec![StyledLine::new("No messages yet", Style::Dim)];
    }
    let mut lines = vec![StyledLine::new(
        "Session tree (/tree N: go on from row N; /tree N summarize: summarise the branch left too)",
        Style::Bold,
    )];
    lines.extend(rows.iter().enumerate().map(|(i, row)| {
        let text = match row.item {
            TreeItem::User => format!("user: {}", preview(&row.text)),
            TreeItem::Answer => format!("assistant: {}", preview(&row.text)),
            TreeItem::Command => preview(&row.text),
            TreeItem::Compaction => format!("[{}]", row.text),
            TreeItem::BranchSummary => "[summary of a branch left]".to_owned(),
        };
        let style = if row.on_branch {
            Style::Normal
        } else {
            Style::Dim
        };
        let line = StyledLine::new(format!("{:>3}. ", i + 1), Style::Accent)
            .push(row.lead.clone(), Style::Dim)
            .push(text, style);
        if row.current {
            line.push("  ← current", Style::Accent)
        } else {
            line
        }
    }));
    lines
}

/// The entry of row `row` (numbered from 1) as `/tree` last listed this
/// session (as it is now, when it has not listed it), or the error to show.
pub(super) fn target(
    session: &AgentSession,
    listed: &Listed,
    row: usize,
) -> Result<String, StyledLine> {
    let ids = match listed.session_id == session.header().id {
        true => listed.ids.clone(),
        false => session.tree().into_iter().map(|row| row.id).collect(),
    };
    row.checked_sub(1)
        .and_then(|i| ids.get(i))
        .cloned()
        .ok_or_else(|| {
            StyledLine::new(
                format!("No row number {row} (/tree lists them)"),
                Style::Error,
            )
        })
}

/// Shows the outcome of a move: the conversation as it now is, the chosen
/// message's text in the editor, and a line saying what happened.
pub(super) fn show(
    session: &AgentSession,
    app: &mut App,
    row: usize,
    outcome: Result<TreeMove, TreeError>,
) {
    let moved = match outcome {
        Ok(moved) => moved,
        Err(error) => {
            let line = format!("Stayed where you were: {error}");
            app.notice(vec![StyledLine::new(line, Style::Error)]);
            return;
        }
    };
    app.reset(&session.context_items());
    show_saved(session, app);
    let mut said = match &moved.editor_text {
        Some(text) => {
            app.editor.set_text(text);
            format!("Went back to before row {row}; its message is in the editor")
        }
        None => format!("Went on from row {row}"),
    };
    if moved.summary.is_some() {
        said.push_str("; the branch left is summarised for the model");
    }
    app.notice(vec![StyledLine::new(said, Style::Dim)]);
}
