//! What `find` needs from the machine it searches: one whole glob walk.
//!
//! The request carries the pattern as the model wrote it, so a remote
//! implementation can walk next to the files and send back only the paths.
//! On this machine [`LocalSearchOperations`] walks in-process (DEVIATIONS #5) with the shared
//! policy of [`crate::support::walk`].

use std::path::PathBuf;

use async_trait::async_trait;

use tokio_util::sync::CancellationToken;

use crate::support::paths::HomeDir;
use crate::support::walk::{
    LocalSearchOperations, PathGlob, SearchError, Searched, Skipped, ToolIgnore, WalkOptions,
    check_readable, slash_path, walk,
};

/// One glob search, as the `find` tool asks for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FindRequest {
    /// The absolute directory to search.
    pub path: PathBuf,
    /// The glob, with [`PathGlob`]'s meaning.
    pub pattern: String,
    /// Stop after this many results (`None`: no limit).
    pub limit: Option<usize>,
}

/// Finds files and directories by glob.
///
/// Paths arrive absolute but not normalised (`..` possible): see
/// [the paths Operations are given](crate::tools#the-paths-operations-are-given)
/// before checking one against a root.
#[async_trait]
pub trait FindOperations: HomeDir + Send + Sync {
    /// Runs `request`: matching entries below the search directory (not the
    /// directory itself), in path order (compared component by component), as
    /// paths relative to it with `/` separators; directories end in `/`.
    /// Entries it could not read are skipped and counted. Returns promptly
    /// with [`SearchError::Cancelled`] once `cancel` fires.
    async fn glob(
        &self,
        request: FindRequest,
        cancel: CancellationToken,
    ) -> Result<Searched<String>, SearchError>;
}

#[async_trait]
impl FindOperations for LocalSearchOperations {
    async fn glob(
        &self,
        request: FindRequest,
        cancel: CancellationToken,
    ) -> Result<Searched<String>, SearchError> {
        self.blocking("find", move |options| {
            glob_blocking(&request, options, &cancel)
        })
        .await
    }
}

fn glob_blocking(
    request: &FindRequest,
    options: WalkOptions,
    cancel: &CancellationToken,
) -> Result<Searched<String>, SearchError> {
    let metadata = std::fs::metadata(&request.path).map_err(|_| SearchError::PathNotFound)?;
    if !metadata.is_dir() {
        return Err(SearchError::NotADirectory);
    }
    check_readable(&request.path, true)?;
    let glob =
        PathGlob::new(&request.pattern).map_err(|e| SearchError::InvalidPattern(e.to_string()))?;
    let limit = request.limit.unwrap_or(usize::MAX);
    let root = request.path.as_path();
    let mut found = Vec::new();
    let mut unreadable = Skipped::default();
    for entry in walk(root, options, ToolIgnore::Fd) {
        if cancel.is_cancelled() {
            return Err(SearchError::Cancelled);
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                unreadable.add_walk_error(root, &error);
                continue;
            }
        };
        if found.len() >= limit {
            break;
        }
        // The root is told by its path: a repository's entries count
        // their depth from it (`walk`).
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        if relative.as_os_str().is_empty() {
            continue;
        }
        if !glob.is_match(relative, entry.path()) {
            continue;
        }
        let mut shown = slash_path(relative);
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            shown.push('/');
        }
        found.push(shown);
    }
    Ok(Searched {
        unreadable,
        ..Searched::all(found)
    })
}
