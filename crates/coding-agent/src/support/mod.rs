//! Helpers shared by the built-in tools: one home each for truncation, path
//! resolution, output notices, the order of names and Node-worded I/O errors.

pub mod collate;
pub mod node_error;
pub mod notices;
pub mod paths;
pub mod truncate;
