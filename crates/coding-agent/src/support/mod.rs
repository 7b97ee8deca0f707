//! Helpers several built-in tools share, one concern a module: truncation,
//! blocking file work off the runtime,
//! path resolution, output notices, cancellation, Node-worded file-system
//! errors, atomic writes and the per-file mutation queue (edit and write), the
//! walk policy of grep and find, killing a child's process group (bash and
//! command hooks), the poison-tolerant lock, the kept tail of a child's
//! stderr (MCP servers, ssh), file-safe names (spilled results, MCP tool
//! names), Markdown front matter (prompt templates, skills) and one question
//! to a model (compaction summaries, `prompt` hooks); for tests, a seeded number
//! sequence. A helper only one tool uses lives in that tool's folder.

pub mod atomic_write;
pub mod blocking;
pub mod cancel;
pub mod front_matter;
pub mod fs_error;
pub mod js_number;
pub mod mcp_names;
pub mod mutation_queue;
pub mod notices;
pub mod one_shot;
pub mod paths;
pub mod process_group;
pub mod safe_name;
#[cfg(test)]
pub mod seeded;
pub mod stderr_tail;
pub mod sync;
pub mod truncate;
pub mod walk;
