//! The workspace's own packages as `cargo metadata --no-deps` describes them:
//! what `dist` and `package` check before they build anything.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{cargo_command, command_output};

/// The workspace as `cargo metadata --no-deps` describes it.
pub struct Workspace {
    metadata: Value,
    /// Where cargo builds (honours `CARGO_TARGET_DIR` and `build.target-dir`).
    pub target_dir: PathBuf,
}

impl Workspace {
    /// Reads the workspace at `root` (no dependency resolution, so no network).
    pub fn load(root: &Path) -> Result<Self> {
        let json = command_output(
            cargo_command()
                .args(["metadata", "--no-deps", "--format-version", "1"])
                .current_dir(root),
        )?;
        let metadata: Value = serde_json::from_str(&json).context("parsing cargo metadata")?;
        let target_dir = metadata["target_directory"]
            .as_str()
            .map(PathBuf::from)
            .context("cargo metadata has no target_directory")?;
        Ok(Workspace {
            metadata,
            target_dir,
        })
    }

    /// The workspace packages.
    pub fn packages(&self) -> impl Iterator<Item = &Value> {
        self.metadata["packages"].as_array().into_iter().flatten()
    }

    /// The workspace package called `name`.
    pub fn package(&self, name: &str) -> Option<&Value> {
        self.packages().find(|p| p["name"] == name)
    }

    /// The one version every workspace crate has; an error naming each crate's
    /// version when they disagree, or naming a path dependency that asks for
    /// another version than the crate it points to has.
    pub fn single_version(&self) -> Result<String> {
        let versions: Vec<(&str, &str)> = self
            .packages()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or("?"),
                    p["version"].as_str().unwrap_or("?"),
                )
            })
            .collect();
        let Some(&(_, first)) = versions.first() else {
            bail!("cargo metadata lists no workspace packages");
        };
        if versions.iter().any(|&(_, version)| version != first) {
            let listed: Vec<String> = versions
                .iter()
                .map(|(name, version)| format!("{name} {version}"))
                .collect();
            bail!(
                "the crates' versions disagree ({}); \
                 give them one version ([workspace.package] version)",
                listed.join(", ")
            );
        }
        for package in self.packages() {
            for dep in package["dependencies"].as_array().into_iter().flatten() {
                if dep["path"].is_null() {
                    continue;
                }
                let req = dep["req"].as_str().unwrap_or("*");
                let wanted = req.trim_start_matches(['^', '=', '~']);
                if req != "*" && wanted != first {
                    bail!(
                        "{} asks for {} {req} but the workspace is at {first}; \
                         update the version of that path dependency",
                        package["name"].as_str().unwrap_or("?"),
                        dep["name"].as_str().unwrap_or("?"),
                    );
                }
            }
        }
        Ok(first.to_owned())
    }
}
