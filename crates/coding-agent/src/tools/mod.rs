//! The built-in tools, one per file.

pub mod bash;
pub mod edit;
pub mod find;
pub mod grep;
pub mod read;
pub mod write;
