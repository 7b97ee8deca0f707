//! The built-in tools, one per file.

pub mod find;
pub mod grep;
