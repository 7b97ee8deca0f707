//! The session manager: one session's entries in memory and on disk, and
//! where the sessions of a working directory are kept.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use agent_ai::message::now_millis;
use agent_ai::{Message, ThinkingLevel};
use serde_json::{Value, json};

use super::entry::Entry;
use super::format::{
    BashExecution, ParsedSession, SESSION_VERSION, SessionHeader, message_from_entry,
    parse_session, user_text,
};
use super::ids::{iso_timestamp, random_u64};

/// Why a session file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Reading or writing the file failed.
    #[error("session file {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed (in the message, not a `source()`: shown once).
        error: io::Error,
    },
    /// `/tree` named an entry the session does not hold.
    #[error("no entry with the id {0} in this session")]
    UnknownEntry(String),
    /// `fork` named an entry that is not a user message of the branch.
    #[error("Invalid entry ID for forking: {0}")]
    NotAUserMessage(String),
    /// No session in the directory has this id (or one starting with it).
    #[error("no session with the id {id} in {}", dir.display())]
    UnknownId {
        /// The id as given.
        id: String,
        /// The directory searched.
        dir: PathBuf,
    },
    /// Several sessions' ids start with the one given.
    #[error("the id {id} starts {} session ids ({}): give more of it", matches.len(), matches.join(", "))]
    AmbiguousId {
        /// The id as given.
        id: String,
        /// The ids it starts.
        matches: Vec<String>,
    },
    /// The file holds something other than a session: it is left as it is.
    #[error(
        "{} is not a session file (its first line is not a session header); it was left as it is. Give the path of a session file (or, to start a session, a new path)",
        path.display()
    )]
    NotASession {
        /// The file.
        path: PathBuf,
    },
    /// A file read for the session it holds (`--export`, `--fork`) is
    /// empty or blank: opened, it would start a new session.
    #[error("{} is empty: not a session file", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The session's file was replaced while the session ran (`echo notes
    /// > file`): it is left as it is, and the entries wait.
    #[error(
        "the session file {} was replaced by something that is not a session (another program wrote over it); it is left as it is, and this conversation is not being saved. Move that file aside or remove it: the next message then writes the whole session there again",
        path.display()
    )]
    Replaced {
        /// The file.
        path: PathBuf,
    },
}

/// Writes `bytes`, counting what was written when a write fails part way
/// (a full disk): `write_all` does not say.
fn write_counted(file: &mut File, bytes: &[u8]) -> (usize, io::Result<()>) {
    let mut sent = 0;
    while sent < bytes.len() {
        match file.write(&bytes[sent..]) {
            Ok(0) => return (sent, Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => sent += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return (sent, Err(error)),
        }
    }
    (sent, file.flush())
}

/// After an append that wrote `sent` bytes of lines ending at `ends` (after
/// a newline first, if `needs_newline`): how many lines are whole in the
/// file, and whether it now ends in a line cut short. What reached the file
/// stays: the next write starts after the whole lines, on a line of its own
/// if one was cut (it is skipped when read). Writing them again would put
/// them in twice.
fn after_partial_write(ends: &[usize], sent: usize, needs_newline: bool) -> (usize, bool) {
    let whole = ends.iter().take_while(|&&end| end <= sent).count();
    let line_start = match whole {
        0 => usize::from(needs_newline),
        n => ends[n - 1],
    };
    let cut = if sent == 0 {
        needs_newline
    } else {
        sent > line_start
    };
    (whole, cut)
}

/// One session: its header, its entries, and where (if anywhere) it is saved.
#[derive(Debug)]
pub struct SessionManager {
    header: SessionHeader,
    /// Every entry after the header, as written (unknown entry types kept);
    /// each is parsed when read ([`Entry`]).
    entries: Vec<Entry>,
    /// Where each entry with an id is in `entries`: a branch is walked, and
    /// a fresh id checked, without going through every entry (a day's
    /// session holds thousands).
    positions: HashMap<String, usize>,
    /// The entry new entries hang under.
    leaf_id: Option<String>,
    /// Where the session is saved; `None` for `--no-session`.
    file: Option<PathBuf>,
    /// How many entries the file holds (after its header); `None` before
    /// the header is written. A write that failed leaves it where it was,
    /// so the next one writes the entries it missed too.
    written: Option<usize>,
    /// The file does not end with a newline (a truncated last line).
    needs_newline: bool,
    /// The file's length after this session last read or wrote it: one
    /// found longer was written by another process too; one found shorter
    /// was cut by another program, and is written whole again.
    file_len: Option<u64>,
    /// The user was told another process writes the file too.
    told_shared: bool,
    /// The user was told the file was replaced by something that is not a
    /// session ([`SessionError::Replaced`]); until it is written again,
    /// the entries wait without a word each.
    told_replaced: bool,
    /// Written before its first answer ([`SessionManager::write_unanswered`]).
    unanswered_kept: bool,
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
            positions: HashMap::new(),
            leaf_id: None,
            file: None,
            written: None,
            needs_newline: false,
            file_len: None,
            told_shared: false,
            told_replaced: false,
            unanswered_kept: false,
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

    /// Fails as [`SessionManager::open`] would on `path` (a file that
    /// cannot be read, or is not a session), without its warnings: a check
    /// before the open itself must not say a cut line twice.
    pub fn check(path: &Path) -> Result<(), SessionError> {
        read_session_file(path).map(drop)
    }

    /// The session in `path`; a missing or empty file starts a new session
    /// that will be saved at `path`. A file that holds something else is an
    /// error and is left as it is (Pi overwrites it; docs/DEVIATIONS.md).
    pub fn open(path: &Path, cwd: &Path) -> Result<Self, SessionError> {
        let mut session = Self::in_memory(cwd);
        session.session_dir = path.parent().map(Path::to_path_buf);
        session.file = Some(std::path::absolute(path).map_err(|error| SessionError::Io {
            path: path.to_path_buf(),
            error,
        })?);
        let Some(read) = read_session_file(path)? else {
            return Ok(session);
        };
        session.file_len = Some(read.len);
        // Blank (a first write that failed): the session starts in it, and
        // its first write replaces it; reading it changes nothing.
        let Some(parsed) = read.parsed else {
            return Ok(session);
        };
        warn_of_unread_lines(path, &parsed.unread_lines);
        if let Some(version) = parsed.header.version.filter(|&v| v > SESSION_VERSION) {
            tracing::warn!(
                "{}: the session was written in format version {version}, newer than this build reads ({SESSION_VERSION}): what it does not know (entries, roles, content blocks) is left out of the conversation; update coding-agent to go on with all of it",
                path.display()
            );
        }
        let (header, entries) = (parsed.header, parsed.entries);
        session.leaf_id = last_entry_id(&entries);
        session.header = header;
        session.written = Some(entries.len());
        session.set_entries(entries);
        session.needs_newline = !read.ends_with_newline;
        Ok(session)
    }

    /// The session saved in `path`, for what reads one (`--export`,
    /// `--fork`): a missing, empty or blank file is an error, where
    /// [`SessionManager::open`] would start a new session in it (an export
    /// of an empty file wrote an empty page under a made-up id).
    pub fn open_saved(path: &Path, cwd: &Path) -> Result<Self, SessionError> {
        std::fs::metadata(path).map_err(|error| SessionError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let session = Self::open(path, cwd)?;
        // Nothing was read from it: it is blank (or was removed meanwhile).
        if session.written.is_none() {
            return Err(SessionError::Empty {
                path: path.to_path_buf(),
            });
        }
        Ok(session)
    }

    /// A new session in `session_dir` holding a copy of the session in
    /// `path`, every branch of it, at the same place (Pi's `--fork`): the
    /// two go on apart, and the file at `path` is left as it was.
    pub fn fork_from(path: &Path, cwd: &Path, session_dir: &Path) -> Result<Self, SessionError> {
        let mut session = Self::open_saved(path, cwd)?;
        session.session_dir = Some(session_dir.to_path_buf());
        session.copy_whole_tree()?;
        Ok(session)
    }

    /// Saves the sessions started after this one (`/new`, RPC
    /// `new_session`) where `other`'s would go: opening a session file
    /// elsewhere (RPC `switch_session`) does not move where new sessions
    /// are saved, as in Pi.
    pub fn save_new_sessions_as(&mut self, other: &SessionManager) {
        self.session_dir.clone_from(&other.session_dir);
    }

    /// The most recently modified session of `cwd` in `session_dir`, or a
    /// new one there; an error when a newer file there cannot be read
    /// (see [`find_most_recent_session`]).
    pub fn continue_recent(cwd: &Path, session_dir: &Path) -> Result<Self, SessionError> {
        match find_most_recent_session(session_dir, cwd)? {
            Some(path) => Self::open(&path, cwd),
            None => Ok(Self::create(cwd, session_dir)),
        }
    }

    /// Starts a new, empty session (in the same directory, when saved).
    pub fn new_session(&mut self, parent_session: Option<String>) {
        self.header = SessionHeader::new(&self.cwd, parent_session);
        self.set_entries(Vec::new());
        self.leaf_id = None;
        self.written = None;
        self.needs_newline = false;
        self.file_len = None;
        self.told_shared = false;
        self.told_replaced = false;
        self.unanswered_kept = false;
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

    /// The conversation: the messages on the path from the root to the
    /// current position, as the agent holds them (the providers repair what they replay:
    /// [`agent_ai::providers::transform`]). After a compaction: its summary,
    /// then the kept messages (see [`compacted`](super::compacted)).
    pub fn messages(&self) -> Vec<Message> {
        super::compacted::context_messages(&self.branch())
    }

    /// The context as the user sees it: [`SessionManager::messages`] with
    /// the user's commands (those kept from the model too) and the
    /// summaries as what they are (what the terminal UI draws).
    pub fn context_items(&self) -> Vec<super::ContextItem> {
        super::compacted::context_items(&self.branch())
    }

    /// The branch's whole history: every message, compacted or not, and
    /// the compactions where they happened (what an export shows).
    pub fn history(&self) -> Vec<super::compacted::HistoryItem> {
        super::compacted::history(&self.branch())
    }

    /// Replaces the entries, and where each one is.
    fn set_entries(&mut self, entries: Vec<Entry>) {
        self.positions = entries
            .iter()
            .enumerate()
            .filter_map(|(at, e)| Some((e.id()?.to_owned(), at)))
            .collect();
        self.entries = entries;
    }

    /// The entries on the path from the root to the current position (the
    /// leaf: the last entry, unless `/tree` moved it), in order.
    pub fn branch(&self) -> Vec<&Entry> {
        self.path_to(self.leaf_id.as_deref())
    }

    /// The entries on the path from the root to the entry `id`, in order
    /// (none for `None`).
    fn path_to(&self, id: Option<&str>) -> Vec<&Entry> {
        let mut path = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut current = id.and_then(|id| self.entry(id));
        // An entry seen already ends the walk: a file edited by hand (an
        // entry its own parent, two with one id) has a cycle, and its
        // messages would be sent again and again.
        while let Some(entry) = current.filter(|entry| seen.insert(std::ptr::from_ref(*entry))) {
            path.push(entry);
            current = entry
                .parent_id()
                .and_then(|parent| self.entry(parent).or_else(|| self.written_before(entry)));
        }
        path.reverse();
        path
    }

    /// The entry with an id written just before `entry`: where the walk
    /// goes on when `entry`'s parent is a line the file lacks (cut off by a
    /// crash, edited out), the lost entry's own parent in a conversation
    /// that did not branch there. Stopping at the gap instead left only
    /// what came after it (Pi does: docs/DEVIATIONS.md M21).
    fn written_before(&self, entry: &Entry) -> Option<&Entry> {
        let at = *self.positions.get(entry.id()?)?;
        self.entries[..at].iter().rev().find(|e| e.id().is_some())
    }

    /// The entry with the id `id`.
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.positions.get(id).and_then(|&at| self.entries.get(at))
    }

    /// Every entry after the header, in the order written: the whole tree.
    pub(super) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The id of the entry new entries hang under (`None`: the start).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf_id.as_deref()
    }

    /// Moves the current position to the entry `id` (`None`: before the
    /// first entry), in this file (Pi's `branch`): what follows it stays in
    /// the file, and the next entry starts a new branch there. Nothing is
    /// written: reopened, the session is at its last entry again, as in Pi.
    pub fn move_leaf(&mut self, id: Option<&str>) -> Result<(), SessionError> {
        if let Some(id) = id
            && self.entry(id).is_none()
        {
            return Err(SessionError::UnknownEntry(id.to_owned()));
        }
        self.leaf_id = id.map(str::to_owned);
        Ok(())
    }

    /// The entries a move from the current position to `to` leaves behind:
    /// from the first after the point the two paths share to the current
    /// position, in order (what a branch summary summarises).
    pub fn left_behind(&self, to: Option<&str>) -> Vec<&Entry> {
        let kept: std::collections::HashSet<&str> =
            self.path_to(to).into_iter().filter_map(Entry::id).collect();
        let mut branch = self.branch();
        let shared = branch
            .iter()
            .take_while(|e| e.id().is_some_and(|id| kept.contains(id)))
            .count();
        branch.drain(..shared);
        branch
    }

    /// What every answer in the file reported, added up: those of branches
    /// left by a fork and of compacted turns too, as Pi's footer counts.
    pub fn usage_total(&self) -> agent_ai::Usage {
        let mut total = agent_ai::Usage::default();
        let answers = self
            .entries
            .iter()
            .filter(|e| e.kind() == Some("message") && e.role() == Some("assistant"));
        // Only the usage is built; the rest of each answer is skipped over.
        #[derive(serde::Deserialize)]
        struct Answer {
            message: Reported,
        }
        #[derive(serde::Deserialize)]
        struct Reported {
            usage: agent_ai::Usage,
        }
        for answer in answers.filter_map(|e| serde_json::from_str::<Answer>(e.text()).ok()) {
            total += &answer.message.usage;
        }
        total
    }

    /// When the latest compaction on the branch was written (milliseconds;
    /// 0 without one): usage reported before it counted the old context.
    pub fn last_compaction_time(&self) -> u64 {
        self.branch()
            .into_iter()
            .rev()
            .find(|e| e.kind() == Some("compaction"))
            .map_or(0, |e| super::compacted::entry_time(&e.value()))
    }

    /// The user messages on the branch with their entry ids, oldest first
    /// (what RPC `get_fork_messages` offers to fork from).
    pub fn user_messages(&self) -> Vec<(String, String)> {
        self.branch()
            .into_iter()
            .filter(|e| e.role() == Some("user"))
            .filter_map(|e| {
                let id = e.id()?.to_owned();
                let text = match message_from_entry(e.value().get_mut("message")?.take())? {
                    Message::User(user) => user_text(&user.content),
                    _ => return None,
                };
                Some((id, text))
            })
            .collect()
    }

    /// Pi's fork: a new session (whose parent is this one) holding the
    /// branch before the user message `entry_id`; returns that message's
    /// text, for the user to edit and send again.
    pub fn fork_before(&mut self, entry_id: &str) -> Result<String, SessionError> {
        let (at, text) = self.fork_point(entry_id)?;
        self.continue_in_new_session(at)?;
        Ok(text)
    }

    /// Where on the branch the user message `entry_id` is, and its text:
    /// what [`SessionManager::fork_before`] goes back to.
    pub fn fork_point(&self, entry_id: &str) -> Result<(usize, String), SessionError> {
        let branch = self.branch();
        let at = branch.iter().position(|e| e.id() == Some(entry_id));
        let user =
            at.and_then(|at| message_from_entry(branch[at].value().get_mut("message")?.take()));
        match (at, user) {
            (Some(at), Some(Message::User(user))) => Ok((at, user_text(&user.content))),
            _ => Err(SessionError::NotAUserMessage(entry_id.to_owned())),
        }
    }

    /// Pi's clone: a new session (whose parent is this one) holding the
    /// whole branch, so the two can go on apart.
    pub fn clone_branch(&mut self) -> Result<(), SessionError> {
        let len = self.branch().len();
        self.continue_in_new_session(len)
    }

    /// Starts a new session file holding every entry of this one, each
    /// branch (Pi's `forkFrom`), at the same leaf.
    fn copy_whole_tree(&mut self) -> Result<(), SessionError> {
        let (entries, leaf) = (self.entries.clone(), self.leaf_id.clone());
        let parent = self.file.as_ref().map(|file| file.display().to_string());
        self.new_session(parent);
        self.leaf_id = leaf;
        self.set_entries(entries);
        self.persist()
    }

    /// Starts a new session file with the first `keep` entries of the branch.
    fn continue_in_new_session(&mut self, keep: usize) -> Result<(), SessionError> {
        let entries: Vec<Entry> = self.branch().into_iter().take(keep).cloned().collect();
        let parent = self.file.as_ref().map(|file| file.display().to_string());
        self.new_session(parent);
        self.leaf_id = last_entry_id(&entries);
        self.set_entries(entries);
        self.persist()
    }

    /// Records a compaction (Pi's `compaction` entry); [`SessionManager::messages`]
    /// is then the summary and the kept messages. A result that keeps
    /// nothing (an empty `first_kept_entry_id`) gets the entry's own id
    /// there: kept are the entries from that one up to the compaction, none.
    /// Pi rebuilds such a context the same way.
    pub fn append_compaction(
        &mut self,
        result: &mut super::CompactionResult,
    ) -> Result<(), SessionError> {
        let id = self.fresh_id();
        if result.first_kept_entry_id.is_empty() {
            result.first_kept_entry_id = id.clone();
        }
        self.append_fields_with_id(
            "compaction",
            id,
            [
                ("summary", json!(result.summary)),
                ("firstKeptEntryId", json!(result.first_kept_entry_id)),
                ("tokensBefore", json!(result.tokens_before)),
                ("details", json!(result.details)),
                ("fromHook", json!(false)),
            ],
        )
    }

    /// Records the summary of the branch a `/tree` move left (Pi's
    /// `branch_summary` entry: `fromId` is where that branch ended), at
    /// the current position: the model reads it from here on.
    pub fn append_branch_summary(
        &mut self,
        from_id: Option<&str>,
        summary: &crate::compaction::branch::BranchSummary,
    ) -> Result<(), SessionError> {
        self.append_fields(
            "branch_summary",
            [
                ("fromId", json!(from_id)),
                ("summary", json!(summary.summary)),
                ("details", json!(summary.details)),
                ("fromHook", json!(false)),
            ],
        )
    }

    /// Appends a message at the current position; written at once once
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
            .filter(|e| e.kind() == Some("session_info"))
            .find_map(|e| e.value().get("name")?.as_str().map(str::to_owned))
    }

    /// Records data for this agent, not the model (Pi's `custom` entry:
    /// `customType` and `data`; readers that do not know the type skip it).
    pub fn append_custom(&mut self, custom_type: &str, data: Value) -> Result<(), SessionError> {
        self.append_fields(
            "custom",
            [
                ("customType", Value::String(custom_type.to_owned())),
                ("data", data),
            ],
        )
    }

    /// The data of the branch's last [`SessionManager::append_custom`] entry
    /// of `custom_type`.
    pub fn last_custom(&self, custom_type: &str) -> Option<Value> {
        self.custom_data(custom_type).pop()
    }

    /// The data of the branch's [`SessionManager::append_custom`] entries
    /// of `custom_type`, in order.
    pub fn custom_data(&self, custom_type: &str) -> Vec<Value> {
        self.branch()
            .into_iter()
            .filter(|entry| entry.kind() == Some("custom"))
            .filter_map(|entry| {
                let mut value = entry.value();
                let ours = value.get("customType")?.as_str()? == custom_type;
                ours.then(|| value["data"].take())
            })
            .collect()
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

    /// Records the thinking level in force from here on (Pi's
    /// `thinking_level_change` entry).
    pub fn append_thinking_level_change(
        &mut self,
        level: ThinkingLevel,
    ) -> Result<(), SessionError> {
        self.append_entry(
            "thinking_level_change",
            "thinkingLevel",
            Value::String(level.as_str().to_owned()),
        )
    }

    /// The level of the branch's last `thinking_level_change` (`None`: none,
    /// or one naming no level this build knows).
    pub fn thinking_level(&self) -> Option<ThinkingLevel> {
        self.branch()
            .into_iter()
            .rev()
            .find(|e| e.kind() == Some("thinking_level_change"))
            .and_then(|e| e.value().get("thinkingLevel")?.as_str()?.parse().ok())
    }

    /// The provider and model id the branch used last: its last
    /// `model_change`, or the model of its last answer, whichever is later
    /// (as Pi's session context finds it); `None` in a session with neither.
    pub fn model(&self) -> Option<(String, String)> {
        self.branch().into_iter().rev().find_map(|entry| {
            let value = entry.value();
            let (provider, model) = match entry.kind()? {
                "model_change" => (value.get("provider")?, value.get("modelId")?),
                "message" => {
                    let message = value.get("message")?;
                    if message.get("role")?.as_str()? != "assistant" {
                        return None;
                    }
                    (message.get("provider")?, message.get("model")?)
                }
                _ => return None,
            };
            Some((provider.as_str()?.to_owned(), model.as_str()?.to_owned()))
        })
    }

    fn append_entry(&mut self, kind: &str, key: &str, value: Value) -> Result<(), SessionError> {
        self.append_fields(kind, [(key, value)])
    }

    /// Appends an entry of type `kind` with `fields` after its id, parent and
    /// timestamp, at the current position (a child of the leaf).
    fn append_fields<'a>(
        &mut self,
        kind: &str,
        fields: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Result<(), SessionError> {
        let id = self.fresh_id();
        self.append_fields_with_id(kind, id, fields)
    }

    /// [`Self::append_fields`] with an id the caller took from
    /// [`Self::fresh_id`].
    fn append_fields_with_id<'a>(
        &mut self,
        kind: &str,
        id: String,
        fields: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Result<(), SessionError> {
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
        self.positions.insert(id.clone(), self.entries.len());
        self.entries.push(Entry::of(&entry));
        self.leaf_id = Some(id);
        self.persist()
    }

    /// Writes what the file lacks, once there is an assistant message.
    /// Writes the session now, though no answer has come yet (Pi writes
    /// nothing before the first): while a failed answer waits to be asked
    /// again, for seconds or a minute, a process killed outright would lose
    /// the prompt with it.
    pub fn write_unanswered(&mut self) -> Result<(), SessionError> {
        self.unanswered_kept = true;
        self.persist()
    }

    fn persist(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        // Pi writes nothing until the first answer; once written, the file
        // has one, so only an unwritten session needs the scan.
        if self.written.is_none()
            && !self.unanswered_kept
            && !self.entries.iter().any(|e| e.role() == Some("assistant"))
        {
            return Ok(());
        }
        // Another process may have started this file since the session was
        // opened (two agents given one new `--session` file): its lines are
        // kept and this session's entries go after them, as Pi appends. A
        // header of this session's own is what a failed first write left.
        let others = self.written.is_none()
            && file_header(&path).is_some_and(|header| header.id != self.header.id);
        let first = self.written.is_none() && !others;
        // The file's length against the one this session left it at:
        // longer, another process writes it too; shorter, another program
        // cut it (`: > file`, a truncation to half).
        let change = match (self.written, self.file_len) {
            (Some(_), Some(known)) => std::fs::metadata(&path)
                .ok()
                .map(|now| now.len().cmp(&known))
                .filter(|change| change.is_ne()),
            _ => None,
        };
        if let Some(change) = change {
            let has_header = file_header(&path).is_some();
            if !has_header && !is_blank(&path) {
                // Replaced by something else: left as it is (M10). Said
                // once: each entry after it said it again. They wait, and
                // are written with the rest when the file is moved aside.
                if std::mem::replace(&mut self.told_replaced, true) {
                    return Ok(());
                }
                return Err(SessionError::Replaced { path });
            }
            if !has_header || change.is_lt() {
                // Emptied or cut short: appended to, an emptied file's
                // entries had no header (the next `--continue` found no
                // session), and a file truncated to half, taken for one
                // another process writes too, was resumed without the
                // turns it lost, though this process held them all.
                tracing::warn!(
                    "{}: the session file was cut short by another program (emptied or truncated); it is written whole again from the session this process holds",
                    path.display()
                );
                return self.write_whole_again();
            }
        }
        let grown = change.is_some_and(std::cmp::Ordering::is_gt);
        if others || grown {
            // The other's last line may be cut (it died mid-write): this
            // session's entries start on a line of their own.
            self.needs_newline = !ends_with_newline(&path);
            self.tell_shared(&path);
        }
        let mut text = String::new();
        if first {
            let header = serde_json::to_string(&self.header).unwrap_or_default();
            text.push_str(&format!("{header}\n"));
        } else if self.needs_newline {
            text.push('\n');
        }
        // Where each entry's line ends in `text`.
        let mut ends = Vec::new();
        let from = self.written.unwrap_or(0);
        for entry in self.entries.iter().skip(from) {
            text.push_str(entry.text());
            text.push('\n');
            ends.push(text.len());
        }
        let io_error = |error| SessionError::Io {
            path: path.clone(),
            error,
        };
        if let Some(dir) = path.parent() {
            private_dir(dir).map_err(io_error)?;
        }
        // The first write puts the header first: the file holds no session
        // yet (it is new, blank, or what a failed first write left), so it
        // is replaced. Later ones append.
        let mut file = match if first && !path.exists() {
            // Created only if still absent: another process may be making
            // it now, and its header must not be truncated away.
            private_file().write(true).create_new(true).open(&path)
        } else if first {
            File::create(&path)
        } else {
            OpenOptions::new().append(true).open(&path)
        } {
            Ok(file) => file,
            // Another process made it meanwhile: judged again (appended to).
            Err(error) if first && error.kind() == io::ErrorKind::AlreadyExists => {
                return self.persist();
            }
            // Removed while the session ran: it is written whole again
            // (appended to a new file, the entries would have no header).
            Err(error) if !first && error.kind() == io::ErrorKind::NotFound => {
                return self.write_whole_again();
            }
            Err(error) => return Err(io_error(error)),
        };
        let (sent, outcome) = write_counted(&mut file, text.as_bytes());
        self.file_len = file.metadata().ok().map(|m| m.len());
        if let Err(error) = outcome {
            if !first {
                let (whole, cut) = after_partial_write(&ends, sent, self.needs_newline);
                self.written = Some(from + whole);
                self.needs_newline = cut;
            }
            return Err(io_error(error));
        }
        self.written = Some(self.entries.len());
        self.needs_newline = false;
        self.told_replaced = false;
        Ok(())
    }

    /// Writes the header and every entry again, replacing what the file
    /// holds: it was emptied, cut short or removed while the session ran,
    /// and what it lost is only here.
    fn write_whole_again(&mut self) -> Result<(), SessionError> {
        self.written = None;
        self.needs_newline = false;
        self.persist()
    }

    /// Tells the user, once, that another process writes the session file
    /// too: each goes on in a branch of its own, and the file, resumed,
    /// goes on from the entry written last, so one side's turns would be
    /// out of the conversation without a word.
    fn tell_shared(&mut self, path: &Path) {
        if std::mem::replace(&mut self.told_shared, true) {
            return;
        }
        tracing::warn!(
            "{}: another process is writing this session file too; each goes on in a branch of its own, and resumed, the file goes on from the entry written last (/tree shows the other branch)",
            path.display()
        );
    }

    /// 8 hex digits not used by another entry (Pi's `generateId`).
    fn fresh_id(&self) -> String {
        loop {
            let id = format!("{:08x}", random_u64() as u32);
            if !self.positions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// A session file as read: its length, whether it ends a line, and the
/// session it holds (`None`: blank).
struct SessionFile {
    len: u64,
    ends_with_newline: bool,
    parsed: Option<ParsedSession>,
}

/// Reads the session file at `path`: `None` when there is none, an error
/// when it cannot be read or holds something that is not a session.
fn read_session_file(path: &Path) -> Result<Option<SessionFile>, SessionError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(SessionError::Io {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    let content = String::from_utf8_lossy(&bytes);
    let parsed = parse_session(&content);
    if parsed.is_none() && !content.trim().is_empty() {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
        });
    }
    Ok(Some(SessionFile {
        len: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        ends_with_newline: bytes.is_empty() || bytes.ends_with(b"\n"),
        parsed,
    }))
}

/// The id of the last of `entries`: the leaf a loaded or continued branch
/// goes on from.
fn last_entry_id(entries: &[Entry]) -> Option<String> {
    // A line without an id (added by hand) would leave the next entry
    // without a parent: the whole conversation before it detached.
    entries.iter().rev().find_map(Entry::id).map(str::to_owned)
}

/// Says which lines of the session file at `path` were left out: the
/// conversation they held, and maybe what came before them, is missing
/// from what the model is sent.
fn warn_of_unread_lines(path: &Path, unread: &[usize]) {
    let numbers: Vec<String> = unread.iter().map(usize::to_string).collect();
    match numbers.as_slice() {
        [] => {}
        [one] => tracing::warn!(
            "{}: line {one} is not a session entry and is left out (edited, or cut off mid-write); what it held is missing from the conversation",
            path.display()
        ),
        many => tracing::warn!(
            "{}: lines {} are not session entries and are left out (edited, or cut off mid-write); what they held is missing from the conversation",
            path.display(),
            many.join(", ")
        ),
    }
}

/// Where the sessions of `cwd` live under `agent_dir` (Pi's
/// `getDefaultSessionDir`): `sessions/--home-me-project--`.
///
/// A name longer than a file name may be (255 bytes: a working directory
/// some twenty folders deep, or fewer with CJK names) keeps its last 200
/// bytes and gets a hash of the whole path (64-bit FNV-1a: stable across
/// builds, unlike std's hasher) instead of the rest, so it is still one
/// name per directory: the session could not be saved at all.
pub fn session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    let cwd = cwd.to_string_lossy();
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(&cwd);
    let safe = trimmed.replace(['/', '\\', ':'], "-");
    let mut name = format!("--{safe}--");
    if name.len() > NAME_MAX {
        let mut tail = safe.len() - KEPT_TAIL;
        while !safe.is_char_boundary(tail) {
            tail += 1;
        }
        let hash = cwd.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        name = format!("--{hash:016x}-{}--", &safe[tail..]);
    }
    agent_dir.join("sessions").join(name)
}

/// The longest file name Linux and macOS file systems take, in bytes.
const NAME_MAX: usize = 255;

/// How much of a too-long directory name [`session_dir`] keeps, in bytes.
const KEPT_TAIL: usize = 200;

/// The `.jsonl` file with a valid header for `cwd` modified last in `dir`.
/// Sessions of other directories are passed over: names of several
/// directories can be the same (`/x/p-q` and `/x/p/q` are both
/// `--x-p-q--`), as can a `--session-dir` shared by several projects, and
/// `--continue` went on with another project's conversation.
///
/// A file newer than the one found that cannot be read (its permissions)
/// is an error naming it: it may be the session the user means to go on
/// with, and it was passed over as no session, `--continue` going on with
/// an older one without a word.
pub fn find_most_recent_session(dir: &Path, cwd: &Path) -> Result<Option<PathBuf>, SessionError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let cwd = cwd.to_string_lossy();
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .filter_map(|path| {
            let meta = std::fs::metadata(&path).ok()?;
            // Opening a FIFO would wait for a writer; a folder holds none.
            meta.is_file().then_some((meta.modified().ok()?, path))
        })
        .collect();
    files.sort_by(|a, b| b.cmp(a));
    for (_, path) in files {
        match read_header(&path) {
            Ok(Some(header)) if header.cwd == cwd => return Ok(Some(path)),
            Ok(_) => {}
            // Removed since the folder was listed.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(SessionError::Io { path, error }),
        }
    }
    Ok(None)
}

/// The session file in `dir` whose id (the name after the timestamp:
/// `<timestamp>_<id>.jsonl`) is `id` or starts with it.
pub fn find_session_by_id(dir: &Path, id: &str) -> Result<PathBuf, SessionError> {
    let unknown = || SessionError::UnknownId {
        id: id.to_owned(),
        dir: dir.to_path_buf(),
    };
    let entries = std::fs::read_dir(dir).map_err(|_| unknown())?;
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?;
            let file_id = stem.rsplit_once('_').map_or(stem, |(_, id)| id).to_owned();
            file_id.starts_with(id).then_some((file_id, path))
        })
        .collect();
    found.sort();
    if let Some((_, path)) = found.iter().find(|(file_id, _)| file_id == id) {
        return Ok(path.clone());
    }
    match found.len() {
        0 => Err(unknown()),
        1 => Ok(found.remove(0).1),
        _ => Err(SessionError::AmbiguousId {
            id: id.to_owned(),
            matches: found.into_iter().map(|(file_id, _)| file_id).collect(),
        }),
    }
}

/// How a list of saved sessions names the one at `path`: the name given
/// last (`/name`, RPC `set_session_name`), else the first line of its first
/// prompt, as Pi's session list shows them (its context may start with a
/// compaction's summary instead). Reads the file line by line, parsing only
/// the lines that can hold either: a session file can be many megabytes.
pub fn session_title(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    let (mut name, mut first) = (None, None);
    for line in io::BufRead::lines(io::BufReader::new(file)).map_while(Result::ok) {
        if line.contains("\"session_info\"") {
            let entry: Value = agent_ai::json_text::from_str(&line).unwrap_or_default();
            if entry["type"] == "session_info"
                && let Some(given) = entry["name"].as_str()
            {
                // One line in a list: line breaks and tabs become spaces.
                name = Some(given.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        } else if first.is_none() {
            first = user_message(&line);
        }
    }
    // The first line that says something: a prompt may start with blank
    // lines (a heredoc, a paste), and a blank title could not be found.
    name.or_else(|| match first? {
        Message::User(user) => super::format::user_text(&user.content)
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(str::to_owned),
        _ => None,
    })
}

/// The user message a session file's line holds, if it holds one.
fn user_message(line: &str) -> Option<Message> {
    let entry: Value = agent_ai::json_text::from_str(line).ok()?;
    let message = entry
        .get("message")
        .filter(|_| entry["type"] == "message")?;
    (message["role"] == "user")
        .then(|| serde_json::from_value(message.clone()).ok())
        .flatten()
}

/// Creates `dir` and the folders above it that are missing, readable by
/// the user alone: a session holds every prompt, file read and command
/// output of the conversation, and on a shared machine another user could
/// read them all (as the bash tool's full-output logs, they are private).
fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file readable by the user alone (see
/// [`private_dir`]).
fn private_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Whether the file at `path` ends with a line break (or is empty).
fn ends_with_newline(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = File::open(path) else {
        return true;
    };
    let mut last = [b'\n'];
    if file.seek(SeekFrom::End(-1)).is_ok() {
        let _ = file.read_exact(&mut last);
    }
    last[0] == b'\n'
}

/// Whether the first line of `path` is a session header (read alone: a
/// session file can be many megabytes).
pub fn has_session_header(path: &Path) -> bool {
    file_header(path).is_some()
}

/// Whether `path` holds only white space (or cannot be read).
fn is_blank(path: &Path) -> bool {
    std::fs::read(path).map_or(true, |bytes| bytes.trim_ascii().is_empty())
}

/// The session header the first line of `path` holds, if it holds one.
fn file_header(path: &Path) -> Option<SessionHeader> {
    read_header(path).ok().flatten()
}

/// [`file_header`], or why the file could not be read. The line is read
/// as [`SessionManager::open`] reads it: bytes that are not UTF-8 become
/// U+FFFD, a lone surrogate escape too.
fn read_header(path: &Path) -> io::Result<Option<SessionHeader>> {
    let file = File::open(path)?;
    let mut first = Vec::new();
    io::BufRead::read_until(&mut io::BufReader::new(file), b'\n', &mut first)?;
    let first = String::from_utf8_lossy(&first);
    let header = agent_ai::json_text::from_str::<SessionHeader>(first.trim_end()).ok();
    Ok(header.filter(|h| h.kind == "session"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_or_a_unique_start_of_one_finds_its_session_file() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            "2026-12-01T10-00-00-000Z_ab12cd34-0000-4000-8000-000000000001.jsonl",
            "2026-12-02T10-00-00-000Z_ab12ff00-0000-4000-8000-000000000002.jsonl",
            "2026-12-03T10-00-00-000Z_ab12cd34.jsonl",
        ];
        for name in names {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let find = |id: &str| find_session_by_id(dir.path(), id);
        assert_eq!(find("ab12f").unwrap(), dir.path().join(names[1]));
        // A whole id wins over the longer ids it starts.
        assert_eq!(find("ab12cd34").unwrap(), dir.path().join(names[2]));
        assert_eq!(
            find("ab12").unwrap_err().to_string(),
            "the id ab12 starts 3 session ids (ab12cd34, ab12cd34-0000-4000-8000-000000000001, \
             ab12ff00-0000-4000-8000-000000000002): give more of it"
        );
        assert_eq!(
            find("ffff").unwrap_err().to_string(),
            format!("no session with the id ffff in {}", dir.path().display())
        );
    }

    fn user(text: &str) -> Message {
        Message::User(agent_ai::UserMessage::text(text))
    }

    /// An empty answer from a test model.
    fn answer() -> Message {
        let model = agent_ai::Model::new("m", "p", "openai-completions");
        Message::Assistant(agent_ai::AssistantMessage::empty(&model))
    }

    /// Appends a user message with `text` and an empty answer to it.
    fn exchange(session: &mut SessionManager, text: &str) {
        session.append_message(&user(text)).unwrap();
        session.append_message(&answer()).unwrap();
    }

    /// What `session` sends the model: each user message's text, `answer`
    /// for anything else.
    fn said(session: &SessionManager) -> Vec<String> {
        session
            .messages()
            .iter()
            .map(|message| match message {
                Message::User(user) => super::super::format::user_text(&user.content),
                _ => "answer".to_owned(),
            })
            .collect()
    }

    /// A fresh temporary folder and the path of a session file in it, not
    /// written yet. The folder is the working directory of every session a
    /// test opens there, as one `--session` run of the agent would.
    struct Scratch {
        dir: tempfile::TempDir,
        path: PathBuf,
    }

    impl Scratch {
        fn new(file_name: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(file_name);
            Scratch { dir, path }
        }

        fn cwd(&self) -> &Path {
            self.dir.path()
        }

        /// The session in the file, opened as a run of the agent opens it:
        /// new while the file is missing, else read from it.
        fn open(&self) -> SessionManager {
            self.open_at(&self.path)
        }

        /// The session in the file at `path`, opened in this folder.
        fn open_at(&self, path: &Path) -> SessionManager {
            SessionManager::open(path, self.cwd()).unwrap()
        }
    }

    /// `--fork` copies the whole tree, as Pi's `forkFrom` does (the other
    /// branches were dropped), and goes on from the same leaf.
    #[test]
    fn a_fork_keeps_every_branch_and_the_leaf() {
        let scratch = Scratch::new("tree.jsonl");
        let mut session = scratch.open();
        exchange(&mut session, "root");
        let fork_point = session.leaf_id().map(str::to_owned);
        exchange(&mut session, "left");
        session.move_leaf(fork_point.as_deref()).unwrap();
        exchange(&mut session, "right");
        let forked =
            SessionManager::fork_from(&scratch.path, scratch.cwd(), scratch.cwd()).unwrap();
        assert_eq!(forked.entries().len(), session.entries().len());
        assert_eq!(forked.leaf_id(), session.leaf_id());
        assert_eq!(said(&forked), ["root", "answer", "right", "answer"]);
        assert_ne!(forked.file(), session.file());
        let reopened = scratch.open_at(forked.file().unwrap());
        assert_eq!(reopened.entries().len(), session.entries().len());
    }

    /// Two agents given one new `--session` file: the second's first save
    /// replaced the file, wiping the first's header and messages.
    #[test]
    fn a_second_session_starting_in_the_same_new_file_appends_to_it() {
        let scratch = Scratch::new("shared.jsonl");
        let mut a = scratch.open();
        let mut b = scratch.open();
        exchange(&mut a, "from A");
        exchange(&mut b, "from B");
        exchange(&mut a, "A again");
        let text = std::fs::read_to_string(&scratch.path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        assert!(lines[0].contains(&a.header().id), "{text}");
        assert!(
            lines
                .iter()
                .all(|line| serde_json::from_str::<Value>(line).is_ok())
        );
        assert!(text.contains("from A") && text.contains("from B") && text.contains("A again"));
        assert_eq!(
            said(&scratch.open()),
            ["from A", "answer", "A again", "answer"]
        );
    }

    /// A line in the middle that cannot be read (a crash, an edit) lost
    /// the conversation before it: the next entry's parent was missing, and
    /// resumed, only what came after the gap was left.
    #[test]
    fn a_lost_line_mid_file_keeps_the_conversation_before_it() {
        let scratch = Scratch::new("s.jsonl");
        let mut session = scratch.open();
        for text in ["one", "two", "three"] {
            exchange(&mut session, text);
        }
        let text = std::fs::read_to_string(&scratch.path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        assert!(lines[3].contains("two"), "{text}");
        lines[3] = "{\"type\":\"message\",\"id\":\"cut off mid";
        std::fs::write(&scratch.path, lines.join("\n") + "\n").unwrap();
        assert_eq!(
            said(&scratch.open()),
            ["one", "answer", "answer", "three", "answer"]
        );
    }

    /// A session file emptied while the session runs (`: > file`) was
    /// appended to without its header: no longer a session, and the next
    /// `--continue` started a new one. One replaced by something else is
    /// left as it is.
    #[test]
    fn a_session_file_emptied_meanwhile_is_written_whole_again() {
        let scratch = Scratch::new("s.jsonl");
        let mut session = scratch.open();
        exchange(&mut session, "one");
        std::fs::File::create(&scratch.path).unwrap();
        exchange(&mut session, "two");
        assert_eq!(said(&scratch.open()), ["one", "answer", "two", "answer"]);
    }

    /// A session file cut short while the session runs (another program
    /// truncated it to half) was taken for one another process writes
    /// too: the next entries went after the cut, and the turns it lost,
    /// still held here, were never written again (resumed: "one" and
    /// "four" without "two" and "three"). The warning is checked by
    /// `e2e_session::a_session_file_cut_short_meanwhile_is_said_and_written_whole_again`
    /// (a `tracing` subscriber set in one test misses an event whose
    /// callsite another test thread registers at the same moment).
    #[test]
    fn a_session_file_cut_short_meanwhile_is_written_whole_again() {
        let scratch = Scratch::new("s.jsonl");
        let mut session = scratch.open();
        for text in ["one", "two", "three"] {
            exchange(&mut session, text);
        }
        let written = std::fs::read(&scratch.path).unwrap();
        std::fs::write(&scratch.path, &written[..written.len() / 2]).unwrap();
        exchange(&mut session, "four");
        let text = std::fs::read_to_string(&scratch.path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + session.entries().len(), "{text}");
        assert!(
            lines
                .iter()
                .all(|line| serde_json::from_str::<Value>(line).is_ok()),
            "{text}"
        );
        assert_eq!(
            said(&scratch.open()),
            [
                "one", "answer", "two", "answer", "three", "answer", "four", "answer"
            ]
        );
    }

    /// A session file replaced while the session runs (`echo notes >
    /// file`) is left as it is. Each later entry warned with the advice for
    /// a file given at the start ("Give the path of a session file (or, to
    /// start a session, a new path)"): what happened is said, once, with
    /// what to do; moved aside, the file gets the whole session again.
    #[test]
    fn a_session_file_replaced_meanwhile_is_said_once_and_written_again_when_moved_aside() {
        let scratch = Scratch::new("s.jsonl");
        let path = &scratch.path;
        let mut session = scratch.open();
        exchange(&mut session, "one");
        std::fs::write(path, "notes of mine\n").unwrap();
        let refused = session.append_message(&user("two")).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "the session file {} was replaced by something that is not a session (another program wrote over it); it is left as it is, and this conversation is not being saved. Move that file aside or remove it: the next message then writes the whole session there again",
                path.display()
            )
        );
        session.append_message(&answer()).unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "notes of mine\n");

        std::fs::rename(path, scratch.cwd().join("notes.txt")).unwrap();
        exchange(&mut session, "three");
        let said = said(&scratch.open());
        assert_eq!(said, ["one", "answer", "two", "answer", "three", "answer"]);
    }

    /// Pi's `JSON.stringify` writes a lone surrogate escape for text cut in
    /// the middle of an emoji. Such a tool result was left out (the model
    /// read "No result provided"), and such a first prompt gave the session
    /// no title in `/resume`.
    #[test]
    fn lines_with_a_lone_surrogate_escape_are_read() {
        let scratch = Scratch::new("pi.jsonl");
        let header = serde_json::to_string(&SessionHeader::new(scratch.cwd(), None)).unwrap();
        let lines = [
            header,
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"look \ud83d","timestamp":0}}"#.to_owned(),
            r#"{"type":"message","id":"r1","parentId":"u1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"\udc00half"}],"isError":false,"timestamp":0}}"#.to_owned(),
        ];
        std::fs::write(&scratch.path, lines.join("\n") + "\n").unwrap();
        let session = scratch.open();
        let messages = session.messages();
        assert_eq!(messages.len(), 2, "{messages:?}");
        let Message::ToolResult(result) = &messages[1] else {
            panic!("{messages:?}");
        };
        assert_eq!(super::super::blocks_text(&result.content), "\u{fffd}half");
        assert_eq!(
            session.user_messages(),
            [("u1".to_owned(), "look \u{fffd}".to_owned())]
        );
        assert_eq!(
            session_title(&scratch.path).as_deref(),
            Some("look \u{fffd}")
        );
    }

    /// A fork of a blank file started an empty session, its parent a file
    /// that held none; a missing file was an error already.
    #[test]
    fn a_fork_of_a_blank_file_is_refused() {
        let scratch = Scratch::new("blank.jsonl");
        let cwd = scratch.cwd();
        std::fs::write(&scratch.path, "\n").unwrap();
        let refused = SessionManager::fork_from(&scratch.path, cwd, cwd).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("{} is empty: not a session file", scratch.path.display())
        );
        let missing = cwd.join("missing.jsonl");
        let refused = SessionManager::fork_from(&missing, cwd, cwd).unwrap_err();
        assert!(matches!(refused, SessionError::Io { .. }), "{refused}");
    }

    /// Another process writing the same file that died mid-line left its
    /// last line cut: this session's next entry was glued onto it, and both
    /// were lost as one unreadable line.
    #[test]
    fn an_entry_after_another_process_cut_line_starts_a_line_of_its_own() {
        let scratch = Scratch::new("s.jsonl");
        let mut a = scratch.open();
        exchange(&mut a, "one");
        let mut b = scratch.open();
        a.append_message(&user("two")).unwrap();
        let mut file = OpenOptions::new().append(true).open(&scratch.path).unwrap();
        io::Write::write_all(&mut file, b"{\"type\":\"message\",\"id\":\"cut").unwrap();
        b.append_message(&user("from B")).unwrap();
        let text = std::fs::read_to_string(&scratch.path).unwrap();
        let last = text.lines().last().unwrap();
        assert!(
            serde_json::from_str::<Value>(last)
                .is_ok_and(|line| line.to_string().contains("from B")),
            "{text}"
        );
        assert_eq!(said(&scratch.open()), ["one", "answer", "from B"]);
    }

    /// Sessions hold every prompt, file read and command output: their
    /// folders and files were created readable by every user.
    #[cfg(unix)]
    #[test]
    fn session_files_and_their_new_folders_are_the_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("agent/sessions/--work--");
        let mut session = SessionManager::create(dir.path(), &sessions);
        exchange(&mut session, "secret");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(session.file().unwrap()), 0o600);
        assert_eq!(mode(&sessions), 0o700);
        assert_eq!(mode(&dir.path().join("agent")), 0o700);
    }

    /// Pi writes each entry once, as it comes: one whose write failed (a
    /// full disk, a lost mount) was never written, and the next entry,
    /// whose parent it is, hung from nothing when the file was read again.
    #[test]
    fn an_entry_whose_write_failed_is_written_with_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = SessionManager::create(dir.path(), dir.path());
        let answer = answer();
        session.append_message(&user("first")).unwrap();
        session.append_message(&answer).unwrap();
        // The file cannot be opened for a while: a directory stands in its
        // place.
        let path = session.file().unwrap().to_path_buf();
        let aside = dir.path().join("aside");
        std::fs::rename(&path, &aside).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(session.append_message(&user("lost?")).is_err());
        std::fs::remove_dir(&path).unwrap();
        std::fs::rename(&aside, &path).unwrap();
        session.append_message(&answer).unwrap();

        let reopened = SessionManager::open(&path, dir.path()).unwrap();
        let said = said(&reopened);
        assert_eq!(said, ["first", "answer", "lost?", "answer"]);
    }

    #[test]
    fn an_append_cut_short_counts_the_lines_that_reached_the_file() {
        // Lines of 10 and 20 bytes: ends at 10 and 30.
        let ends = [10, 30];
        assert_eq!(after_partial_write(&ends, 0, false), (0, false));
        assert_eq!(after_partial_write(&ends, 0, true), (0, true));
        assert_eq!(after_partial_write(&ends, 4, false), (0, true));
        assert_eq!(after_partial_write(&ends, 10, false), (1, false));
        assert_eq!(after_partial_write(&ends, 17, false), (1, true));
        // After a newline of its own first: lines end at 11 and 31.
        let ends = [11, 31];
        assert_eq!(after_partial_write(&ends, 1, true), (0, false));
        assert_eq!(after_partial_write(&ends, 5, true), (0, true));
        assert_eq!(after_partial_write(&ends, 11, true), (1, false));
    }

    /// Pi's version 1 files: no version in the header, entries without ids,
    /// a compaction naming the first kept entry by its line.
    #[test]
    fn a_version_1_file_is_read_as_the_chain_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = SessionManager::create(dir.path(), dir.path());
        for text in ["first", "second"] {
            exchange(&mut session, text);
        }
        let path = session.file().unwrap().to_path_buf();
        let written = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = written
            .lines()
            .map(|line| {
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                let fields = value.as_object_mut().unwrap();
                let header = fields["type"] == "session";
                let keys: &[&str] = if header {
                    &["version"]
                } else {
                    &["id", "parentId"]
                };
                for key in keys {
                    fields.remove(*key);
                }
                value.to_string()
            })
            .filter(|line| !line.contains("thinking_level_change"))
            .collect();
        // Lines: 0 the header, 1-2 the first turn, 3-4 the second.
        lines.push(
            serde_json::json!({"type": "compaction", "timestamp": "2026-12-06T00:00:00.000Z",
                "summary": "the first turn", "firstKeptEntryIndex": 3, "tokensBefore": 10})
            .to_string(),
        );
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();

        let mut reopened = SessionManager::open(&path, dir.path()).unwrap();
        let context = said(&reopened);
        assert_eq!(context.len(), 3, "{context:?}");
        assert!(context[0].contains("the first turn"), "{context:?}");
        assert_eq!(context[1..], ["second", "answer"]);
        // Appended to, and read again: the same ids, the new entry after them.
        reopened.append_message(&user("third")).unwrap();
        let again = SessionManager::open(&path, dir.path()).unwrap();
        assert_eq!(said(&again)[1..], ["second", "answer", "third"]);
    }

    #[test]
    fn a_file_removed_while_the_session_runs_is_written_whole_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = SessionManager::create(dir.path(), dir.path());
        exchange(&mut session, "first");
        let path = session.file().unwrap().to_path_buf();
        std::fs::remove_file(&path).unwrap();
        session.append_message(&user("second")).unwrap();
        let reopened = SessionManager::open(&path, dir.path()).unwrap();
        let said = said(&reopened);
        assert_eq!(said, ["first", "answer", "second"]);
    }

    #[test]
    fn a_cycle_of_parents_is_walked_once() {
        let scratch = Scratch::new("cycle.jsonl");
        let header = serde_json::to_string(&SessionHeader::new(scratch.cwd(), None)).unwrap();
        let entry = |id: &str, parent: &str, text: &str| {
            serde_json::json!({"type": "message", "id": id, "parentId": parent,
                "timestamp": "2026-12-06T00:00:00.000Z",
                "message": {"role": "user", "content": text, "timestamp": 0}})
            .to_string()
        };
        let lines = [header, entry("a", "b", "one"), entry("b", "a", "two")];
        std::fs::write(&scratch.path, lines.join("\n") + "\n").unwrap();
        assert_eq!(said(&scratch.open()), ["one", "two"]);
    }

    #[test]
    fn opening_a_blank_file_leaves_it_as_it_is() {
        let scratch = Scratch::new("blank.jsonl");
        std::fs::write(&scratch.path, "\n\n  \n").unwrap();
        let mut session = scratch.open();
        assert_eq!(std::fs::read(&scratch.path).unwrap(), b"\n\n  \n");
        // Its first write replaces it.
        exchange(&mut session, "hi");
        let text = std::fs::read_to_string(&scratch.path).unwrap();
        assert!(text.starts_with("{\"type\":\"session\""), "{text}");
    }

    #[test]
    fn the_title_is_the_name_given_last_else_the_first_prompt_even_after_a_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = SessionManager::create(dir.path(), dir.path());
        let answer = answer();
        session
            .append_message(&user("the very first prompt"))
            .unwrap();
        session.append_message(&answer).unwrap();
        session.append_message(&user("a later one")).unwrap();
        let kept = session.leaf_id.clone().unwrap();
        session.append_message(&answer).unwrap();
        let mut compaction = super::super::CompactionResult {
            summary: "what came before".into(),
            first_kept_entry_id: kept,
            tokens_before: 100,
            details: Default::default(),
        };
        session.append_compaction(&mut compaction).unwrap();
        let Message::User(context_start) = &session.messages()[0] else {
            panic!("the context starts with the summary");
        };
        assert!(
            super::super::format::user_text(&context_start.content).contains("what came before")
        );
        let path = session.file().unwrap().to_path_buf();
        assert!(has_session_header(&path));
        assert_eq!(
            session_title(&path).as_deref(),
            Some("the very first prompt")
        );
        session.append_session_name("release work").unwrap();
        session.append_session_name("release\n1.2").unwrap();
        assert_eq!(session_title(&path).as_deref(), Some("release 1.2"));
    }

    #[test]
    fn the_usage_total_counts_every_answer_in_the_file_on_every_branch() {
        let mut session = SessionManager::in_memory(Path::new("/w"));
        let answer = |input: u64, output: u64| {
            let mut message = agent_ai::AssistantMessage::empty(&agent_ai::Model::new(
                "m",
                "p",
                "openai-completions",
            ));
            message.usage.input = input;
            message.usage.output = output;
            message.usage.cost.total = 0.5;
            Message::Assistant(message)
        };
        let user = |text: &str| Message::User(agent_ai::UserMessage::text(text));
        session.append_message(&user("one")).unwrap();
        session.append_message(&answer(10, 1)).unwrap();
        let fork = session.leaf_id().map(str::to_owned);
        session.append_message(&user("two")).unwrap();
        session.append_message(&answer(20, 2)).unwrap();
        session.move_leaf(fork.as_deref()).unwrap();
        session.append_message(&user("three")).unwrap();
        session.append_message(&answer(30, 3)).unwrap();
        let total = session.usage_total();
        assert_eq!((total.input, total.output, total.cost.total), (60, 6, 1.5));
    }

    #[test]
    fn session_dir_encodes_the_cwd_as_pi_does() {
        assert_eq!(
            session_dir(Path::new("/agent"), Path::new("/home/me/my:proj")),
            PathBuf::from("/agent/sessions/--home-me-my-proj--")
        );
    }

    /// A name Linux cannot hold left every session of a deep directory
    /// unsaved ("File name too long").
    #[test]
    fn a_session_dir_name_too_long_for_a_file_name_keeps_its_tail_and_a_hash() {
        let deep: PathBuf = ["/"]
            .into_iter()
            .chain(["d00_abcdefghij"; 22])
            .chain(["終わり"])
            .collect();
        let dir = session_dir(Path::new("/agent"), &deep);
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert!(name.len() <= NAME_MAX, "{} bytes", name.len());
        assert!(name.ends_with("-d00_abcdefghij-終わり--"), "{name}");
        assert!(
            name.starts_with("--") && name.as_bytes()[18] == b'-',
            "{name}"
        );
        let sibling = deep.with_file_name("終わりx");
        assert_ne!(session_dir(Path::new("/agent"), &sibling), dir);
        // Created and written where it names.
        let agent = tempfile::tempdir().unwrap();
        let dir = session_dir(agent.path(), &deep);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("s.jsonl"), "").unwrap();
    }
}
