//! The project's `AGENTS.md`/`CLAUDE.md` read where the project is: on the
//! remote host, from its root down to the remote working directory, in the
//! order and with the names [`crate::prompt::load_context_files`] uses
//! locally. The agent directory's own file stays local.

use std::path::Path;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::ops::RemoteOperations;
use crate::prompt::{CONTEXT_FILE_NAMES, ContextFile, context_file_in};
use crate::tools::read::ops::ReadOperations;

/// The context files for `cwd` on the host of `ops`: the local agent
/// directory's first, then one per remote directory from `/` down to `cwd`.
pub async fn load_remote_context_files(
    agent_dir: &Path,
    ops: &RemoteOperations,
    cwd: &Path,
) -> Vec<ContextFile> {
    let mut files: Vec<ContextFile> = context_file_in(agent_dir).into_iter().collect();
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    let found = join_all(dirs.into_iter().map(|dir| remote_context_file_in(ops, dir))).await;
    files.extend(found.into_iter().flatten());
    files
}

/// The first context file in the remote `dir` that can be read as text.
async fn remote_context_file_in(ops: &RemoteOperations, dir: &Path) -> Option<ContextFile> {
    let never = CancellationToken::new();
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        if let Ok(bytes) = ops.read_all(&path, &never).await
            && let Ok(content) = String::from_utf8(bytes)
        {
            return Some(ContextFile { path, content });
        }
    }
    None
}
