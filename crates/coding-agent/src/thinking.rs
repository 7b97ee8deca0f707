//! The session's thinking level (Pi's): which level a session starts with,
//! which models reason, and how a model switch carries the level over.
//!
//! The level a session starts at is `--thinking`, else (resuming) the last
//! `thinking_level_change` of the session file, else `defaultThinkingLevel`,
//! else `medium`; always clamped to what the model supports
//! ([`agent_ai::thinking::clamp`]: a model without reasoning has `off` only).
//! A change is recorded as a `thinking_level_change` entry and told as a
//! `thinking_level_changed` event; the provider maps the level on the wire
//! (`docs/thinking.md`).

use agent_ai::thinking::clamp;
use agent_ai::{Model, ThinkingLevel};

/// Pi's level when neither the command line, the session nor the settings
/// name one.
pub const DEFAULT_THINKING_LEVEL: ThinkingLevel = ThinkingLevel::Medium;

/// What decides a session's thinking level besides the session file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinkingOptions {
    /// `--thinking LEVEL`: wins over the session's and the settings' level.
    pub explicit: Option<ThinkingLevel>,
    /// `defaultThinkingLevel` of the settings.
    pub default: Option<ThinkingLevel>,
}

impl ThinkingOptions {
    /// The settings' default, else Pi's `medium`.
    pub fn default_level(&self) -> ThinkingLevel {
        self.default.unwrap_or(DEFAULT_THINKING_LEVEL)
    }

    /// The level a session on `model` starts at, given the level its file
    /// recorded last (`None` for a new session or a file without one).
    pub fn initial_level(&self, model: &Model, recorded: Option<ThinkingLevel>) -> ThinkingLevel {
        let wanted = self
            .explicit
            .or(recorded)
            .unwrap_or_else(|| self.default_level());
        clamp(model, wanted)
    }

    /// The level after switching from `old` (at `current`) to `new`: the
    /// current one, unless the old model had no reasoning (its level says
    /// nothing then) and the default applies; clamped to `new` (Pi's
    /// `_getThinkingLevelForModelSwitch`).
    pub fn level_after_switch(
        &self,
        old: &Model,
        current: ThinkingLevel,
        new: &Model,
    ) -> ThinkingLevel {
        let wanted = if old.reasoning {
            current
        } else {
            self.default_level()
        };
        clamp(new, wanted)
    }
}

/// Whether a model of this id reasons, for providers whose settings do not
/// say (`reasoning`): Anthropic's Claude 3.7 and 4 families, OpenAI's o-series
/// and GPT-5 (not its `-chat` variants), DeepSeek's R1 and reasoner, QwQ and
/// Qwen3.
pub fn known_reasoning(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    let id = id.rsplit('/').next().unwrap_or(&id);
    const REASONING: [&str; 12] = [
        "claude-3-7",
        "claude-3.7",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-haiku-4",
        "o1",
        "o3",
        "o4",
        "gpt-5",
        "deepseek-r1",
        "deepseek-reasoner",
        "qwq",
    ];
    let qwen3 = id.starts_with("qwen3") && !id.starts_with("qwen3-coder");
    (REASONING.iter().any(|prefix| id.starts_with(prefix)) || qwen3) && !id.contains("-chat")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ThinkingLevel::*;

    fn model(reasoning: bool) -> Model {
        let mut model = Model::new("m", "p", "openai-completions");
        model.reasoning = reasoning;
        model
    }

    #[test]
    fn the_flag_wins_then_the_session_then_the_settings_then_medium() {
        let reasoning = model(true);
        let none = ThinkingOptions::default();
        assert_eq!(none.initial_level(&reasoning, None), Medium);
        let settings = ThinkingOptions {
            explicit: None,
            default: Some(Low),
        };
        assert_eq!(settings.initial_level(&reasoning, None), Low);
        assert_eq!(settings.initial_level(&reasoning, Some(High)), High);
        let flag = ThinkingOptions {
            explicit: Some(Minimal),
            default: Some(Low),
        };
        assert_eq!(flag.initial_level(&reasoning, Some(High)), Minimal);
        assert_eq!(flag.initial_level(&model(false), Some(High)), Off);
    }

    #[test]
    fn a_switch_keeps_the_level_unless_the_old_model_had_no_reasoning() {
        let options = ThinkingOptions {
            explicit: None,
            default: Some(High),
        };
        assert_eq!(
            options.level_after_switch(&model(true), Low, &model(true)),
            Low
        );
        assert_eq!(
            options.level_after_switch(&model(false), Off, &model(true)),
            High
        );
        assert_eq!(
            options.level_after_switch(&model(true), Low, &model(false)),
            Off
        );
    }

    #[test]
    fn well_known_reasoning_models_are_recognised() {
        for id in [
            "claude-sonnet-4-5",
            "claude-opus-4-1-20250805",
            "claude-3-7-sonnet-latest",
            "o3-mini",
            "gpt-5",
            "openrouter/deepseek/deepseek-r1",
            "Qwen3-8B",
        ] {
            assert!(known_reasoning(id), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-4.1",
            "claude-3-5-sonnet",
            "gpt-5-chat-latest",
            "qwen2.5-coder",
            "llama-3.3-70b",
        ] {
            assert!(!known_reasoning(id), "{id}");
        }
    }
}
