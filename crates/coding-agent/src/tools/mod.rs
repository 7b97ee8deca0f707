//! The built-in tools, one folder each, and the registry that finds them by name.
//!
//! A tool's folder holds everything only it uses: `mod.rs` (the definition and
//! its renderers), `ops.rs` (the narrow Operations trait through which it
//! reaches files and processes, with the local implementation; remote and test
//! implementations plug in beside it) and its own helpers. What several tools
//! share lives in [`crate::support`].
//!
//! Every tool is an [`OpsTool`] (`FindTool` is `OpsTool<dyn FindOperations>`):
//! the parts all tools have, their Operations and settings and working on
//! this machine by default, are written once here, so a tool's folder states
//! only what is its own.
//!
//! # The paths Operations are given
//!
//! What to know before implementing an Operations trait over files of your
//! own (in memory, in a container, on another host); the example
//! `examples/in_memory_tools.rs` does all of it.
//!
//! - The tool resolves the path the model wrote, as Pi does: one leading
//!   `@` dropped, `~` expanded to the Operations' own
//!   [`HomeDir::home_dir`], and a relative path joined to the
//!   [`ToolContext::cwd`](crate::ToolContext::cwd) with `.` and `..`
//!   resolved lexically (Node's `path.resolve`). With an absolute cwd, every
//!   path arrives absolute.
//! - **An absolute path arrives as written, `..` included**
//!   (`/mem/proj/src/../a.txt`). On a real file system the kernel applies
//!   `..` after following links (`ws/out/../x` with `out -> /srv/sub` is
//!   `/srv/x`), and the permission guard judges the path where the kernel
//!   puts it: resolving `..` lexically first would open another file than
//!   the one judged. (`Path` equality ignores `.` and repeated `/`, so of
//!   the spellings only `..` misleads a map keyed by `PathBuf`.)
//! - **So `Path::starts_with` alone is no root check**:
//!   `/mem/proj/../../etc/passwd` starts with `/mem/proj`. Files without
//!   links (a map in memory): normalise with
//!   [`normalize_lexically`](crate::support::paths::normalize_lexically)
//!   first, and key and check the result. Files with links: resolve them
//!   as the kernel does (on this machine
//!   [`where_links_lead`](crate::support::paths::where_links_lead)), or let
//!   the OS confine the process (the Landlock sandbox does).
//! - [`HomeDir`]'s default is this machine's home: Operations whose files
//!   are elsewhere should name their own (without one, `~/x` stays a
//!   relative path under the cwd). The default sent `~/a.txt` to an
//!   in-memory store as `/root/a.txt`.
//! - `read` may ask `exists` about a few other spellings of a missing name
//!   (macOS screenshot names:
//!   [`read_path_candidates`](crate::support::paths::read_path_candidates))
//!   before it opens one. grep, find and ls are given their directory
//!   resolved as above; bash is given the context's cwd as it is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{AgentTool, ToolError, ToolSet};
use tokio_util::sync::CancellationToken;

use crate::definition::{ContextFactory, ToolDefinition, Typed, TypedTool, wrap_tool_definition};
use crate::support::mutation_queue::{MutationTarget, with_file_mutation_queue};
use crate::support::paths::{HomeDir, resolve_dir_arg, resolve_to_cwd};
use crate::support::walk::LocalSearchOperations;

pub mod bash;
pub mod edit;
pub mod find;
pub mod grep;
pub mod ls;
pub mod read;
pub mod write;

/// A built-in tool: the Operations through which it reaches files and
/// processes, and its settings (`()` for a tool that has none). Each tool
/// names its own (`pub type FindTool = OpsTool<dyn FindOperations>`) and
/// implements [`TypedTool`] for it;
/// [`Typed`] makes that a [`ToolDefinition`].
pub struct OpsTool<O: ?Sized, S = ()> {
    /// Where the tool works: this machine, a remote host, a sandbox, a test's
    /// in-memory files.
    pub ops: Arc<O>,
    /// How the tool is set up.
    pub options: S,
}

impl<O: ?Sized, S: Default> OpsTool<O, S> {
    /// The tool working through `ops`, with default settings.
    pub fn new(ops: Arc<O>) -> Self {
        OpsTool {
            ops,
            options: S::default(),
        }
    }
}

/// The tool's name and settings; its Operations are a trait object, which
/// has no `Debug`.
impl<O: ?Sized, S: std::fmt::Debug> std::fmt::Debug for OpsTool<O, S>
where
    Self: TypedTool,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpsTool")
            .field("name", &Self::SPEC.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Path arguments name files where the tool works: `~` is the home
/// directory its Operations report (a remote host's, for a remote tool).
impl<O: ?Sized + HomeDir, S> OpsTool<O, S> {
    /// The file `path` names, resolved against `cwd` ([`resolve_to_cwd`]).
    pub fn resolve(&self, path: &str, cwd: &Path) -> PathBuf {
        resolve_to_cwd(path, cwd, self.ops.home_dir().as_deref())
    }

    /// The directory an optional `path` argument names, the working
    /// directory when it is absent or empty ([`resolve_dir_arg`]).
    pub fn resolve_dir(&self, path: Option<&str>, cwd: &Path) -> PathBuf {
        resolve_dir_arg(path, cwd, self.ops.home_dir().as_deref())
    }
}

/// The tools that change files (`edit`, `write`).
impl<O: ?Sized + MutationTarget + 'static, S> OpsTool<O, S> {
    /// Runs the change `mutation` makes to the file at `abs` (absolute) in
    /// its turn in that file's queue ([`with_file_mutation_queue`]);
    /// `mutation` is given the Operations, the path and the cancel token to
    /// own, since a change once begun runs to its end on a task of its own.
    /// A cancel while waiting or running ends the call as aborted.
    pub async fn mutate_file<F, T>(
        &self,
        abs: &Path,
        cancel: &CancellationToken,
        mutation: impl FnOnce(Arc<O>, PathBuf, CancellationToken) -> F,
    ) -> Result<T, ToolError>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let change = mutation(Arc::clone(&self.ops), abs.to_path_buf(), cancel.clone());
        with_file_mutation_queue(&*self.ops, abs, cancel, change)
            .await
            .map_err(|aborted| ToolError::new(aborted.to_string()))
    }
}

/// The tool on this machine, with default settings.
impl<O: ?Sized + LocalOperations, S: Default> Default for OpsTool<O, S> {
    fn default() -> Self {
        OpsTool::new(O::local())
    }
}

/// An Operations trait (`dyn FindOperations`) whose implementation on this
/// machine is what its tool uses by default.
pub trait LocalOperations {
    /// The implementation on this machine.
    fn local() -> Arc<Self>;
}

/// Which implementation each tool uses on this machine, one row a tool.
macro_rules! local_operations {
    ($($ops:ty => $local:expr),* $(,)?) => {$(
        impl LocalOperations for $ops {
            fn local() -> Arc<Self> {
                Arc::new($local)
            }
        }
    )*};
}

local_operations! {
    dyn read::ops::ReadOperations => read::ops::LocalReadOperations,
    dyn bash::ops::BashOperations => bash::ops::LocalBashOperations::new(),
    dyn edit::ops::EditOperations => write::ops::LocalFileOperations,
    dyn write::ops::WriteOperations => write::ops::LocalFileOperations,
    dyn grep::ops::GrepOperations => LocalSearchOperations::default(),
    dyn find::ops::FindOperations => LocalSearchOperations::default(),
    dyn ls::ops::LsOperations => ls::ops::LocalLsOperations,
}

/// The names of Pi's built-in tools, in Pi's order (`allToolNames`).
pub const BUILTIN_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The built-in tool called `name`, working on the local machine; `None` for
/// any other name.
pub fn builtin_tool(name: &str) -> Option<Arc<dyn ToolDefinition>> {
    let tool: Arc<dyn ToolDefinition> = match name {
        "read" => Arc::new(Typed::<read::ReadTool>::default()),
        "bash" => Arc::new(Typed::<bash::BashTool>::default()),
        "edit" => Arc::new(Typed::<edit::EditTool>::default()),
        "write" => Arc::new(Typed::<write::WriteTool>::default()),
        "grep" => Arc::new(Typed::<grep::GrepTool>::default()),
        "find" => Arc::new(Typed::<find::FindTool>::default()),
        "ls" => Arc::new(Typed::<ls::LsTool>::default()),
        _ => return None,
    };
    Some(tool)
}

/// The built-in tools called `names` (all seven when `None`), as the loop
/// sees them, working in `cwd`; `Err` names an unknown tool.
pub fn builtin_tool_set(
    names: Option<&[String]>,
    cwd: std::path::PathBuf,
) -> anyhow::Result<ToolSet> {
    tool_set_from(names, cwd, builtin_tool)
}

/// [`builtin_tool_set`] with the tools `lookup` makes (a remote host's:
/// [`crate::remote::remote_tool`]).
pub fn tool_set_from(
    names: Option<&[String]>,
    cwd: std::path::PathBuf,
    lookup: impl Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
) -> anyhow::Result<ToolSet> {
    let all: Vec<String> = BUILTIN_TOOL_NAMES.iter().map(|&n| n.to_owned()).collect();
    let names = names.unwrap_or(&all);
    let factory: ContextFactory = Arc::new(move |cancel| crate::ToolContext {
        cancel,
        ..crate::ToolContext::new(cwd.clone())
    });
    let mut tools: Vec<Arc<dyn AgentTool>> = Vec::new();
    for name in names {
        let name = name.trim();
        let definition = lookup(name).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown tool \"{name}\"; the tools are {}",
                BUILTIN_TOOL_NAMES.join(", ")
            )
        })?;
        tools.push(wrap_tool_definition(definition, factory.clone()));
    }
    Ok(ToolSet::new(tools)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_name_finds_the_tool_of_that_name() {
        for name in BUILTIN_TOOL_NAMES {
            let tool = builtin_tool(name).unwrap_or_else(|| panic!("{name} is not registered"));
            assert_eq!(tool.tool().name, name);
        }
    }

    /// A struct holding a tool could not derive Debug: no tool had it.
    #[test]
    fn tools_show_their_name_and_settings_in_debug() {
        fn shown<T: TypedTool + Default + std::fmt::Debug>() -> String {
            format!("{:?}", Typed::<T>::default())
        }
        assert_eq!(
            shown::<ls::LsTool>(),
            "Typed { inner: OpsTool { name: \"ls\", options: (), .. }, .. }"
        );
        let all = [
            shown::<read::ReadTool>(),
            shown::<bash::BashTool>(),
            shown::<edit::EditTool>(),
            shown::<write::WriteTool>(),
            shown::<grep::GrepTool>(),
            shown::<find::FindTool>(),
            shown::<ls::LsTool>(),
        ];
        for (name, shown) in BUILTIN_TOOL_NAMES.iter().zip(all) {
            assert!(
                shown.starts_with(&format!("Typed {{ inner: OpsTool {{ name: \"{name}\"")),
                "{shown}"
            );
        }
    }

    #[test]
    fn unknown_names_find_nothing() {
        assert!(builtin_tool("delete").is_none());
        assert!(builtin_tool("LS").is_none());
    }
}
