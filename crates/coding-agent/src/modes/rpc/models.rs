//! RPC `get_available_models`, `set_model` and `cycle_model`: the models of
//! the providers in settings that have their key, plus what an
//! OpenAI-compatible endpoint of a provider defined in settings lists at
//! `/models`; switching goes through the same resolution as `--model`.

use agent_ai::Model;

use crate::app::AgentSession;
use crate::app::{ModelCatalog, SetModelError};

/// Reads the real environment (keys named by the settings).
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The models a client may switch to ([`ModelCatalog::available`]).
pub async fn available_models(session: &AgentSession, catalog: &ModelCatalog) -> Vec<Model> {
    catalog.available(&session.model(), &env).await
}

/// Switches to `model_id` of `provider`; the error is the text a client
/// reads. A provider whose endpoint lists its models (a local server) is
/// taken at its word, as Pi takes its registry: a mistyped id fails here,
/// not at the next prompt. Other providers (the built-in ones, an endpoint
/// that lists nothing) take any id, as `--model` does.
pub async fn set_model(
    session: &AgentSession,
    catalog: &ModelCatalog,
    provider: &str,
    model_id: &str,
) -> Result<Model, String> {
    if !catalog.knows(provider) {
        return Err(format!("Model not found: {provider}/{model_id}"));
    }
    refuse_while_running(session)?;
    catalog
        .check_offered(provider, model_id, &session.model(), &env)
        .await
        .map_err(|error| error.to_string())?;
    switch(session, catalog, provider, model_id)
}

/// A switch during a run (the wait before a retry included) is refused
/// (M20), as [`AgentSession::set_model`] refuses it: said before the
/// endpoints are asked for their lists, which took up to their timeout
/// while every event, response and `abort` waited behind it, for a refusal.
fn refuse_while_running(session: &AgentSession) -> Result<(), String> {
    if session.is_working() {
        return Err(SetModelError::Running.to_string());
    }
    Ok(())
}

/// Switches to `model_id` of `provider`, a provider the catalog knows.
fn switch(
    session: &AgentSession,
    catalog: &ModelCatalog,
    provider: &str,
    model_id: &str,
) -> Result<Model, String> {
    catalog
        .switch(session, &format!("{provider}/{model_id}"), &env)
        .map(|(model, _)| model)
        .map_err(|error| error.to_string())
}

/// Switches to the model after the current one
/// ([`ModelCatalog::next_after_current`]); `None` when there is no other.
pub async fn cycle_model(
    session: &AgentSession,
    catalog: &ModelCatalog,
) -> Result<Option<Model>, String> {
    refuse_while_running(session)?;
    let Some((next, level)) = catalog.next_after_current(session, &env, false).await else {
        return Ok(None);
    };
    let model = switch(session, catalog, &next.provider, &next.id)?;
    if let Some(level) = level {
        session
            .set_thinking_level(level)
            .map_err(|error| error.to_string())?;
    }
    Ok(Some(model))
}
