//! `cargo xtask deny`: cargo-deny's licenses, bans and sources checks against
//! `deny.toml`, without the network.
//!
//! Advisories need the RustSec database; they are checked only when a copy
//! already exists on this machine (`cargo deny fetch` puts one in
//! `$CARGO_HOME/advisory-dbs`), and the task says so when it skips them. It
//! installs cargo-deny itself the first time (`cargo install --locked`), which
//! compiles for several minutes; later runs find it in `$CARGO_HOME/bin`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result};

use crate::{cargo_command, run_command, workspace_root};

/// The checks that need nothing but the local crate sources.
const OFFLINE_CHECKS: [&str; 3] = ["licenses", "bans", "sources"];

/// Entry point: installs cargo-deny if missing, then runs the checks.
pub fn run() -> Result<()> {
    ensure_cargo_deny()?;
    let databases = cargo_home()?.join("advisory-dbs");
    let mut checks = OFFLINE_CHECKS.to_vec();
    if has_advisory_database(&databases) {
        println!(
            "deny: checking advisories against the local database in {}",
            databases.display()
        );
        checks.push("advisories");
    } else {
        println!(
            "deny: skipping advisories: no local advisory database in {} \
             (`cargo deny fetch` makes one where a network is available)",
            databases.display()
        );
    }
    println!(
        "deny: checking {} against deny.toml, offline",
        checks.join(", ")
    );
    // `--frozen` is `--locked --offline`: Cargo.lock as committed, no index
    // update, no crate download and no database fetch.
    run_command(
        cargo_command()
            .args(["deny", "--frozen", "check"])
            .args(&checks)
            .current_dir(workspace_root()),
    )
    .context("cargo-deny found problems (see above); fix the dependency or deny.toml")
}

/// Installs cargo-deny unless `cargo deny` already runs.
fn ensure_cargo_deny() -> Result<()> {
    let installed = cargo_command()
        .args(["deny", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if installed {
        return Ok(());
    }
    println!(
        "deny: cargo-deny is not installed; installing it once for this machine \
         (it compiles for several minutes)"
    );
    run_command(cargo_command().args(["install", "--locked", "cargo-deny"]))
        .context("could not install cargo-deny")
}

/// Where cargo keeps its home: `$CARGO_HOME`, else `~/.cargo`.
fn cargo_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME").context("neither CARGO_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cargo"))
}

/// Whether `databases` (cargo-deny's `db-path`) holds a fetched database: one
/// directory per database source.
fn has_advisory_database(databases: &Path) -> bool {
    std::fs::read_dir(databases).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_database_directory_means_no_advisories() {
        let home = tempfile::tempdir().unwrap();
        assert!(!has_advisory_database(&home.path().join("advisory-dbs")));
    }

    #[test]
    fn an_empty_database_directory_means_no_advisories() {
        let home = tempfile::tempdir().unwrap();
        let databases = home.path().join("advisory-dbs");
        std::fs::create_dir(&databases).unwrap();
        std::fs::write(databases.join("db.lock"), "").unwrap();
        assert!(!has_advisory_database(&databases));
    }

    #[test]
    fn a_fetched_database_is_found() {
        let home = tempfile::tempdir().unwrap();
        let databases = home.path().join("advisory-dbs");
        std::fs::create_dir_all(databases.join("advisory-db-3157b0e258782691")).unwrap();
        assert!(has_advisory_database(&databases));
    }
}
