//! The system prompt (docs/tool-behaviour.md §6;
//! `system-prompt.test.ts`): whole prompts compared as text.
//!
//! Deviation from Pi named here: the intro names "coding-agent" where Pi says
//! "pi", and Pi's documentation section (paths to its installed README and
//! docs) is left out, as this product installs no documentation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::Tool;
use agent_core::{AgentToolResult, ToolError};
use async_trait::async_trait;
use coding_agent::app::select_tools;
use coding_agent::prompt::{
    ContextFile, MAX_INSTRUCTION_FILE, PromptInputs, build_system_prompt, context_file_in,
    discover_prompt_file, load_context_files, resolve_prompt_input,
};
use coding_agent::skills::Skill;
use coding_agent::templates::TemplateLocation;
use coding_agent::tools::read::ops::LocalReadOperations;
use coding_agent::{ToolContext, ToolDefinition};
use serde_json::{Value, json};

const INTRO: &str = "You are an expert coding assistant operating inside coding-agent, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.";
const CUSTOM_TOOLS: &str = "In addition to the tools above, you may have access to other custom tools depending on the project.";

/// A tool with a chosen snippet and guidelines (the test's `dynamic_tool`).
struct DynamicTool {
    tool: Tool,
    snippet: Option<&'static str>,
    guidelines: &'static [&'static str],
}

impl DynamicTool {
    fn definition(
        name: &str,
        snippet: Option<&'static str>,
        guidelines: &'static [&'static str],
    ) -> Arc<dyn ToolDefinition> {
        Arc::new(DynamicTool {
            tool: Tool {
                name: name.into(),
                description: "test tool".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
            snippet,
            guidelines,
        })
    }
}

#[async_trait]
impl ToolDefinition for DynamicTool {
    fn tool(&self) -> &Tool {
        &self.tool
    }
    fn label(&self) -> &str {
        "Dynamic"
    }
    fn prompt_snippet(&self) -> Option<&str> {
        self.snippet
    }
    fn prompt_guidelines(&self) -> &[&str] {
        self.guidelines
    }
    async fn execute(
        &self,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("ok"))
    }
}

fn builtins(names: &[&str]) -> Vec<Arc<dyn ToolDefinition>> {
    let names: Vec<String> = names.iter().map(|&n| n.to_owned()).collect();
    select_tools(&names).0
}

fn inputs(tools: Vec<Arc<dyn ToolDefinition>>) -> PromptInputs {
    PromptInputs {
        tools,
        date: "2025-06-01".into(),
        cwd: PathBuf::from("/work/project"),
        ..PromptInputs::default()
    }
}

fn default_prompt(tools_list: &str, guidelines: &[&str]) -> String {
    let guidelines: Vec<String> = guidelines.iter().map(|g| format!("- {g}")).collect();
    format!(
        "{INTRO}\n\nAvailable tools:\n{tools_list}\n\n{CUSTOM_TOOLS}\n\nGuidelines:\n{}\nCurrent date: 2025-06-01\nCurrent working directory: /work/project",
        guidelines.join("\n")
    )
}

#[test]
fn all_seven_tools_list_their_snippets_and_guidelines_in_tool_order() {
    let prompt = build_system_prompt(&inputs(builtins(&[
        "read", "bash", "edit", "write", "grep", "find", "ls",
    ])));
    assert_eq!(
        prompt,
        default_prompt(
            "- read: Read file contents\n\
             - bash: Execute bash commands (ls, grep, find, etc.)\n\
             - edit: Make precise file edits with exact text replacement, including multiple disjoint edits in one call\n\
             - write: Create or overwrite files\n\
             - grep: Search file contents for patterns (respects .gitignore)\n\
             - find: Find files by glob pattern (respects .gitignore)\n\
             - ls: List directory contents",
            &[
                "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
                "Use read to examine files instead of cat or sed.",
                "Use edit for precise changes (edits[].oldText must match exactly)",
                "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
                "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
                "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
                "Use write only for new files or complete rewrites.",
                "Be concise in your responses",
                "Show file paths clearly when working with files",
            ]
        )
    );
}

#[test]
fn bash_without_exploration_tools_is_told_to_use_bash_for_files() {
    let prompt = build_system_prompt(&inputs(builtins(&["read", "bash"])));
    assert_eq!(
        prompt,
        default_prompt(
            "- read: Read file contents\n- bash: Execute bash commands (ls, grep, find, etc.)",
            &[
                "Use bash for file operations like ls, rg, find",
                "Use read to examine files instead of cat or sed.",
                "Be concise in your responses",
                "Show file paths clearly when working with files",
            ]
        )
    );
}

#[test]
fn no_tools_lists_none_and_keeps_the_closing_guidelines() {
    let prompt = build_system_prompt(&inputs(Vec::new()));
    assert_eq!(
        prompt,
        default_prompt(
            "(none)",
            &[
                "Be concise in your responses",
                "Show file paths clearly when working with files"
            ]
        )
    );
}

#[test]
fn a_custom_tool_shows_its_snippet_and_guideline() {
    let mut tools = builtins(&["read"]);
    tools.push(DynamicTool::definition(
        "dynamic_tool",
        Some("Run dynamic test behavior"),
        &["Use dynamic_tool for project summaries."],
    ));
    assert_eq!(
        build_system_prompt(&inputs(tools)),
        default_prompt(
            "- read: Read file contents\n- dynamic_tool: Run dynamic test behavior",
            &[
                "Use read to examine files instead of cat or sed.",
                "Use dynamic_tool for project summaries.",
                "Be concise in your responses",
                "Show file paths clearly when working with files",
            ]
        )
    );
}

#[test]
fn duplicated_and_padded_guidelines_appear_once_and_blank_ones_not_at_all() {
    let tools = vec![
        DynamicTool::definition(
            "a",
            Some("  Spread\n  over   lines  "),
            &["  Same rule  ", "", "Be concise in your responses"],
        ),
        DynamicTool::definition("b", Some("   "), &["Same rule"]),
        DynamicTool::definition("c", None, &[]),
    ];
    assert_eq!(
        build_system_prompt(&inputs(tools)),
        default_prompt(
            "- a: Spread over lines",
            &[
                "Same rule",
                "Be concise in your responses",
                "Show file paths clearly when working with files",
            ]
        )
    );
}

#[test]
fn custom_prompt_keeps_append_context_date_and_cwd() {
    let prompt = build_system_prompt(&PromptInputs {
        custom_prompt: Some("You are terse.".into()),
        append: vec!["Extra one.".into(), "Extra two.".into()],
        context_files: vec![
            ContextFile {
                path: PathBuf::from("/home/me/.coding-agent/AGENTS.md"),
                content: "Global rules.".into(),
            },
            ContextFile {
                path: PathBuf::from("/work/project/AGENTS.md"),
                content: "Project rules.".into(),
            },
        ],
        ..inputs(builtins(&["read"]))
    });
    assert_eq!(
        prompt,
        "You are terse.\n\nExtra one.\n\nExtra two.\n\n# Project Context\n\n\
         Project-specific instructions and guidelines:\n\n\
         ## /home/me/.coding-agent/AGENTS.md\n\nGlobal rules.\n\n\
         ## /work/project/AGENTS.md\n\nProject rules.\n\n\
         \nCurrent date: 2025-06-01\nCurrent working directory: /work/project"
    );
}

#[test]
fn skills_follow_the_context_files_when_read_is_active_and_hidden_ones_are_not_listed() {
    let skill = |name: &str, model_invocable: bool| Skill {
        name: name.into(),
        description: format!("Use for {name} <work>."),
        path: PathBuf::from(format!("/home/me/.agents/skills/{name}/SKILL.md")),
        location: TemplateLocation::User,
        model_invocable,
        instructions: "Steps.".into(),
    };
    let with_skills = |tools| PromptInputs {
        custom_prompt: Some("You are terse.".into()),
        context_files: vec![ContextFile {
            path: PathBuf::from("/work/project/AGENTS.md"),
            content: "Project rules.".into(),
        }],
        skills: vec![skill("pdf", true), skill("deploy", false)],
        ..inputs(tools)
    };
    assert_eq!(
        build_system_prompt(&with_skills(builtins(&["read", "bash"]))),
        "You are terse.\n\n# Project Context\n\n\
         Project-specific instructions and guidelines:\n\n\
         ## /work/project/AGENTS.md\n\nProject rules.\n\n\
         \n\nThe following skills provide specialized instructions for specific tasks.\n\
         Use the read tool to load a skill's file when the task matches its description.\n\
         When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.\n\n\
         <available_skills>\n  <skill>\n    <name>pdf</name>\n    <description>Use for pdf &lt;work&gt;.</description>\n    \
         <location>/home/me/.agents/skills/pdf/SKILL.md</location>\n  </skill>\n</available_skills>\
         \nCurrent date: 2025-06-01\nCurrent working directory: /work/project"
    );
    // Without `read`, the model could not load them.
    let without_read = build_system_prompt(&with_skills(builtins(&["bash"])));
    assert!(!without_read.contains("available_skills"), "{without_read}");
}

#[test]
fn appended_text_follows_the_default_prompt() {
    let prompt = build_system_prompt(&PromptInputs {
        append: vec!["Always answer in French.".into()],
        ..inputs(Vec::new())
    });
    let expected = default_prompt(
        "(none)",
        &[
            "Be concise in your responses",
            "Show file paths clearly when working with files",
        ],
    )
    .replace(
        "\nCurrent date",
        "\n\nAlways answer in French.\nCurrent date",
    );
    assert_eq!(prompt, expected);
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn context_files_come_global_first_then_root_down_to_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let agent = root.join("agent");
    let cwd = root.join("a/b/c");
    std::fs::create_dir_all(&cwd).unwrap();
    write(&agent.join("AGENTS.md"), "global");
    write(&root.join("a/CLAUDE.md"), "claude in a");
    write(&root.join("a/b/AGENTS.md"), "agents in b");
    write(&root.join("a/b/CLAUDE.md"), "claude in b (shadowed)");
    write(&cwd.join("CLAUDE.MD"), "upper-case claude in c");
    let files = load_context_files(&agent, &cwd).await;
    let found: Vec<(PathBuf, String)> = files.into_iter().map(|f| (f.path, f.content)).collect();
    assert_eq!(
        found,
        [
            (agent.join("AGENTS.md"), "global".to_owned()),
            (root.join("a/CLAUDE.md"), "claude in a".to_owned()),
            (root.join("a/b/AGENTS.md"), "agents in b".to_owned()),
            (cwd.join("CLAUDE.MD"), "upper-case claude in c".to_owned()),
        ]
    );
}

#[tokio::test]
async fn the_agent_dir_file_is_not_listed_twice_when_cwd_is_the_agent_dir() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().canonicalize().unwrap();
    write(&agent.join("AGENTS.md"), "global");
    let files = load_context_files(&agent, &agent).await;
    assert_eq!(
        files,
        [ContextFile {
            path: agent.join("AGENTS.md"),
            content: "global".into()
        }]
    );
}

#[tokio::test]
async fn prompt_input_is_a_file_when_one_exists_else_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompt.md");
    std::fs::write(&file, "From a file.").unwrap();
    assert_eq!(
        resolve_prompt_input(file.to_str().unwrap()).await,
        "From a file."
    );
    assert_eq!(resolve_prompt_input("Just text.").await, "Just text.");
    // Invalid UTF-8 is replaced, not taken for the file's name.
    std::fs::write(&file, b"Caf\xe9 rules.").unwrap();
    assert_eq!(
        resolve_prompt_input(file.to_str().unwrap()).await,
        "Caf\u{FFFD} rules."
    );
}

#[tokio::test]
async fn a_context_file_with_invalid_utf8_is_read_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), b"R\xe9sum\xe9 first.").unwrap();
    std::fs::write(dir.path().join("CLAUDE.md"), "Not this one.").unwrap();
    let found = context_file_in(&LocalReadOperations, dir.path())
        .await
        .unwrap();
    assert_eq!(
        (found.path, found.content.as_str()),
        (dir.path().join("AGENTS.md"), "R\u{FFFD}sum\u{FFFD} first.")
    );
}

#[test]
fn project_system_md_wins_over_the_global_one() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let cwd = dir.path().join("proj");
    write(&agent.join("SYSTEM.md"), "global");
    assert_eq!(
        discover_prompt_file("SYSTEM.md", &agent, Some(&cwd)),
        Some(agent.join("SYSTEM.md"))
    );
    write(&cwd.join(".coding-agent/SYSTEM.md"), "project");
    assert_eq!(
        discover_prompt_file("SYSTEM.md", &agent, Some(&cwd)),
        Some(cwd.join(".coding-agent/SYSTEM.md"))
    );
    // An untrusted project's is not looked at.
    assert_eq!(
        discover_prompt_file("SYSTEM.md", &agent, None),
        Some(agent.join("SYSTEM.md"))
    );
    assert_eq!(
        discover_prompt_file("APPEND_SYSTEM.md", &agent, Some(&cwd)),
        None
    );
}

/// A cloned repository's `AGENTS.md` may be a link to `/dev/zero` (read
/// whole, it took memory until the OOM killer came) or a named pipe (the
/// start waited for ever); a huge one went into every request. Each is left
/// out, and the next name in the folder is taken.
#[tokio::test]
async fn a_context_file_that_is_a_device_a_pipe_or_too_large_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let zero = dir.path().join("zero");
    std::fs::create_dir(&zero).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero.join("AGENTS.md")).unwrap();
    write(&zero.join("CLAUDE.md"), "the next name");
    let found = context_file_in(&LocalReadOperations, &zero).await.unwrap();
    assert_eq!(found.content, "the next name");

    let pipe = dir.path().join("pipe");
    std::fs::create_dir(&pipe).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(pipe.join("AGENTS.md"))
        .status()
        .unwrap();
    assert!(made.success());
    let waited = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        context_file_in(&LocalReadOperations, &pipe),
    )
    .await;
    assert_eq!(waited.expect("a pipe is not opened"), None);

    let large = dir.path().join("large");
    write(
        &large.join("AGENTS.md"),
        &"x".repeat(MAX_INSTRUCTION_FILE + 1),
    );
    assert_eq!(context_file_in(&LocalReadOperations, &large).await, None);
    write(&large.join("AGENTS.md"), &"x".repeat(MAX_INSTRUCTION_FILE));
    let found = context_file_in(&LocalReadOperations, &large).await.unwrap();
    assert_eq!(found.content.len(), MAX_INSTRUCTION_FILE);
}

/// `--system-prompt /dev/zero` is taken as text, with a warning, not read
/// until memory runs out.
#[tokio::test]
async fn a_prompt_file_that_is_a_device_is_taken_as_text() {
    assert_eq!(resolve_prompt_input("/dev/zero").await, "/dev/zero");
}

#[test]
fn a_remote_host_is_named_after_the_working_directory() {
    let prompt = build_system_prompt(&PromptInputs {
        custom_prompt: Some("You are terse.".into()),
        remote_host: Some("dev@box:2222".into()),
        ..inputs(Vec::new())
    });
    assert_eq!(
        prompt,
        "You are terse.\nCurrent date: 2025-06-01\nCurrent working directory: /work/project\n\
         Remote host: dev@box:2222 (over SSH). Every tool runs on that host: the working directory, paths and commands are there, not on the user's machine."
    );
}
