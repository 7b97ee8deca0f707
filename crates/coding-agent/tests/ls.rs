//! The `ls` tool: Pi's test cases (docs/tool-behaviour.md §4.7), the parity fixtures
//! `ls_*.json` written out as code, and the edges of limits, symlinks,
//! truncation, errors and cancellation.

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used)]

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::Content;
use agent_core::{AgentToolResult, ToolError};
use async_trait::async_trait;
use coding_agent::definition::ToolDefinition;
use coding_agent::support::paths::HomeDir;
use coding_agent::tools::ls::LsTool;
use coding_agent::tools::ls::ops::{EntryStat, LsOperations};
use coding_agent::{ToolContext, Typed};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A fixture root as the parity README lays it out: `work/` (the cwd), `home/`, `tmp/`.
struct Root {
    _dir: tempfile::TempDir,
    work: PathBuf,
}

impl Root {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["work", "home", "tmp"] {
            std::fs::create_dir(root.join(sub)).unwrap();
        }
        Root {
            work: root.join("work"),
            _dir: dir,
        }
    }

    fn file(&self, rel: &str, text: &str) -> &Self {
        let path = self.work.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    fn dir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.work.join(rel)).unwrap();
        self
    }

    fn cwd(&self) -> String {
        self.work.display().to_string()
    }
}

async fn run_in(
    tool: &Typed<LsTool>,
    cwd: &Path,
    args: Value,
    ctx_cancelled: bool,
) -> Result<AgentToolResult, ToolError> {
    let ctx = ToolContext::new(cwd);
    if ctx_cancelled {
        ctx.cancel.cancel();
    }
    tool.execute(args, ctx).await
}

async fn ls(cwd: &Path, args: Value) -> Result<AgentToolResult, ToolError> {
    run_in(&Typed::<LsTool>::default(), cwd, args, false).await
}

fn text(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

async fn ok_text(cwd: &Path, args: Value) -> (String, Option<Value>) {
    let result = ls(cwd, args).await.unwrap();
    (text(&result), result.details)
}

async fn err_text(cwd: &Path, args: Value) -> String {
    ls(cwd, args).await.unwrap_err().message().to_owned()
}

// --- Pi's test cases, re-run against 0.73.1 ---

#[tokio::test]
async fn ls_includes_hidden_files_and_marks_hidden_directories() {
    let root = Root::new();
    root.file(".hidden-file", "").dir(".hidden-dir");
    assert_eq!(
        ok_text(&root.work, json!({"path": root.cwd()})).await,
        (".hidden-dir/\n.hidden-file".to_owned(), None)
    );
}

fn gitignore_layout() -> Root {
    let root = Root::new();
    root.file(".gitignore", "ignored.txt\n")
        .file(".secret/key", "")
        .file("ignored.txt", "")
        .file("sub/x", "")
        .file("visible.txt", "");
    root
}

#[tokio::test]
async fn ls_sorts_case_insensitively_and_does_not_apply_gitignore() {
    let root = gitignore_layout();
    assert_eq!(
        ok_text(&root.work, json!({})).await,
        (
            ".gitignore\n.secret/\nignored.txt\nsub/\nvisible.txt".to_owned(),
            None
        )
    );
}

#[tokio::test]
async fn ls_limit_stops_listing_and_says_how_to_see_more() {
    let root = gitignore_layout();
    assert_eq!(
        ok_text(&root.work, json!({"limit": 2})).await,
        (
            ".gitignore\n.secret/\n\n[2 entries limit reached. Use limit=4 for more]".to_owned(),
            Some(json!({"entryLimitReached": 2}))
        )
    );
}

/// DEVIATIONS #33: entries that cannot be stated (dangling symlinks) are
/// listed, without a `/`, and count towards the limit like any other. Pi
/// skips them: a directory of dead links read `(empty directory)`, so a model
/// never learnt the links it had to fix or remove were there.
#[cfg(unix)]
#[tokio::test]
async fn deviation_33_dangling_symlinks_are_listed_and_count_towards_the_limit() {
    let root = Root::new();
    for n in 1..=3 {
        std::os::unix::fs::symlink("missing", root.work.join(format!("a{n}"))).unwrap();
    }
    assert_eq!(
        ok_text(&root.work, json!({})).await,
        ("a1\na2\na3".to_owned(), None)
    );
    root.file("b1", "");
    assert_eq!(
        ok_text(&root.work, json!({"limit": 2})).await,
        (
            "a1\na2\n\n[2 entries limit reached. Use limit=4 for more]".to_owned(),
            Some(json!({"entryLimitReached": 2}))
        )
    );
}

#[tokio::test]
async fn ls_of_an_empty_directory_says_so() {
    let root = Root::new();
    assert_eq!(
        ok_text(&root.work, json!({})).await,
        ("(empty directory)".to_owned(), None)
    );
}

#[tokio::test]
async fn ls_of_a_missing_path_names_the_absolute_path() {
    let root = Root::new();
    assert_eq!(
        err_text(&root.work, json!({"path": "nodir"})).await,
        format!("Path not found: {}/nodir", root.cwd())
    );
}

#[tokio::test]
async fn ls_of_a_file_is_not_a_directory() {
    let root = Root::new();
    root.file("f.txt", "x");
    assert_eq!(
        err_text(&root.work, json!({"path": "f.txt"})).await,
        format!("Not a directory: {}/f.txt", root.cwd())
    );
}

// --- parity fixtures ls_*.json ---

fn fixture_files(root: &Root) {
    root.file("a.txt", "alpha\nfoo bar\nbeta\n")
        .file("b.md", "# Title\nfoo\n")
        .file("src/main.rs", "fn main() {\n    println!(\"foo\");\n}\n")
        .file("src/lib.rs", "pub fn foo() -> u32 { 42 }\n")
        .file("src/util/helpers.rs", "// foo helper\npub fn helper() {}\n")
        .file("src/util/helpers.py", "def foo():\n    return 1\n")
        .file(".hidden/secret.txt", "foo in hidden dir\n")
        .file(".env", "FOO=1\n");
}

#[tokio::test]
async fn parity_ls_absolute() {
    let root = Root::new();
    fixture_files(&root);
    assert_eq!(
        ok_text(&root.work, json!({"path": format!("{}/src", root.cwd())})).await,
        ("lib.rs\nmain.rs\nutil/".to_owned(), None)
    );
}

#[tokio::test]
async fn parity_ls_empty() {
    let root = Root::new();
    root.dir("empty");
    assert_eq!(
        ok_text(&root.work, json!({"path": "empty"})).await,
        ("(empty directory)".to_owned(), None)
    );
}

#[tokio::test]
async fn parity_ls_limit_zero_lists_nothing_and_gives_no_notice() {
    let root = Root::new();
    root.file("a", "").file("b", "");
    assert_eq!(
        ok_text(&root.work, json!({"limit": 0})).await,
        ("(empty directory)".to_owned(), None)
    );
}

#[tokio::test]
async fn parity_ls_sorting_follows_locale_compare_of_lower_case() {
    let root = Root::new();
    for name in [
        "B.txt", "a.txt", "C", "_x", "10", "9", "-dash", "été", "Zed", "e.txt",
    ] {
        root.file(name, "");
    }
    assert_eq!(
        ok_text(&root.work, json!({})).await,
        (
            "_x\n-dash\n10\n9\na.txt\nB.txt\nC\ne.txt\nété\nZed".to_owned(),
            None
        )
    );
}

// --- limits ---

#[tokio::test]
async fn ls_exactly_at_the_limit_gives_no_notice() {
    let root = Root::new();
    root.file("a", "").file("b", "");
    assert_eq!(
        ok_text(&root.work, json!({"limit": 2})).await,
        ("a\nb".to_owned(), None)
    );
}

#[tokio::test]
async fn ls_fractional_limit_rounds_up_like_pi() {
    let root = Root::new();
    root.file("a", "").file("b", "").file("c", "").file("d", "");
    assert_eq!(
        ok_text(&root.work, json!({"limit": 2.5})).await,
        (
            "a\nb\nc\n\n[2.5 entries limit reached. Use limit=5 for more]".to_owned(),
            Some(json!({"entryLimitReached": 2.5}))
        )
    );
}

#[tokio::test]
async fn ls_negative_limit_lists_nothing() {
    let root = Root::new();
    root.file("a", "");
    assert_eq!(
        ok_text(&root.work, json!({"limit": -1})).await,
        ("(empty directory)".to_owned(), None)
    );
}

#[tokio::test]
async fn ls_lists_500_entries_by_default() {
    let root = Root::new();
    for i in 0..501 {
        root.file(&format!("f{i:03}"), "");
    }
    let (text, details) = ok_text(&root.work, json!({})).await;
    let expected: Vec<String> = (0..500).map(|i| format!("f{i:03}")).collect();
    assert_eq!(
        text,
        format!(
            "{}\n\n[500 entries limit reached. Use limit=1000 for more]",
            expected.join("\n")
        )
    );
    assert_eq!(details, Some(json!({"entryLimitReached": 500})));
}

#[tokio::test]
async fn deviation_1_null_limit_means_the_default() {
    let root = Root::new();
    root.file("a", "");
    assert_eq!(
        ok_text(&root.work, json!({"path": null, "limit": null})).await,
        ("a".to_owned(), None)
    );
}

#[tokio::test]
async fn ls_empty_path_lists_the_working_directory() {
    let root = Root::new();
    root.file("a", "");
    assert_eq!(
        ok_text(&root.work, json!({"path": ""})).await,
        ("a".to_owned(), None)
    );
}

#[tokio::test]
async fn ls_output_over_50kb_is_cut_at_a_line_with_both_notices() {
    let root = Root::new();
    // Names of 250 bytes: 203 of them with their newlines take 50,952 bytes,
    // 204 would take 51,203, over the 51,200-byte limit.
    let names: Vec<String> = (0..210)
        .map(|i| format!("{i:03}{}", "x".repeat(247)))
        .collect();
    for name in &names {
        root.file(name, "");
    }
    let result = ls(&root.work, json!({"limit": 205})).await.unwrap();
    let kept = names[..203].join("\n");
    assert_eq!(
        text(&result),
        format!(
            "{kept}\n\n[205 entries limit reached. Use limit=410 for more. 50.0KB limit reached]"
        )
    );
    let details = result.details.unwrap();
    assert_eq!(details["entryLimitReached"], json!(205));
    assert_eq!(
        details["truncation"]["truncatedBy"],
        json!("bytes"),
        "{details}"
    );
    assert_eq!(details["truncation"]["outputLines"], json!(203));
    assert_eq!(details["truncation"]["totalLines"], json!(205));
}

// --- symlinks and odd names ---

#[cfg(unix)]
#[tokio::test]
async fn ls_follows_symlinks_and_lists_dangling_ones_as_they_are() {
    let root = Root::new();
    root.dir("real").file("file", "");
    std::os::unix::fs::symlink(root.work.join("real"), root.work.join("link")).unwrap();
    std::os::unix::fs::symlink(root.work.join("gone"), root.work.join("dangling")).unwrap();
    assert_eq!(
        ok_text(&root.work, json!({})).await,
        ("dangling\nfile\nlink/\nreal/".to_owned(), None)
    );
}

#[cfg(unix)]
#[tokio::test]
async fn ls_through_a_symlinked_directory_lists_its_target() {
    let root = Root::new();
    root.file("real/inside", "");
    std::os::unix::fs::symlink(root.work.join("real"), root.work.join("link")).unwrap();
    assert_eq!(
        ok_text(&root.work, json!({"path": "link"})).await,
        ("inside".to_owned(), None)
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn ls_shows_names_that_are_not_utf8_with_replacement_characters() {
    use std::os::unix::ffi::OsStrExt;
    let root = Root::new();
    let name = std::ffi::OsStr::from_bytes(b"f\xffo");
    std::fs::write(root.work.join(name), "").unwrap();
    assert_eq!(
        ok_text(&root.work, json!({})).await,
        ("f\u{FFFD}o".to_owned(), None)
    );
}

// --- operations that fail or hang (test doubles) ---

/// A directory that exists but cannot be read, or whose reading never ends.
struct FakeDir {
    read_dir: FakeReadDir,
}

enum FakeReadDir {
    Fails(i32),
    Hangs(Arc<Notify>),
}

impl HomeDir for FakeDir {}

#[async_trait]
impl LsOperations for FakeDir {
    async fn exists(&self, _path: &Path) -> bool {
        true
    }

    async fn stat(&self, _path: &Path) -> io::Result<EntryStat> {
        Ok(EntryStat { is_directory: true })
    }

    async fn read_dir(&self, _path: &Path) -> io::Result<Vec<OsString>> {
        match &self.read_dir {
            FakeReadDir::Fails(errno) => Err(io::Error::from_raw_os_error(*errno)),
            FakeReadDir::Hangs(entered) => {
                entered.notify_one();
                std::future::pending().await
            }
        }
    }
}

#[tokio::test]
async fn ls_unreadable_directory_reports_nodes_error() {
    let tool = Typed::new(LsTool::new(Arc::new(FakeDir {
        read_dir: FakeReadDir::Fails(13),
    })));
    let err = run_in(&tool, Path::new("/srv"), json!({"path": "locked"}), false)
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "Cannot read directory: EACCES: permission denied, scandir '/srv/locked'"
    );
}

#[tokio::test]
async fn ls_cancelled_before_it_starts_is_aborted() {
    let root = Root::new();
    let err = run_in(&Typed::<LsTool>::default(), &root.work, json!({}), true)
        .await
        .unwrap_err();
    assert_eq!(err.message(), "Operation aborted");
}

#[tokio::test]
async fn ls_cancelled_while_reading_is_aborted() {
    let entered = Arc::new(Notify::new());
    let tool = Typed::new(LsTool::new(Arc::new(FakeDir {
        read_dir: FakeReadDir::Hangs(entered.clone()),
    })));
    let ctx = ToolContext::new("/srv");
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move { tool.execute(json!({}), ctx).await });
    entered.notified().await;
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.message(), "Operation aborted");
}
