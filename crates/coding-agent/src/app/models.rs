//! What `/model` (interactive) and RPC's model commands choose from, and turning a
//! `/model` argument into a model the way the command line turns `--model`
//! into one ([`resolve_model`], [`provider_for`]).

use std::path::PathBuf;
use std::sync::Arc;

use agent_ai::providers::probe::{server_context_window, server_models};
use agent_ai::{Model, Provider, ThinkingLevel};

use crate::app::AgentSession;
use crate::app::SetModelError;
use crate::settings::{
    ModelError, ModelFlags, Settings, check_model_name, provider_for, resolve_model, split_thinking,
};
use crate::thinking::known_reasoning;

/// Reads an environment variable (tests pass their own).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// [`Env`] that can be held across an `.await` in a task.
pub type SyncEnv<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// What `/model` chooses from: the settings and the command line's flags.
#[derive(Debug, Clone, Default)]
pub struct ModelCatalog {
    /// The merged settings (built-in providers plus `providers`).
    pub settings: Settings,
    /// The global settings file, named in a missing-key error.
    pub settings_path: PathBuf,
    /// The command line's model flags: `--base-url` and `--api-key` keep
    /// applying to the provider the session started with.
    pub flags: ModelFlags,
    /// The provider the session started with.
    pub start_provider: String,
    /// The models cycling goes through, as `/model` names them (`--models`,
    /// else `enabledModels`); empty: [`ModelCatalog::available`].
    pub cycle: Vec<String>,
}

/// One line of `/model`'s list: a provider and its default model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// The provider's name.
    pub provider: String,
    /// The model `/model PROVIDER` picks; `None` when the provider has none.
    pub model: Option<String>,
    /// The environment variable a missing key should be in; `None` when the
    /// provider has its key or needs none.
    pub missing_key: Option<String>,
}

/// Why `/model NAME` did not switch.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// The name does not resolve to a usable model.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The session refused (a run is in progress) or could not save.
    #[error(transparent)]
    Set(#[from] SetModelError),
    /// The provider's server lists its models, and not this one.
    #[error(transparent)]
    NotOffered(#[from] NotOffered),
}

/// A model id the provider's server does not list ([`ModelCatalog::offered`]);
/// the text is what RPC's `set_model` answers and `/model` says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Model not found: {provider}/{model} ({provider} offers: {})", offered.join(", "))]
pub struct NotOffered {
    /// The provider named.
    pub provider: String,
    /// The model id asked for.
    pub model: String,
    /// The ids its server lists, then its default model.
    pub offered: Vec<String>,
}

impl ModelCatalog {
    /// Every provider with the model `/model PROVIDER` would pick.
    pub fn choices(&self, env: Env<'_>) -> Vec<ModelChoice> {
        self.settings
            .provider_names()
            .into_iter()
            .filter_map(|name| {
                let provider = self.settings.provider(&name)?;
                let model = self.settings.default_model_of(&name);
                let flag_key = name == self.start_provider && self.flags.api_key.is_some();
                let missing_key = match (&provider.api_key, &provider.api_key_env) {
                    (None, Some(var)) if !flag_key && env(var).is_none_or(|v| v.is_empty()) => {
                        Some(var.clone())
                    }
                    _ => None,
                };
                Some(ModelChoice {
                    provider: name,
                    model,
                    missing_key,
                })
            })
            .collect()
    }

    /// The context window of `model`, when the settings or the known table
    /// tell it.
    pub fn context_window(&self, model: &Model) -> Option<u64> {
        self.settings.context_window(model)
    }

    /// Whether `provider` names a provider: one of the settings (the built-in
    /// ones included), or the one the session started with, which
    /// `--provider` and `--base-url` may have named alone.
    pub fn knows(&self, provider: &str) -> bool {
        provider == self.start_provider || self.settings.provider(provider).is_some()
    }

    /// Resolves `/model NAME`: a provider name (its default model); the
    /// default model of a listed provider ([`Settings::provider_with_model`]:
    /// `openai/gpt-oss-20b` of a vLLM server is not `gpt-oss-20b` of
    /// `openai`); `PROVIDER/ID`; else a model id of `current`'s provider
    /// (`Qwen/Qwen3-8B` of a local server: ids may hold a `/`). A name with
    /// no model id in it (`fake/`, `/`) is refused.
    pub fn flags_for(&self, name: &str, current: &Model) -> Result<ModelFlags, ModelError> {
        check_model_name(name)?;
        let (provider, model) = if self.knows(name) {
            (name.to_owned(), None)
        } else if let Some(owner) = self.settings.provider_with_model(name) {
            (owner, Some(name.to_owned()))
        } else {
            match name.split_once('/') {
                Some((provider, id)) if self.knows(provider) => {
                    check_model_name(id)?;
                    (provider.to_owned(), Some(id.to_owned()))
                }
                _ => (current.provider.clone(), Some(name.to_owned())),
            }
        };
        let started_here = provider == self.start_provider;
        Ok(ModelFlags {
            base_url: self.flags.base_url.clone().filter(|_| started_here),
            api_key: self.flags.api_key.clone().filter(|_| started_here),
            no_text_tool_calls: self.flags.no_text_tool_calls,
            provider: Some(provider),
            model,
        })
    }

    /// Switches `session` to the model `name` resolves to (see
    /// [`ModelCatalog::flags_for`]); returns it and its provider. A name
    /// whose part before the `/` is no provider is a model id of the
    /// current provider, which a warning says: `/model opnai/gpt-4o` (a
    /// typo) used to become the id `opnai/gpt-4o` of the current provider
    /// without a word.
    pub fn switch(
        &self,
        session: &AgentSession,
        name: &str,
        env: Env<'_>,
    ) -> Result<(Model, Arc<dyn Provider>), SwitchError> {
        let switched = self.switch_to(session, name, env, true)?;
        if let Some((prefix, _)) = name.split_once('/')
            && !self.knows(prefix)
        {
            let mut providers = self.settings.provider_names();
            if !self.start_provider.is_empty() && !providers.contains(&self.start_provider) {
                providers.push(self.start_provider.clone());
            }
            tracing::warn!(
                "\"{prefix}\" is no provider (they are {}): \"{name}\" is taken as a model id of provider \"{}\"",
                providers.join(", "),
                switched.0.provider
            );
        }
        Ok(switched)
    }

    /// [`ModelCatalog::switch`], once the model `name` resolves to passed
    /// [`ModelCatalog::check_offered`]: `/model NAME`. `/model gtp-typo`
    /// switched to a model the local server does not serve, without a word:
    /// the next request failed, and the session file recorded the typo for
    /// `--continue`. A provider's name alone (its default model) is taken
    /// as it is.
    pub async fn switch_offered(
        &self,
        session: &AgentSession,
        name: &str,
        env: SyncEnv<'_>,
    ) -> Result<(Model, Arc<dyn Provider>), SwitchError> {
        let current = session.model();
        let flags = self.flags_for(name, &current)?;
        if let (Some(provider), Some(model)) = (&flags.provider, &flags.model) {
            self.check_offered(provider, model, &current, env).await?;
        }
        self.switch(session, name, env)
    }

    /// Refuses `model_id` of `provider` when the provider's endpoint lists
    /// its models ([`ModelCatalog::offered`]: a local server) and not that
    /// one, as Pi's registry does: a mistyped id fails when it is chosen,
    /// not at the next prompt. Other providers (the built-in ones, an
    /// endpoint that lists nothing or does not answer) take any id, as
    /// `--model` does.
    pub async fn check_offered(
        &self,
        provider: &str,
        model_id: &str,
        current: &Model,
        env: SyncEnv<'_>,
    ) -> Result<(), NotOffered> {
        match self.offered(provider, current, env).await {
            Some(offered) if !offered.iter().any(|id| id == model_id) => Err(NotOffered {
                provider: provider.to_owned(),
                model: model_id.to_owned(),
                offered,
            }),
            _ => Ok(()),
        }
    }

    /// [`ModelCatalog::switch`] back to the model the session's file
    /// records, without recording it again.
    pub fn restore(
        &self,
        session: &AgentSession,
        name: &str,
        env: Env<'_>,
    ) -> Result<(Model, Arc<dyn Provider>), SwitchError> {
        self.switch_to(session, name, env, false)
    }

    fn switch_to(
        &self,
        session: &AgentSession,
        name: &str,
        env: Env<'_>,
        record: bool,
    ) -> Result<(Model, Arc<dyn Provider>), SwitchError> {
        let flags = self.flags_for(name, &session.model())?;
        let resolved = resolve_model(&flags, &self.settings, &self.settings_path, env)?;
        let provider = provider_for(&resolved)?;
        session.use_model(resolved.model.clone(), provider.clone(), record)?;
        // The window is the new model's: configured, else asked of its
        // server (when it answers), else the known table's; and so is the
        // `maxTokens` setting the answer's room depends on.
        let configured = self.settings.recovery(&resolved.model.provider);
        session.set_context_window(configured.context_window);
        session.set_max_tokens(configured.max_tokens);
        if let (Some(url), Ok(runtime)) = (
            self.settings.window_probe_url(&resolved),
            tokio::runtime::Handle::try_current(),
        ) {
            let (session, model) = (session.clone(), resolved.model.clone());
            runtime.spawn(async move {
                let served = server_context_window(&url, &model.id).await;
                let current = session.model();
                if served.is_some() && (current.provider, current.id) == (model.provider, model.id)
                {
                    session.set_context_window(served);
                }
            });
        }
        Ok((resolved.model, provider))
    }

    /// The models a session using `current` may switch to: each provider's
    /// with its key (what an OpenAI-compatible endpoint of a provider
    /// defined in settings lists at `/models`, then its default), providers
    /// in name order; `current` and the command line's model first when
    /// they are none of them.
    pub async fn available(&self, current: &Model, env: SyncEnv<'_>) -> Vec<Model> {
        let mut models = Vec::new();
        for (listed, default) in self.listings(current, env).await {
            models.extend(listed);
            models.push(default);
        }
        dedup_models(&mut models);
        // The model the command line chose, and the current one, are
        // offered too, first, when the list does not have them.
        let start = resolve_model(&self.flags, &self.settings, &self.settings_path, env);
        for model in [
            start.ok().map(|resolved| resolved.model),
            Some(current.clone()),
        ]
        .into_iter()
        .flatten()
        {
            if !models.iter().any(|m| same_model(m, &model)) {
                models.insert(0, model);
            }
        }
        models
    }

    /// What the OpenAI-compatible endpoints of the providers defined in
    /// settings list at `/models` (those with their key): the local
    /// server's models, for `/model`'s menu.
    pub async fn served(&self, current: &Model, env: SyncEnv<'_>) -> Vec<Model> {
        let listings = self.listings(current, env).await;
        listings
            .into_iter()
            .flat_map(|(listed, _)| listed)
            .collect()
    }

    /// For each provider with its key, in name order: the models its
    /// endpoint lists at `/models` (asked only of OpenAI-compatible
    /// providers defined in settings), and its default model.
    async fn listings(&self, current: &Model, env: SyncEnv<'_>) -> Vec<(Vec<Model>, Model)> {
        self.listings_of(None, current, env).await
    }

    /// The model ids `provider`'s endpoint lists at `/models`, then its
    /// default model; `None` when the endpoint lists none (the built-in
    /// providers, a server that does not answer), so that only a server's
    /// own list can rule an id out.
    pub async fn offered(
        &self,
        provider: &str,
        current: &Model,
        env: SyncEnv<'_>,
    ) -> Option<Vec<String>> {
        let (listed, default) = self.listings_of(Some(provider), current, env).await.pop()?;
        if listed.is_empty() {
            return None;
        }
        let mut ids: Vec<String> = listed.into_iter().map(|model| model.id).collect();
        if !ids.contains(&default.id) {
            ids.push(default.id);
        }
        Some(ids)
    }

    /// [`ModelCatalog::listings`] of every provider, or of `only`.
    async fn listings_of(
        &self,
        only: Option<&str>,
        current: &Model,
        env: SyncEnv<'_>,
    ) -> Vec<(Vec<Model>, Model)> {
        let mut listings = Vec::new();
        for choice in self.choices(env) {
            if choice.missing_key.is_some() || only.is_some_and(|name| name != choice.provider) {
                continue;
            }
            let Ok(flags) = self.flags_for(&choice.provider, current) else {
                continue;
            };
            let resolved = match resolve_model(&flags, &self.settings, &self.settings_path, env) {
                Ok(resolved) => resolved,
                // No default model (llama.cpp serves one): the server's list
                // still names what it has.
                Err(ModelError::NoModel(_)) => {
                    let asking = ModelFlags {
                        model: Some(String::new()),
                        ..flags
                    };
                    match resolve_model(&asking, &self.settings, &self.settings_path, env) {
                        Ok(resolved) => resolved,
                        Err(_) => continue,
                    }
                }
                Err(_) => continue,
            };
            let custom = !matches!(choice.provider.as_str(), "openai" | "anthropic");
            let ids = if custom && resolved.model.api == "openai-completions" {
                server_models(
                    &resolved.config.base_url,
                    resolved.config.api_key.as_deref(),
                )
                .await
            } else {
                Vec::new()
            };
            // Each listed model reasons as the provider's setting says, else
            // as its own id is known to, not as the default model does.
            let reasoning = self
                .settings
                .provider(&choice.provider)
                .and_then(|provider| provider.reasoning);
            let listed: Vec<Model> = ids
                .into_iter()
                .map(|id| Model {
                    reasoning: reasoning.unwrap_or_else(|| known_reasoning(&id)),
                    id,
                    ..resolved.model.clone()
                })
                .collect();
            let default = match listed.first() {
                Some(first) if resolved.model.id.is_empty() => first.clone(),
                _ if resolved.model.id.is_empty() => continue,
                _ => resolved.model,
            };
            listings.push((listed, default));
        }
        listings
    }

    /// The model after the current one among those cycling goes through
    /// ([`ModelCatalog::cycle`], else [`ModelCatalog::available`]),
    /// wrapping; the one before it with `back` (Ctrl+Shift+P); `None` when
    /// there is no other.
    /// With it, the thinking level its `--models` name gives
    /// (`ollama/qwen3:8b:high`).
    pub async fn next_after_current(
        &self,
        session: &AgentSession,
        env: SyncEnv<'_>,
        back: bool,
    ) -> Option<(Model, Option<ThinkingLevel>)> {
        let current = session.model();
        if self.cycle.is_empty() {
            let mut models = self.available(&current, env).await;
            dedup_models(&mut models);
            return step_from(&models, &current, back).map(|model| (model, None));
        }
        // Names that do not resolve (a provider without its key) are passed over.
        let named: Vec<(Model, Option<ThinkingLevel>)> = self
            .cycle
            .iter()
            .filter_map(|name| {
                let (name, level) = split_thinking(name).ok()?;
                let flags = self.flags_for(name, &current).ok()?;
                let resolved = resolve_model(&flags, &self.settings, &self.settings_path, env);
                Some((resolved.ok()?.model, level))
            })
            .collect();
        let mut models: Vec<Model> = named.iter().map(|(model, _)| model.clone()).collect();
        dedup_models(&mut models);
        let next = step_from(&models, &current, back)?;
        let level = named
            .into_iter()
            .find(|(model, _)| same_model(model, &next))
            .and_then(|(_, level)| level);
        Some((next, level))
    }
}

/// The model after `current` in `models` (before it, with `back`),
/// wrapping; where `current` is not among them, the first (the last);
/// `None` when that is `current` itself or there is none.
fn step_from(models: &[Model], current: &Model, back: bool) -> Option<Model> {
    let at = models.iter().position(|model| same_model(model, current));
    let next = match (at, back) {
        (Some(at), false) => &models[(at + 1) % models.len()],
        (Some(at), true) => &models[(at + models.len() - 1) % models.len()],
        (None, false) => models.first()?,
        (None, true) => models.last()?,
    };
    (!same_model(next, current)).then(|| next.clone())
}

/// Whether `a` and `b` are the same model of the same provider.
fn same_model(a: &Model, b: &Model) -> bool {
    a.provider == b.provider && a.id == b.id
}

/// Keeps the first of each model, in order.
fn dedup_models(models: &mut Vec<Model>) {
    let mut kept: Vec<Model> = Vec::with_capacity(models.len());
    for model in models.drain(..) {
        if !kept.iter().any(|old| same_model(old, &model)) {
            kept.push(model);
        }
    }
    *models = kept;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stepping_wraps_both_ways_and_starts_at_an_end_for_a_model_not_listed() {
        let model = |id: &str| Model::new(id, "p", "openai-completions");
        let models = [model("a"), model("b"), model("c")];
        let step = |current: &str, back: bool| step_from(&models, &model(current), back);
        assert_eq!(step("a", false), Some(model("b")));
        assert_eq!(step("c", false), Some(model("a")));
        assert_eq!(step("a", true), Some(model("c")));
        assert_eq!(step("b", true), Some(model("a")));
        assert_eq!(step("x", false), Some(model("a")));
        assert_eq!(step("x", true), Some(model("c")));
        assert_eq!(step_from(&[model("a")], &model("a"), true), None);
        assert_eq!(step_from(&[], &model("a"), true), None);
    }

    /// A catalog of a session started with `--provider NAME --base-url …`
    /// and no settings.
    fn started_with(name: &str) -> ModelCatalog {
        ModelCatalog {
            start_provider: name.into(),
            flags: ModelFlags {
                provider: Some(name.into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..ModelFlags::default()
            },
            ..ModelCatalog::default()
        }
    }

    /// `--provider myllm --base-url URL` names a provider no settings file
    /// has: `/model myllm/ID`, RPC `set_model` and cycling back to it stay
    /// on it (they used to make `myllm/ID` a model id of another provider).
    #[test]
    fn the_provider_the_session_started_with_is_known_without_settings() {
        let catalog = started_with("myllm");
        let current = Model::new("other", "openai", "openai-completions");
        let flags = catalog.flags_for("myllm/qwen3:8b", &current).unwrap();
        assert_eq!(
            (flags.provider.as_deref(), flags.model.as_deref()),
            (Some("myllm"), Some("qwen3:8b"))
        );
        assert_eq!(flags.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert!(catalog.knows("myllm") && catalog.knows("openai") && !catalog.knows("nope"));
    }

    /// `/model openai/gpt-oss-20b`, the default model of a vLLM server's
    /// provider, switched to `gpt-oss-20b` of the built-in `openai`.
    #[test]
    fn a_providers_own_model_wins_over_the_provider_prefix() {
        let catalog = ModelCatalog {
            settings: serde_json::from_str(
                r#"{"providers":{"vllm":{"baseUrl":"http://127.0.0.1:8000/v1","defaultModel":"openai/gpt-oss-20b"}}}"#,
            )
            .unwrap(),
            ..started_with("vllm")
        };
        let current = Model::new("other", "vllm", "openai-completions");
        let resolved = |name: &str| {
            let flags = catalog.flags_for(name, &current).unwrap();
            (flags.provider.unwrap(), flags.model.unwrap())
        };
        let pair = |provider: &str, id: &str| (provider.to_owned(), id.to_owned());
        assert_eq!(
            resolved("openai/gpt-oss-20b"),
            pair("vllm", "openai/gpt-oss-20b")
        );
        assert_eq!(resolved("openai/gpt-4o"), pair("openai", "gpt-4o"));
    }

    /// `/model fake/` switched to the model id `""` (sent with every request,
    /// recorded for `--continue`), `/model /` to the id `/`, and `/model
    /// fake:HIGH`, `:high` and `fake:` to ids `--model` refuses; a name whose
    /// first part is no provider stays a model id of the current provider,
    /// as a local server's `Qwen/Qwen3-8B` is.
    #[test]
    fn a_name_without_a_model_id_is_refused_and_an_unknown_prefix_is_part_of_the_id() {
        let catalog = started_with("fake");
        let current = Model::new("m", "fake", "openai-completions");
        let refused = |name: &str| {
            catalog
                .flags_for(name, &current)
                .map_err(|error| error.to_string())
                .unwrap_err()
        };
        assert_eq!(
            refused("fake/"),
            "no model id in \"fake/\": name a model as ID (gpt-4o) or PROVIDER/ID (openai/gpt-4o)"
        );
        for name in [
            "/", "openai/", "", " ", "/m", ":high", "fake:", " fake", "fake ",
        ] {
            assert_eq!(
                refused(name),
                format!(
                    "no model id in \"{name}\": name a model as ID (gpt-4o) or PROVIDER/ID (openai/gpt-4o)"
                )
            );
        }
        for (name, id) in [("fake//m", "/m"), ("fake/ fake", " fake")] {
            assert_eq!(
                refused(name),
                format!(
                    "no model id in \"{id}\": name a model as ID (gpt-4o) or PROVIDER/ID (openai/gpt-4o)"
                )
            );
        }
        assert_eq!(
            refused("fake:HIGH"),
            "\"fake:HIGH\": Invalid thinking level \"HIGH\". Valid values: off, minimal, low, medium, high, xhigh"
        );
        let flags = catalog.flags_for("Qwen/Qwen3-8B", &current).unwrap();
        assert_eq!(
            (flags.provider.as_deref(), flags.model.as_deref()),
            (Some("fake"), Some("Qwen/Qwen3-8B"))
        );
    }
}
