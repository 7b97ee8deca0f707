//! Helpers shared by the built-in tools: one home each for truncation, path
//! resolution and output notices.

pub mod ansi;
pub mod notices;
pub mod output;
pub mod paths;
pub mod truncate;
