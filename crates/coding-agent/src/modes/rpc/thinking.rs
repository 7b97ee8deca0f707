//! RPC `set_thinking_level` and `cycle_thinking_level` (Pi's shapes): the
//! level is clamped to what the model supports; a name that is no level
//! becomes the model's first supported level (normally `off`), as in Pi.

use agent_ai::ThinkingLevel;
use serde_json::{Value, json};

use crate::app::AgentSession;

/// `set_thinking_level {level}`: the response has no data; the error
/// is the text a client reads.
pub fn set_thinking_level(session: &AgentSession, level: &str) -> Result<(), String> {
    let wanted = level.parse().unwrap_or_else(|_| {
        session
            .available_thinking_levels()
            .first()
            .copied()
            .unwrap_or(ThinkingLevel::Off)
    });
    session
        .set_thinking_level(wanted)
        .map(drop)
        .map_err(|error| error.to_string())
}

/// `cycle_thinking_level`: `{level}` of the next supported level, or `null`
/// for a model without reasoning.
pub fn cycle_thinking_level(session: &AgentSession) -> Result<Value, String> {
    match session.cycle_thinking_level() {
        Ok(Some(level)) => Ok(json!({"level": level})),
        Ok(None) => Ok(Value::Null),
        Err(error) => Err(error.to_string()),
    }
}
