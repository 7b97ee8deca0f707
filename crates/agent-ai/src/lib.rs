//! `agent-ai`: the model-adaptation layer.
//!
//! Everything a language model sees of a tool system lives here: the bare [`Tool`]
//! (name, description, JSON Schema), the [`message`] types in Pi's JSON shape,
//! argument [`validate`]ion with Pi's coercions, and the streaming [`stream`]
//! contract that providers implement. This crate knows nothing of terminals,
//! processes or file systems; the layers above it do.

pub mod failure;
pub mod message;
pub mod overflow;
pub mod partial_json;
pub mod providers;
pub mod stream;
pub mod tool;
pub mod validate;

pub use failure::ErrorKind;
pub use message::{
    AssistantContent, AssistantMessage, Content, ImageContent, Message, StopReason, TextContent,
    ThinkingContent, ToolCall, ToolResultMessage, Usage, UsageCost, UserContent, UserMessage,
};
pub use stream::{
    AssistantMessageEvent, AssistantStream, Context, Model, Provider, ScriptedProvider,
};
pub use tool::Tool;
pub use validate::{ToolValidator, ValidationError};
