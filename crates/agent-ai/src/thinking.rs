//! Thinking levels (Pi's `ThinkingLevel`): how hard a reasoning model thinks
//! before it answers, from `off` to `xhigh`, and which of them a model
//! supports.
//!
//! A request carries the level in [`Context::reasoning`](crate::Context);
//! each wire API maps it (`openai-completions`: `reasoning_effort`;
//! `anthropic-messages`: a `thinking` budget, see [`ThinkingBudgets`]).
//! A model without [`Model::reasoning`] supports only `off`; `xhigh` exists
//! only where the model's `thinkingLevelMap` names it, and a level the map
//! sets to `null` is not offered. [`clamp`] picks the supported level
//! nearest to a wanted one (the next higher first), as Pi does.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::stream::Model;

/// One thinking level, in order from none to the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning asked for.
    Off,
    /// The least reasoning.
    Minimal,
    /// A little.
    Low,
    /// Pi's default for reasoning models.
    Medium,
    /// A lot.
    High,
    /// The most; only for models whose level map names it.
    Xhigh,
}

impl ThinkingLevel {
    /// Every level, in order.
    pub const ALL: [ThinkingLevel; 6] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
    ];

    /// The level's name (`off`, ..., `xhigh`), as Pi writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
        }
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a thinking level; its text lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid thinking level \"{0}\". Valid values: off, minimal, low, medium, high, xhigh")]
pub struct UnknownThinkingLevel(pub String);

impl FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == name)
            .ok_or_else(|| UnknownThinkingLevel(name.to_owned()))
    }
}

/// The levels `model` supports, in order: `off` alone for a model without
/// reasoning; otherwise `off` to `high`, plus `xhigh` when the model's level
/// map names it, less the levels the map sets to `null`.
pub fn supported_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| match model.thinking_level_map.get(level) {
            Some(None) => false,
            Some(Some(_)) => true,
            None => *level != ThinkingLevel::Xhigh,
        })
        .collect()
}

/// The supported level nearest `wanted`: `wanted` itself, else the next
/// higher supported one, else the next lower (Pi's clamping).
pub fn clamp(model: &Model, wanted: ThinkingLevel) -> ThinkingLevel {
    let supported = supported_levels(model);
    let higher = ThinkingLevel::ALL
        .into_iter()
        .filter(|level| *level >= wanted)
        .find(|level| supported.contains(level));
    let lower = ThinkingLevel::ALL
        .into_iter()
        .rev()
        .filter(|level| *level < wanted)
        .find(|level| supported.contains(level));
    higher
        .or(lower)
        .or_else(|| supported.first().copied())
        .unwrap_or(ThinkingLevel::Off)
}

/// The level after `current` among those `model` supports, wrapping to the
/// first; `None` for a model without reasoning (Pi's `cycleThinkingLevel`).
pub fn next_level(model: &Model, current: ThinkingLevel) -> Option<ThinkingLevel> {
    if !model.reasoning {
        return None;
    }
    let levels = supported_levels(model);
    let at = levels.iter().position(|level| *level == current);
    let next = at.map_or(0, |at| (at + 1) % levels.len());
    levels.get(next).copied()
}

/// The name the wire gets for `level`: the model's level map's, else the
/// level's own.
pub fn wire_name(model: &Model, level: ThinkingLevel) -> Option<String> {
    match model.thinking_level_map.get(&level) {
        Some(mapped) => mapped.clone(),
        None => Some(level.as_str().to_owned()),
    }
}

/// Output tokens Anthropic's budget mode lets a model think with, per level
/// (Pi's `thinkingBudgets`; `xhigh` uses `high`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThinkingBudgets {
    /// `minimal` (Pi: 1024).
    pub minimal: u32,
    /// `low` (Pi: 2048).
    pub low: u32,
    /// `medium` (Pi: 8192).
    pub medium: u32,
    /// `high` and `xhigh` (Pi: 16384).
    pub high: u32,
}

impl Default for ThinkingBudgets {
    fn default() -> Self {
        ThinkingBudgets {
            minimal: 1024,
            low: 2048,
            medium: 8192,
            high: 16384,
        }
    }
}

impl ThinkingBudgets {
    /// The budget for `level`; `None` for `off`.
    pub fn budget(&self, level: ThinkingLevel) -> Option<u32> {
        match level {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(self.minimal),
            ThinkingLevel::Low => Some(self.low),
            ThinkingLevel::Medium => Some(self.medium),
            ThinkingLevel::High | ThinkingLevel::Xhigh => Some(self.high),
        }
    }

    /// `(max_tokens, budget_tokens)` for a request whose answer may take
    /// `base` tokens and the whole request, thinking included, at most
    /// `limit` (Pi's `adjustMaxTokensForThinking`): the budget comes on top
    /// of the answer, within `limit`; when that leaves no more than the
    /// budget, the budget shrinks to leave the answer 1024 tokens. Pi's
    /// `limit` is the model's output limit from its registry; this crate has
    /// none, so it is what the caller allows ([`Context::max_tokens`]: a
    /// session allows what its model's window leaves). Uncapped, an
    /// 8192-token window with `high` asked for 18432 tokens, more than the
    /// window. `None` for `off`, and when `limit` leaves less than
    /// Anthropic's least budget, 1024 (Pi sends it; the API refuses it).
    ///
    /// [`Context::max_tokens`]: crate::Context::max_tokens
    pub fn adjust_max_tokens(
        &self,
        base: u32,
        limit: u32,
        level: ThinkingLevel,
    ) -> Option<(u32, u32)> {
        let budget = self.budget(level)?;
        let max_tokens = base.saturating_add(budget).min(limit);
        if max_tokens > budget {
            return Some((max_tokens, budget));
        }
        let shrunk = max_tokens.saturating_sub(MIN_THINKING_TOKENS);
        (shrunk >= MIN_THINKING_TOKENS).then_some((max_tokens, shrunk))
    }
}

/// Anthropic's least `budget_tokens`, and what Pi leaves the answer when it
/// shrinks the budget to fit the limit (its `minOutputTokens`).
const MIN_THINKING_TOKENS: u32 = 1024;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use ThinkingLevel::*;

    fn reasoning_model(map: &[(ThinkingLevel, Option<&str>)]) -> Model {
        let mut model = Model::new("m", "p", "openai-completions");
        model.reasoning = true;
        model.thinking_level_map = map
            .iter()
            .map(|(level, name)| (*level, name.map(str::to_owned)))
            .collect::<BTreeMap<_, _>>();
        model
    }

    #[test]
    fn levels_parse_and_print_as_pi_names_them() {
        let names: Vec<String> = ThinkingLevel::ALL.iter().map(|l| l.to_string()).collect();
        assert_eq!(names, ["off", "minimal", "low", "medium", "high", "xhigh"]);
        assert_eq!("high".parse::<ThinkingLevel>(), Ok(High));
        assert_eq!(
            "max".parse::<ThinkingLevel>().unwrap_err().to_string(),
            "Invalid thinking level \"max\". Valid values: off, minimal, low, medium, high, xhigh"
        );
    }

    #[test]
    fn a_model_without_reasoning_supports_off_only_and_does_not_cycle() {
        let plain = Model::new("gpt-4o", "openai", "openai-completions");
        assert_eq!(supported_levels(&plain), [Off]);
        assert_eq!(clamp(&plain, High), Off);
        assert_eq!(next_level(&plain, Off), None);
    }

    #[test]
    fn xhigh_needs_the_map_and_null_removes_a_level() {
        assert_eq!(
            supported_levels(&reasoning_model(&[])),
            [Off, Minimal, Low, Medium, High]
        );
        let model = reasoning_model(&[(Xhigh, Some("xhigh")), (Minimal, None)]);
        assert_eq!(supported_levels(&model), [Off, Low, Medium, High, Xhigh]);
    }

    #[test]
    fn clamping_tries_higher_levels_first_then_lower() {
        let no_minimal = reasoning_model(&[(Minimal, None)]);
        assert_eq!(clamp(&no_minimal, Minimal), Low);
        assert_eq!(clamp(&no_minimal, Xhigh), High);
        let top_is_low = reasoning_model(&[(Medium, None), (High, None)]);
        assert_eq!(clamp(&top_is_low, High), Low);
    }

    #[test]
    fn cycling_wraps_around_the_supported_levels() {
        let model = reasoning_model(&[]);
        assert_eq!(next_level(&model, Off), Some(Minimal));
        assert_eq!(next_level(&model, High), Some(Off));
        assert_eq!(
            next_level(&model, Xhigh),
            Some(Off),
            "unsupported: start over"
        );
    }

    #[test]
    fn budgets_come_on_top_of_the_answer() {
        let budgets = ThinkingBudgets::default();
        let unlimited = u32::MAX;
        assert_eq!(budgets.adjust_max_tokens(8192, unlimited, Off), None);
        assert_eq!(
            budgets.adjust_max_tokens(8192, unlimited, Minimal),
            Some((9216, 1024))
        );
        assert_eq!(
            budgets.adjust_max_tokens(8192, unlimited, Medium),
            Some((16384, 8192))
        );
        assert_eq!(
            budgets.adjust_max_tokens(8192, unlimited, Xhigh),
            Some((24576, 16384))
        );
    }

    #[test]
    fn the_limit_caps_the_request_and_shrinks_the_budget_below_it() {
        let budgets = ThinkingBudgets::default();
        assert_eq!(
            budgets.adjust_max_tokens(8192, 20_000, High),
            Some((20_000, 16384))
        );
        assert_eq!(
            budgets.adjust_max_tokens(8192, 2048, High),
            Some((2048, 1024))
        );
        assert_eq!(
            budgets.adjust_max_tokens(8192, 16384, High),
            Some((16384, 15360))
        );
        // Less than 1024 left to think: Anthropic refuses such a budget.
        assert_eq!(budgets.adjust_max_tokens(8192, 2047, High), None);
        assert_eq!(budgets.adjust_max_tokens(8192, 1024, Minimal), None);
    }
}
