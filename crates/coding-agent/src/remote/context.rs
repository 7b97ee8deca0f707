//! The project's `AGENTS.md`/`CLAUDE.md` read where the project is: on the
//! remote host, from its root down to the remote working directory, in the
//! order and with the names [`crate::prompt::load_context_files`] uses
//! locally. The agent directory's own file stays local.

use std::path::Path;

use futures::future::join_all;

use super::ops::RemoteOperations;
use crate::prompt::{ContextFile, context_file_in};
use crate::tools::read::ops::LocalReadOperations;

/// The context files for `cwd` on the host of `ops`: the local agent
/// directory's first, then one per remote directory from `/` down to `cwd`.
pub async fn load_remote_context_files(
    agent_dir: &Path,
    ops: &RemoteOperations,
    cwd: &Path,
) -> Vec<ContextFile> {
    let local = context_file_in(&LocalReadOperations, agent_dir).await;
    let mut files: Vec<ContextFile> = local.into_iter().collect();
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    let found = join_all(dirs.into_iter().map(|dir| context_file_in(ops, dir))).await;
    files.extend(found.into_iter().flatten());
    files
}
