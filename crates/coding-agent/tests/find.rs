//! `find` end to end: Pi's test cases (A.6), every `find_*` parity fixture, and
//! the places we go beyond Pi (DEVIATIONS #4 and #5, named where they apply).

// Test helpers outside #[test] functions may panic too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentToolResult, ToolError};
use async_trait::async_trait;
use coding_agent::support::paths::HomeDir;
use coding_agent::support::walk::{SearchError, Searched};
use coding_agent::tools::find::FindTool;
use coding_agent::tools::find::ops::{FindOperations, FindRequest};
use coding_agent::{ToolContext, ToolDefinition, Typed};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod search_support;
use search_support::{Fixture, find_tool, run, text};

impl Fixture {
    async fn find(&self, args: Value) -> Result<AgentToolResult, ToolError> {
        run(&find_tool(), &self.work(), args).await
    }
}

async fn find_text(fixture: &Fixture, args: Value) -> String {
    text(&fixture.find(args).await.unwrap()).to_owned()
}

async fn find_error(fixture: &Fixture, args: Value) -> String {
    fixture.find(args).await.unwrap_err().message().to_owned()
}

// Pi's test cases (re-run against 0.73.1; docs/tool-behaviour.md §4.6).

#[tokio::test]
async fn find_includes_hidden_files() {
    let fixture = Fixture::new(&[(".secret/hidden.txt", "x"), ("visible.txt", "x")]);
    let path = fixture.work();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "**/*.txt", "path": path})).await,
        ".secret/hidden.txt\nvisible.txt"
    );
}

#[tokio::test]
async fn find_honours_gitignore_outside_a_git_repo() {
    let fixture = Fixture::new(&[
        (".gitignore", "ignored.txt\n"),
        ("ignored.txt", "x"),
        ("kept.txt", "x"),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "**/*.txt"})).await,
        "kept.txt"
    );
}

#[tokio::test]
async fn find_without_results_says_so() {
    let fixture = Fixture::project();
    let result = fixture.find(json!({"pattern": "*.zig"})).await.unwrap();
    assert_eq!(text(&result), "No files found matching pattern");
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn find_limit_reached_suggests_twice_the_limit() {
    let fixture = Fixture::project();
    let result = fixture
        .find(json!({"pattern": "*.rs", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        text(&result),
        "src/lib.rs\nsrc/main.rs\n\n\
         [2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(result.details, Some(json!({"resultLimitReached": 2})));
}

#[tokio::test]
async fn find_limit_notice_fires_at_exactly_the_limit() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.md", "limit": 1})).await,
        "b.md\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    );
}

// Parity fixtures (`parity/fixtures/cases/find_*.json`). Pi's order depends
// on fd's threads; ours is sorted (DEVIATIONS #4).

/// find_brace.
#[tokio::test]
async fn find_brace_set_matches_either_extension() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.{py,md}"})).await,
        "b.md\nsrc/util/helpers.py"
    );
}

/// find_gitignore_in_repo.
#[tokio::test]
async fn find_honours_gitignore_in_a_git_repo() {
    let fixture = Fixture::new(&[
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".gitignore", "ignored.txt\n"),
        ("ignored.txt", ""),
        ("kept.txt", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.txt"})).await,
        "kept.txt"
    );
}

/// fd's own `.fdignore` counts, nested ones too; rg's `.rgignore` is
/// grep's, not find's.
#[tokio::test]
async fn find_honours_fdignore_files_and_not_rgignore_files() {
    let fixture = Fixture::new(&[
        ("sub/.fdignore", "generated.txt\n"),
        (".rgignore", "kept.txt\n"),
        ("sub/generated.txt", ""),
        ("kept.txt", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.txt"})).await,
        "kept.txt"
    );
}

/// A repository's own ignore files apply up to its root, not past it (as
/// in grep): fd with `--no-require-git` applied those of a repository
/// around it too.
#[tokio::test]
async fn find_stops_at_the_repository_root_for_ignore_files() {
    let fixture = Fixture::new(&[
        ("../.git/HEAD", "ref: refs/heads/main\n"),
        ("../.gitignore", "*.json\n"),
        ("inner/.git/HEAD", "ref: refs/heads/main\n"),
        ("inner/.gitignore", "*.log\n"),
        ("inner/src/config.json", ""),
        ("inner/src/app.log", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.*", "path": "inner/src"})).await,
        "config.json"
    );
}

/// A folder outside any repository has its `.gitignore` honoured
/// (DEVIATIONS #4), but not inside a repository below it, which git judges
/// by that repository's own ignore files; the paths keep their order.
#[tokio::test]
async fn find_outside_a_repository_leaves_the_repositories_below_to_their_own_ignore_files() {
    let fixture = Fixture::new(&[
        (".gitignore", "*.txt\n"),
        ("loose.txt", ""),
        ("a.md", ""),
        ("repo/.git/HEAD", "ref: refs/heads/main\n"),
        ("repo/.gitignore", "*.log\n"),
        ("repo/src/a.txt", ""),
        ("repo/src/b.log", ""),
        ("repo2/.git/HEAD", "ref: refs/heads/main\n"),
        ("repo2/c.txt", ""),
        ("z.md", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.{md,txt,log}"})).await,
        "a.md\nrepo/src/a.txt\nrepo2/c.txt\nz.md"
    );
    assert_eq!(
        find_text(&fixture, json!({"pattern": "repo*"})).await,
        "repo/\nrepo2/"
    );
}

/// find_glob_txt.
#[tokio::test]
async fn find_name_glob_matches_at_any_depth() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.txt"})).await,
        ".hidden/secret.txt\na.txt"
    );
}

/// find_missing_path. Pi shows fd's error (`[fd error]: Search path '…' is not
/// a directory. …`); without fd we use Pi's own wording (DEVIATIONS #5).
#[tokio::test]
async fn find_missing_path_names_the_absolute_path() {
    let fixture = Fixture::new(&[]);
    assert_eq!(
        find_error(&fixture, json!({"pattern": "*", "path": "nope"})).await,
        format!("Path not found: {}", fixture.work().join("nope").display())
    );
}

/// find_path_arg.
#[tokio::test]
async fn find_results_are_relative_to_the_path_argument() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.rs", "path": "src/util"})).await,
        "helpers.rs"
    );
}

/// find_path_pattern_leading_star.
#[tokio::test]
async fn find_path_glob_matches_relative_paths() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "**/util/*"})).await,
        "src/util/helpers.py\nsrc/util/helpers.rs"
    );
}

// Beyond the fixtures.

#[tokio::test]
async fn find_path_glob_without_leading_stars_matches_at_any_depth() {
    let fixture = Fixture::project();
    fixture.write("crates/x/src/deep/mod.rs", "");
    fixture.write("src/notes.txt", "");
    assert_eq!(
        find_text(&fixture, json!({"pattern": "src/**/*.rs"})).await,
        "crates/x/src/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\nsrc/util/helpers.rs"
    );
}

/// Pi's fd matches a pattern with `/` against the whole path: a model that
/// names the directory in both `path` and `pattern` still finds its files.
#[tokio::test]
async fn find_path_glob_repeating_the_searched_directory_finds_its_files() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "src/**/*.rs", "path": "src"})).await,
        "lib.rs\nmain.rs\nutil/helpers.rs"
    );
    assert_eq!(
        find_text(&fixture, json!({"pattern": "src/*.rs", "path": "src"})).await,
        "lib.rs\nmain.rs"
    );
}

/// fd's smart case: either case unless the pattern has a capital.
#[tokio::test]
async fn find_matches_either_case_unless_the_pattern_has_a_capital() {
    let fixture = Fixture::new(&[
        ("README.MD", ""),
        ("notes.md", ""),
        ("Makefile", ""),
        ("makefile.bak", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.md"})).await,
        "README.MD\nnotes.md"
    );
    assert_eq!(
        find_text(&fixture, json!({"pattern": "makefile*"})).await,
        "Makefile\nmakefile.bak"
    );
    assert_eq!(
        find_text(&fixture, json!({"pattern": "Makefile*"})).await,
        "Makefile"
    );
}

#[tokio::test]
async fn find_brace_set_of_rust_and_typescript() {
    let fixture = Fixture::project();
    fixture.write("web/app.ts", "");
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.{rs,ts}"})).await,
        "src/lib.rs\nsrc/main.rs\nsrc/util/helpers.rs\nweb/app.ts"
    );
}

/// fd lists matching directories too, with a trailing slash.
#[tokio::test]
async fn find_lists_directories_with_a_trailing_slash() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "util"})).await,
        "src/util/"
    );
    assert_eq!(
        find_text(&fixture, json!({"pattern": "src/*"})).await,
        "src/lib.rs\nsrc/main.rs\nsrc/util/"
    );
}

/// DEVIATIONS #4: Pi's fd lists `.git/config`; we never list `.git`.
#[tokio::test]
async fn find_never_lists_dot_git() {
    let fixture = Fixture::new(&[
        (".git/config", ""),
        (".git/HEAD", ""),
        (".gitignore", "*.log\n"),
        ("a.log", ""),
        ("code.rs", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*"})).await,
        ".gitignore\ncode.rs"
    );
}

/// DEVIATIONS #4: a nested .gitignore applies below its directory, also outside git.
#[tokio::test]
async fn find_honours_nested_gitignore() {
    let fixture = Fixture::new(&[
        ("sub/.gitignore", "*.log\n"),
        ("sub/a.log", ""),
        ("sub/a.txt", ""),
        ("top.log", ""),
    ]);
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.{log,txt}"})).await,
        "sub/a.txt\ntop.log"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn find_does_not_follow_a_directory_symlink_cycle() {
    let fixture = Fixture::new(&[("dir/a.txt", "")]);
    std::os::unix::fs::symlink("..", fixture.work().join("dir/loop")).unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        fixture.find(json!({"pattern": "*"})),
    )
    .await
    .expect("a symlink cycle must not hang the walk")
    .unwrap();
    assert_eq!(text(&result), "dir/\ndir/a.txt\ndir/loop");
}

/// DEVIATIONS #21: fd answers with two error lines of its own.
#[tokio::test]
async fn find_on_a_file_says_it_is_not_a_directory() {
    let fixture = Fixture::project();
    assert_eq!(
        find_error(&fixture, json!({"pattern": "*", "path": "a.txt"})).await,
        format!(
            "Not a directory: {}",
            fixture.work().join("a.txt").display()
        )
    );
}

#[tokio::test]
async fn find_output_is_cut_at_50kb() {
    let fixture = Fixture::new(&[]);
    let long = "n".repeat(200);
    for i in 0..300 {
        fixture.write(&format!("{i:03}{long}.txt"), "");
    }
    let result = fixture.find(json!({"pattern": "*.txt"})).await.unwrap();
    // Each line is 207 bytes plus a newline: 246 lines fit in 51200 bytes.
    let kept: Vec<String> = (0..246).map(|i| format!("{i:03}{long}.txt")).collect();
    assert_eq!(
        text(&result),
        format!("{}\n\n[50.0KB limit reached]", kept.join("\n"))
    );
    assert_eq!(
        result.details.unwrap()["truncation"]["outputLines"],
        json!(246)
    );
}

/// fd's `--max-results 0` means no limit; we keep that, without a notice.
#[tokio::test]
async fn find_limit_zero_means_no_limit() {
    let fixture = Fixture::project();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.rs", "limit": 0})).await,
        "src/lib.rs\nsrc/main.rs\nsrc/util/helpers.rs"
    );
}

#[tokio::test]
async fn find_bad_glob_reports_the_glob_error() {
    let fixture = Fixture::project();
    assert_eq!(
        find_error(&fixture, json!({"pattern": "[z-a]"})).await,
        "error parsing glob '[z-a]': invalid range; 'z' > 'a'"
    );
}

#[tokio::test]
async fn find_cancelled_before_start_is_aborted() {
    let fixture = Fixture::project();
    let ctx = ToolContext::new(fixture.work());
    ctx.cancel.cancel();
    let error = find_tool()
        .execute(json!({"pattern": "*"}), ctx)
        .await
        .unwrap_err();
    assert_eq!(error.message(), "Operation aborted");
}

/// Operations that never finish, to show cancellation does not wait for them.
struct Stuck;

impl HomeDir for Stuck {}

#[async_trait]
impl FindOperations for Stuck {
    async fn glob(
        &self,
        _request: FindRequest,
        _cancel: CancellationToken,
    ) -> Result<Searched<String>, SearchError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn find_cancelled_while_running_is_aborted() {
    let ctx = ToolContext::new("/");
    let cancel = ctx.cancel.clone();
    let tool = Typed::new(FindTool::new(Arc::new(Stuck)));
    let call = tool.execute(json!({"pattern": "*"}), ctx);
    cancel.cancel();
    assert_eq!(call.await.unwrap_err().message(), "Operation aborted");
}

/// The request carries the resolved path and the default limit.
#[tokio::test]
async fn find_passes_pis_arguments_to_the_operations() {
    struct Expect;
    impl HomeDir for Expect {}

    #[async_trait]
    impl FindOperations for Expect {
        async fn glob(
            &self,
            request: FindRequest,
            _cancel: CancellationToken,
        ) -> Result<Searched<String>, SearchError> {
            assert_eq!(
                request,
                FindRequest {
                    path: PathBuf::from("/cwd"),
                    pattern: "*.ts".into(),
                    limit: Some(1000),
                }
            );
            Ok(Searched::all(vec!["a.ts".into()]))
        }
    }
    let result = run(
        &Typed::new(FindTool::new(Arc::new(Expect))),
        Path::new("/cwd"),
        json!({"pattern": "*.ts", "path": ""}),
    )
    .await
    .unwrap();
    assert_eq!(text(&result), "a.ts");
}

#[cfg(unix)]
#[tokio::test]
async fn find_searches_a_symlinked_search_directory() {
    let fixture = Fixture::new(&[("real/a.rs", "")]);
    std::os::unix::fs::symlink("real", fixture.work().join("link")).unwrap();
    assert_eq!(
        find_text(&fixture, json!({"pattern": "*.rs", "path": "link"})).await,
        "a.rs"
    );
}
