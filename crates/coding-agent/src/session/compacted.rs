//! Compaction entries in the session file (Pi's v3 `compaction` entry) and
//! the context they leave: the latest compaction's summary, then the
//! entries from its `firstKeptEntryId` up to it, then everything after it.
//!
//! ```text
//! {"type":"compaction","id":"…","parentId":"…","timestamp":"…","summary":"…",
//!  "firstKeptEntryId":"…","tokensBefore":N,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false}
//! ```

use agent_ai::{Content, Message, UserContent, UserMessage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::BashExecution;
use super::entry::Entry;
use super::message_from_entry;
use crate::compaction::{SummaryKind, branch_summary_message_text, summary_message_text};

/// The files the summarised work touched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionDetails {
    /// Read and not changed, sorted.
    pub read_files: Vec<String>,
    /// Edited or written, sorted.
    pub modified_files: Vec<String>,
}

/// One compaction, as the entry holds it and as RPC `compact` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    /// What the model reads in place of the summarised messages.
    pub summary: String,
    /// The first entry kept as it is.
    pub first_kept_entry_id: String,
    /// The context's size before compacting, in tokens.
    pub tokens_before: u64,
    /// The files the summarised work touched.
    pub details: CompactionDetails,
}

/// One step of the context as the user sees it: what the model reads, with
/// the user's own commands and the summaries kept as what they are, so the
/// terminal UI draws a resumed session as it drew it live.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextItem {
    /// A message, as the model reads it.
    Message(Message),
    /// A command the user ran (`!cmd`); one kept from the model (`!!cmd`)
    /// is shown but not sent.
    Command(BashExecution),
    /// A summary the session put in the conversation.
    Summary {
        /// A compaction's, or a branch's.
        kind: SummaryKind,
        /// The summary.
        summary: String,
        /// When it was written, in milliseconds.
        timestamp: u64,
    },
}

impl ContextItem {
    /// What the model reads of it (nothing of an excluded command).
    pub fn into_message(self) -> Option<Message> {
        match self {
            ContextItem::Message(message) => Some(message),
            ContextItem::Command(run) => run.context_message(),
            ContextItem::Summary {
                kind,
                summary,
                timestamp,
            } => {
                let text = match kind {
                    SummaryKind::Compaction => summary_message_text(&summary),
                    SummaryKind::Branch => branch_summary_message_text(&summary),
                };
                Some(user_message(text, timestamp))
            }
        }
    }
}

impl From<Message> for ContextItem {
    fn from(message: Message) -> Self {
        ContextItem::Message(message)
    }
}

/// What an entry puts in the context: a `message` entry's message (a user
/// command as itself); a branch summary (Pi's `branch_summary`, written
/// when `/tree` left a branch); an extension's `custom_message`, as a user
/// message. Other entries (compactions, model and level changes, names)
/// put nothing.
/// Entries of other types are not parsed.
fn entry_item(entry: &Entry) -> Option<ContextItem> {
    match entry.kind()? {
        "message" => {
            let message = entry.value().get_mut("message")?.take();
            if entry.role() == Some("bashExecution") {
                return serde_json::from_value(message)
                    .ok()
                    .map(ContextItem::Command);
            }
            message_from_entry(message).map(ContextItem::Message)
        }
        "branch_summary" => {
            let value = entry.value();
            Some(ContextItem::Summary {
                kind: SummaryKind::Branch,
                summary: value.get("summary")?.as_str()?.to_owned(),
                timestamp: entry_time(&value),
            })
        }
        "custom_message" => {
            let value = entry.value();
            let content = UserContent::deserialize(value.get("content")?).ok()?;
            Some(ContextItem::Message(Message::User(UserMessage {
                content,
                timestamp: entry_time(&value),
            })))
        }
        _ => None,
    }
}

/// The message an entry gives the model, if any (see [`ContextItem`]).
pub fn entry_message(entry: &Entry) -> Option<Message> {
    entry_item(entry)?.into_message()
}

/// The messages a branch leaves the model ([`context_items`], as sent).
pub fn context_messages(branch: &[&Entry]) -> Vec<Message> {
    context_items(branch)
        .into_iter()
        .filter_map(ContextItem::into_message)
        .collect()
}

/// The context a branch leaves: with a compaction on it, the latest one's
/// summary, then the kept entries, then what followed.
pub fn context_items(branch: &[&Entry]) -> Vec<ContextItem> {
    let items = |entries: &[&Entry]| -> Vec<ContextItem> {
        entries.iter().filter_map(|e| entry_item(e)).collect()
    };
    let Some(at) = branch.iter().rposition(|e| e.kind() == Some("compaction")) else {
        return items(branch);
    };
    let compaction = branch[at].value();
    let first_kept = compaction.get("firstKeptEntryId").and_then(Value::as_str);
    let kept_from = branch[..at]
        .iter()
        .position(|e| e.id() == first_kept)
        .unwrap_or(at);
    let summary = compaction
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = vec![ContextItem::Summary {
        kind: SummaryKind::Compaction,
        summary: summary.to_owned(),
        timestamp: entry_time(&compaction),
    }];
    out.extend(items(&branch[kept_from..at]));
    out.extend(items(&branch[at + 1..]));
    out
}

/// One step of a branch's whole history, as an export shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryItem {
    /// A step of the conversation (a message, a user's command, a branch's
    /// summary), whether or not a compaction left it to the model.
    Context(Box<ContextItem>),
    /// A compaction: the summary the model read from then on in place of
    /// what came before.
    Compaction {
        /// The summary.
        summary: String,
        /// The context's size before, in tokens.
        tokens_before: u64,
    },
}

/// Everything on a branch in order: every message, compacted or not, and
/// each compaction where it happened (the model's view is
/// [`context_messages`]).
pub fn history(branch: &[&Entry]) -> Vec<HistoryItem> {
    branch
        .iter()
        .filter_map(|entry| match entry.kind()? {
            "compaction" => {
                let value = entry.value();
                Some(HistoryItem::Compaction {
                    summary: value.get("summary")?.as_str()?.to_owned(),
                    tokens_before: value
                        .get("tokensBefore")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                })
            }
            _ => Some(HistoryItem::Context(Box::new(entry_item(entry)?))),
        })
        .collect()
}

/// The user message that stands for the summarised part of the conversation.
pub fn summary_message(summary: &str, timestamp: u64) -> Message {
    user_message(summary_message_text(summary), timestamp)
}

fn user_message(text: String, timestamp: u64) -> Message {
    Message::User(UserMessage {
        content: UserContent::Blocks(vec![Content::text(text)]),
        timestamp,
    })
}

/// When an entry was written, in milliseconds (0 when unreadable).
pub fn entry_time(entry: &Value) -> u64 {
    entry
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_iso_millis)
        .unwrap_or(0)
}

/// Milliseconds since the epoch of `2025-01-31T09:05:00.123Z` (the form
/// [`super::iso_timestamp`] writes).
fn parse_iso_millis(text: &str) -> Option<u64> {
    let (date, time) = text.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.split('-').map(|p| p.parse::<u64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (hms, millis) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = hms.split(':').map(|p| p.parse::<u64>().ok());
    let (hour, minute, second) = (hms.next()??, hms.next()??, hms.next()??);
    let millis: u64 = millis.parse().ok()?;
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::session::iso_timestamp;

    #[test]
    fn iso_timestamps_read_back_to_the_same_millisecond() {
        for millis in [0, 951_782_400_000, 1_738_314_300_123] {
            assert_eq!(parse_iso_millis(&iso_timestamp(millis)), Some(millis));
        }
    }

    #[test]
    fn a_branch_summary_and_an_extensions_message_reach_the_model_as_user_messages() {
        let entries = [
            json!({"type":"message","id":"a","message":{"role":"user","content":"start","timestamp":1}}),
            json!({"type":"branch_summary","id":"b","parentId":"a","fromId":"x","summary":"tried X","timestamp":"1970-01-01T00:00:02.000Z"}),
            json!({"type":"custom_message","id":"c","parentId":"b","customType":"note","content":[{"type":"text","text":"from an extension"}],"display":true}),
            json!({"type":"model_change","id":"d","parentId":"c","provider":"p","modelId":"m"}),
        ];
        let entries = entries.map(|e| Entry::of(&e));
        let branch: Vec<&Entry> = entries.iter().collect();
        let users: Vec<(String, u64)> = context_messages(&branch)
            .into_iter()
            .map(|m| match m {
                Message::User(user) => (crate::session::user_text(&user.content), user.timestamp),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            users,
            [
                ("start".to_owned(), 1),
                (branch_summary_message_text("tried X"), 2000),
                ("from an extension".to_owned(), 0),
            ]
        );
    }

    #[test]
    fn the_latest_compaction_leaves_its_summary_then_the_kept_then_the_newer_messages() {
        let message = |id: &str, text: &str| json!({"type":"message","id":id,"message":{"role":"user","content":text,"timestamp":1}});
        let entries = [
            message("a", "old"),
            message("b", "kept"),
            json!({"type":"compaction","id":"c","summary":"S1","firstKeptEntryId":"b","timestamp":"1970-01-01T00:00:01.000Z"}),
            message("d", "new"),
        ];
        let entries = entries.map(|e| Entry::of(&e));
        let branch: Vec<&Entry> = entries.iter().collect();
        let texts: Vec<String> = context_messages(&branch)
            .into_iter()
            .map(|m| serde_json::to_value(m).unwrap()["content"].to_string())
            .collect();
        assert_eq!(
            texts,
            [
                json!([{"type":"text","text":summary_message_text("S1")}]).to_string(),
                "\"kept\"".to_owned(),
                "\"new\"".to_owned()
            ]
        );
    }
}
