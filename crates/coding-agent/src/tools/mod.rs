//! The built-in tools, one per file.

pub mod edit;
pub mod read;
pub mod write;
