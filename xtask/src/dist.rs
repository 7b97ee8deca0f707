//! `cargo xtask dist`: the release archive for the host.
//!
//! `target/dist/coding-agent-<version>-<target>.tar.gz` holds one directory of
//! the same name with the stripped release binary, the README, the license
//! files and the tool reference (`TOOLS.md` and `tools.json`: each built-in
//! tool's name, description and JSON schema exactly as the model sees them),
//! and `<archive>.sha256` beside it in `sha256sum` format.
//!
//! It refuses to pack a working tree with uncommitted changes (the archive
//! would not match any commit) or crates whose versions disagree (the archive
//! name would lie about one of them). The archive is reproducible: entries in a
//! fixed order, owned by root, dated at the HEAD commit, and a gzip header
//! without a timestamp.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::workspace::Workspace;
use crate::{cargo_command, command_output, run_command, workspace_root};

/// The binary's name, in the archive's name and inside it.
const BINARY: &str = "coding-agent";

/// Entry point: checks, builds, generates and packs.
pub fn run() -> Result<()> {
    let root = workspace_root();
    println!("dist: checking the working tree is clean (git status --porcelain)");
    ensure_clean_tree(&root)?;
    println!("dist: checking the crates agree on one version");
    let workspace = Workspace::load(&root)?;
    let version = workspace
        .single_version()
        .context("refusing to pack: the archive's name would be wrong for some crate")?;
    let target = host_target()?;
    println!("dist: building {BINARY} {version} for {target} (release, stripped)");
    let binary = build_stripped_binary(&root, &workspace.target_dir)?;
    println!("dist: generating the tool reference from the built-in tools");
    let tools = tool_reference(&root)?;
    let stem = format!("{BINARY}-{version}-{target}");
    let entries = release_entries(&root, &binary, &tools, &version)?;
    let out_dir = workspace.target_dir.join("dist");
    println!(
        "dist: packing {} files into {}",
        entries.len(),
        out_dir.display()
    );
    let packed = pack(&stem, &entries, head_commit_time(&root)?, &out_dir)?;
    println!("dist: wrote {}", packed.archive.display());
    println!(
        "dist: wrote {} ({})",
        packed.checksum.display(),
        packed.sha256
    );
    Ok(())
}

/// Fails, listing the changes, unless `git status --porcelain` in `root` is empty.
pub(crate) fn ensure_clean_tree(root: &Path) -> Result<()> {
    let status = command_output(
        std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(root),
    )
    .with_context(|| {
        format!(
            "refusing to pack: cannot tell whether {} is clean (is it a git work tree?)",
            root.display()
        )
    })?;
    if !status.trim().is_empty() {
        bail!(
            "refusing to pack: the working tree has uncommitted changes, so the archive \
             would match no commit; commit or stash them first:\n{}",
            status.trim_end()
        );
    }
    Ok(())
}

/// The host's target triple, from `rustc -vV` (the toolchain that builds).
pub(crate) fn host_target() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let info = command_output(
        std::process::Command::new(rustc)
            .arg("-vV")
            .current_dir(workspace_root()),
    )?;
    info.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|host| host.trim().to_owned())
        .context("`rustc -vV` printed no `host:` line")
}

/// Builds the release binary with its symbols stripped and returns its path.
///
/// Stripping is a flag on the binary's own link step (`cargo rustc ... -C
/// strip=symbols`), not a profile setting, so the release build of every
/// dependency stays shared with `cargo build --release` (and `xtask bench`).
pub(crate) fn build_stripped_binary(root: &Path, target_dir: &Path) -> Result<PathBuf> {
    run_command(
        cargo_command()
            .args([
                "rustc",
                "--release",
                "--locked",
                "-p",
                BINARY,
                "--bin",
                BINARY,
            ])
            .args(["--", "-C", "strip=symbols"])
            .current_dir(root),
    )?;
    let binary = target_dir
        .join("release")
        .join(format!("{BINARY}{}", std::env::consts::EXE_SUFFIX));
    if !binary.is_file() {
        bail!("the build succeeded but {} is missing", binary.display());
    }
    Ok(binary)
}

/// The built-in tools as the model sees them (a JSON array of `{name,
/// description, parameters}`), from xtask's `tool-reference` example.
pub(crate) fn tool_reference(root: &Path) -> Result<Value> {
    let json = command_output(
        cargo_command()
            .args(["run", "--quiet", "--locked", "-p", "xtask"])
            .args(["--example", "tool-reference"])
            .current_dir(root),
    )?;
    let tools: Value = serde_json::from_str(&json).context("parsing the tool reference")?;
    if tools.as_array().is_none_or(Vec::is_empty) {
        bail!("the tool reference lists no tools");
    }
    Ok(tools)
}

/// `TOOLS.md`: the tool reference for people, with each description verbatim
/// and the schema as pretty JSON.
pub(crate) fn tools_markdown(tools: &Value, version: &str) -> Result<String> {
    let mut text = format!(
        "# Built-in tools of {BINARY} {version}\n\n\
         Each tool as the model sees it: the name it calls, the description it reads and \
         the JSON Schema its arguments must match. `tools.json` holds the same data.\n"
    );
    for tool in tools.as_array().into_iter().flatten() {
        let name = tool["name"].as_str().context("a tool without a name")?;
        let description = tool["description"]
            .as_str()
            .with_context(|| format!("tool {name} has no description"))?;
        let schema = serde_json::to_string_pretty(&tool["parameters"])?;
        text.push_str(&format!(
            "\n## {name}\n\n{}\n\nParameters:\n\n```json\n{schema}\n```\n",
            description.trim_end()
        ));
    }
    Ok(text)
}

/// One file in the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// File name inside the archive's directory.
    pub name: String,
    /// Unix permission bits.
    pub mode: u32,
    /// The bytes.
    pub contents: Vec<u8>,
}

/// The archive's files: the binary, README, license files, tool reference.
pub(crate) fn release_entries(
    root: &Path,
    binary: &Path,
    tools: &Value,
    version: &str,
) -> Result<Vec<Entry>> {
    let read =
        |path: &Path| std::fs::read(path).with_context(|| format!("reading {}", path.display()));
    let file = |name: &str, mode: u32, contents: Vec<u8>| Entry {
        name: name.to_owned(),
        mode,
        contents,
    };
    let mut entries = vec![
        file(
            &format!("{BINARY}{}", std::env::consts::EXE_SUFFIX),
            0o755,
            read(binary)?,
        ),
        file("README.md", 0o644, read(&root.join("README.md"))?),
    ];
    let mut licenses: Vec<String> = std::fs::read_dir(root)
        .with_context(|| format!("listing {}", root.display()))?
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name == "LICENSE" || name.starts_with("LICENSE-"))
        .collect();
    if licenses.is_empty() {
        bail!("no LICENSE or LICENSE-* file in {}", root.display());
    }
    licenses.sort();
    for name in licenses {
        entries.push(file(&name, 0o644, read(&root.join(&name))?));
    }
    entries.push(file(
        "TOOLS.md",
        0o644,
        tools_markdown(tools, version)?.into_bytes(),
    ));
    let mut json = serde_json::to_vec_pretty(tools)?;
    json.push(b'\n');
    entries.push(file("tools.json", 0o644, json));
    Ok(entries)
}

/// The commit time of HEAD (seconds since the epoch): every entry's date, so
/// packing one commit twice gives the same bytes.
fn head_commit_time(root: &Path) -> Result<u64> {
    let time = command_output(
        std::process::Command::new("git")
            .args(["log", "-1", "--format=%ct"])
            .current_dir(root),
    )?;
    time.trim()
        .parse()
        .with_context(|| format!("`git log` printed {time:?}, not a commit time"))
}

/// What `pack` wrote.
#[derive(Debug)]
pub(crate) struct Packed {
    /// `<out_dir>/<stem>.tar.gz`.
    pub archive: PathBuf,
    /// `<archive>.sha256`.
    pub checksum: PathBuf,
    /// The archive's SHA-256, lowercase hex.
    pub sha256: String,
}

/// Writes `<out_dir>/<stem>.tar.gz` (the entries under a `<stem>/` directory)
/// and its `.sha256`.
pub(crate) fn pack(stem: &str, entries: &[Entry], mtime: u64, out_dir: &Path) -> Result<Packed> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let archive = out_dir.join(format!("{stem}.tar.gz"));
    let file = File::create(&archive).with_context(|| format!("creating {}", archive.display()))?;
    // GzEncoder's default header carries no timestamp and no file name.
    let gzip = GzEncoder::new(BufWriter::new(file), Compression::best());
    let mut tar = tar::Builder::new(gzip);
    tar.append_data(
        &mut header(tar::EntryType::Directory, 0o755, 0, mtime),
        format!("{stem}/"),
        std::io::empty(),
    )?;
    for entry in entries {
        let size = u64::try_from(entry.contents.len())?;
        tar.append_data(
            &mut header(tar::EntryType::Regular, entry.mode, size, mtime),
            format!("{stem}/{}", entry.name),
            entry.contents.as_slice(),
        )
        .with_context(|| format!("adding {} to {}", entry.name, archive.display()))?;
    }
    tar.into_inner()?.finish()?.flush()?;

    let sha256 = sha256_hex(&std::fs::read(&archive)?);
    let checksum = out_dir.join(format!("{stem}.tar.gz.sha256"));
    std::fs::write(&checksum, format!("{sha256}  {stem}.tar.gz\n"))
        .with_context(|| format!("writing {}", checksum.display()))?;
    Ok(Packed {
        archive,
        checksum,
        sha256,
    })
}

fn header(kind: tar::EntryType, mode: u32, size: u64, mtime: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_mtime(mtime);
    header.set_uid(0);
    header.set_gid(0);
    header
}

/// SHA-256 of `bytes` as lowercase hex, as `sha256sum` prints it.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use coding_agent::tools::{BUILTIN_TOOL_NAMES, builtin_tool};
    use flate2::read::GzDecoder;
    use serde_json::json;

    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=xtask",
                "-c",
                "user.email=xtask@example.com",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}: {status:?}");
    }

    /// A git repository with one committed file, `README.md`.
    fn committed_repo() -> tempfile::TempDir {
        let repo = tempfile::tempdir().unwrap();
        git(repo.path(), &["init", "-q"]);
        std::fs::write(repo.path().join("README.md"), "# demo\n").unwrap();
        git(repo.path(), &["add", "README.md"]);
        git(repo.path(), &["commit", "-q", "-m", "first"]);
        repo
    }

    #[test]
    fn a_clean_tree_may_be_packed() {
        let repo = committed_repo();
        ensure_clean_tree(repo.path()).unwrap();
    }

    #[test]
    fn a_tree_with_changes_is_refused_with_the_changes_listed() {
        let repo = committed_repo();
        std::fs::write(repo.path().join("README.md"), "# changed\n").unwrap();
        std::fs::write(repo.path().join("notes.txt"), "new\n").unwrap();
        let err = ensure_clean_tree(repo.path()).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "refusing to pack: the working tree has uncommitted changes, so the archive \
             would match no commit; commit or stash them first:\n M README.md\n?? notes.txt"
        );
    }

    #[test]
    fn a_directory_outside_git_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = ensure_clean_tree(dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "refusing to pack: cannot tell whether {} is clean (is it a git work tree?)",
                dir.path().display()
            )
        );
    }

    #[test]
    fn the_tool_reference_lists_each_tool_with_its_schema() {
        let tools = json!([{
            "name": "ls",
            "description": "List directory contents.\n",
            "parameters": {"type": "object", "properties": {}},
        }]);
        assert_eq!(
            tools_markdown(&tools, "9.9.9").unwrap(),
            "# Built-in tools of coding-agent 9.9.9\n\n\
             Each tool as the model sees it: the name it calls, the description it reads and \
             the JSON Schema its arguments must match. `tools.json` holds the same data.\n\
             \n## ls\n\nList directory contents.\n\nParameters:\n\n```json\n{\n  \
             \"type\": \"object\",\n  \"properties\": {}\n}\n```\n"
        );
    }

    /// (path, mode, mtime, contents) of every entry of a `.tar.gz`.
    fn unpack_listing(archive: &Path) -> Vec<(String, u32, u64, Vec<u8>)> {
        let mut tar = tar::Archive::new(GzDecoder::new(File::open(archive).unwrap()));
        tar.entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let mut contents = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut contents).unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().to_string_lossy().into_owned(),
                    header.mode().unwrap(),
                    header.mtime().unwrap(),
                    contents,
                )
            })
            .collect()
    }

    #[test]
    fn packing_writes_the_entries_under_one_directory_and_a_checksum() {
        let out = tempfile::tempdir().unwrap();
        let entries = [
            Entry {
                name: "tool".into(),
                mode: 0o755,
                contents: b"#!/bin/sh\n".to_vec(),
            },
            Entry {
                name: "README.md".into(),
                mode: 0o644,
                contents: b"# hi\n".to_vec(),
            },
        ];
        let packed = pack("demo-1.0.0-x", &entries, 1_700_000_000, out.path()).unwrap();

        assert_eq!(packed.archive, out.path().join("demo-1.0.0-x.tar.gz"));
        assert_eq!(
            unpack_listing(&packed.archive),
            vec![
                ("demo-1.0.0-x/".into(), 0o755, 1_700_000_000, vec![]),
                (
                    "demo-1.0.0-x/tool".into(),
                    0o755,
                    1_700_000_000,
                    b"#!/bin/sh\n".to_vec()
                ),
                (
                    "demo-1.0.0-x/README.md".into(),
                    0o644,
                    1_700_000_000,
                    b"# hi\n".to_vec()
                ),
            ]
        );
        let bytes = std::fs::read(&packed.archive).unwrap();
        assert_eq!(packed.sha256, sha256_hex(&bytes));
        assert_eq!(
            std::fs::read_to_string(&packed.checksum).unwrap(),
            format!("{}  demo-1.0.0-x.tar.gz\n", packed.sha256)
        );
        // Same input, same bytes: the archive is reproducible.
        let again = tempfile::tempdir().unwrap();
        let repacked = pack("demo-1.0.0-x", &entries, 1_700_000_000, again.path()).unwrap();
        assert_eq!(std::fs::read(&repacked.archive).unwrap(), bytes);
    }

    #[test]
    fn sha256_matches_the_standard_test_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    /// Whether a 64-bit little-endian ELF file has a `SHT_SYMTAB` section
    /// (what stripping removes).
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    fn elf_has_symbol_table(elf: &[u8]) -> bool {
        let u16_at = |at: usize| usize::from(u16::from_le_bytes([elf[at], elf[at + 1]]));
        let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
        assert_eq!(&elf[..5], b"\x7fELF\x02", "not a 64-bit ELF file");
        let table = usize::try_from(u64_at(0x28)).unwrap();
        let (entry_size, entries) = (u16_at(0x3a), u16_at(0x3c));
        const SHT_SYMTAB: u32 = 2;
        (0..entries).any(|i| u32_at(table + i * entry_size + 4) == SHT_SYMTAB)
    }

    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    #[test]
    fn the_symbol_table_check_sees_an_unstripped_binary() {
        // This test binary is built unstripped (the dev profile).
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(elf_has_symbol_table(&me));
    }

    /// The whole release path on the real workspace (minus the clean-tree
    /// check, tested above on a scratch repository, so the suite also passes
    /// with local changes): a release build, the tool reference, the archive;
    /// then the binary unpacked from it must run. The release build is the
    /// cost (a few minutes on 2 cores the first time, incremental after).
    #[test]
    fn the_release_archive_unpacks_to_a_binary_that_runs() {
        let root = workspace_root();
        let workspace = Workspace::load(&root).unwrap();
        let version = workspace.single_version().unwrap();
        let target = host_target().unwrap();
        let binary = build_stripped_binary(&root, &workspace.target_dir).unwrap();
        let tools = tool_reference(&root).unwrap();
        let entries = release_entries(&root, &binary, &tools, &version).unwrap();
        let stem = format!("coding-agent-{version}-{target}");
        let out = tempfile::tempdir().unwrap();
        let packed = pack(&stem, &entries, 1_700_000_000, out.path()).unwrap();

        let listing: Vec<(String, u32)> = unpack_listing(&packed.archive)
            .into_iter()
            .map(|(path, mode, _, _)| (path, mode))
            .collect();
        let expected: Vec<(String, u32)> = [
            ("", 0o755),
            ("coding-agent", 0o755),
            ("README.md", 0o644),
            ("LICENSE-MIT", 0o644),
            ("TOOLS.md", 0o644),
            ("tools.json", 0o644),
        ]
        .iter()
        .map(|(name, mode)| (format!("{stem}/{name}"), *mode))
        .collect();
        assert_eq!(listing, expected);

        let unpacked = tempfile::tempdir().unwrap();
        tar::Archive::new(GzDecoder::new(File::open(&packed.archive).unwrap()))
            .unpack(unpacked.path())
            .unwrap();
        let dir = unpacked.path().join(&stem);
        let output = Command::new(dir.join("coding-agent"))
            .arg("--version")
            .output()
            .unwrap();
        assert_eq!(
            (
                output.status.code(),
                String::from_utf8_lossy(&output.stdout).into_owned()
            ),
            (Some(0), format!("coding-agent {version}\n"))
        );

        // The reference is the tools exactly as the model sees them.
        let expected_tools: Vec<_> = BUILTIN_TOOL_NAMES
            .iter()
            .map(|name| builtin_tool(name).unwrap().tool().clone())
            .collect();
        let shipped: Value =
            serde_json::from_slice(&std::fs::read(dir.join("tools.json")).unwrap()).unwrap();
        assert_eq!(shipped, serde_json::to_value(expected_tools).unwrap());
        assert_eq!(
            std::fs::read_to_string(dir.join("TOOLS.md")).unwrap(),
            tools_markdown(&shipped, &version).unwrap()
        );
        #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
        assert!(
            !elf_has_symbol_table(&std::fs::read(dir.join("coding-agent")).unwrap()),
            "the shipped binary is not stripped"
        );
        assert_eq!(
            std::fs::read(dir.join("LICENSE-MIT")).unwrap(),
            std::fs::read(root.join("LICENSE-MIT")).unwrap()
        );
    }
}
