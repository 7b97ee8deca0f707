//! The built-in tools without an agent: `cargo run -p coding-agent --example one_call`.
//!
//! Each call takes the five steps the agent loop takes (prepare, validate,
//! `before_tool_call`, execute, `after_tool_call`) through
//! `agent_core::run_single_tool_call`, in a fresh temporary directory, and
//! prints what the model would read. The last call has a wrong argument, to
//! show the error text a model gets back instead of a panic.

use std::sync::Arc;

use agent_ai::{Content, ToolCall, ToolResultMessage};
use agent_core::{NoHooks, ToolSet, run_single_tool_call};
use coding_agent::definition::ContextFactory;
use coding_agent::tools::builtin_tool;
use coding_agent::{CancellationToken, ToolContext, wrap_tool_definition};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // Every call gets a context: its working directory and its cancellation.
    let cwd = dir.path().to_path_buf();
    let context: ContextFactory = Arc::new(move |cancel| ToolContext {
        cancel,
        ..ToolContext::new(cwd.clone())
    });
    let tools = ToolSet::new(
        ["write", "read", "edit"]
            .into_iter()
            .filter_map(builtin_tool)
            .map(|definition| wrap_tool_definition(definition, context.clone())),
    )?;

    let calls = [
        (
            "write",
            json!({"path": "notes.txt", "content": "one\ntwo\nthree\n"}),
        ),
        (
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "two", "newText": "2"}]}),
        ),
        ("read", json!({"path": "notes.txt", "offset": 2})),
        ("read", json!({"path": "notes.txt", "offset": "second"})),
    ];
    let mut results = Vec::new();
    for (index, (name, arguments)) in calls.into_iter().enumerate() {
        let call = ToolCall::new(format!("call_{index}"), name, arguments.clone());
        let result = run_single_tool_call(&tools, &call, &NoHooks, &CancellationToken::new()).await;
        println!(
            "{name} {arguments}\n  -> error: {}\n{}\n",
            result.is_error,
            indent(&result)
        );
        results.push(result);
    }

    // The example checks itself, so CI notices when it stops showing this.
    let errors: Vec<bool> = results.iter().map(|result| result.is_error).collect();
    assert_eq!(errors, [false, false, false, true]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt"))?,
        "one\n2\nthree\n"
    );
    assert!(text(&results[2]).starts_with("2\nthree"));
    Ok(())
}

fn text(result: &ToolResultMessage) -> String {
    result.content.iter().filter_map(Content::as_text).collect()
}

fn indent(result: &ToolResultMessage) -> String {
    text(result)
        .lines()
        .map(|line| format!("     {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
