//! Which model the loop asks now: one shared, switchable source for the
//! model, the provider that serves it and the thinking level.
//!
//! The loop reads it once per request, so a switch between runs (or during
//! one) takes effect at the next request and never in the middle of a
//! stream. Everything else that needs "the model now" (a tool's context, the
//! compaction's summariser, a footer) reads the same handle instead of
//! keeping a copy that can drift from what the loop sends.

use std::sync::{Arc, PoisonError, RwLock};

use agent_ai::{Context, Model, Provider, ThinkingLevel};

/// The model requests go to, its provider, and the thinking level they ask
/// for (`None`: the wire's default).
#[derive(Clone)]
pub struct ModelChoice {
    /// The model to ask.
    pub model: Model,
    /// Who streams its answers.
    pub provider: Arc<dyn Provider>,
    /// The thinking level each request asks for.
    pub reasoning: Option<ThinkingLevel>,
}

impl std::fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelChoice")
            .field("model", &self.model)
            .field("reasoning", &self.reasoning)
            .finish_non_exhaustive()
    }
}

/// A shared [`ModelChoice`]: clones see and make the same switches.
#[derive(Clone)]
pub struct ModelHandle(Arc<RwLock<ModelChoice>>);

impl ModelHandle {
    /// A handle on `model`, served by `provider`, at the wire's default
    /// thinking level.
    pub fn new(model: Model, provider: Arc<dyn Provider>) -> Self {
        ModelHandle(Arc::new(RwLock::new(ModelChoice {
            model,
            provider,
            reasoning: None,
        })))
    }

    /// The choice now (a copy: the next switch does not change it).
    pub fn current(&self) -> ModelChoice {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The model now.
    pub fn model(&self) -> Model {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .model
            .clone()
    }

    /// The thinking level now.
    pub fn reasoning(&self) -> Option<ThinkingLevel> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .reasoning
    }

    /// Switches to `model` served by `provider`; the thinking level stays.
    pub fn set_model(&self, model: Model, provider: Arc<dyn Provider>) {
        self.update(|choice| {
            choice.model = model;
            choice.provider = provider;
        });
    }

    /// Sets the thinking level of the next requests.
    pub fn set_reasoning(&self, level: Option<ThinkingLevel>) {
        self.update(|choice| choice.reasoning = level);
    }

    /// Reads and changes the choice in one step, so that a level computed
    /// from the model is never paired with another model by a switch in
    /// between.
    pub fn update<R>(&self, change: impl FnOnce(&mut ModelChoice) -> R) -> R {
        change(&mut self.0.write().unwrap_or_else(PoisonError::into_inner))
    }
}

impl std::fmt::Debug for ModelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.current().fmt(f)
    }
}

/// Rewrites a request just before it is sent (Pi's `transformContext`): for
/// example to cut what no longer fits the model's window. It gets the model
/// the request goes to; the conversation the loop keeps is not changed.
/// A panic in it ends the turn with an error answer, as a provider's does.
pub type TransformContext = Arc<dyn Fn(&Model, Context) -> Context + Send + Sync>;

#[cfg(test)]
mod tests {
    use agent_ai::testing::ScriptedProvider;

    use super::*;

    fn model(id: &str) -> Model {
        Model::new(id, "test", "test-api")
    }

    #[test]
    fn clones_share_every_switch() {
        let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(Vec::new()));
        let handle = ModelHandle::new(model("a"), provider.clone());
        let seen_by_loop = handle.clone();
        handle.set_reasoning(Some(ThinkingLevel::High));
        handle.set_model(model("b"), provider);
        let choice = seen_by_loop.current();
        assert_eq!(choice.model.id, "b");
        assert_eq!(choice.reasoning, Some(ThinkingLevel::High));
        assert_eq!(seen_by_loop.model().id, "b");
    }
}
