//! The file format: the header line, the message entries Pi writes (user
//! `bash` runs included), and reading a file's text back into entries.

use std::path::Path;

use agent_ai::message::now_millis;
use agent_ai::{Content, Message, UserContent, UserMessage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::entry::Entry;
use super::ids::{iso_timestamp, uuid_v4};

/// The session format version written (Pi's `CURRENT_SESSION_VERSION`).
pub const SESSION_VERSION: u32 = 3;

/// The first line of a session file.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `session`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Format version (absent in Pi's version 1 files).
    pub version: Option<u32>,
    /// The session's UUID.
    pub id: String,
    /// When the session started (ISO 8601, UTC).
    pub timestamp: String,
    /// The working directory it ran in.
    #[serde(default)]
    pub cwd: String,
    /// The session this one was started from, when there was one.
    pub parent_session: Option<String>,
}

impl SessionHeader {
    /// A fresh header for a session in `cwd`, stamped now.
    pub fn new(cwd: &Path, parent_session: Option<String>) -> Self {
        SessionHeader {
            kind: "session".into(),
            version: Some(SESSION_VERSION),
            id: uuid_v4(),
            timestamp: iso_timestamp(now_millis()),
            cwd: cwd.to_string_lossy().into_owned(),
            parent_session,
        }
    }
}

/// A user `bash` run as Pi records it (`role: "bashExecution"`); the model
/// sees it as a user message (see [`bash_execution_text`]).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecution {
    /// Always `bashExecution`.
    pub role: String,
    /// The command as the user typed it.
    pub command: String,
    /// Its output (the tail, when truncated).
    pub output: String,
    /// Its exit code; absent when it was cancelled.
    pub exit_code: Option<i32>,
    /// Whether it was cancelled.
    pub cancelled: bool,
    /// Whether `output` is only the tail.
    pub truncated: bool,
    /// Where the whole output is, when truncated.
    pub full_output_path: Option<String>,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
    /// Kept out of the model's context.
    pub exclude_from_context: Option<bool>,
}

impl BashExecution {
    /// The user message the model reads for this run: none when it was
    /// kept from the model (`!!cmd`).
    pub fn context_message(&self) -> Option<Message> {
        (self.exclude_from_context != Some(true)).then(|| {
            Message::User(UserMessage {
                content: UserContent::Blocks(vec![Content::text(bash_execution_text(self))]),
                timestamp: self.timestamp,
            })
        })
    }
}

/// Pi's `bashExecutionToText`.
pub fn bash_execution_text(run: &BashExecution) -> String {
    let mut text = format!("Ran `{}`\n", run.command);
    if run.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{}\n```", run.output));
    }
    if run.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = run.exit_code.filter(|&code| code != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if run.truncated
        && let Some(path) = &run.full_output_path
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

/// A stored message as the agent holds it (Pi's `convertToLlm` for the roles
/// it adds); `None` for roles this agent does not replay.
pub(crate) fn message_from_entry(message: Value) -> Option<Message> {
    match message.get("role")?.as_str()? {
        "user" | "assistant" | "toolResult" => read_message(message),
        "bashExecution" => {
            let run: BashExecution = serde_json::from_value(message).ok()?;
            run.context_message()
        }
        // Pi's version 2 called custom messages `hookMessage`.
        "custom" | "hookMessage" => {
            let content = match message.get("content")? {
                Value::String(text) => vec![Content::text(text.clone())],
                blocks => serde_json::from_value(blocks.clone()).ok()?,
            };
            Some(Message::User(UserMessage {
                content: UserContent::Blocks(content),
                timestamp: message.get("timestamp")?.as_u64().unwrap_or(0),
            }))
        }
        _ => None,
    }
}

/// A user, assistant or tool-result message. One holding content blocks of
/// a kind this agent does not know (a newer version's) is read without
/// them rather than dropped whole, which left two user messages in a row;
/// one that still cannot be read is left out, and the user is told once.
fn read_message(mut message: Value) -> Option<Message> {
    const KNOWN: [&str; 4] = ["text", "image", "thinking", "toolCall"];
    let error = match serde_json::from_value(message.clone()) {
        Ok(read) => return Some(read),
        Err(error) => error,
    };
    if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
        blocks.retain(|block| {
            block
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| KNOWN.contains(&kind))
        });
        if let Ok(read) = serde_json::from_value(message) {
            return Some(read);
        }
    }
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            "a saved message could not be read and is left out of the conversation: {error}"
        );
    }
    None
}

/// The text blocks of `blocks` joined, images left out.
pub fn blocks_text(blocks: &[Content]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            Content::Text(text) => Some(text.text.as_str()),
            Content::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// The text of a user message.
pub fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => text.clone(),
        UserContent::Blocks(blocks) => blocks_text(blocks),
    }
}

/// A session file's text, read.
pub(super) struct ParsedSession {
    pub header: SessionHeader,
    pub entries: Vec<Entry>,
    /// The numbers (from 1) of the lines that are not entries and were
    /// left out: edited by hand, or cut by a crash mid-write.
    pub unread_lines: Vec<usize>,
}

/// The header and the entries of a session file's text; `None` without a
/// valid header. Lines that do not parse are skipped, and counted.
pub(super) fn parse_session(content: &str) -> Option<ParsedSession> {
    let mut unread_lines = Vec::new();
    let mut lines = content
        .split('\n')
        .enumerate()
        .map(|(at, line)| (at + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
        .filter_map(|(number, line)| {
            let entry = Entry::parse(line);
            if entry.is_none() {
                unread_lines.push(number);
            }
            entry
        });
    let header: SessionHeader = agent_ai::json_text::from_str(lines.next()?.text()).ok()?;
    if header.kind != "session" {
        return None;
    }
    let entries: Vec<Entry> = lines.collect();
    let entries = match header.version.unwrap_or(1) {
        0 | 1 => from_version_1(entries),
        _ => entries,
    };
    Some(ParsedSession {
        header,
        entries,
        unread_lines,
    })
}

/// Pi's version 1 entries (a list, without ids) as a chain: each entry
/// without an id gets one and hangs under the one before it, and a
/// compaction's `firstKeptEntryIndex` (a line of the file, the header's
/// being 0) becomes that entry's `firstKeptEntryId`, as Pi's migration
/// does. Pi writes the migrated file back; here the file is left as it is,
/// so the ids are made from the entries' places and come out the same at
/// every load (entries appended since hang under them by those ids).
fn from_version_1(entries: Vec<Entry>) -> Vec<Entry> {
    let mut migrated: Vec<Entry> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.into_iter().enumerate() {
        if entry.id().is_some() {
            migrated.push(entry);
            continue;
        }
        let Value::Object(mut fields) = entry.value() else {
            migrated.push(entry);
            continue;
        };
        let parent = migrated.last().and_then(Entry::id).map(str::to_owned);
        fields.insert("id".into(), Value::String(format!("v1-{index}")));
        fields.insert("parentId".into(), parent.map_or(Value::Null, Value::String));
        if let Some(kept) = fields.remove("firstKeptEntryIndex") {
            let target = kept
                .as_u64()
                .and_then(|line| usize::try_from(line).ok()?.checked_sub(1))
                .and_then(|at| migrated.get(at))
                .and_then(Entry::id);
            if let Some(target) = target {
                fields.insert("firstKeptEntryId".into(), Value::String(target.to_owned()));
            }
        }
        migrated.push(Entry::of(&Value::Object(fields)));
    }
    migrated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_message_is_context_under_either_of_pis_names() {
        for role in ["custom", "hookMessage"] {
            let message =
                serde_json::json!({"role": role, "content": "from a hook", "timestamp": 7});
            assert_eq!(
                message_from_entry(message),
                Some(Message::User(UserMessage {
                    content: UserContent::Blocks(vec![Content::text("from a hook")]),
                    timestamp: 7,
                })),
                "{role}"
            );
        }
    }

    /// A block of a kind a newer version added is left out, not the whole
    /// message (the context then had two user messages in a row).
    #[test]
    fn a_message_with_an_unknown_block_keeps_the_blocks_it_knows() {
        let message = serde_json::json!({"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": "listen"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        ]});
        assert_eq!(
            message_from_entry(message),
            Some(Message::User(UserMessage {
                content: UserContent::Blocks(vec![Content::text("listen")]),
                timestamp: 1,
            }))
        );
        assert_eq!(
            message_from_entry(serde_json::json!({"role": "user", "content": 5})),
            None
        );
    }
}
