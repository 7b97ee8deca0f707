//! Streaming providers over HTTP: OpenAI-compatible chat completions and
//! Anthropic Messages.
//!
//! Both implement [`crate::Provider`]: whatever goes wrong (HTTP status,
//! dropped connection, malformed event, stall past the read timeout) ends the
//! stream with an `error` event carrying a clear `errorMessage`; 429, 5xx and
//! overloaded answers are retried with backoff first (honouring `retry-after`).

pub mod anthropic_messages;

use std::sync::Arc;
use std::time::Duration;

use crate::Provider;

pub use anthropic_messages::AnthropicMessagesProvider;

/// How to reach a provider's HTTP API.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// Base URL up to the API version, e.g. `https://api.openai.com/v1` or
    /// `https://api.anthropic.com` (the provider appends its path).
    pub base_url: String,
    /// The API key, if the endpoint needs one (local servers often do not).
    pub api_key: Option<String>,
    /// Retries of 429/5xx/overloaded answers.
    pub retry: RetryPolicy,
    /// A stream that sends nothing for this long has stalled and ends in an error.
    pub read_timeout: Duration,
    /// Maximum output tokens to ask for.
    pub max_tokens: u32,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
}

impl ProviderConfig {
    /// A config with the defaults: 3 retries from 2 s, a 120 s read timeout,
    /// 8192 output tokens.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        ProviderConfig {
            base_url: base_url.into(),
            api_key,
            retry: RetryPolicy::default(),
            read_timeout: Duration::from_secs(120),
            max_tokens: 8192,
            temperature: None,
        }
    }
}

/// How often and how patiently to retry a request the server refused for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (Pi's default: 3).
    pub max_retries: u32,
    /// First delay; doubled each retry unless the server sends `retry-after`.
    pub base_delay: Duration,
    /// No single wait is longer than this.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// The provider for `api` (`openai-completions` or `anthropic-messages`), or
/// `None` for an API this crate does not speak.
pub fn for_api(api: &str, config: ProviderConfig) -> Option<Arc<dyn Provider>> {
    // Each provider module adds its arm here as it lands.
    match api {
        "anthropic-messages" => Some(Arc::new(AnthropicMessagesProvider::new(config))),
        _ => None,
    }
}
