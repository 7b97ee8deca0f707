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
        "user" | "assistant" | "toolResult" => serde_json::from_value(message).ok(),
        "bashExecution" => {
            let run: BashExecution = serde_json::from_value(message).ok()?;
            run.context_message()
        }
        "custom" => {
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

/// The header and the entries of a session file's text; `None` without a
/// valid header. Lines that do not parse are skipped.
pub(super) fn parse_session(content: &str) -> Option<(SessionHeader, Vec<Entry>)> {
    let mut lines = content
        .split('\n')
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .filter_map(Entry::parse);
    let header: SessionHeader = serde_json::from_str(lines.next()?.text()).ok()?;
    if header.kind != "session" {
        return None;
    }
    Some((header, lines.collect()))
}
