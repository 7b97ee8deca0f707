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
//! The file keeps the conversation as it happened, failed answers and tool
//! calls left without a result included; what the model is sent again is
//! repaired in one place, the providers' replay repair
//! ([`agent_ai::providers::transform`]).

pub mod compacted;
mod entry;
mod format;
mod ids;
mod manager;
mod tree;

pub use compacted::{CompactionDetails, CompactionResult, ContextItem, HistoryItem};
pub use entry::Entry;
pub(crate) use format::message_from_entry;
pub use format::{
    BashExecution, SESSION_VERSION, SessionHeader, bash_execution_text, blocks_text, user_text,
};
pub use ids::{iso_timestamp, uuid_v4};
pub use manager::{
    SessionError, SessionManager, find_most_recent_session, find_session_by_id, has_session_header,
    session_dir, session_title,
};
pub use tree::{TreeItem, TreeRow};
