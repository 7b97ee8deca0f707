//! Which projects the user trusts.
//!
//! A cloned repository carries its own `.coding-agent/settings.json`; if it
//! could loosen the policy (allow `bash(*)`, set `bypass`), cloning would be
//! enough to run code unasked. So a project's settings only tighten until
//! the user trusts it: once, at an interactive prompt, or with `--trust`.
//! The answer is kept in `$CODING_AGENT_DIR/trusted-projects.json`. The MCP
//! servers and command hooks a project defines start only in trusted
//! projects too ([`Trust::is_trusted`] is the one check).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::settings::read_json_file;

/// The file, in the agent directory, listing trusted project directories.
pub const TRUST_FILE: &str = "trusted-projects.json";

/// The trusted projects, loaded from the agent directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    file: PathBuf,
    projects: Vec<PathBuf>,
    /// `--trust` was given: this run trusts its project.
    forced: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    trusted: Vec<PathBuf>,
}

/// The trust file exists but cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct TrustError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

impl Trust {
    /// The trust of `agent_dir`; `forced` (from `--trust`) trusts every project
    /// of this run. A missing file trusts nothing.
    pub fn load(agent_dir: &Path, forced: bool) -> Result<Self, TrustError> {
        let file = agent_dir.join(TRUST_FILE);
        let projects = read_json_file::<TrustFile>(&file)
            .map_err(|e| TrustError {
                path: file.clone(),
                reason: e.to_string(),
            })?
            .map(|stored| stored.trusted)
            .unwrap_or_default();
        Ok(Self {
            file,
            projects,
            forced,
        })
    }

    /// True when the project in `dir` is trusted (by `--trust` or a stored answer).
    pub fn is_trusted(&self, dir: &Path) -> bool {
        self.forced || self.projects.iter().any(|p| *p == project_key(dir))
    }

    /// Remembers that the user trusts the project in `dir`.
    pub fn trust(&mut self, dir: &Path) -> Result<(), TrustError> {
        let key = project_key(dir);
        if !self.projects.contains(&key) {
            self.projects.push(key);
        }
        let error = |reason: String| TrustError {
            path: self.file.clone(),
            reason,
        };
        let text = serde_json::to_string_pretty(&TrustFile {
            trusted: self.projects.clone(),
        })
        .map_err(|e| error(e.to_string()))?;
        if let Some(parent) = self.file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| error(e.to_string()))?;
        }
        crate::support::atomic_write::write_atomic(&self.file, text.as_bytes())
            .map_err(|e| error(e.to_string()))
    }
}

/// A project's identity: its directory with symlinks resolved when possible.
fn project_key(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_project_stays_trusted_across_loads_and_others_do_not() -> Result<(), TrustError> {
        let Ok(agent) = tempfile::tempdir() else {
            panic!("tempdir")
        };
        let Ok(project) = tempfile::tempdir() else {
            panic!("tempdir")
        };
        let Ok(other) = tempfile::tempdir() else {
            panic!("tempdir")
        };
        let mut trust = Trust::load(agent.path(), false)?;
        assert!(!trust.is_trusted(project.path()));
        trust.trust(project.path())?;
        let reloaded = Trust::load(agent.path(), false)?;
        assert!(reloaded.is_trusted(project.path()));
        assert!(!reloaded.is_trusted(other.path()));
        assert!(Trust::load(agent.path(), true)?.is_trusted(other.path()));
        Ok(())
    }

    #[test]
    fn a_trust_file_that_is_not_json_is_an_error_naming_it() {
        let Ok(agent) = tempfile::tempdir() else {
            panic!("tempdir")
        };
        let file = agent.path().join(TRUST_FILE);
        let Ok(()) = std::fs::write(&file, "{not json") else {
            panic!("write")
        };
        let Err(error) = Trust::load(agent.path(), false) else {
            panic!("a broken file loads")
        };
        assert_eq!(error.path, file);
        assert_eq!(error.reason, "key must be a string at line 1 column 2");
    }
}
