//! Helpers shared by the built-in tools: one home each for truncation, path
//! resolution, output notices and the walk policy of grep and find.

pub mod notices;
pub mod paths;
pub mod truncate;
pub mod walk;
