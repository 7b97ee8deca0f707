//! Built-in tools over your own file system: `cargo run -p coding-agent --example in_memory_tools`.
//!
//! `read` and `write` reach files only through their Operations traits
//! (`tools/<name>/ops.rs`), so the same tools (same schemas, same texts for
//! the model, same truncation) work on anything that implements them: here a
//! map in memory, elsewhere a remote machine or a container. An agent driven
//! by a scripted model (no network) writes a file and reads it back; nothing
//! touches the disk. Paths reach the Operations resolved but, when the model
//! wrote them absolute, not normalised: the store normalises them before it
//! looks them up or checks them against its root, and names its own home
//! for `~` (`coding_agent::tools`, "The paths Operations are given"). The
//! other tools work so too: `bash`, say, over a
//! `BashOperations` that implements only `exec` cuts a long output with a
//! notice that names no file (only operations that say where, with
//! `output_log`, keep the full output: the local ones in the temp directory).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_ai::testing::ScriptedResponse;
use agent_ai::{AssistantContent, Content, Message, ScriptedProvider, TextContent, ToolCall};
use agent_core::{Agent, AgentContext, LoopConfig, ToolSet};
use coding_agent::definition::{ContextFactory, Typed};
use coding_agent::support::fs_error::FsError;
use coding_agent::support::mutation_queue::MutationTarget;
use coding_agent::support::paths::{HomeDir, normalize_lexically};
use coding_agent::tools::read::lines::{LineWindow, WindowCollector, WindowText};
use coding_agent::tools::read::ops::{FileInfo, ReadError, ReadOperations};
use coding_agent::tools::read::{ReadTool, ReadToolOptions};
use coding_agent::tools::write::WriteTool;
use coding_agent::tools::write::ops::WriteOperations;
use coding_agent::{CancellationToken, ToolContext, async_trait, wrap_tool_definition};
use serde_json::json;

/// Files in memory under one root, by normalised absolute path.
struct MemoryFs {
    root: PathBuf,
    files: Mutex<HashMap<PathBuf, Vec<u8>>>,
}

impl MemoryFs {
    fn new(root: impl Into<PathBuf>) -> Self {
        MemoryFs {
            root: root.into(),
            files: Mutex::default(),
        }
    }

    /// Where `path` is in the store. An absolute path reaches Operations as
    /// the model wrote it, `..` included: unnormalised,
    /// `/memory/project/src/../src/hello.txt` was not found, and
    /// `/memory/project/../../etc/passwd` passed a `starts_with` check of
    /// the root. With no links in memory, resolving `..` lexically is exact.
    fn key(&self, path: &Path) -> io::Result<PathBuf> {
        let path = normalize_lexically(path);
        if path.starts_with(&self.root) {
            Ok(path)
        } else {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        }
    }

    fn get(&self, path: &Path) -> io::Result<Vec<u8>> {
        let key = self.key(path)?;
        let files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files
            .get(&key)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
}

/// `~` inside the store: the default, this machine's home, would send
/// `~/notes.txt` to `/root/notes.txt`.
impl HomeDir for MemoryFs {
    fn home_dir(&self) -> Option<PathBuf> {
        Some(self.root.join("home"))
    }
}

#[async_trait]
impl ReadOperations for MemoryFs {
    async fn exists(&self, path: &Path) -> bool {
        self.get(path).is_ok()
    }

    async fn access(&self, path: &Path) -> io::Result<FileInfo> {
        let bytes = self.get(path)?;
        Ok(FileInfo {
            is_dir: false,
            len: bytes.len() as u64,
            special: None,
        })
    }

    async fn read_prefix(&self, path: &Path, len: usize) -> io::Result<Vec<u8>> {
        let mut bytes = self.get(path)?;
        bytes.truncate(len);
        Ok(bytes)
    }

    async fn read_all(&self, path: &Path, _: &CancellationToken) -> Result<Vec<u8>, ReadError> {
        Ok(self.get(path)?)
    }

    async fn read_lines(
        &self,
        path: &Path,
        window: LineWindow,
        _: &CancellationToken,
    ) -> Result<WindowText, ReadError> {
        // The collector the local implementation uses: the window, the line
        // count and the truncation come out the same.
        let mut collector = WindowCollector::new(window);
        collector.push(&self.get(path)?);
        Ok(collector.finish())
    }
}

/// Queued by the lexical path, the default: nothing to resolve in memory.
impl MutationTarget for MemoryFs {}

#[async_trait]
impl WriteOperations for MemoryFs {
    async fn mkdir(&self, _dir: &Path) -> Result<(), FsError> {
        Ok(()) // directories are implied by the paths
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        let key = self.key(path).map_err(|e| FsError::new(&e, "open", path))?;
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        files.insert(key, content);
        Ok(())
    }
}

fn model_turn(content: Vec<AssistantContent>) -> ScriptedResponse {
    ScriptedResponse::Message(ScriptedProvider::reply(content))
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall::new(id, name, arguments))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fs = Arc::new(MemoryFs::new("/memory"));
    let read = Typed::new(ReadTool {
        ops: fs.clone(),
        options: ReadToolOptions::default(),
    });
    let write = Typed::new(WriteTool::new(fs.clone()));
    // A directory that exists nowhere: the tools resolve paths against it,
    // and only the Operations above ever see them.
    let context: ContextFactory = Arc::new(|cancel| ToolContext {
        cancel,
        ..ToolContext::new("/memory/project")
    });
    let tools = ToolSet::new([
        wrap_tool_definition(Arc::new(read), context.clone()),
        wrap_tool_definition(Arc::new(write), context),
    ])?;

    // The model: write a file, read it back by an absolute path with `..`
    // in it, write under `~`, try to read out of the store, then answer.
    let provider = Arc::new(ScriptedProvider::new([
        model_turn(vec![call(
            "w",
            "write",
            json!({"path": "src/hello.txt", "content": "hello from memory\n"}),
        )]),
        model_turn(vec![call(
            "r",
            "read",
            json!({"path": "/memory/project/src/../src/hello.txt"}),
        )]),
        model_turn(vec![call(
            "h",
            "write",
            json!({"path": "~/notes.txt", "content": "mine\n"}),
        )]),
        model_turn(vec![call(
            "x",
            "read",
            json!({"path": "/memory/project/../../etc/passwd"}),
        )]),
        model_turn(vec![AssistantContent::Text(TextContent {
            text: "The file says hello.".into(),
            text_signature: None,
        })]),
    ]));
    let config = LoopConfig::new(ScriptedProvider::model(), provider);
    let agent = Agent::new(config, AgentContext::new(None, Arc::new(tools)));
    let added = agent
        .prompt("Write src/hello.txt and ~/notes.txt, and read them.")
        .await?;

    let mut results = Vec::new();
    for message in &added {
        if let Message::ToolResult(result) = message {
            let text: String = result.content.iter().filter_map(Content::as_text).collect();
            println!("{} -> {text}", result.tool_name);
            results.push(text);
        }
    }
    // The example checks itself, so CI notices when it stops working.
    assert_eq!(
        results,
        [
            "Successfully wrote 18 bytes to src/hello.txt",
            "hello from memory\n",
            "Successfully wrote 5 bytes to ~/notes.txt",
            "EACCES: permission denied, access '/memory/project/../../etc/passwd'",
        ]
    );
    assert!(fs.get(Path::new("/memory/project/src/hello.txt")).is_ok());
    assert!(fs.get(Path::new("/memory/home/notes.txt")).is_ok());
    assert!(!Path::new("/memory").exists(), "nothing reached the disk");
    Ok(())
}
