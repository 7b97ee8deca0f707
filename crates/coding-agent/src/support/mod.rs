//! Helpers shared by the built-in tools: one home each for truncation, path
//! resolution and output notices.

pub mod image;
pub mod lines;
pub mod notices;
pub mod paths;
pub mod truncate;
