//! Helpers shared by the built-in tools, one concern a module: truncation,
//! path resolution, output notices, Node-worded file-system errors, the order
//! of names, and the walk policy of grep and find.

pub mod ansi;
pub mod atomic_write;
pub mod cancel;
pub mod collate;
pub mod diff;
pub mod fs_error;
pub mod fuzzy;
pub mod image;
pub mod lines;
pub mod mutation_queue;
pub mod notices;
pub mod output;
pub mod paths;
pub mod truncate;
pub mod walk;
