//! The built-in tools, one per file.

pub mod bash;
