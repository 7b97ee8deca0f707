//! [`ProviderConfig`]: how to reach a provider's HTTP API, and [`for_api`],
//! the one place an API name becomes a provider.

use std::sync::Arc;
use std::time::Duration;

use super::retry::{RetryCallback, RetryPolicy};
use super::{AnthropicMessagesProvider, OpenAiCompletions, anthropic_messages, openai_completions};
use crate::Provider;
use crate::thinking::ThinkingBudgets;

/// How to reach a provider's HTTP API.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Base URL up to the API version, e.g. `https://api.openai.com/v1` or
    /// `https://api.anthropic.com` (the provider appends its path).
    pub base_url: String,
    /// The API key, if the endpoint needs one (local servers often do not).
    pub api_key: Option<String>,
    /// Retries of 429/5xx/overloaded answers.
    pub retry: RetryPolicy,
    /// A stream that sends nothing for this long has stalled and ends in an
    /// error. `Duration::ZERO` means no read timeout: the request waits as
    /// long as the server takes (until cancelled), as a zero timeout does in
    /// curl and Node.
    pub read_timeout: Duration,
    /// Maximum output tokens to ask for.
    pub max_tokens: u32,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// Told before each retry, so a UI can show "rate limited, retrying in
    /// 4 s" rather than appear to hang (retries are also logged with
    /// `tracing::warn!`).
    pub on_retry: Option<RetryCallback>,
    /// Turn a text-only answer that spells out a call to one of the request's
    /// tools (bare JSON, a ```` ```json ```` fence, `<tool_call>` blocks) into
    /// a real tool call (see [`super::text_tool_calls`]). On by default; used by
    /// `openai-completions`, where smaller models do this.
    pub recover_text_tool_calls: bool,
    /// Anthropic's thinking budget per level (Pi's `thinkingBudgets`).
    pub thinking_budgets: ThinkingBudgets,
}

impl ProviderConfig {
    /// A config with the defaults: 3 retries from 2 s, a 120 s read timeout,
    /// 8192 output tokens, text tool-call recovery on, Pi's thinking budgets.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        ProviderConfig {
            base_url: base_url.into(),
            api_key,
            retry: RetryPolicy::default(),
            read_timeout: Duration::from_secs(120),
            max_tokens: 8192,
            temperature: None,
            on_retry: None,
            recover_text_tool_calls: true,
            thinking_budgets: ThinkingBudgets::default(),
        }
    }

    /// The temperature for a JSON body, through its decimal text so `0.7` is
    /// sent as `0.7`, not as the `f32`'s `0.699999988079071`.
    pub fn temperature_json(&self) -> Option<serde_json::Value> {
        let temperature = self.temperature?;
        let value: f64 = temperature
            .to_string()
            .parse()
            .unwrap_or(f64::from(temperature));
        Some(serde_json::json!(value))
    }
}

/// Two configs are equal when they reach the same endpoint the same way; the
/// retry callbacks compare by identity (the same `Arc`), as closures cannot be
/// compared otherwise.
impl PartialEq for ProviderConfig {
    fn eq(&self, other: &Self) -> bool {
        let same_callback = match (&self.on_retry, &other.on_retry) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.base_url == other.base_url
            && self.api_key == other.api_key
            && self.retry == other.retry
            && self.read_timeout == other.read_timeout
            && self.max_tokens == other.max_tokens
            && self.temperature == other.temperature
            && self.recover_text_tool_calls == other.recover_text_tool_calls
            && self.thinking_budgets == other.thinking_budgets
            && same_callback
    }
}

impl std::fmt::Debug for ProviderConfig {
    /// Everything but the key itself (logs must not leak it) and the callback.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("retry", &self.retry)
            .field("read_timeout", &self.read_timeout)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("on_retry", &self.on_retry.as_ref().map(|_| "<callback>"))
            .field("recover_text_tool_calls", &self.recover_text_tool_calls)
            .field("thinking_budgets", &self.thinking_budgets)
            .finish()
    }
}

/// The APIs [`for_api`] speaks, for errors that name the choices.
pub const SUPPORTED_APIS: [&str; 2] = [openai_completions::API, anthropic_messages::API];

/// The provider for `api` (`openai-completions` or `anthropic-messages`), or
/// `None` for an API this crate does not speak.
pub fn for_api(api: &str, config: ProviderConfig) -> Option<Arc<dyn Provider>> {
    match api {
        openai_completions::API => Some(Arc::new(OpenAiCompletions::new(config))),
        anthropic_messages::API => Some(Arc::new(AnthropicMessagesProvider::new(config))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_api_key() {
        let config = ProviderConfig::new("https://api.openai.com/v1", Some("sk-secret".into()));
        let debug = format!("{config:?}");
        assert!(debug.contains("<redacted>"), "{debug}");
        assert!(!debug.contains("sk-secret"), "{debug}");
    }

    #[test]
    fn temperature_is_sent_as_its_decimal_text() {
        let mut config = ProviderConfig::new("http://h", None);
        assert_eq!(config.temperature_json(), None);
        config.temperature = Some(0.7);
        assert_eq!(config.temperature_json(), Some(serde_json::json!(0.7)));
    }

    #[test]
    fn for_api_knows_openai_completions_and_not_made_up_apis() {
        let config = ProviderConfig::new("http://127.0.0.1:1/v1", None);
        assert!(for_api("openai-completions", config.clone()).is_some());
        assert!(for_api("anthropic-messages", config.clone()).is_some());
        assert!(for_api("carrier-pigeon", config).is_none());
    }
}
