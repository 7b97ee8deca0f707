//! `cargo xtask`: project tasks that need more than one cargo command.
//!
//! - `check-layers`: the crate layering rules (see `layers.rs`).
//! - `ci`: everything CI runs: fmt, clippy, the layering check, docs and the tests.
//! - `bench`: end-to-end figures of the built-in tools against a baseline
//!   measured in the same run (see `bench.rs`).

mod bench;
mod layers;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("check-layers") => layers::run(),
        Some("ci") => ci(),
        Some("bench") => bench::run(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <check-layers|ci|bench [--quick]>");
            std::process::exit(2);
        }
    }
}

/// The workspace root (the parent of this crate's directory).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

/// Runs `cargo` with `args` in the workspace root and fails if it fails.
pub(crate) fn cargo(args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .current_dir(workspace_root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn ci() -> Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    layers::run()?;
    // Docs must build without warnings: every public item is documented.
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo_bin)
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .current_dir(workspace_root())
        .status()
        .context("running cargo doc")?;
    if !status.success() {
        bail!("cargo doc failed ({status})");
    }
    cargo(&["test", "--workspace"])
}
