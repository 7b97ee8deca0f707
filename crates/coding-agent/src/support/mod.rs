//! Helpers several built-in tools share, one concern a module: truncation,
//! path resolution, output notices, cancellation, Node-worded file-system
//! errors, atomic writes and the per-file mutation queue (edit and write), and
//! the walk policy of grep and find. A helper only one tool uses lives in that
//! tool's folder.

pub mod atomic_write;
pub mod cancel;
pub mod fs_error;
pub mod js_number;
pub mod mutation_queue;
pub mod notices;
pub mod paths;
pub mod truncate;
pub mod walk;
