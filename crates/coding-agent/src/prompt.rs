//! The system prompt, assembled as Pi 0.73.1's `buildSystemPrompt` does
//! (`docs/tool-behaviour.md` §6): a base text naming the active tools (each tool's one-line
//! snippet) and guidelines (built-in ones, then each active tool's), any
//! appended text, the project's context files (`AGENTS.md`/`CLAUDE.md`), the
//! skills (when `read` is active: [`crate::skills`]), then the date and the
//! working directory.
//!
//! A custom prompt (`--system-prompt`, `.coding-agent/SYSTEM.md` or
//! `SYSTEM.md` in the agent directory) replaces the base text; appended text,
//! context files, skills, date and cwd still follow it.
//!
//! Pi's base text names "pi" and points at Pi's own documentation; ours names
//! this product and has no documentation section (there is no installed
//! documentation to read). Everything else is Pi's text.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::definition::ToolDefinition;
use crate::settings::PROJECT_CONFIG_DIR;
use crate::skills::Skill;
use crate::tools::read::ops::{LocalReadOperations, ReadOperations};

/// The opening line of the default prompt.
const INTRO: &str = "You are an expert coding assistant operating inside coding-agent, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.";

/// Context file names looked for in each directory, first match wins (Pi 0.73.1).
pub const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

/// A project instructions file included in the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was found (shown as its heading).
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

/// Everything the prompt is built from.
#[derive(Clone, Default)]
pub struct PromptInputs {
    /// Replaces the default text, when set.
    pub custom_prompt: Option<String>,
    /// Texts appended after the base (`--append-system-prompt`, `APPEND_SYSTEM.md`).
    pub append: Vec<String>,
    /// The active tools, in order.
    pub tools: Vec<Arc<dyn ToolDefinition>>,
    /// Project context files, global first, then root down to cwd.
    pub context_files: Vec<ContextFile>,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The working directory.
    pub cwd: PathBuf,
    /// `[user@]host[:port]` when the tools act on a remote host (`--remote`).
    pub remote_host: Option<String>,
    /// The skills the model may load (listed when `read` is active).
    pub skills: Vec<Skill>,
}

impl std::fmt::Debug for PromptInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptInputs")
            .field("custom_prompt", &self.custom_prompt)
            .field("append", &self.append)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| &t.tool().name)
                    .collect::<Vec<_>>(),
            )
            .field("context_files", &self.context_files)
            .field("date", &self.date)
            .field("cwd", &self.cwd)
            .field("remote_host", &self.remote_host)
            .field(
                "skills",
                &self.skills.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The system prompt for `inputs` (see the module docs for its layout).
pub fn build_system_prompt(inputs: &PromptInputs) -> String {
    let mut prompt = match &inputs.custom_prompt {
        Some(custom) => custom.clone(),
        None => default_prompt(&inputs.tools),
    };
    let append = inputs.append.join("\n\n");
    if !append.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&append);
    }
    if !inputs.context_files.is_empty() {
        prompt.push_str("\n\n# Project Context\n\n");
        prompt.push_str("Project-specific instructions and guidelines:\n\n");
        for file in &inputs.context_files {
            prompt.push_str(&format!(
                "## {}\n\n{}\n\n",
                slashed(&file.path),
                file.content
            ));
        }
    }
    if inputs.tools.iter().any(|tool| tool.tool().name == "read") {
        prompt.push_str(&crate::skills::prompt_section(&inputs.skills));
    }
    prompt.push_str(&format!("\nCurrent date: {}", inputs.date));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        slashed(&inputs.cwd)
    ));
    if let Some(host) = &inputs.remote_host {
        prompt.push_str(&remote_line(host));
    }
    prompt
}

/// Where the tools act, when that is another machine: the directory above
/// and every path and command are on it.
fn remote_line(host: &str) -> String {
    format!(
        "\nRemote host: {host} (over SSH). Every tool runs on that host: the working directory, paths and commands are there, not on the user's machine."
    )
}

/// The base text: tools with snippets, then guidelines.
fn default_prompt(tools: &[Arc<dyn ToolDefinition>]) -> String {
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|tool| {
            let snippet = one_line(tool.prompt_snippet()?);
            (!snippet.is_empty()).then(|| format!("- {}: {snippet}", tool.tool().name))
        })
        .collect();
    let tools_list = if listed.is_empty() {
        "(none)".to_owned()
    } else {
        listed.join("\n")
    };

    let mut guidelines: Vec<String> = Vec::new();
    let mut add = |guideline: &str| {
        let guideline = guideline.trim();
        if !guideline.is_empty() && !guidelines.iter().any(|g| g == guideline) {
            guidelines.push(guideline.to_owned());
        }
    };
    let active = |name: &str| tools.iter().any(|t| t.tool().name == name);
    let explores = active("grep") || active("find") || active("ls");
    if active("bash") && !explores {
        add("Use bash for file operations like ls, rg, find");
    } else if active("bash") && explores {
        add(
            "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
        );
    }
    for tool in tools {
        for guideline in tool.prompt_guidelines() {
            add(guideline);
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    let guidelines: Vec<String> = guidelines.iter().map(|g| format!("- {g}")).collect();

    format!(
        "{INTRO}\n\nAvailable tools:\n{tools_list}\n\nIn addition to the tools above, you may have access to other custom tools depending on the project.\n\nGuidelines:\n{}",
        guidelines.join("\n")
    )
}

/// Whitespace runs collapsed to one space, ends trimmed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path with `/` separators, as Pi shows paths in the prompt.
fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The context files for `cwd`: the agent directory's, then one per directory
/// from the filesystem root down to `cwd` (Pi's `loadProjectContextFiles`).
pub async fn load_context_files(agent_dir: &Path, cwd: &Path) -> Vec<ContextFile> {
    let local = LocalReadOperations;
    let mut files: Vec<ContextFile> = context_file_in(&local, agent_dir)
        .await
        .into_iter()
        .collect();
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    for dir in dirs {
        if let Some(file) = context_file_in(&local, dir).await
            && !files.iter().any(|f| f.path == file.path)
        {
            files.push(file);
        }
    }
    files
}

/// The first context file in `dir`, by [`CONTEXT_FILE_NAMES`] order, read
/// through `files` (this machine's, or a remote host's). One that is there
/// but cannot be taken (a folder, a pipe, a device, larger than
/// [`MAX_INSTRUCTION_FILE`]) is left out with a warning, as Pi warns of a file
/// it could not read, and the next name is tried.
pub async fn context_file_in(files: &dyn ReadOperations, dir: &Path) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        match read_instruction_file(files, &path).await {
            Ok(Some(content)) => return Some(ContextFile { path, content }),
            Ok(None) => {}
            Err(reason) => tracing::warn!("{} is left out: {reason}", path.display()),
        }
    }
    None
}

/// The most an instructions file (a context file, `SYSTEM.md`, a prompt
/// file) may hold. It goes into every request whole, and 1 MiB is already
/// more than a model's context window: a larger one is a mistake, or a
/// link a cloned repository made to `/dev/zero`, not instructions.
pub const MAX_INSTRUCTION_FILE: usize = 1 << 20;

/// The text of the instructions file at `path` (invalid UTF-8 replaced, as
/// Pi's reading does), `None` when nothing is there, or why it is not
/// taken: it cannot be read, or it is not a regular file (reading a pipe
/// waits for a writer, reading a device may never end), or it is larger than
/// [`MAX_INSTRUCTION_FILE`].
pub async fn read_instruction_file(
    files: &dyn ReadOperations,
    path: &Path,
) -> Result<Option<String>, String> {
    let info = match files.access(path).await {
        Ok(info) => info,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("it cannot be read ({error})")),
    };
    if info.is_dir {
        return Err("it is a folder".into());
    }
    if let Some(special) = info.special {
        return Err(format!("it is {}, not a file", special.name()));
    }
    let too_large = || format!("it is larger than {} MiB", MAX_INSTRUCTION_FILE >> 20);
    if info.len > MAX_INSTRUCTION_FILE as u64 {
        return Err(too_large());
    }
    // A file the size does not tell (`/proc`) is read no further than that.
    let bytes = files
        .read_prefix(path, MAX_INSTRUCTION_FILE + 1)
        .await
        .map_err(|error| format!("it cannot be read ({error})"))?;
    if bytes.len() > MAX_INSTRUCTION_FILE {
        return Err(too_large());
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Pi's `resolvePromptInput`: the contents of the file `input` names
/// (invalid UTF-8 replaced), or `input` itself when there is no such file.
/// A file that exists but cannot be taken ([`read_instruction_file`]: a
/// folder, a pipe, too large), and a missing one whose name looks like a
/// file's (`notes.md`), are taken as the text itself with a warning: the user
/// meant a file.
pub async fn resolve_prompt_input(input: &str) -> String {
    match read_instruction_file(&LocalReadOperations, Path::new(input)).await {
        Ok(Some(text)) => return text,
        Err(reason) => tracing::warn!("{input} is used as the text itself: {reason}"),
        Ok(None) if looks_like_a_file_name(input) => {
            tracing::warn!("there is no file {input}; it is used as the text itself");
        }
        Ok(None) => {}
    }
    input.to_owned()
}

/// One word ending in a text file's extension (`notes.md`, `./p.txt`).
fn looks_like_a_file_name(input: &str) -> bool {
    !input.contains(char::is_whitespace)
        && [".md", ".txt", ".markdown"]
            .iter()
            .any(|extension| input.ends_with(extension))
}

/// `name` in the project's config directory (when `project` is given: a
/// trusted project's working directory), else in the agent directory (for
/// `SYSTEM.md` and `APPEND_SYSTEM.md`).
pub fn discover_prompt_file(
    name: &str,
    agent_dir: &Path,
    project: Option<&Path>,
) -> Option<PathBuf> {
    let project = project.map(|cwd| cwd.join(PROJECT_CONFIG_DIR).join(name));
    project
        .into_iter()
        .chain([agent_dir.join(name)])
        .find(|path| path.is_file())
}
