//! Going to another point of the session's tree (`/tree`, Pi's
//! `navigateTree`): in the same file, the conversation goes on from an
//! earlier point, or from another branch, optionally with a summary of the
//! branch left.

use super::AgentSession;
use crate::compaction::CompactionError;
use crate::compaction::branch::{BranchBudget, BranchSummary, summarise_branch};
use crate::session::{Entry, SessionError, TreeRow, message_from_entry, user_text};

/// Where a move went, for the UI to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeMove {
    /// A user message was chosen: the conversation goes on from before it,
    /// and its text is for the editor, to send again or change.
    pub editor_text: Option<String>,
    /// The summary of the branch left, when one was asked for and the
    /// branch held anything to summarise.
    pub summary: Option<BranchSummary>,
}

/// Why a move did not happen; the session stays where it was.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The entry is not in the session, or the move could not be saved.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The chosen point is where the conversation is already.
    #[error("The conversation is at that point already")]
    AlreadyThere,
    /// The summary of the branch left failed or was cancelled.
    #[error("{}", branch_summary_error(.0))]
    Summary(CompactionError),
}

/// What the user reads of a branch summary that did not come: the
/// compaction's texts name a compaction, which this is not.
fn branch_summary_error(error: &CompactionError) -> String {
    match error {
        CompactionError::Cancelled => "Branch summary cancelled".to_owned(),
        CompactionError::Summary(why) => format!("Branch summarization failed: {why}"),
        other => other.to_string(),
    }
}

impl AgentSession {
    /// The session's tree, one row per point to go on from
    /// ([`crate::session::SessionManager::tree`]).
    pub fn tree(&self) -> Vec<TreeRow> {
        self.session().tree()
    }

    /// Fails as [`AgentSession::navigate_tree`] would for a `target` that is
    /// no entry of the session: checked before a run is stopped for the
    /// move, so a wrong id leaves it running (as [`AgentSession::check_fork`]).
    pub fn check_tree_target(&self, target: &str) -> Result<(), SessionError> {
        match self.session().entry(target) {
            Some(_) => Ok(()),
            None => Err(SessionError::UnknownEntry(target.to_owned())),
        }
    }

    /// Goes on from the entry `target` (Pi's `navigateTree`). A user
    /// message is gone on from before, and its text returned for the
    /// editor; any other entry is gone on from itself. With `summarize`,
    /// the summariser first writes what the branch left did (`focus`: what
    /// to stress), saved where the conversation goes on; Esc
    /// ([`AgentSession::abort`]) cancels it, and a summary that fails
    /// cancels the move. What was queued for the branch left (before the
    /// call) is dropped when the move is made; what is queued while the
    /// summary is written stays, for the branch moved to.
    /// Call it while the agent is idle.
    pub async fn navigate_tree(
        &self,
        target: &str,
        summarize: bool,
        focus: Option<&str>,
    ) -> Result<TreeMove, TreeError> {
        // Counted now: a message sent during the summary (RPC, the terminal
        // UI) was accepted for after the move, and dropping the whole queue
        // at its end lost it unsent.
        let queued_for_the_branch_left = (self.inner.steering.len(), self.inner.follow_up.len());
        let (to, editor_text, left) = {
            let session = self.session();
            let entry = session
                .entry(target)
                .ok_or_else(|| SessionError::UnknownEntry(target.to_owned()))?;
            let user = entry
                .value()
                .get_mut("message")
                .map(serde_json::Value::take)
                .and_then(message_from_entry)
                .and_then(|message| match message {
                    agent_ai::Message::User(user) => Some(user_text(&user.content)),
                    _ => None,
                });
            let to = match &user {
                Some(_) => entry.parent_id().map(str::to_owned),
                None => Some(target.to_owned()),
            };
            if user.is_none() && to.as_deref() == session.leaf_id() {
                return Err(TreeError::AlreadyThere);
            }
            let left: Vec<Entry> = if summarize {
                session
                    .left_behind(to.as_deref())
                    .into_iter()
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
            (to, user, left)
        };
        let summary = if left.is_empty() {
            None
        } else {
            let left: Vec<&Entry> = left.iter().collect();
            self.summarise_left(&left, focus).await?
        };
        let mut session = self.session();
        let from = session.leaf_id().map(str::to_owned);
        session.move_leaf(to.as_deref())?;
        if let Some(summary) = &summary {
            session.append_branch_summary(from.as_deref(), summary)?;
        }
        self.record_level_in_force(&mut session)?;
        self.inner.agent.set_messages(session.messages());
        drop(session);
        let (steering, follow_up) = queued_for_the_branch_left;
        if steering + follow_up > 0 {
            self.inner.steering.drop_oldest(steering);
            self.inner.follow_up.drop_oldest(follow_up);
            self.report_queues();
        }
        Ok(TreeMove {
            editor_text,
            summary,
        })
    }

    /// The summary of the entries a move leaves, as a compaction's is
    /// written (same model, level and limits); cancellable like one.
    async fn summarise_left(
        &self,
        left: &[&Entry],
        focus: Option<&str>,
    ) -> Result<Option<BranchSummary>, TreeError> {
        let (model, provider) = self.current();
        let window = self.recovery().window_for(&model);
        let fixed = self.fixed_tokens();
        let budget = self.compaction_settings().budget(window, fixed);
        let limits = BranchBudget {
            input: window.saturating_sub(budget.reserve).saturating_sub(fixed),
            output: budget.history_summary_tokens(),
        };
        let reasoning = Some(self.thinking_level());
        let cancel = self.begin_wait();
        let summary =
            summarise_branch(left, focus, limits, &model, &provider, reasoning, &cancel).await;
        self.end_wait();
        summary.map_err(TreeError::Summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A branch summary that did not come is not called a compaction.
    #[test]
    fn a_failed_branch_summary_is_named_as_such() {
        let said = |error| TreeError::Summary(error).to_string();
        assert_eq!(said(CompactionError::Cancelled), "Branch summary cancelled");
        assert_eq!(
            said(CompactionError::Summary("503 busy".into())),
            "Branch summarization failed: 503 busy"
        );
    }
}
