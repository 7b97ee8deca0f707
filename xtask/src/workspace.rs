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

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace of crates `a` (`a_version`) and `b` (`b_version`), where
    /// `b` depends on `a` by path with `b_requires`.
    fn two_crate_workspace(
        a_version: &str,
        b_version: &str,
        b_requires: &str,
    ) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nresolver = \"3\"\nmembers = [\"a\", \"b\"]\n",
        )
        .unwrap();
        let manifest = |name: &str, version: &str, deps: &str| {
            std::fs::create_dir_all(root.join(name).join("src")).unwrap();
            std::fs::write(root.join(name).join("src/lib.rs"), "").unwrap();
            std::fs::write(
                root.join(name).join("Cargo.toml"),
                format!(
                    "[package]\nname = \"{name}\"\nversion = \"{version}\"\n\
                     edition = \"2024\"\n\n[dependencies]\n{deps}"
                ),
            )
            .unwrap();
        };
        manifest("a", a_version, "");
        manifest(
            "b",
            b_version,
            &format!("a = {{ path = \"../a\", version = \"{b_requires}\" }}\n"),
        );
        dir
    }

    #[test]
    fn crates_of_one_version_give_that_version() {
        let dir = two_crate_workspace("0.3.1", "0.3.1", "0.3.1");
        let workspace = Workspace::load(dir.path()).unwrap();
        assert_eq!(workspace.single_version().unwrap(), "0.3.1");
    }

    #[test]
    fn crates_of_different_versions_are_refused() {
        let dir = two_crate_workspace("0.1.0", "0.2.0", "0.1.0");
        let err = Workspace::load(dir.path())
            .unwrap()
            .single_version()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the crates' versions disagree (a 0.1.0, b 0.2.0); \
             give them one version ([workspace.package] version)"
        );
    }

    #[test]
    fn a_path_dependency_asking_for_another_version_is_refused() {
        let dir = two_crate_workspace("0.2.0", "0.2.0", "0.1.0");
        let err = Workspace::load(dir.path())
            .unwrap()
            .single_version()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "b asks for a ^0.1.0 but the workspace is at 0.2.0; \
             update the version of that path dependency"
        );
    }

    #[test]
    fn this_workspace_has_one_version() {
        let workspace = Workspace::load(&crate::workspace_root()).unwrap();
        assert_eq!(
            workspace.single_version().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
    }
}
