//! Prints the built-in tools as the model sees them (name, description and
//! JSON schema of the arguments, in Pi's order) as a JSON array on stdout.
//!
//! `cargo xtask dist` runs this to write the tool reference it ships beside the
//! binary. It lives here, as an example of xtask with coding-agent as a
//! dev-dependency, so the reference comes from the very definitions the binary
//! serves without the binary needing a command for it.

use std::process::ExitCode;

use coding_agent::tools::{BUILTIN_TOOL_NAMES, builtin_tool};

fn main() -> ExitCode {
    let mut tools = Vec::new();
    for name in BUILTIN_TOOL_NAMES {
        let Some(tool) = builtin_tool(name) else {
            eprintln!("tool-reference: built-in tool {name} is not registered");
            return ExitCode::FAILURE;
        };
        tools.push(tool.tool().clone());
    }
    match serde_json::to_string_pretty(&tools) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("tool-reference: {err}");
            ExitCode::FAILURE
        }
    }
}
