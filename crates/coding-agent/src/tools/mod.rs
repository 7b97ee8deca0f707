//! The built-in tools, one per file.

pub mod edit;
pub mod write;
