//! The tools an agent offers, each with its argument validator compiled once.

use std::sync::Arc;

use agent_ai::validate::SchemaError;
use agent_ai::{Tool, ToolValidator};

use crate::tool::AgentTool;

/// One tool and its compiled validator.
pub(crate) struct RegisteredTool {
    pub(crate) tool: Arc<dyn AgentTool>,
    pub(crate) validator: ToolValidator,
}

/// The tools of an agent, ready to run.
///
/// Building the set compiles every tool's JSON Schema validator once, so a tool
/// call never pays for schema compilation, and a broken schema is found when the
/// agent is configured rather than when the model first calls the tool. Share it
/// with `Arc`: the loop, the provider context and the CLI all read the same set.
pub struct ToolSet {
    entries: Vec<RegisteredTool>,
    /// What every request sends; shared with the requests, built once.
    definitions: Arc<[Tool]>,
}

impl ToolSet {
    /// Registers `tools`, compiling each one's validator.
    ///
    /// When two tools share a name the first wins, as Pi's `tools.find`
    /// does, and the later one is left out (with a warning logged) of what
    /// the model is offered too: both were sent, which APIs refuse, while
    /// only the first could run.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn AgentTool>>) -> Result<Self, SchemaError> {
        let mut entries: Vec<RegisteredTool> = Vec::new();
        let mut definitions = Vec::new();
        for tool in tools {
            let name = &tool.tool().name;
            if entries.iter().any(|entry| &entry.tool.tool().name == name) {
                tracing::warn!(
                    "two tools are named \"{name}\": only the first is offered and run; rename the other to offer it"
                );
                continue;
            }
            let validator = ToolValidator::new(tool.tool())?;
            definitions.push(tool.tool().clone());
            entries.push(RegisteredTool { tool, validator });
        }
        Ok(ToolSet {
            entries,
            definitions: definitions.into(),
        })
    }

    /// A set with no tools (a chat-only agent).
    pub fn empty() -> Self {
        ToolSet {
            entries: Vec::new(),
            definitions: Arc::from([]),
        }
    }

    /// The tool called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.entry(name).map(|entry| &entry.tool)
    }

    /// The tool called `name` with its validator.
    pub(crate) fn entry(&self, name: &str) -> Option<&RegisteredTool> {
        self.entries
            .iter()
            .find(|entry| entry.tool.tool().name == name)
    }

    /// Name, description and schema of every tool, as sent to the provider.
    pub fn definitions(&self) -> &[Tool] {
        &self.definitions
    }

    /// The same definitions, shared (what a request to the model holds).
    pub fn shared_definitions(&self) -> Arc<[Tool]> {
        Arc::clone(&self.definitions)
    }

    /// How many tools the set holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the set holds no tools.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.definitions.iter().map(|tool| &tool.name))
            .finish()
    }
}
