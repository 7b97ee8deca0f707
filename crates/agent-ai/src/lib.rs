//! `agent-ai`: the model-adaptation layer.
//!
//! Everything a language model sees of a tool system lives here: the bare [`Tool`]
//! (name, description, JSON Schema), the [`message`] types in Pi's JSON shape,
//! argument [`validate`]ion with Pi's coercions, and the streaming [`stream`]
//! contract that providers implement. This crate knows nothing of terminals,
//! processes or file systems; the layers above it do.
//!
//! # Quick start
//!
//! A tool's arguments are a Rust type; the schema the model sees and the
//! validator both come from it, and a model's mistakes come back as one text
//! written for the model:
//!
//! ```
//! use agent_ai::{Tool, ToolValidator};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct ReadArgs {
//!     /// The file to read.
//!     path: String,
//!     /// Line to start from (1-indexed).
//!     offset: Option<u64>,
//! }
//!
//! let tool = Tool::for_args::<ReadArgs>("read", "Read a file.");
//! assert_eq!(tool.parameters["required"], json!(["path"]));
//!
//! let validator = ToolValidator::new(&tool).unwrap();
//! // "10" is coerced to 10, as Pi coerces it.
//! let args: ReadArgs =
//!     serde_json::from_value(validator.validate(&json!({"path": "a.rs", "offset": "10"})).unwrap())
//!         .unwrap();
//! assert_eq!((args.path.as_str(), args.offset), ("a.rs", Some(10)));
//!
//! let error = validator.validate(&json!({"offset": 1})).unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{\n  \"offset\": 1\n}"
//! );
//! ```
//!
//! Features: `http` (default) adds the HTTP [`providers`]; `testing` adds
//! `ScriptedProvider`, a provider that replays scripted answers.

pub mod failure;
pub mod json_text;
pub mod message;
pub mod overflow;
pub mod partial_json;
pub mod providers;
pub mod stream;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod thinking;
pub mod tool;
pub mod validate;

pub use failure::ErrorKind;
pub use message::{
    AssistantContent, AssistantMessage, Content, ImageContent, Message, MessageRef, StopReason,
    TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UsageCost, UserContent,
    UserMessage,
};
pub use stream::{AssistantMessageEvent, AssistantStream, Context, Model, Provider};
#[cfg(any(test, feature = "testing"))]
pub use testing::{ScriptedProvider, ScriptedResponse};
pub use thinking::ThinkingLevel;
pub use tool::Tool;
pub use validate::{SchemaError, ToolValidator, ValidationError};
