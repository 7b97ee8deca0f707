//! The summary of a branch `/tree` leaves (Pi's branch summarisation): the
//! entries from the old position back to where the two branches meet are
//! summarised by the compaction summariser, so the work that goes on from
//! the earlier point knows what was tried. The summary is saved as a
//! `branch_summary` entry where the conversation goes on
//! ([`crate::session::SessionManager::append_branch_summary`]).

use std::sync::Arc;

use agent_ai::{Message, Model, Provider, ThinkingLevel};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::summary::{branch_request, with_file_lists};
use super::{CompactionError, Refusal, Summariser, file_details, tokens};
use crate::session::Entry;
use crate::session::compacted::{CompactionDetails, entry_message, summary_message};

/// A branch's summary and the files its work read and changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSummary {
    /// What the model reads where the branch was left, file lists included.
    pub summary: String,
    /// The files, with those of the summaries on the branch.
    pub details: CompactionDetails,
}

/// How much the summariser may read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchBudget {
    /// Tokens of the branch read at the most: the newest messages win.
    pub input: u64,
    /// Tokens the summary may take.
    pub output: u32,
}

/// The messages of `entries` (a branch, oldest first) the summariser reads:
/// the newest ones within `budget` tokens. A compaction on the branch is
/// read as its summary; a summary that no longer fits is still read while
/// less than 90% of the budget is used (Pi's rule: it stands for much).
pub fn branch_messages(entries: &[&Entry], budget: u64) -> Vec<Message> {
    let mut taken = Vec::new();
    let mut used = 0;
    for entry in entries.iter().rev() {
        let is_summary = matches!(entry.kind(), Some("compaction" | "branch_summary"));
        let message = match entry.kind() {
            Some("compaction") => entry
                .value()
                .get("summary")
                .and_then(Value::as_str)
                .map(|summary| summary_message(summary, 0)),
            _ => entry_message(entry),
        };
        let Some(message) = message else { continue };
        let size = tokens::estimate_tokens(&message);
        if used + size > budget {
            if is_summary && used * 10 < budget * 9 {
                taken.push(message);
            }
            break;
        }
        used += size;
        taken.push(message);
    }
    taken.reverse();
    taken
}

/// Asks `provider` for the summary of the branch `entries` (oldest first);
/// `None` when they hold no message to summarise.
pub async fn summarise_branch(
    entries: &[&Entry],
    focus: Option<&str>,
    budget: BranchBudget,
    model: &Model,
    provider: &Arc<dyn Provider>,
    reasoning: Option<ThinkingLevel>,
    cancel: &CancellationToken,
) -> Result<Option<BranchSummary>, CompactionError> {
    let messages = branch_messages(entries, budget.input);
    if messages.is_empty() {
        return Ok(None);
    }
    // Files from the summaries of branches left on this one count too.
    let earlier = entries
        .iter()
        .filter(|e| e.kind() == Some("branch_summary"))
        .filter_map(|e| {
            serde_json::from_value::<CompactionDetails>(e.value().get_mut("details")?.take()).ok()
        })
        .reduce(|mut all, more| {
            all.read_files.extend(more.read_files);
            all.modified_files.extend(more.modified_files);
            all
        });
    let details = file_details(messages.iter(), earlier.as_ref());
    let request = branch_request(&messages, focus);
    let summariser = Summariser {
        model,
        provider,
        reasoning,
        cancel,
    };
    let summary = summariser
        .ask(request, budget.output)
        .await
        .map_err(Refusal::into_error)?
        .map_err(CompactionError::Summary)?;
    Ok(Some(BranchSummary {
        summary: with_file_lists(&summary, &details.read_files, &details.modified_files),
        details,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::session::user_text;

    fn user(text: &str) -> Entry {
        Entry::of(
            &json!({"type":"message","id":text,"message":{"role":"user","content":text,"timestamp":1}}),
        )
    }

    fn texts(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m {
                Message::User(user) => user_text(&user.content),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_newest_messages_within_the_budget_are_read_in_order() {
        let entries = [user(&"a".repeat(400)), user("b"), user("c")];
        let branch: Vec<&Entry> = entries.iter().collect();
        assert_eq!(texts(&branch_messages(&branch, 1000)).len(), 3);
        // "a…" is 100 tokens: it does not fit in 50.
        assert_eq!(texts(&branch_messages(&branch, 50)), ["b", "c"]);
    }

    #[test]
    fn a_compaction_is_read_as_its_summary_and_kept_while_the_budget_is_not_nearly_spent() {
        let compaction =
            Entry::of(&json!({"type":"compaction","id":"k","summary":"S".repeat(400)}));
        let meta = Entry::of(&json!({"type":"model_change","id":"m","provider":"p","modelId":"x"}));
        let entries = [user("old"), compaction, meta, user("new")];
        let branch: Vec<&Entry> = entries.iter().collect();
        let read = texts(&branch_messages(&branch, 50));
        assert_eq!(read.len(), 2, "{read:?}");
        assert!(read[0].contains(&"S".repeat(400)));
        assert_eq!(read[1], "new");
        // With the budget nearly spent, the summary is left out too.
        let entries = [entries[1].clone(), user(&"n".repeat(184))];
        let branch: Vec<&Entry> = entries.iter().collect();
        assert_eq!(texts(&branch_messages(&branch, 50)), ["n".repeat(184)]);
    }
}
