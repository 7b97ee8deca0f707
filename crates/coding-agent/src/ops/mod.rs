//! The narrow traits through which each tool reaches files and processes, one
//! per tool, each with a local implementation. Remote (SSH) and test
//! implementations plug in beside them.

pub mod bash;
pub mod edit;
pub mod find;
pub mod grep;
pub mod ls;
pub mod read;
pub mod write;
