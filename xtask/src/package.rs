//! `cargo xtask package`: proves the library crates could be published.
//!
//! For agent-ai, agent-core and coding-agent it checks the metadata crates.io
//! shows (description, license, repository, readme, keywords, categories),
//! runs `cargo package` (a dry run: it builds each `.crate` in
//! `target/package` and compiles it from there, against the other two as
//! packaged, but uploads nothing) and checks each `.crate` carries its README
//! and license text. Offline: every dependency must be downloaded already.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result, bail};
use flate2::read::GzDecoder;
use serde_json::Value;

use crate::workspace::Workspace;
use crate::{cargo_command, run_command, workspace_root};

/// The crates meant for crates.io, in dependency order.
pub const LIBRARY_CRATES: [&str; 3] = ["agent-ai", "agent-core", "coding-agent"];

/// Entry point; `allow_dirty` packs uncommitted changes too (cargo refuses by default).
pub fn run(allow_dirty: bool) -> Result<()> {
    let root = workspace_root();
    let workspace = Workspace::load(&root)?;
    println!(
        "package: checking the crates.io metadata of {}",
        LIBRARY_CRATES.join(", ")
    );
    let mut problems = Vec::new();
    for name in LIBRARY_CRATES {
        let package = workspace
            .package(name)
            .with_context(|| format!("workspace package {name} not found"))?;
        let missing = missing_metadata(package);
        if !missing.is_empty() {
            problems.push(format!("{name}: {}", missing.join(", ")));
        }
    }
    if !problems.is_empty() {
        bail!(
            "the crates lack metadata crates.io needs (set it in their Cargo.toml or \
             [workspace.package]):\n  {}",
            problems.join("\n  ")
        );
    }

    println!("package: cargo package (dry run, verified by building each packaged crate)");
    let mut command = cargo_command();
    command.args(["package", "--offline", "--locked"]);
    if allow_dirty {
        command.arg("--allow-dirty");
    }
    for name in LIBRARY_CRATES {
        command.args(["-p", name]);
    }
    run_command(command.current_dir(&root)).context(
        "cargo package failed (see above; offline, it needs every dependency downloaded: \
         `cargo fetch` first)",
    )?;

    let version = workspace.single_version()?;
    for name in LIBRARY_CRATES {
        let crate_file = workspace
            .target_dir
            .join("package")
            .join(format!("{name}-{version}.crate"));
        let files = crate_files(&crate_file)?;
        let missing = missing_files(&files);
        if !missing.is_empty() {
            bail!("{} lacks {}", crate_file.display(), missing.join(", "));
        }
        println!("package: {} ({} files)", crate_file.display(), files.len());
    }
    Ok(())
}

/// The metadata crates.io shows or needs that `package` (one entry of
/// `cargo metadata`'s `packages`) lacks, by manifest key.
pub fn missing_metadata(package: &Value) -> Vec<&'static str> {
    let text = |key: &str| package[key].as_str().is_some_and(|s| !s.trim().is_empty());
    let list = |key: &str| package[key].as_array().is_some_and(|a| !a.is_empty());
    let mut missing = Vec::new();
    if !text("description") {
        missing.push("description");
    }
    if !text("license") && !text("license_file") {
        missing.push("license");
    }
    if !text("repository") {
        missing.push("repository");
    }
    if !text("readme") {
        missing.push("readme");
    }
    if !list("keywords") {
        missing.push("keywords");
    }
    if !list("categories") {
        missing.push("categories");
    }
    // `publish = false` shows up as an empty list of allowed registries.
    if package["publish"].as_array().is_some_and(Vec::is_empty) {
        missing.push("publish (it is false)");
    }
    missing
}

/// The paths inside a `.crate` (a gzipped tar), without the leading
/// `<name>-<version>/`.
fn crate_files(crate_file: &Path) -> Result<Vec<String>> {
    let file =
        File::open(crate_file).with_context(|| format!("opening {}", crate_file.display()))?;
    let mut archive = tar::Archive::new(GzDecoder::new(file));
    let mut files = Vec::new();
    for entry in archive
        .entries()
        .with_context(|| format!("reading {}", crate_file.display()))?
    {
        let path = entry?.path()?.into_owned();
        let inner: std::path::PathBuf = path.components().skip(1).collect();
        files.push(inner.to_string_lossy().into_owned());
    }
    Ok(files)
}

/// What a published crate must carry but `files` lacks: its manifest, the
/// README crates.io renders and the license text the MIT license requires to
/// travel with the code.
fn missing_files(files: &[String]) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if !files.iter().any(|f| f == "Cargo.toml") {
        missing.push("Cargo.toml");
    }
    if !files.iter().any(|f| f == "README.md") {
        missing.push("README.md");
    }
    if !files
        .iter()
        .any(|f| f == "LICENSE" || f.starts_with("LICENSE-"))
    {
        missing.push("a LICENSE file");
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_library_crates_have_complete_metadata() {
        let workspace = Workspace::load(&workspace_root()).unwrap();
        for name in LIBRARY_CRATES {
            let package = workspace.package(name).unwrap();
            assert_eq!(missing_metadata(package), Vec::<&str>::new(), "{name}");
        }
    }

    #[test]
    fn missing_and_empty_metadata_is_named() {
        let package = json!({
            "name": "agent-ai",
            "description": "  ",
            "license": "MIT",
            "repository": null,
            "readme": "README.md",
            "keywords": [],
            "categories": ["development-tools"],
            "publish": [],
        });
        assert_eq!(
            missing_metadata(&package),
            vec![
                "description",
                "repository",
                "keywords",
                "publish (it is false)"
            ]
        );
    }

    #[test]
    fn a_license_file_counts_as_a_license() {
        let package = json!({
            "description": "d", "license": null, "license_file": "LICENSE.txt",
            "repository": "r", "readme": "README.md", "keywords": ["k"],
            "categories": ["c"], "publish": null,
        });
        assert_eq!(missing_metadata(&package), Vec::<&str>::new());
    }

    #[test]
    fn a_crate_without_license_or_readme_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let crate_file = dir.path().join("agent-ai-0.1.0.crate");
        let gzip = flate2::write::GzEncoder::new(
            File::create(&crate_file).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gzip);
        for name in ["Cargo.toml", "src/lib.rs"] {
            let mut header = tar::Header::new_gnu();
            header.set_size(0);
            tar.append_data(
                &mut header,
                format!("agent-ai-0.1.0/{name}"),
                std::io::empty(),
            )
            .unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();

        let files = crate_files(&crate_file).unwrap();
        assert_eq!(files, vec!["Cargo.toml", "src/lib.rs"]);
        assert_eq!(missing_files(&files), vec!["README.md", "a LICENSE file"]);
    }
}
