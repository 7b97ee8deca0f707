//! Sessions: a conversation saved as a JSONL file, one entry per line, in
//! Pi's version 3 format, so Pi and this agent can read each other's files.
//!
//! ```text
//! {"type":"session","version":3,"id":"<uuid>","timestamp":"<ISO>","cwd":"/work"}
//! {"type":"message","id":"1a2b3c4d","parentId":null,"timestamp":"<ISO>","message":{"role":"user",...}}
//! {"type":"message","id":"5e6f7a8b","parentId":"1a2b3c4d","timestamp":"<ISO>","message":{"role":"assistant",...}}
//! ```
//!
//! Entries form a tree through `parentId`; the conversation is the path from
//! the last entry back to the root. Each message is appended (and flushed) as
//! it completes. As in Pi, nothing is written until the first assistant
//! message exists, so a run that never reached the model leaves no file.
//!
//! Files live in `<agent dir>/sessions/--<cwd with / as ->--/<time>_<uuid>.jsonl`.
//! Loading skips lines that do not parse (a process killed mid-write leaves a
//! truncated last line); the next append starts on a fresh line.
//!
//! What is replayed to the model is made valid by [`replayable_messages`]
//! (Pi's `transformMessages`): an assistant message that ended in error or was
//! aborted stays in the file but is not sent, and a tool call left without a
//! result gets the error result `No result provided`.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_ai::message::now_millis;
use agent_ai::{Content, Message, StopReason, ToolResultMessage, UserContent, UserMessage};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub mod compacted;
pub use compacted::{CompactionDetails, CompactionResult};

/// The session format version written (Pi's `CURRENT_SESSION_VERSION`).
pub const SESSION_VERSION: u32 = 3;

/// The text of the synthetic result of a tool call that never got one (Pi's text).
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `session`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Format version (absent in Pi's version 1 files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The session's UUID.
    pub id: String,
    /// When the session started (ISO 8601, UTC).
    pub timestamp: String,
    /// The working directory it ran in.
    #[serde(default)]
    pub cwd: String,
    /// The session this one was started from, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

/// Why a session file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Reading or writing the file failed.
    #[error("session file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
}

/// One session: its header, its entries, and where (if anywhere) it is saved.
#[derive(Debug)]
pub struct SessionManager {
    header: SessionHeader,
    /// Every entry after the header, as written (unknown entry types kept).
    entries: Vec<Value>,
    /// The entry new entries hang under.
    leaf_id: Option<String>,
    /// Where the session is saved; `None` for `--no-session`.
    file: Option<PathBuf>,
    /// Whether the file holds every entry so far.
    flushed: bool,
    /// The file does not end with a newline (a truncated last line).
    needs_newline: bool,
    /// The directory new sessions go to.
    session_dir: Option<PathBuf>,
    cwd: PathBuf,
}

impl SessionManager {
    /// A session that is never written (`--no-session`).
    pub fn in_memory(cwd: &Path) -> Self {
        SessionManager {
            header: SessionHeader::new(cwd, None),
            entries: Vec::new(),
            leaf_id: None,
            file: None,
            flushed: false,
            needs_newline: false,
            session_dir: None,
            cwd: cwd.to_path_buf(),
        }
    }

    /// A new session saved in `session_dir` (see [`session_dir`]).
    pub fn create(cwd: &Path, session_dir: &Path) -> Self {
        let mut session = Self::in_memory(cwd);
        session.session_dir = Some(session_dir.to_path_buf());
        session.new_session(None);
        session
    }

    /// The session in `path`; a missing, empty or headerless file starts a
    /// new session that will be saved at `path`.
    pub fn open(path: &Path, cwd: &Path) -> Result<Self, SessionError> {
        let io_error = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut session = Self::in_memory(cwd);
        session.session_dir = path.parent().map(Path::to_path_buf);
        session.file = Some(std::path::absolute(path).map_err(io_error)?);
        let content = match std::fs::read(path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(session),
            Err(e) => return Err(io_error(e)),
        };
        let Some((header, entries)) = parse_session(&content) else {
            // Pi starts afresh in place of a file without a valid header.
            session.truncate_file().map_err(io_error)?;
            return Ok(session);
        };
        session.leaf_id = entries
            .last()
            .and_then(|e| e.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        session.header = header;
        session.entries = entries;
        session.flushed = true;
        session.needs_newline = !content.is_empty() && !content.ends_with('\n');
        Ok(session)
    }

    /// The most recently modified session of `session_dir`, or a new one there.
    pub fn continue_recent(cwd: &Path, session_dir: &Path) -> Result<Self, SessionError> {
        match find_most_recent_session(session_dir) {
            Some(path) => Self::open(&path, cwd),
            None => Ok(Self::create(cwd, session_dir)),
        }
    }

    /// Starts a new, empty session (in the same directory, when saved).
    pub fn new_session(&mut self, parent_session: Option<String>) {
        self.header = SessionHeader::new(&self.cwd, parent_session);
        self.entries.clear();
        self.leaf_id = None;
        self.flushed = false;
        self.needs_newline = false;
        self.file = self.session_dir.as_ref().map(|dir| {
            let stamp = self.header.timestamp.replace([':', '.'], "-");
            dir.join(format!("{stamp}_{}.jsonl", self.header.id))
        });
    }

    /// The header (written as the first line, and by `--mode json`).
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Where the session is saved, if it is.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The conversation: the messages on the path from the root to the last
    /// entry, as the agent holds them (see [`replayable_messages`] for what
    /// the model is sent). After a compaction: its summary, then the kept
    /// messages (see [`compacted`]).
    pub fn messages(&self) -> Vec<Message> {
        compacted::context_messages(&self.branch())
    }

    /// The entries on the path from the root to the last entry, in order.
    pub fn branch(&self) -> Vec<&Value> {
        let by_id: HashMap<&str, &Value> = self
            .entries
            .iter()
            .filter_map(|e| Some((e.get("id")?.as_str()?, e)))
            .collect();
        let mut path = Vec::new();
        let mut current = self.entries.last();
        while let Some(entry) = current {
            path.push(entry);
            current = entry
                .get("parentId")
                .and_then(Value::as_str)
                .and_then(|parent| by_id.get(parent).copied());
            if path.len() > self.entries.len() {
                break; // a cycle; a well-formed file has none
            }
        }
        path.reverse();
        path
    }

    /// When the latest compaction on the branch was written (milliseconds;
    /// 0 without one): usage reported before it counted the old context.
    pub fn last_compaction_time(&self) -> u64 {
        self.branch()
            .into_iter()
            .rev()
            .find(|e| compacted::entry_type(e) == Some("compaction"))
            .map_or(0, compacted::compaction_time)
    }

    /// Records a compaction (Pi's `compaction` entry); [`SessionManager::messages`]
    /// is then the summary and the kept messages.
    pub fn append_compaction(&mut self, result: &CompactionResult) -> Result<(), SessionError> {
        self.append_fields(
            "compaction",
            [
                ("summary", json!(result.summary)),
                ("firstKeptEntryId", json!(result.first_kept_entry_id)),
                ("tokensBefore", json!(result.tokens_before)),
                ("details", json!(result.details)),
                ("fromHook", json!(false)),
            ],
        )
    }

    /// Appends a message as a child of the last entry; written at once once
    /// the session holds an assistant message.
    pub fn append_message(&mut self, message: &Message) -> Result<(), SessionError> {
        let value = serde_json::to_value(message).unwrap_or(Value::Null);
        self.append_entry("message", "message", value)
    }

    /// Records a user `bash` run (Pi's `bashExecution` message).
    pub fn append_bash_execution(&mut self, execution: &BashExecution) -> Result<(), SessionError> {
        let value = serde_json::to_value(execution).unwrap_or(Value::Null);
        self.append_entry("message", "message", value)
    }

    /// Records the session's display name (Pi's `session_info` entry).
    pub fn append_session_name(&mut self, name: &str) -> Result<(), SessionError> {
        self.append_entry("session_info", "name", Value::String(name.to_owned()))
    }

    /// The latest name given with [`SessionManager::append_session_name`].
    pub fn name(&self) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("session_info"))
            .find_map(|e| e.get("name").and_then(Value::as_str))
            .map(str::to_owned)
    }

    /// Records a switch of model (Pi's `model_change` entry).
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<(), SessionError> {
        self.append_fields(
            "model_change",
            [
                ("provider", Value::String(provider.to_owned())),
                ("modelId", Value::String(model_id.to_owned())),
            ],
        )
    }

    fn append_entry(&mut self, kind: &str, key: &str, value: Value) -> Result<(), SessionError> {
        self.append_fields(kind, [(key, value)])
    }

    /// Appends an entry of type `kind` with `fields` after its id, parent and
    /// timestamp, as a child of the last entry.
    fn append_fields<'a>(
        &mut self,
        kind: &str,
        fields: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Result<(), SessionError> {
        let id = self.fresh_id();
        let mut entry = json!({
            "type": kind,
            "id": id,
            "parentId": self.leaf_id,
            "timestamp": iso_timestamp(now_millis()),
        });
        if let Value::Object(map) = &mut entry {
            for (key, value) in fields {
                map.insert(key.to_owned(), value);
            }
        }
        self.entries.push(entry);
        self.leaf_id = Some(id);
        self.persist()
    }

    /// Writes what the file lacks, once there is an assistant message.
    fn persist(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        let has_assistant = self
            .entries
            .iter()
            .any(|e| e.pointer("/message/role").and_then(Value::as_str) == Some("assistant"));
        if !has_assistant {
            return Ok(());
        }
        let mut text = String::new();
        if self.needs_newline {
            text.push('\n');
        }
        if self.flushed {
            if let Some(last) = self.entries.last() {
                text.push_str(&format!("{last}\n"));
            }
        } else {
            let header = serde_json::to_string(&self.header).unwrap_or_default();
            text.push_str(&format!("{header}\n"));
            for entry in &self.entries {
                text.push_str(&format!("{entry}\n"));
            }
        }
        let io_error = |source| SessionError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_error)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_error)?;
        file.write_all(text.as_bytes()).map_err(io_error)?;
        file.flush().map_err(io_error)?;
        self.flushed = true;
        self.needs_newline = false;
        Ok(())
    }

    fn truncate_file(&self) -> io::Result<()> {
        match &self.file {
            Some(path) => File::create(path).map(drop),
            None => Ok(()),
        }
    }

    /// 8 hex digits not used by another entry (Pi's `generateId`).
    fn fresh_id(&self) -> String {
        loop {
            let id = format!("{:08x}", random_u64() as u32);
            let taken = self
                .entries
                .iter()
                .any(|e| e.get("id").and_then(Value::as_str) == Some(id.as_str()));
            if !taken {
                return id;
            }
        }
    }
}

/// A user `bash` run as Pi records it (`role: "bashExecution"`); the model
/// sees it as a user message (see [`bash_execution_text`]).
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether it was cancelled.
    pub cancelled: bool,
    /// Whether `output` is only the tail.
    pub truncated: bool,
    /// Where the whole output is, when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
    /// Kept out of the model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
}

impl BashExecution {
    /// The user message the model reads for this run.
    pub fn to_user_message(&self) -> Message {
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![Content::text(bash_execution_text(self))]),
            timestamp: self.timestamp,
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
pub(crate) fn message_from_entry(message: &Value) -> Option<Message> {
    match message.get("role")?.as_str()? {
        "user" | "assistant" | "toolResult" => serde_json::from_value(message.clone()).ok(),
        "bashExecution" => {
            let run: BashExecution = serde_json::from_value(message.clone()).ok()?;
            (run.exclude_from_context != Some(true)).then(|| run.to_user_message())
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

/// The header and the entries of a session file's text; `None` without a
/// valid header. Lines that do not parse are skipped.
fn parse_session(content: &str) -> Option<(SessionHeader, Vec<Value>)> {
    let mut lines = content
        .split('\n')
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok());
    let header: SessionHeader = serde_json::from_value(lines.next()?).ok()?;
    if header.kind != "session" {
        return None;
    }
    Some((header, lines.collect()))
}

/// What the model is sent of a conversation (Pi's `transformMessages`):
/// assistant messages that ended in `error` or `aborted` are left out, and a
/// tool call with no result before the next assistant or user message gets
/// the error result [`NO_RESULT_PROVIDED`].
pub fn replayable_messages(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let close_pending = |out: &mut Vec<Message>,
                         pending: &mut Vec<(String, String)>,
                         answered: &mut Vec<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                out.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![Content::text(NO_RESULT_PROVIDED)],
                    details: None,
                    is_error: true,
                    timestamp: now_millis(),
                }));
            }
        }
        answered.clear();
    };
    for message in messages {
        match message {
            Message::Assistant(assistant) => {
                close_pending(&mut out, &mut pending, &mut answered);
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    continue;
                }
                pending = assistant
                    .tool_calls()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect();
                out.push(message.clone());
            }
            Message::ToolResult(result) => {
                answered.push(result.tool_call_id.clone());
                out.push(message.clone());
            }
            Message::User(_) => {
                close_pending(&mut out, &mut pending, &mut answered);
                out.push(message.clone());
            }
        }
    }
    out
}

/// Where the sessions of `cwd` live under `agent_dir` (Pi's
/// `getDefaultSessionDir`): `sessions/--home-me-project--`.
pub fn session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    let cwd = cwd.to_string_lossy();
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(&cwd);
    let safe = trimmed.replace(['/', '\\', ':'], "-");
    agent_dir.join("sessions").join(format!("--{safe}--"))
}

/// The `.jsonl` file with a valid header modified last in `dir`.
pub fn find_most_recent_session(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .filter(|path| has_session_header(path))
        .filter_map(|path| {
            let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
            Some((modified, path))
        })
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
        .map(|(_, path)| path)
}

fn has_session_header(path: &Path) -> bool {
    let Ok(content) = std::fs::read_to_string(path) else {
        return false;
    };
    let first = content.split('\n').next().unwrap_or_default();
    serde_json::from_str::<SessionHeader>(first).is_ok_and(|h| h.kind == "session")
}

/// Milliseconds since the epoch as ISO 8601 in UTC, as JavaScript's
/// `toISOString` writes it: `2025-01-31T09:05:00.123Z`.
pub fn iso_timestamp(millis: u64) -> String {
    let secs = millis / 1000;
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        millis % 1000
    )
}

/// Year, month and day of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// 64 unpredictable bits: std's per-process random hash keys mixed with the
/// clock and a counter (ids need to be unique, not secret).
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.write_u128(nanos);
    hasher.finish()
}

/// A random (version 4) UUID, as Pi's `randomUUID` gives session ids.
pub fn uuid_v4() -> String {
    let hi = random_u64();
    let lo = random_u64();
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamp_matches_javascript() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_738_314_300_123), "2025-01-31T09:05:00.123Z");
        assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn uuid_has_the_version_4_shape() {
        let id = uuid_v4();
        let parts: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        assert_ne!(uuid_v4(), id);
    }

    #[test]
    fn session_dir_encodes_the_cwd_as_pi_does() {
        assert_eq!(
            session_dir(Path::new("/agent"), Path::new("/home/me/my:proj")),
            PathBuf::from("/agent/sessions/--home-me-my-proj--")
        );
    }
}
