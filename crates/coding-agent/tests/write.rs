//! The `write` tool: Pi's cases (docs/tool-behaviour.md §4.2), the parity fixtures
//! `write_*.json`, and where we differ on purpose (DEVIATIONS #3, #10).

// Setup helpers outside #[test] functions panic on failure too: a broken
// fixture is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agent_core::AgentToolResult;
use coding_agent::tools::write::WriteTool;
use coding_agent::{ToolContext, ToolDefinition, Typed};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A fresh root laid out as the parity README says: `work/` (the cwd),
/// `home/` and `tmp/`.
struct Fixture {
    root: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["work", "home", "tmp"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        Fixture { root }
    }

    fn cwd(&self) -> PathBuf {
        self.root.path().join("work")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.cwd().join(rel)
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Every file under work/, relative, sorted (what `fs_after` lists).
    fn files(&self) -> Vec<String> {
        fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, base, out);
                } else {
                    out.push(path.strip_prefix(base).unwrap().display().to_string());
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.cwd(), &self.cwd(), &mut out);
        out.sort();
        out
    }

    async fn write(&self, args: Value) -> Result<AgentToolResult, String> {
        run(&self.cwd(), args, None).await
    }
}

async fn run(cwd: &Path, args: Value, ctx: Option<ToolContext>) -> Result<AgentToolResult, String> {
    let tool = Typed::<WriteTool>::default();
    let args = tool.prepare_arguments(args).map_err(|e| e.to_string())?;
    let ctx = ctx.unwrap_or_else(|| ToolContext::new(cwd));
    tool.execute(args, ctx)
        .await
        .map_err(|e| e.message().to_owned())
}

fn text(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn write_new_file_reports_its_size() {
    // Parity fixture write_new.
    let fx = Fixture::new();
    let result = fx
        .write(json!({"path": "out.txt", "content": "hello\n"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "Successfully wrote 6 bytes to out.txt");
    assert_eq!(result.details, None);
    assert_eq!(fx.files(), vec!["out.txt"]);
    assert_eq!(fx.read("out.txt"), "hello\n");
}

#[tokio::test]
async fn write_empty_content_creates_an_empty_file() {
    // Parity fixture write_empty.
    let fx = Fixture::new();
    let result = fx
        .write(json!({"path": "empty.txt", "content": ""}))
        .await
        .unwrap();
    assert_eq!(text(&result), "Successfully wrote 0 bytes to empty.txt");
    assert_eq!(fx.read("empty.txt"), "");
}

#[tokio::test]
async fn write_absolute_path_is_echoed_as_given() {
    // Parity fixture write_absolute; also Pi's W1.
    let fx = Fixture::new();
    let abs = format!("{}/abs.txt", fx.cwd().display());
    let result = fx
        .write(json!({"path": abs, "content": "x"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        format!("Successfully wrote 1 bytes to {abs}")
    );
    assert_eq!(fx.read("abs.txt"), "x");

    let abs = format!("{}/write-test.txt", fx.cwd().display());
    let result = fx
        .write(json!({"path": abs, "content": "Test content"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        format!("Successfully wrote 12 bytes to {abs}")
    );
    assert_eq!(result.details, None);
}

/// Parity fixture write_tilde. `~` expands to `$HOME`, which a test can only
/// set for a process of its own (changing the environment of this one would
/// race with the other tests), so the test reruns itself with HOME set.
#[tokio::test]
async fn write_tilde_expands_to_home() {
    const CHILD: &str = "CODING_AGENT_WRITE_TILDE_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let cwd = std::env::current_dir().unwrap();
        let result = run(&cwd, json!({"path": "~/in_home.txt", "content": "x"}), None)
            .await
            .unwrap();
        assert_eq!(text(&result), "Successfully wrote 1 bytes to ~/in_home.txt");
        return;
    }
    let fx = Fixture::new();
    let home = fx.root.path().join("home");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "write_tilde_expands_to_home", "--test-threads=1"])
        .env(CHILD, "1")
        .env("HOME", &home)
        .current_dir(fx.cwd())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(home.join("in_home.txt")).unwrap(),
        "x"
    );
    assert_eq!(fx.files(), Vec::<String>::new());
}

#[tokio::test]
async fn write_creates_parent_directories() {
    // Pi's W2.
    let fx = Fixture::new();
    let abs = format!("{}/nested/dir/test.txt", fx.cwd().display());
    let result = fx
        .write(json!({"path": abs, "content": "Nested content"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        format!("Successfully wrote 14 bytes to {abs}")
    );
    assert_eq!(fx.read("nested/dir/test.txt"), "Nested content");
}

/// A path ending in `/` names a folder: Node's open fails with EISDIR
/// before anything is made (ours made the parent, then failed naming a
/// rename the model never asked for).
#[tokio::test]
async fn write_to_a_path_ending_in_a_slash_is_eisdir_and_makes_nothing() {
    let fx = Fixture::new();
    let dir = format!("{}/new2/", fx.cwd().display());
    let error = fx
        .write(json!({"path": dir, "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        format!("EISDIR: illegal operation on a directory, open '{dir}'")
    );
    assert!(!fx.cwd().join("new2").exists());
    let error = fx
        .write(json!({"path": "rel/", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        format!(
            "EISDIR: illegal operation on a directory, open '{}/rel/'",
            fx.cwd().display()
        )
    );
}

#[tokio::test]
async fn write_reports_utf8_bytes_deviation_3() {
    // DEVIATIONS #3: Pi says 13 (UTF-16 code units); "ü" is two UTF-8 bytes.
    let fx = Fixture::new();
    let result = fx
        .write(json!({"path": "nested/dir/w.txt", "content": "Test contentü"}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "Successfully wrote 14 bytes to nested/dir/w.txt"
    );
    assert_eq!(fx.read("nested/dir/w.txt"), "Test contentü");
}

#[tokio::test]
async fn write_keeps_permissions_of_an_existing_file_deviation_10() {
    // DEVIATIONS #10: the file is replaced by rename, yet keeps its mode.
    let fx = Fixture::new();
    std::fs::write(fx.path("run.sh"), "old").unwrap();
    std::fs::set_permissions(fx.path("run.sh"), std::fs::Permissions::from_mode(0o754)).unwrap();
    fx.write(json!({"path": "run.sh", "content": "#!/bin/sh\n"}))
        .await
        .unwrap();
    assert_eq!(fx.read("run.sh"), "#!/bin/sh\n");
    let mode = std::fs::metadata(fx.path("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o754);
    // No temporary file is left beside it.
    assert_eq!(fx.files(), vec!["run.sh"]);
}

#[tokio::test]
async fn write_through_a_symlink_replaces_the_target_deviation_10() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.path("real")).unwrap();
    std::fs::write(fx.path("real/config.txt"), "old").unwrap();
    std::os::unix::fs::symlink("real/config.txt", fx.path("link.txt")).unwrap();
    fx.write(json!({"path": "link.txt", "content": "new"}))
        .await
        .unwrap();
    assert!(
        std::fs::symlink_metadata(fx.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fx.read("real/config.txt"), "new");
}

#[tokio::test]
async fn write_to_a_directory_fails_like_node() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.path("dir")).unwrap();
    let err = fx
        .write(json!({"path": "dir", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        format!(
            "EISDIR: illegal operation on a directory, open '{}'",
            fx.path("dir").display()
        )
    );
}

#[tokio::test]
async fn write_under_a_file_fails_to_make_the_directory() {
    let fx = Fixture::new();
    std::fs::write(fx.path("file"), "x").unwrap();
    let err = fx
        .write(json!({"path": "file/sub.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        format!(
            "EEXIST: file already exists, mkdir '{}'",
            fx.path("file").display()
        )
    );
}

#[tokio::test]
async fn write_cancelled_before_it_starts_is_aborted() {
    let fx = Fixture::new();
    let ctx = ToolContext::new(fx.cwd());
    ctx.cancel.cancel();
    let err = run(
        &fx.cwd(),
        json!({"path": "a.txt", "content": "x"}),
        Some(ctx),
    )
    .await
    .unwrap_err();
    assert_eq!(err, "Operation aborted");
    assert_eq!(fx.files(), Vec::<String>::new());
}

#[tokio::test]
async fn concurrent_writes_to_one_file_leave_one_whole_content() {
    let fx = Fixture::new();
    let contents: Vec<String> = (0..16).map(|i| format!("{i}\n").repeat(10_000)).collect();
    let calls = contents
        .iter()
        .map(|c| fx.write(json!({"path": "same.txt", "content": c})));
    for result in futures::future::join_all(calls).await {
        result.unwrap();
    }
    assert!(contents.contains(&fx.read("same.txt")));
    assert_eq!(fx.files(), vec!["same.txt"]);
}
