//! RPC `get_available_models`, `set_model` and `cycle_model`: the models of
//! the providers in settings that have their key, plus what an
//! OpenAI-compatible endpoint of a provider defined in settings lists at
//! `/models`; switching goes through the same resolution as `--model`.

use agent_ai::Model;
use agent_ai::providers::probe::server_models;

use crate::app::AgentSession;
use crate::app::ModelCatalog;
use crate::settings::resolve_model;

/// Reads the real environment (keys named by the settings).
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The models a client may switch to: each provider's (its server's list,
/// then its default), providers in name order; the current model first when
/// it is none of them.
pub async fn available_models(session: &AgentSession, catalog: &ModelCatalog) -> Vec<Model> {
    let current = session.model();
    let mut models = Vec::new();
    for choice in catalog.choices(&env) {
        if choice.missing_key.is_some() {
            continue;
        }
        let flags = catalog.flags_for(&choice.provider, &current, &env);
        let Ok(resolved) = resolve_model(&flags, &catalog.settings, &catalog.settings_path, &env)
        else {
            continue;
        };
        let custom = !matches!(choice.provider.as_str(), "openai" | "anthropic");
        let listed = if custom && resolved.model.api == "openai-completions" {
            server_models(
                &resolved.config.base_url,
                resolved.config.api_key.as_deref(),
            )
            .await
        } else {
            Vec::new()
        };
        for id in listed {
            let mut model = resolved.model.clone();
            model.id = id;
            models.push(model);
        }
        models.push(resolved.model);
    }
    let mut seen = Vec::new();
    models.retain(|m| {
        let key = (m.provider.clone(), m.id.clone());
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    // A model chosen on the command line is offered too, first.
    if !models
        .iter()
        .any(|m| m.provider == current.provider && m.id == current.id)
    {
        models.insert(0, current);
    }
    models
}

/// Switches to `model_id` of `provider`; the error is the text a client reads.
pub fn set_model(
    session: &AgentSession,
    catalog: &ModelCatalog,
    provider: &str,
    model_id: &str,
) -> Result<Model, String> {
    if catalog.settings.provider(provider).is_none() {
        return Err(format!("Model not found: {provider}/{model_id}"));
    }
    catalog
        .switch(session, &format!("{provider}/{model_id}"), &env)
        .map(|(model, _)| model)
        .map_err(|error| error.to_string())
}

/// Switches to the model after the current one in [`available_models`]
/// (wrapping); `None` when there is no other.
pub async fn cycle_model(
    session: &AgentSession,
    catalog: &ModelCatalog,
) -> Result<Option<Model>, String> {
    let models = available_models(session, catalog).await;
    if models.len() < 2 {
        return Ok(None);
    }
    let current = session.model();
    let at = models
        .iter()
        .position(|m| m.provider == current.provider && m.id == current.id)
        .unwrap_or(0);
    let next = &models[(at + 1) % models.len()];
    set_model(session, catalog, &next.provider, &next.id).map(Some)
}
