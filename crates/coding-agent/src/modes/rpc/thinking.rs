//! RPC `set_thinking_level` and `cycle_thinking_level` (Pi's shapes): the
//! level is clamped to what the model supports; a name that is no level is
//! refused, naming the levels (Pi takes the model's first supported level,
//! normally `off`: a typo switched thinking off and answered success).

use agent_ai::ThinkingLevel;
use serde_json::{Value, json};

use crate::app::AgentSession;

/// `set_thinking_level {level}`: the response has no data; the error
/// is the text a client reads.
pub fn set_thinking_level(session: &AgentSession, level: &str) -> Result<(), String> {
    let wanted: ThinkingLevel = level.parse().map_err(|_| {
        let names: Vec<&str> = ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
        format!(
            "Invalid thinking level \"{level}\": one of {}",
            names.join(", ")
        )
    })?;
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
