//! A tool from a typed struct, and what a model reads when its arguments are
//! wrong: `cargo run -p agent-ai --example typed_tool`.
//!
//! The argument struct is the one source of the JSON Schema the model sees,
//! of the validator that checks (and coerces) what the model sends, and of the
//! value the tool finally parses.

use agent_ai::{Tool, ToolValidator};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// The arguments of a `lookup` tool.
#[derive(Deserialize, JsonSchema)]
struct LookupArgs {
    /// The word to look up.
    word: String,
    /// How many senses to list (default: all).
    limit: Option<u32>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tool = Tool::for_args::<LookupArgs>("lookup", "Look a word up in the dictionary.");
    println!("schema the model sees:\n{:#}\n", tool.parameters);

    // Compiled once per tool, reused for every call.
    let validator = ToolValidator::new(&tool)?;

    // Models send numbers as strings; they are coerced as Pi coerces them.
    let sent = json!({"word": "tool", "limit": "2"});
    let args: LookupArgs = serde_json::from_value(validator.validate(&sent)?)?;
    println!(
        "accepted {sent}: word {:?}, limit {:?}\n",
        args.word, args.limit
    );

    // Wrong arguments become one error text, written for the model.
    let wrong = json!({"limit": "many"});
    match validator.validate(&wrong) {
        Ok(value) => return Err(format!("{value} should have been refused").into()),
        Err(error) => println!("the model reads:\n{error}"),
    }
    Ok(())
}
