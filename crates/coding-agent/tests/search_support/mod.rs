//! What the grep and find tests share: a parity layout (a temp root holding
//! `work/` (the cwd), `home/` and `tmp/`) with the project most parity fixtures
//! use, and a way to run a tool in it.

// Each test binary (grep, find) uses its own part.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use std::sync::Arc;

use agent_core::{AgentToolResult, ToolError};
use coding_agent::support::walk::{LocalSearchOperations, WalkOptions};
use coding_agent::tools::find::FindTool;
use coding_agent::tools::grep::GrepTool;
use coding_agent::{ToolContext, ToolDefinition, Typed};
use serde_json::Value;

/// `grep` on this machine, honouring only the tree's ignore files: the
/// developer's global gitignore cannot change an answer.
pub fn grep_tool() -> Typed<GrepTool> {
    Typed::new(GrepTool::new(Arc::new(LocalSearchOperations {
        walk: WalkOptions::tree_only(),
    })))
}

/// `find` on this machine, honouring only the tree's ignore files.
pub fn find_tool() -> Typed<FindTool> {
    Typed::new(FindTool::new(Arc::new(LocalSearchOperations {
        walk: WalkOptions::tree_only(),
    })))
}

/// A parity layout in a temp dir, removed on drop.
pub struct Fixture {
    root: tempfile::TempDir,
}

impl Fixture {
    /// A layout whose `work/` holds `files` (path, text).
    pub fn new(files: &[(&str, &str)]) -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["work", "home", "tmp"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        let fixture = Fixture { root };
        for (path, text) in files {
            fixture.write(path, text);
        }
        fixture
    }

    /// The files most parity fixtures share.
    pub fn project() -> Self {
        Fixture::new(&[
            ("a.txt", "alpha\nfoo bar\nbeta\n"),
            ("b.md", "# Title\nfoo\n"),
            ("src/main.rs", "fn main() {\n    println!(\"foo\");\n}\n"),
            ("src/lib.rs", "pub fn foo() -> u32 { 42 }\n"),
            ("src/util/helpers.rs", "// foo helper\npub fn helper() {}\n"),
            ("src/util/helpers.py", "def foo():\n    return 1\n"),
            (".hidden/secret.txt", "foo in hidden dir\n"),
            (".env", "FOO=1\n"),
        ])
    }

    /// The layout's `name/` directory (`work`, `home`, `tmp`).
    pub fn dir(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// The tools' cwd.
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// Writes `bytes` at `path` under `work/`, creating parent directories.
    pub fn write(&self, path: &str, bytes: impl AsRef<[u8]>) {
        let path = self.work().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Runs `tool` once with `args` in `cwd`, outside the loop.
pub async fn run(
    tool: &dyn ToolDefinition,
    cwd: &Path,
    args: Value,
) -> Result<AgentToolResult, ToolError> {
    tool.execute(args, ToolContext::new(cwd)).await
}

/// The first text block of a result.
pub fn text(result: &AgentToolResult) -> &str {
    result.content[0].as_text().unwrap()
}
