//! The built-in tools, one per file.
