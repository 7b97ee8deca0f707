//! The session as a tree (`/tree`): every branch in the file, one row per
//! point the conversation can go on from, drawn with the connectors of a
//! file tree. A run of entries without a fork stays in one column, so a
//! long session without branches reads as a list.
//!
//! ```text
//!  user: fix the parser
//!  assistant: Fixed; the tests pass.
//!  ├─ user: now the lexer
//!  │  assistant: Done.              (left)
//!  └─ user: add a benchmark
//!     assistant: Added.             ← current
//! ```

use std::collections::{HashMap, HashSet};

use agent_ai::{Message, StopReason};
use serde::Serialize;
use serde_json::Value;

use super::entry::Entry;
use super::format::{message_from_entry, user_text};
use super::manager::SessionManager;

/// What a row of the tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TreeItem {
    /// A user message: going there puts its text back in the editor.
    User,
    /// A user's own command (`!cmd`).
    Command,
    /// The model's answer at the end of a run (not a tool call).
    Answer,
    /// A compaction.
    Compaction,
    /// The summary of a branch left.
    BranchSummary,
}

/// One row of the tree (and of RPC `get_tree`'s answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeRow {
    /// The entry's id.
    pub id: String,
    /// The id of the row above it in the tree (`None`: a root). Entries
    /// without a row between the two (tool calls and results) are skipped.
    pub parent_id: Option<String>,
    /// The connectors before it (`│  ├─ `): 12 columns at most, after
    /// `⋯  ` standing for those further left in a row deeper than that
    /// (`parent_id` gives the whole shape).
    pub lead: String,
    /// What it is.
    pub item: TreeItem,
    /// Its text (the UI shows the first line).
    pub text: String,
    /// On the path to the current position.
    pub on_branch: bool,
    /// The current position, or the last row before it (the entries after
    /// a row, such as tool results, have no row of their own).
    pub current: bool,
}

/// Connectors: a child among several, the last of them, and what stands
/// below each in the rows of its descendants.
const FORK: &str = "├─ ";
const LAST: &str = "└─ ";
const THROUGH: &str = "│  ";
const PAST: &str = "   ";

/// How many columns of connectors a row's lead holds at most; past them,
/// the leftmost give way to [`DEEPER`]. Each branch point inside the last
/// one indented every row under it one column more: 3000 of them drew
/// leads of 9000 characters, and RPC `get_tree` answered 41 MB for 9000
/// rows. The rows' `parentId` still give the whole shape.
const MAX_COLUMNS: usize = 12;

/// Stands for the columns left out of a deep row's lead.
const DEEPER: &str = "⋯  ";

impl SessionManager {
    /// The rows of the whole tree, depth first, children in the order they
    /// were written.
    pub fn tree(&self) -> Vec<TreeRow> {
        let entries = self.entries();
        let at: HashMap<&str, usize> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((e.id()?, i)))
            .collect();
        let rows: Vec<Option<(TreeItem, String)>> = entries.iter().map(row_of).collect();
        // The nearest entry at or above each one that has a row; a parent
        // is written before its children.
        let mut shown: Vec<Option<usize>> = vec![None; entries.len()];
        let mut row_parent: Vec<Option<usize>> = vec![None; entries.len()];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); entries.len()];
        let mut roots = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let parent = entry
                .parent_id()
                .and_then(|id| at.get(id))
                .filter(|&&p| p < i)
                .and_then(|&p| shown[p]);
            if rows[i].is_some() {
                shown[i] = Some(i);
                row_parent[i] = parent;
                match parent {
                    Some(p) => children[p].push(i),
                    None => roots.push(i),
                }
            } else {
                shown[i] = parent;
            }
        }
        let on_branch: HashSet<usize> = self
            .branch()
            .iter()
            .filter_map(|e| at.get(e.id()?).copied())
            .collect();
        let current = self
            .leaf_id()
            .and_then(|id| at.get(id))
            .and_then(|&i| shown[i]);

        let id_of = |i: usize| entries[i].id().unwrap_or_default().to_owned();
        let mut out = Vec::new();
        let mut stack: Vec<(usize, Lead, &'static str)> = Vec::new();
        push_children(&mut stack, &roots, Lead::default());
        while let Some((i, lead, mark)) = stack.pop() {
            let (item, text) = rows[i].clone().unwrap_or((TreeItem::Answer, String::new()));
            out.push(TreeRow {
                id: id_of(i),
                parent_id: row_parent[i].map(id_of),
                lead: lead.draw(mark),
                item,
                text,
                on_branch: on_branch.contains(&i),
                current: current == Some(i),
            });
            let below = match mark {
                FORK => lead.then(THROUGH),
                LAST => lead.then(PAST),
                _ => lead,
            };
            push_children(&mut stack, &children[i], below);
        }
        out
    }
}

/// The columns of connectors standing before a row's own: the last
/// [`MAX_COLUMNS`] of them, and whether there were more.
#[derive(Debug, Clone, Default)]
struct Lead {
    columns: Vec<&'static str>,
    cut: bool,
}

impl Lead {
    /// This lead with `column` after it, its first column given up if
    /// that makes one too many.
    fn then(&self, column: &'static str) -> Lead {
        let mut next = self.clone();
        next.columns.push(column);
        if next.columns.len() > MAX_COLUMNS {
            next.columns.remove(0);
            next.cut = true;
        }
        next
    }

    /// The lead of a row with the connector `mark`.
    fn draw(&self, mark: &str) -> String {
        let deeper = if self.cut { DEEPER } else { "" };
        format!("{deeper}{}{mark}", self.columns.concat())
    }
}

/// Puts `children` on the stack so the first is drawn first: one child goes
/// on in its parent's column, several each get a connector.
fn push_children(stack: &mut Vec<(usize, Lead, &'static str)>, children: &[usize], lead: Lead) {
    match children {
        [] => {}
        [only] => stack.push((*only, lead, "")),
        [.., last] => {
            stack.push((*last, lead.clone(), LAST));
            for &child in children[..children.len() - 1].iter().rev() {
                stack.push((child, lead.clone(), FORK));
            }
        }
    }
}

/// The row an entry gets, if any: user messages and commands, the answers
/// that end a run, compactions and branch summaries (only those are parsed).
fn row_of(entry: &Entry) -> Option<(TreeItem, String)> {
    match entry.kind()? {
        "compaction" => {
            let tokens = entry
                .value()
                .get("tokensBefore")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            Some((
                TreeItem::Compaction,
                format!("compacted from {tokens} tokens"),
            ))
        }
        "branch_summary" => {
            let summary = entry.value().get("summary")?.as_str()?.to_owned();
            Some((TreeItem::BranchSummary, summary))
        }
        "message" => {
            if !matches!(
                entry.role(),
                Some("user" | "assistant" | "bashExecution" | "custom")
            ) {
                return None;
            }
            let message = entry.value().get_mut("message")?.take();
            if entry.role() == Some("bashExecution") {
                let command = message.get("command").and_then(Value::as_str)?;
                return Some((TreeItem::Command, format!("!{command}")));
            }
            match message_from_entry(message)? {
                Message::User(user) => Some((TreeItem::User, user_text(&user.content))),
                Message::Assistant(answer) if answer.stop_reason != StopReason::ToolUse => {
                    let text = answer.text();
                    let text = match (text.trim().is_empty(), answer.stop_reason) {
                        (false, _) => text,
                        (true, StopReason::Aborted) => "(aborted)".to_owned(),
                        (true, StopReason::Error) => format!(
                            "(error: {})",
                            answer.error_message.as_deref().unwrap_or("unknown")
                        ),
                        (true, _) => "(no text)".to_owned(),
                    };
                    Some((TreeItem::Answer, text))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use agent_ai::{AssistantContent, AssistantMessage, Model, TextContent, UserMessage};

    use super::*;

    fn user(text: &str) -> Message {
        UserMessage::text(text).into()
    }

    fn answer(text: &str) -> Message {
        let mut message = AssistantMessage::empty(&Model::new("m", "p", "api"));
        message.content = vec![AssistantContent::Text(TextContent {
            text: text.to_owned(),
            text_signature: None,
        })];
        message.stop_reason = StopReason::Stop;
        message.into()
    }

    fn drawn(session: &SessionManager) -> Vec<String> {
        session
            .tree()
            .iter()
            .map(|row| {
                let mark = if row.current {
                    " <"
                } else if row.on_branch {
                    ""
                } else {
                    " ."
                };
                format!("{}{}{mark}", row.lead, row.text)
            })
            .collect()
    }

    #[test]
    fn a_session_without_forks_is_one_column_and_a_move_starts_a_branch_beside_it() {
        let mut session = SessionManager::in_memory(Path::new("/w"));
        session.append_message(&user("one")).unwrap();
        session.append_message(&answer("A1")).unwrap();
        let fork_point = session.leaf_id().unwrap().to_owned();
        session.append_message(&user("two")).unwrap();
        session.append_message(&answer("A2")).unwrap();
        assert_eq!(drawn(&session), ["one", "A1", "two", "A2 <"]);

        session.move_leaf(Some(&fork_point)).unwrap();
        assert_eq!(drawn(&session), ["one", "A1 <", "two .", "A2 ."]);
        session.append_message(&user("three")).unwrap();
        session.append_message(&answer("A3")).unwrap();
        assert_eq!(
            drawn(&session),
            ["one", "A1", "├─ two .", "│  A2 .", "└─ three", "   A3 <"]
        );
        let left: Vec<_> = session
            .left_behind(Some(&fork_point))
            .iter()
            .filter_map(|e| e.role())
            .collect();
        assert_eq!(left, ["user", "assistant"]);
        assert_eq!(
            session.messages().len(),
            4,
            "the model reads one, A1, three, A3"
        );
    }

    #[test]
    fn moving_to_the_start_leaves_no_branch_and_an_unknown_entry_is_named() {
        let mut session = SessionManager::in_memory(Path::new("/w"));
        session.append_message(&user("one")).unwrap();
        session.move_leaf(None).unwrap();
        assert!(session.branch().is_empty());
        assert_eq!(drawn(&session), ["one ."]);
        session.append_message(&user("again")).unwrap();
        assert_eq!(drawn(&session), ["├─ one .", "└─ again <"]);
        let error = session.move_leaf(Some("nope")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no entry with the id nope in this session"
        );
    }

    /// Each branch point inside the last one indented every row under it
    /// one column more: 3000 of them drew leads of 9000 characters, and
    /// RPC `get_tree` answered 41 MB for 9000 rows. Past the cap the
    /// leftmost columns give way to one marker, and `parentId` still
    /// gives the whole shape.
    #[test]
    fn rows_deep_in_branches_keep_a_lead_of_bounded_width_marked_as_deeper() {
        let mut session = SessionManager::in_memory(Path::new("/w"));
        let forks = MAX_COLUMNS + 8;
        for _ in 0..forks {
            session.append_message(&user("q")).unwrap();
            session.append_message(&answer("a")).unwrap();
            let fork_point = session.leaf_id().unwrap().to_owned();
            session.append_message(&user("left")).unwrap();
            session.move_leaf(Some(&fork_point)).unwrap();
        }
        session.append_message(&user("deepest")).unwrap();
        let rows = session.tree();
        let widest = (MAX_COLUMNS + 2) * FORK.chars().count();
        for row in &rows {
            assert!(row.lead.chars().count() <= widest, "{:?}", row.lead);
        }
        let deepest = rows.last().unwrap();
        assert_eq!(deepest.text, "deepest");
        assert_eq!(
            deepest.lead,
            format!("{DEEPER}{}{LAST}", PAST.repeat(MAX_COLUMNS))
        );
        // The rows at the cap and just past it: one column apart, then the same.
        let at = |depth: usize| {
            rows.iter()
                .filter(|row| row.text == "left")
                .nth(depth)
                .unwrap()
                .lead
                .clone()
        };
        assert_eq!(
            at(MAX_COLUMNS),
            format!("{}{FORK}", PAST.repeat(MAX_COLUMNS))
        );
        assert_eq!(
            at(MAX_COLUMNS + 1),
            format!("{DEEPER}{}{FORK}", PAST.repeat(MAX_COLUMNS))
        );
        assert_eq!(at(MAX_COLUMNS + 2), at(MAX_COLUMNS + 1));
        // The shape is whole in the parents: each "left" hangs from an answer.
        let by_id: HashMap<&str, &TreeRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
        let parent_of_deepest = by_id[deepest.parent_id.as_deref().unwrap()];
        assert_eq!(parent_of_deepest.text, "a");
        assert_eq!(rows.len(), forks * 3 + 1);
    }
}
