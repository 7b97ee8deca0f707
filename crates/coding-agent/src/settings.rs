//! Settings and model selection.
//!
//! The agent directory is `$CODING_AGENT_DIR`, else `~/.coding-agent` (Pi:
//! `$PI_CODING_AGENT_DIR`, `~/.pi/agent`). It holds `settings.json`, the
//! global `AGENTS.md`, `SYSTEM.md`, `APPEND_SYSTEM.md` and `sessions/`. A
//! project may add `.coding-agent/settings.json` in its working directory;
//! its keys win over the global file's, provider by provider and, in
//! `retry`, `compaction` and `thinkingBudgets`, key by key. Its providers and
//! default model apply only once it is trusted ([`Settings::load`]).
//!
//! ```json
//! {
//!   "defaultProvider": "local",
//!   "defaultModel": "qwen2.5-coder",
//!   "providers": {
//!     "local": { "api": "openai-completions", "baseUrl": "http://127.0.0.1:8080/v1" },
//!     "groq":  { "api": "openai-completions", "baseUrl": "https://api.groq.com/openai/v1",
//!                "apiKeyEnv": "GROQ_API_KEY", "defaultModel": "llama-3.3-70b-versatile" }
//!   }
//! }
//! ```
//!
//! Two providers are built in: `openai` (`openai-completions`,
//! `https://api.openai.com/v1`, key from `OPENAI_API_KEY`, model `gpt-4o`) and
//! `anthropic` (`anthropic-messages`, `https://api.anthropic.com`, key from
//! `ANTHROPIC_API_KEY`, model `claude-sonnet-4-5`). An entry of the same name in
//! `providers` changes them field by field. A provider needs a key only if it
//! names one (`apiKeyEnv` or `apiKey`, or is built in): local servers need none.
//! `contextWindow` (tokens) lets interactive mode show how full the context
//! is, and says when to compact; without it a model's window is what its
//! server reports (a provider defined here), else the known table's (the
//! built-in providers' models: gpt-5 400k, claude 200k), else 128000.
//!
//! Thinking (see [`crate::thinking`]): `defaultThinkingLevel` (`off`,
//! `minimal`, `low`, `medium`, `high`, `xhigh`; Pi's default `medium`),
//! `thinkingBudgets`, and per provider `reasoning` and `thinkingLevelMap`.
//!
//! Pi's session keys: `retry` (`enabled` true, `maxRetries` 3, `baseDelayMs`
//! 2000, `provider.maxRetries` for the HTTP provider's own retries: 2 by
//! default, from 0.5 s) and
//! `compaction` (`enabled` true, `reserveTokens` 16384, `keepRecentTokens`
//! 20000; see [`crate::compaction`]).
//!
//! [`resolve_model`] turns flags + settings + environment into a [`ResolvedModel`];
//! [`provider_for`] builds its [`Provider`]. The binary does nothing else to
//! reach a model, so tests can drive the same path.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_ai::providers::{ProviderConfig, RetryPolicy, SUPPORTED_APIS, for_api};
use agent_ai::thinking::ThinkingBudgets;
use agent_ai::{Model, Provider, ThinkingLevel};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::compaction::CompactionSettings;
use crate::recovery::RecoverySettings;
use crate::retry::RetrySettings;
use crate::sandbox::SandboxSettings;
use crate::support::paths::home_dir;
use crate::thinking::known_reasoning;

/// Name of the environment variable that moves the agent directory.
pub const AGENT_DIR_ENV: &str = "CODING_AGENT_DIR";

/// Name of the per-project configuration directory (in the working directory).
pub const PROJECT_CONFIG_DIR: &str = ".coding-agent";

/// The settings file's name, globally and per project.
pub const SETTINGS_FILE: &str = "settings.json";

/// The agent directory: `$CODING_AGENT_DIR`, else `~/.coding-agent` (the
/// home from [`home_dir`]: `$HOME` when absolute, else the password
/// database), else `/.coding-agent`.
pub fn agent_dir() -> PathBuf {
    agent_dir_in(std::env::var_os(AGENT_DIR_ENV), home_dir())
}

/// [`agent_dir`] of the variable's value `configured` and the user's
/// `home`. Never a relative path: with `HOME` unset it was `./.coding-agent`,
/// so a repository's `.coding-agent/settings.json` was read as the user's
/// own, with no trust question, and its `allow` rules and `defaultMode:
/// bypass` applied. With no home at all the agent directory is in `/`, as
/// Docker and systemd give such a user `HOME=/`: a folder only the
/// administrator can create, never a project's.
fn agent_dir_in(configured: Option<OsString>, home: Option<PathBuf>) -> PathBuf {
    if let Some(dir) = configured.filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = home.unwrap_or_else(|| {
        tracing::warn!(
            "no home directory (HOME is unset or not an absolute path, and this user has none in the password database): settings and sessions are kept in /{PROJECT_CONFIG_DIR}; set {AGENT_DIR_ENV} or HOME to an absolute path"
        );
        PathBuf::from("/")
    });
    home.join(PROJECT_CONFIG_DIR)
}

/// The project's configuration directory (`.coding-agent` in `cwd`); `None`
/// when it is the agent directory itself, as when the agent starts in the
/// home directory: the user's own files are then no project's, so nothing
/// there may be called untrusted or be read twice.
pub fn project_config_dir(agent_dir: &Path, cwd: &Path) -> Option<PathBuf> {
    let dir = cwd.join(PROJECT_CONFIG_DIR);
    (!same_file(&dir, agent_dir)).then_some(dir)
}

/// The project's settings file in `cwd`; `None` when it is the global one
/// of `agent_dir` (the same directory, or a link to the same file): every
/// reader of the project layer (settings, permission rules, hooks, MCP
/// servers, the trust question) asks here, so none takes the user's own
/// file for a project's.
pub fn project_settings_file(agent_dir: &Path, cwd: &Path) -> Option<PathBuf> {
    let path = project_config_dir(agent_dir, cwd)?.join(SETTINGS_FILE);
    (!same_file(&path, &agent_dir.join(SETTINGS_FILE))).then_some(path)
}

/// Whether `a` and `b` name the same file or directory (links resolved);
/// false when either does not exist.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// One provider entry of `settings.json`; every field is optional so an entry
/// can amend a built-in provider.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSettings {
    /// Wire API: `openai-completions` or `anthropic-messages`.
    pub api: Option<String>,
    /// Base URL up to the API version, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: Option<String>,
    /// Environment variable holding the key.
    pub api_key_env: Option<String>,
    /// The key itself (prefer `apiKeyEnv`: settings files get shared).
    pub api_key: Option<String>,
    /// Model used when neither `--model` nor `defaultModel` names one.
    pub default_model: Option<String>,
    /// Whether the provider's models accept images (built-ins: true).
    pub images: Option<bool>,
    /// Sampling temperature (the provider's default when absent); 0 makes
    /// small local models repeatable.
    pub temperature: Option<f32>,
    /// Turn a tool call a model wrote as JSON text into a real call (OpenAI-
    /// compatible endpoints; default true). Small local models need it.
    pub recover_text_tool_calls: Option<bool>,
    /// The most tokens one response may have (default 8192). A small local
    /// model that starts repeating itself otherwise generates until the
    /// context is full, minutes on a CPU.
    pub max_tokens: Option<u32>,
    /// The models' context window in tokens, for the footer's fill
    /// percentage (built-ins: openai 128000, anthropic 200000; unknown when
    /// absent).
    pub context_window: Option<u64>,
    /// Whether the provider's models reason, so thinking levels apply (Pi's
    /// model `reasoning`; default: [`crate::thinking::known_reasoning`] of
    /// the model id).
    pub reasoning: Option<bool>,
    /// The wire name of each thinking level, `null` for one the models lack;
    /// `xhigh` only when named (Pi's `thinkingLevelMap`).
    pub thinking_level_map: Option<BTreeMap<ThinkingLevel, Option<String>>>,
}

impl ProviderSettings {
    /// Fields set in `over` replace those here.
    fn merge(&mut self, over: &ProviderSettings) {
        let ProviderSettings {
            api,
            base_url,
            api_key_env,
            api_key,
            default_model,
            images,
            temperature,
            recover_text_tool_calls,
            max_tokens,
            context_window,
            reasoning,
            thinking_level_map,
        } = over.clone();
        self.api = api.or(self.api.take());
        self.base_url = base_url.or(self.base_url.take());
        self.api_key_env = api_key_env.or(self.api_key_env.take());
        self.api_key = api_key.or(self.api_key.take());
        self.default_model = default_model.or(self.default_model.take());
        self.images = images.or(self.images.take());
        self.temperature = temperature.or(self.temperature.take());
        self.recover_text_tool_calls =
            recover_text_tool_calls.or(self.recover_text_tool_calls.take());
        self.max_tokens = max_tokens.or(self.max_tokens.take());
        self.context_window = context_window.or(self.context_window.take());
        self.reasoning = reasoning.or(self.reasoning.take());
        self.thinking_level_map = thinking_level_map.or(self.thinking_level_map.take());
    }
}

/// The contents of `settings.json` this agent reads; unknown keys (Pi's
/// others) are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// Provider used without `--provider`.
    pub default_provider: Option<String>,
    /// Model used without `--model`.
    pub default_model: Option<String>,
    /// Providers by name, in addition to (or amending) `openai` and `anthropic`.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// The bash sandbox (`docs/permissions.md`); a project may only tighten it.
    #[serde(default)]
    pub sandbox: SandboxSettings,
    /// Where the tools act when `--remote` is not given (see
    /// [`crate::remote::RemoteSettings`]). Read from the global file only.
    pub remote: Option<crate::remote::RemoteSettings>,
    /// `retry.*` (Pi's keys); a project's keys win over the global file's.
    pub retry: Option<RetrySettings>,
    /// `compaction.*` (Pi's keys); a project's keys win over the global file's.
    pub compaction: Option<CompactionSettings>,
    /// The thinking level of a new session (Pi's key; `medium` when unset,
    /// clamped to what the model supports).
    pub default_thinking_level: Option<ThinkingLevel>,
    /// Anthropic's thinking budget per level (Pi's `thinkingBudgets`:
    /// `minimal`, `low`, `medium`, `high`; missing keys keep Pi's values).
    pub thinking_budgets: Option<ThinkingBudgets>,
    /// The models Ctrl+P and RPC `cycle_model` go through, as `/model`
    /// names them (Pi's `enabledModels`; `--models` replaces it). Empty:
    /// every model the settings and keys allow.
    pub enabled_models: Option<Vec<String>>,
    /// More skills: `SKILL.md` files, Markdown files or folders of skills
    /// (`~/` is the home folder, and a relative path is under the agent
    /// directory), e.g. `["~/.claude/skills"]` to use Claude Code's. Read from the global file only: a project's skills load from
    /// its own folders, and only when it is trusted ([`crate::skills`]).
    pub skills: Option<Vec<String>>,
    /// Seconds the interactive UI waits for your next prompt after an
    /// answer before the `Notification` hooks run with `idle_prompt`
    /// (default [`DEFAULT_IDLE_NOTIFICATION_SECS`], as Claude Code; 0: never).
    pub idle_notification_secs: Option<u64>,
}

/// Pi's settings this agent does not read (docs/DEVIATIONS.md M16), as
/// paths of keys: a file that sets one is told so rather than left to
/// wonder why nothing changed.
const PI_KEYS_NOT_READ: [&str; 8] = [
    "sessionDir",
    "shellPath",
    "shellCommandPrefix",
    "images.blockImages",
    "images.autoResize",
    "steeringMode",
    "followUpMode",
    "retry.provider.timeoutMs",
];

/// The keys of a provider entry ([`ProviderSettings`]).
const PROVIDER_KEYS: [&str; 12] = [
    "api",
    "baseUrl",
    "apiKeyEnv",
    "apiKey",
    "defaultModel",
    "images",
    "temperature",
    "recoverTextToolCalls",
    "maxTokens",
    "contextWindow",
    "reasoning",
    "thinkingLevelMap",
];

/// The top-level keys of `settings.json` this agent reads, whichever part
/// reads each ([`Settings`], the permission policy, the hooks, the MCP
/// servers).
const READ_KEYS: [&str; 16] = [
    "defaultProvider",
    "defaultModel",
    "providers",
    "sandbox",
    "remote",
    "retry",
    "compaction",
    "defaultThinkingLevel",
    "thinkingBudgets",
    "enabledModels",
    "skills",
    "idleNotificationSecs",
    "permissions",
    "hooks",
    "disableAllHooks",
    "mcpServers",
];

/// The key of `keys` that is a slip of `meant` (another key this agent
/// reads): the same but for case (`Permissions`), or for a letter or two
/// (`permisions`; one in a name of five letters or fewer). Such a key is
/// read as nothing: a misspelled `permissions` left its deny rules out
/// without a word. Other keys (Pi's `theme`, another tool's) are left
/// alone: they are no slip of a key read here.
pub(crate) fn slip_of<'a>(keys: impl IntoIterator<Item = &'a str>, meant: &str) -> Option<&'a str> {
    let most = if meant.chars().count() <= 5 { 1 } else { 2 };
    keys.into_iter().find(|key| {
        *key != meant
            && !READ_KEYS.contains(key)
            && edit_distance(&key.to_lowercase(), &meant.to_lowercase()) <= most
    })
}

/// How many letters must be inserted, removed or replaced to make `a` `b`
/// (Levenshtein's distance).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let replaced = diagonal + usize::from(x != y);
            diagonal = row[j + 1];
            row[j + 1] = replaced.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// Warns of each key of [`PI_KEYS_NOT_READ`] the settings file at `path`
/// (read as `json`) sets, of a key that is a slip of one this agent reads
/// (`defaultProvdier`), and of a provider's keys this agent does not read
/// (Pi's `models` list, `headers`, a typo): nothing would change, and
/// nothing would say why.
fn warn_of_keys_not_read(path: &Path, json: &Value) {
    let keys = json.as_object().into_iter().flat_map(|o| o.keys());
    // A slip of `permissions` stops the start (`guard::config`), saying so.
    for meant in READ_KEYS.into_iter().filter(|key| *key != "permissions") {
        if let Some(key) = slip_of(keys.clone().map(String::as_str), meant) {
            tracing::warn!(
                "{}: `{key}` is not a setting this agent reads; did you mean `{meant}`?",
                path.display()
            );
        }
    }
    for key in PI_KEYS_NOT_READ {
        let pointer = format!("/{}", key.replace('.', "/"));
        if json.pointer(&pointer).is_some() {
            tracing::warn!(
                "{}: `{key}` is a Pi setting this agent does not read (docs/DEVIATIONS.md M16)",
                path.display()
            );
        }
    }
    let providers = json.get("providers").and_then(Value::as_object);
    for (name, provider) in providers.into_iter().flatten() {
        let keys = provider.as_object().into_iter().flat_map(|p| p.keys());
        for key in keys.filter(|key| !PROVIDER_KEYS.contains(&key.as_str())) {
            tracing::warn!(
                "{}: provider \"{name}\" sets `{key}`, which this agent does not read (a provider takes {}; its model is `defaultModel` or --model)",
                path.display(),
                PROVIDER_KEYS.join(", ")
            );
        }
    }
}

/// Said after what is wrong with a project's settings file that cannot be
/// read, trusted or not.
pub(crate) const UNREADABLE_PROJECT_FILE: &str = "(a project's settings that cannot be read may hold deny rules, so the agent does not start without them: fix the file or remove it)";

/// The keys that choose the model and the endpoint, which an untrusted
/// project's file does not set.
const MODEL_CHOICE_KEYS: [&str; 3] = ["providers", "defaultProvider", "defaultModel"];

/// Takes `keys` out of the settings file's `json`; what they held, for a
/// warning: `providers evil, local` (sorted), `defaultModel qwen`, the
/// JSON text of a value that is no string (`defaultModel 5`). `null`
/// counts as unset.
pub(crate) fn take_keys(json: &mut Value, keys: &[&str]) -> Vec<String> {
    let Some(object) = json.as_object_mut() else {
        return Vec::new();
    };
    let taken = keys
        .iter()
        .filter_map(|&key| Some((key, object.remove(key).filter(|v| !v.is_null())?)));
    taken
        .filter_map(|(key, value)| {
            let shown = match &value {
                Value::String(text) => text.clone(),
                Value::Object(entries) if entries.is_empty() => return None,
                Value::Object(entries) => {
                    let mut names: Vec<&str> = entries.keys().map(String::as_str).collect();
                    names.sort_unstable();
                    names.join(", ")
                }
                other => other.to_string(),
            };
            Some(format!("{key} {shown}"))
        })
        .collect()
}

/// `over` laid on `base`: objects key by key, at every depth; anything else
/// replaces.
fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

/// Claude Code's threshold of its `idle_prompt` notification.
pub const DEFAULT_IDLE_NOTIFICATION_SECS: u64 = 60;

/// A settings file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct SettingsError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

/// Why a settings file that exists cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    /// It cannot be read.
    #[error("{0}")]
    Read(std::io::Error),
    /// It is not the JSON expected.
    #[error("{0}")]
    Parse(serde_json::Error),
    /// It holds JSON, but not an object (`[]` read as "invalid length 0,
    /// expected struct Settings with 12 elements").
    #[error("it holds no JSON object: the settings are one object, {{ \"key\": value, ... }}")]
    NotAnObject,
}

/// The JSON file at `path` as a `T`, `None` when there is no such file or
/// it is blank (a missing or empty settings file counts as empty). The settings, the hooks and the
/// permission policy each read their part of `settings.json` through this,
/// and [`crate::guard::trust::Trust`] its list of trusted projects.
pub(crate) fn read_json_file<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, FileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            // A byte-order mark (which Windows editors write) is no JSON:
            // such a file read as "expected value at line 1 column 1".
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text).trim_start();
            if text.is_empty() {
                // An empty file (one just created) holds nothing yet, as Pi
                // reads it.
                Ok(None)
            } else if !text.starts_with('{') {
                Err(FileError::NotAnObject)
            } else {
                serde_json::from_str(text)
                    .map(Some)
                    .map_err(FileError::Parse)
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::Read(e)),
    }
}

/// The smallest `contextWindow` taken: no model has a smaller one.
pub const MIN_CONTEXT_WINDOW: u64 = 1024;

/// What the settings file at `path` holds of `T` (all of [`Settings`], the
/// hooks); `T::default()` when there is no such file.
pub(crate) fn read_part<T: DeserializeOwned + Default>(path: &Path) -> Result<T, SettingsError> {
    read_json_file(path)
        .map(Option::unwrap_or_default)
        .map_err(|e| SettingsError {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

impl Settings {
    /// The `remote` of the user's own settings in `agent_dir` (a project
    /// cannot set it), for the commands that read no other setting first.
    pub fn global_remote(
        agent_dir: &Path,
    ) -> Result<Option<crate::remote::RemoteSettings>, SettingsError> {
        let global: Self = read_part(&agent_dir.join(SETTINGS_FILE))?;
        Ok(global.remote)
    }

    /// The global settings of `agent_dir` with the project's (in `cwd`) on
    /// top; `retry`, `compaction` and `thinkingBudgets` are merged key by key,
    /// as Pi merges nested objects. Missing files count as empty.
    ///
    /// Until the project is `trusted` ([`crate::guard::project_trusted`]),
    /// its `providers`, `defaultProvider` and `defaultModel` are ignored, with
    /// a warning: they say where the conversation is sent and with which
    /// key, so a cloned repository could otherwise send the user's key to a
    /// server of its choosing.
    pub fn load(agent_dir: &Path, cwd: &Path, trusted: bool) -> Result<Self, SettingsError> {
        let global_path = agent_dir.join(SETTINGS_FILE);
        let mut settings: Self = read_part(&global_path)?;
        let global_json: Value = read_part(&global_path)?;
        warn_of_keys_not_read(&global_path, &global_json);
        let Some(project_path) = project_settings_file(agent_dir, cwd) else {
            return Ok(settings);
        };
        // A file that is not JSON stops the run, trusted or not: its deny
        // rules cannot be read either, and an untrusted project still
        // tightens the policy with them.
        let mut project_json =
            Value::Object(read_part(&project_path).map_err(|error| SettingsError {
                reason: format!("{} {UNREADABLE_PROJECT_FILE}", error.reason),
                ..error
            })?);
        warn_of_keys_not_read(&project_path, &project_json);
        // The keys a project may not set are taken out before the rest is
        // read, so that they are ignored whatever they hold: `"defaultModel":
        // 5` in a cloned repository stopped the agent with a type error in
        // a key it could not set.
        //
        // A checked-out project must not send the tools (or ssh options such
        // as ProxyCommand, which run locally) anywhere: only the user's own
        // file says where they act. Nor add instructions for the model from
        // anywhere on the disk. Said, so that the user is not left wondering
        // why the tools run here.
        for (key, flag) in [("remote", "--remote"), ("skills", "--skill")] {
            if !take_keys(&mut project_json, &[key]).is_empty() {
                tracing::warn!(
                    "{}: `{key}` is ignored: a project's settings cannot set it (set it in {}, or use {flag})",
                    project_path.display(),
                    global_path.display()
                );
            }
        }
        if !trusted {
            let ignored = take_keys(&mut project_json, &MODEL_CHOICE_KEYS);
            if !ignored.is_empty() {
                tracing::warn!(
                    "{} is not trusted, so it does not choose the model or where requests go (ignored: {}); trust the project with --trust",
                    project_path.display(),
                    ignored.join(", ")
                );
            }
        }
        let mut project: Self =
            serde_json::from_value(project_json.clone()).map_err(|e| SettingsError {
                path: project_path.clone(),
                reason: e.to_string(),
            })?;
        project.inherit_nested(&global_json, &project_json);
        // What the project's sandbox mode makes of the session is said with
        // its file's name (`crate::sandbox::AskedBy`).
        project.sandbox.project_file = Some(project_path);
        settings.merge(project);
        settings.drop_impossible_sizes();
        Ok(settings)
    }

    /// Leaves out, with a warning, sizes no model has: a `contextWindow`
    /// under [`MIN_CONTEXT_WINDOW`] (`0` compacted twice before every
    /// prompt), a `maxTokens` of 0 (every request asked for `max_tokens:
    /// 0`, which servers refuse or answer with nothing) and a
    /// `compaction.reserveTokens` of 0 (the same for every summary request,
    /// so no compaction could succeed).
    fn drop_impossible_sizes(&mut self) {
        for (name, provider) in &mut self.providers {
            if let Some(window) = provider
                .context_window
                .take_if(|window| *window < MIN_CONTEXT_WINDOW)
            {
                tracing::warn!(
                    "providers.{name}.contextWindow {window} is ignored: no model has a window under {MIN_CONTEXT_WINDOW} tokens"
                );
            }
            if provider.max_tokens.take_if(|max| *max == 0).is_some() {
                tracing::warn!(
                    "providers.{name}.maxTokens 0 is ignored: an answer needs room (leave it out for the default)"
                );
            }
        }
        if let Some(compaction) = &mut self.compaction
            && compaction.reserve_tokens == 0
        {
            let default = CompactionSettings::default().reserve_tokens;
            tracing::warn!(
                "compaction.reserveTokens 0 leaves a summary no room: {default} is used"
            );
            compaction.reserve_tokens = default;
        }
    }

    /// Fills the nested objects this (project) file sets with the keys only
    /// the global file sets, given both files as JSON.
    fn inherit_nested(&mut self, global: &Value, project: &Value) {
        fn merged<T: DeserializeOwned>(global: &Value, project: &Value, key: &str) -> Option<T> {
            let (Some(global), Some(project)) = (global.get(key), project.get(key)) else {
                return None;
            };
            let mut merged = global.clone();
            deep_merge(&mut merged, project);
            // Each file's object was read as a `T` already; so is their union.
            serde_json::from_value(merged).ok()
        }
        if let Some(retry) = merged(global, project, "retry") {
            self.retry = Some(retry);
        }
        if let Some(compaction) = merged(global, project, "compaction") {
            self.compaction = Some(compaction);
        }
        if let Some(budgets) = merged(global, project, "thinkingBudgets") {
            self.thinking_budgets = Some(budgets);
        }
    }

    /// Keys set in `over` win; providers are merged entry by entry; the
    /// sandbox only tightens ([`SandboxSettings::tighten_with`]).
    pub fn merge(&mut self, over: Settings) {
        self.sandbox.tighten_with(over.sandbox);
        self.default_provider = over.default_provider.or(self.default_provider.take());
        self.default_model = over.default_model.or(self.default_model.take());
        self.retry = over.retry.or(self.retry.take());
        self.compaction = over.compaction.or(self.compaction.take());
        self.default_thinking_level = over
            .default_thinking_level
            .or(self.default_thinking_level.take());
        self.thinking_budgets = over.thinking_budgets.or(self.thinking_budgets.take());
        self.enabled_models = over.enabled_models.or(self.enabled_models.take());
        for (name, entry) in over.providers {
            self.providers.entry(name).or_default().merge(&entry);
        }
        self.remote = over.remote.or(self.remote.take());
        self.skills = over.skills.or(self.skills.take());
        self.idle_notification_secs = over
            .idle_notification_secs
            .or(self.idle_notification_secs.take());
    }

    /// How long the interactive UI waits for a prompt before an
    /// `idle_prompt` notification; `None`: it never sends one.
    pub fn idle_notification(&self) -> Option<std::time::Duration> {
        let secs = self
            .idle_notification_secs
            .unwrap_or(DEFAULT_IDLE_NOTIFICATION_SECS);
        (secs > 0).then(|| std::time::Duration::from_secs(secs))
    }

    /// The retry and compaction settings for a session on `provider`, with
    /// its configured context window and `maxTokens`.
    pub fn recovery(&self, provider: &str) -> RecoverySettings {
        RecoverySettings {
            retry: self.retry.unwrap_or_default(),
            compaction: self.compaction.unwrap_or_default(),
            context_window: self.provider(provider).and_then(|p| p.context_window),
            max_tokens: self.provider(provider).and_then(|p| p.max_tokens),
        }
    }

    /// The context window of `model` as far as the settings and the known
    /// table tell (`None`: the server may tell, or Pi's default applies).
    pub fn context_window(&self, model: &Model) -> Option<u64> {
        self.provider(&model.provider)
            .and_then(|p| p.context_window)
            .or_else(|| crate::compaction::known_context_window(&model.id))
    }

    /// Where to ask for `resolved`'s context window: the OpenAI-compatible
    /// server (llama.cpp, Ollama) of a provider of the settings or the
    /// command line whose window the settings do not give. The built-in
    /// providers' windows are the known table's (OpenAI's API says nothing
    /// of them).
    pub fn window_probe_url(&self, resolved: &ResolvedModel) -> Option<String> {
        let provider = &resolved.model.provider;
        let configured = self.provider(provider).and_then(|p| p.context_window);
        (configured.is_none()
            && builtin_provider(provider).is_none()
            && resolved.model.api == "openai-completions")
            .then(|| resolved.config.base_url.clone())
    }

    /// The model `provider` picks when no model is named: `defaultModel`
    /// when it is the `defaultProvider`, else its own `defaultModel`.
    pub fn default_model_of(&self, provider: &str) -> Option<String> {
        match &self.default_provider {
            Some(default) if default == provider => self.default_model.clone(),
            _ => None,
        }
        .or_else(|| self.provider(provider)?.default_model)
    }

    /// The provider whose model `name` is ([`Settings::default_model_of`]),
    /// `defaultProvider` first: `openai/gpt-oss-20b` of a vLLM or
    /// OpenRouter provider is that provider's model, not `gpt-oss-20b` of
    /// the built-in `openai`.
    pub fn provider_with_model(&self, name: &str) -> Option<String> {
        let default = self.default_provider.iter().cloned();
        default
            .chain(self.provider_names())
            .find(|provider| self.default_model_of(provider).as_deref() == Some(name))
    }

    /// Every provider's name: the built-ins, then those of `providers`, sorted.
    pub fn provider_names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN_PROVIDERS.iter().map(|&n| n.to_owned()).collect();
        names.extend(self.providers.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// The provider called `name`: a built-in amended by settings, or one
    /// defined in settings.
    pub fn provider(&self, name: &str) -> Option<ProviderSettings> {
        let mut provider = builtin_provider(name);
        if let Some(entry) = self.providers.get(name) {
            provider.get_or_insert_with(Default::default).merge(entry);
        }
        provider
    }
}

/// The providers that exist without settings.
const BUILTIN_PROVIDERS: [&str; 2] = ["openai", "anthropic"];

/// The built-in providers' settings.
/// The built-in providers. They set no context window: each model's comes
/// from the known table ([`crate::compaction::known_context_window`]:
/// gpt-5 has 400k, gpt-4.1 a million).
fn builtin_provider(name: &str) -> Option<ProviderSettings> {
    let (api, base_url, env, model) = match name {
        "openai" => (
            "openai-completions",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            "gpt-4o",
        ),
        "anthropic" => (
            "anthropic-messages",
            "https://api.anthropic.com",
            "ANTHROPIC_API_KEY",
            "claude-sonnet-4-5",
        ),
        _ => return None,
    };
    Some(ProviderSettings {
        api: Some(api.into()),
        base_url: Some(base_url.into()),
        api_key_env: Some(env.into()),
        api_key: None,
        default_model: Some(model.into()),
        images: Some(true),
        ..ProviderSettings::default()
    })
}

/// What the command line says about the model (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelFlags {
    /// `--provider NAME`.
    pub provider: Option<String>,
    /// `--model ID` (or `PROVIDER/ID`).
    pub model: Option<String>,
    /// `--base-url URL`.
    pub base_url: Option<String>,
    /// `--api-key KEY`.
    pub api_key: Option<String>,
    /// `--no-text-tool-calls`: never reinterpret text as a tool call.
    pub no_text_tool_calls: bool,
}

/// A model and how to reach it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedModel {
    /// The model, as the loop and the tools see it.
    pub model: Model,
    /// The endpoint and key.
    pub config: ProviderConfig,
}

/// Why no model could be chosen; each says in one line how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The provider needs a key and none was found.
    #[error(
        "no API key for provider \"{provider}\": set {env} or pass --api-key KEY (a provider in {settings} may name another variable with \"apiKeyEnv\")"
    )]
    MissingKey {
        /// The provider.
        provider: String,
        /// The variable it reads.
        env: String,
        /// The global settings file.
        settings: String,
    },
    /// `--provider` (or `defaultProvider`) names no known provider.
    #[error(
        "unknown provider \"{name}\": use one of {} (names are case-sensitive), pass --base-url URL for an OpenAI-compatible endpoint, or define it under \"providers\" in settings.json",
        known.join(", ")
    )]
    UnknownProvider {
        /// The name given.
        name: String,
        /// The providers there are: the built-ins and the settings' own.
        known: Vec<String>,
    },
    /// A provider without a model.
    #[error(
        "no model for provider \"{0}\": pass --model ID or set \"defaultModel\" in settings.json"
    )]
    NoModel(String),
    /// A provider entry without `baseUrl`.
    #[error(
        "provider \"{0}\" has no base URL: pass --base-url URL or set \"baseUrl\" in settings.json"
    )]
    NoBaseUrl(String),
    /// A model name with no model id in it (`""`, `fake/`, `/`, `:high`).
    #[error("no model id in \"{0}\": name a model as ID (gpt-4o) or PROVIDER/ID (openai/gpt-4o)")]
    NoModelId(String),
    /// A `:LEVEL` after a model name that is a thinking level in the wrong
    /// case (`gpt-5:HIGH`).
    #[error("\"{name}\": {error}")]
    BadLevel {
        /// The model name as given.
        name: String,
        /// The level's complaint, naming the valid levels.
        error: agent_ai::thinking::UnknownThinkingLevel,
    },
    /// A base URL no request can be sent to.
    #[error(
        "{origin} \"{url}\" is not an http(s) URL ({reason}): give the endpoint's whole URL, e.g. http://127.0.0.1:8080/v1"
    )]
    BadBaseUrl {
        /// Where it was given: `--base-url`, or a provider's `baseUrl`.
        origin: String,
        /// The URL as given.
        url: String,
        /// Why it is not one.
        reason: String,
    },
    /// An API this build does not speak.
    #[error(
        "provider \"{provider}\" uses API \"{api}\", which this build does not support: set \"api\" to one of {}",
        SUPPORTED_APIS.join(", ")
    )]
    UnsupportedApi {
        /// The provider.
        provider: String,
        /// Its API.
        api: String,
    },
}

/// `--model NAME:LEVEL` and each `--models` name (Pi's `pattern:thinking`): the name, and the
/// thinking level when the text after the last `:` names one. Other
/// colons belong to the name (`qwen2.5-coder:7b`), but a level in the wrong
/// case is refused as `--thinking HIGH` is: `--model gpt-5:HIGH` used to
/// send the model id `gpt-5:HIGH` quietly. The name is checked by
/// [`check_model_name`].
pub fn split_thinking(model: &str) -> Result<(&str, Option<ThinkingLevel>), ModelError> {
    let (name, level) = match model.rsplit_once(':') {
        Some((name, level)) => match level.parse() {
            Ok(parsed) => (name, Some(parsed)),
            Err(error)
                if ThinkingLevel::ALL
                    .iter()
                    .any(|known| known.as_str().eq_ignore_ascii_case(level)) =>
            {
                return Err(ModelError::BadLevel {
                    name: model.to_owned(),
                    error,
                });
            }
            Err(_) => (model, None),
        },
        None => (model, None),
    };
    if names_no_model(name) {
        return Err(ModelError::NoModelId(model.to_owned()));
    }
    Ok((name, level))
}

/// Refuses a model name that names no model ([`ModelError::NoModelId`]) or
/// ends in a level in the wrong case, as [`split_thinking`] does: `/model`
/// took `fake:HIGH`, `:high` and `fake:` as model ids that `--model` refused.
pub fn check_model_name(name: &str) -> Result<(), ModelError> {
    split_thinking(name).map(drop)
}

/// Whether `name` holds no model id: empty (`--model ""`, `:high`), with
/// nothing on one side of a `/` or `:` that ends or starts it, or with
/// spaces around it (sent as part of the id). `fake/` used to switch to the
/// model id `""`, which every request then sent and the session file
/// recorded for `--continue`; `/` became the id `/`, `" fake"` the id
/// `" fake"`.
fn names_no_model(name: &str) -> bool {
    name.trim().is_empty()
        || name.trim() != name
        || name.starts_with(['/', ':'])
        || name.ends_with(['/', ':'])
}

/// Refuses a base URL a request could not be sent to, when the model is
/// chosen rather than at the first request: `--base-url notaurl` used to
/// fail only then, as "builder error: relative URL without a base".
/// `origin` names where the URL was given.
fn check_base_url(url: &str, origin: impl FnOnce() -> String) -> Result<(), ModelError> {
    let reason = match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => return Ok(()),
        Ok(_) => "it does not start with http:// or https://".to_owned(),
        Err(error) => error.to_string(),
    };
    Err(ModelError::BadBaseUrl {
        origin: origin(),
        url: url.to_owned(),
        reason,
    })
}

/// Picks the model: `--provider` (else `defaultProvider`, else `openai`, or
/// `anthropic` when only `ANTHROPIC_API_KEY` is set), `--model` (else
/// `defaultModel`, else the provider's), `--base-url` and `--api-key`
/// overriding the provider's. Without `--provider`, `--model PROVIDER/ID`
/// also picks the provider, unless the whole name is a model the settings
/// give a provider ([`Settings::provider_with_model`]): that provider's.
/// `env` reads environment variables (tests pass their own).
pub fn resolve_model(
    flags: &ModelFlags,
    settings: &Settings,
    settings_path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedModel, ModelError> {
    let mut model_id = flags.model.clone();
    let mut provider_name = flags.provider.clone();
    if provider_name.is_none()
        && let Some(name) = flags.model.as_deref()
        && let Some(owner) = settings.provider_with_model(name)
    {
        // `--model openai/gpt-oss-20b` with a vLLM server's provider whose
        // model that is went to api.openai.com, with OPENAI_API_KEY.
        provider_name = Some(owner);
    } else if provider_name.is_none()
        && let Some((prefix, id)) = flags.model.as_deref().and_then(|m| m.split_once('/'))
        && settings.provider(prefix).is_some()
    {
        // The id is checked on its own too: `fake//m` and `fake/ fake`
        // passed as names and sent the ids `/m` and ` fake`.
        check_model_name(id)?;
        provider_name = Some(prefix.to_owned());
        model_id = Some(id.to_owned());
    }
    let explicit_provider = provider_name.is_some();
    let provider_name = provider_name
        .or_else(|| settings.default_provider.clone())
        .unwrap_or_else(|| {
            let has = |var: &str| env(var).is_some_and(|v| !v.is_empty());
            if !has("OPENAI_API_KEY") && has("ANTHROPIC_API_KEY") {
                "anthropic".into()
            } else {
                "openai".into()
            }
        });
    let provider = match settings.provider(&provider_name) {
        Some(provider) => provider,
        // An unknown name with a URL is an OpenAI-compatible endpoint.
        None if flags.base_url.is_some() => ProviderSettings {
            api: Some("openai-completions".into()),
            ..ProviderSettings::default()
        },
        None => {
            return Err(ModelError::UnknownProvider {
                name: provider_name,
                known: settings.provider_names(),
            });
        }
    };
    // `defaultModel` belongs to `defaultProvider`: it is not used for a provider
    // named on the command line.
    let default_model = if explicit_provider
        && settings.default_provider.as_deref() != Some(provider_name.as_str())
    {
        None
    } else {
        settings.default_model.clone()
    };
    let model_id = model_id
        .or(default_model)
        .or_else(|| provider.default_model.clone())
        .ok_or_else(|| ModelError::NoModel(provider_name.clone()))?;
    let base_url = flags
        .base_url
        .clone()
        .or_else(|| provider.base_url.clone())
        .ok_or_else(|| ModelError::NoBaseUrl(provider_name.clone()))?;
    check_base_url(&base_url, || match flags.base_url {
        Some(_) => "--base-url".to_owned(),
        None => format!("\"baseUrl\" of provider \"{provider_name}\" in settings.json"),
    })?;
    let api_key = match (&flags.api_key, &provider.api_key, &provider.api_key_env) {
        (Some(key), _, _) => Some(key.clone()),
        (None, Some(key), _) => Some(key.clone()),
        (None, None, Some(var)) => match env(var).filter(|v| !v.is_empty()) {
            Some(key) => Some(key),
            None => {
                return Err(ModelError::MissingKey {
                    provider: provider_name,
                    env: var.clone(),
                    settings: settings_path.display().to_string(),
                });
            }
        },
        (None, None, None) => None,
    };
    let api = provider
        .api
        .clone()
        .unwrap_or_else(|| "openai-completions".into());
    let mut model = Model::new(model_id, provider_name, api);
    model.supports_images = provider.images.unwrap_or(false);
    model.reasoning = provider
        .reasoning
        .unwrap_or_else(|| known_reasoning(&model.id));
    model.thinking_level_map = provider.thinking_level_map.clone().unwrap_or_default();
    let mut config = ProviderConfig::new(base_url, api_key);
    config.temperature = provider.temperature;
    // Left to the default, the answer's room is cut to what the window in
    // force leaves, request by request (`RecoverySettings::answer_limit`):
    // the window may be learnt only later, from the server.
    if let Some(max_tokens) = provider.max_tokens {
        config.max_tokens = max_tokens;
    }
    if let Some(budgets) = settings.thinking_budgets {
        config.thinking_budgets = budgets;
    }
    config.retry = PROVIDER_RETRY;
    if let Some(retries) = settings.retry.and_then(|r| r.provider.max_retries) {
        config.retry.max_retries = retries;
    }
    config.recover_text_tool_calls =
        !flags.no_text_tool_calls && provider.recover_text_tool_calls.unwrap_or(true);
    Ok(ResolvedModel { model, config })
}

/// The HTTP provider's own retries of a refused request, unless
/// `retry.provider.maxRetries` says how many: as the SDKs under Pi's
/// providers retry (2 retries, from 0.5 s). The session retries the failed
/// turn on top of them (`retry.*`: 3 more, after 2, 4 and 8 s), so the
/// provider's patient defaults for callers without a session (3 retries,
/// from 2 s) would multiply: 16 attempts over 70 s before a model server that
/// is down was reported, against 12 over 20 s with these.
const PROVIDER_RETRY: RetryPolicy = RetryPolicy {
    max_retries: 2,
    base_delay: Duration::from_millis(500),
    max_delay: Duration::from_secs(60),
};

/// The provider that serves `resolved` (the one place the binary builds one).
pub fn provider_for(resolved: &ResolvedModel) -> Result<Arc<dyn Provider>, ModelError> {
    for_api(&resolved.model.api, resolved.config.clone()).ok_or_else(|| {
        ModelError::UnsupportedApi {
            provider: resolved.model.provider.clone(),
            api: resolved.model.api.clone(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slip of a key read here (case, a letter or two) is found; keys
    /// read here, and other tools' keys (Pi's `theme`), are not slips.
    #[test]
    fn a_slip_of_a_key_read_here_is_found() {
        let slip = |keys: &[&'static str], meant| slip_of(keys.iter().copied(), meant);
        assert_eq!(slip(&["Permissions"], "permissions"), Some("Permissions"));
        assert_eq!(
            slip(&["theme", "permisions"], "permissions"),
            Some("permisions")
        );
        assert_eq!(
            slip(&["defaultProvdier"], "defaultProvider"),
            Some("defaultProvdier")
        );
        assert_eq!(slip(&["hook"], "hooks"), Some("hook"));
        assert_eq!(slip(&["Hooks"], "hooks"), Some("Hooks"));
        // Two letters off a short name is another word.
        assert_eq!(slip(&["books"], "hooks"), Some("books"));
        assert_eq!(slip(&["boots"], "hooks"), None);
        assert_eq!(slip(&["theme", "images", "quietStartup"], "hooks"), None);
        // A key read here is no slip of another one read here.
        assert_eq!(slip(&["remote", "retry"], "remote"), None);
        assert_eq!(slip(&["permissions"], "permissions"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    fn env_with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn resolve(
        flags: ModelFlags,
        settings: &Settings,
        vars: &[(&str, &str)],
    ) -> Result<ResolvedModel, ModelError> {
        resolve_model(
            &flags,
            settings,
            Path::new("/agent/settings.json"),
            &env_with(vars),
        )
    }

    /// `flags` and `vars` resolved with no settings files.
    fn resolve_bare(flags: ModelFlags, vars: &[(&str, &str)]) -> Result<ResolvedModel, ModelError> {
        resolve(flags, &Settings::default(), vars)
    }

    /// Flags naming only `provider`.
    fn provider_flag(provider: &str) -> ModelFlags {
        ModelFlags {
            provider: Some(provider.into()),
            ..ModelFlags::default()
        }
    }

    /// Flags naming the provider, the model and the base URL.
    fn endpoint_flags(provider: &str, model: &str, base_url: &str) -> ModelFlags {
        ModelFlags {
            model: Some(model.into()),
            base_url: Some(base_url.into()),
            ..provider_flag(provider)
        }
    }

    fn local_settings() -> Settings {
        serde_json::from_str(
            r#"{"defaultProvider":"local","defaultModel":"qwen",
                "providers":{"local":{"api":"openai-completions","baseUrl":"http://127.0.0.1:8080/v1"}}}"#,
        )
        .unwrap()
    }

    /// The config `resolve_model` builds for a provider with no settings.
    fn config(base_url: &str, api_key: Option<String>) -> ProviderConfig {
        ProviderConfig {
            retry: PROVIDER_RETRY,
            ..ProviderConfig::new(base_url, api_key)
        }
    }

    #[test]
    fn the_providers_own_retries_are_few_and_quick_unless_settings_say_how_many() {
        let resolved = resolve(ModelFlags::default(), &local_settings(), &[]).unwrap();
        assert_eq!(resolved.config.retry.max_retries, 2);
        assert_eq!(resolved.config.retry.base_delay, Duration::from_millis(500));
        let mut settings = local_settings();
        settings.merge(serde_json::from_str(r#"{"retry":{"provider":{"maxRetries":5}}}"#).unwrap());
        let resolved = resolve(ModelFlags::default(), &settings, &[]).unwrap();
        assert_eq!(resolved.config.retry.max_retries, 5);
        assert_eq!(resolved.config.retry.base_delay, Duration::from_millis(500));
    }

    #[test]
    fn a_provider_sets_temperature_max_tokens_and_text_tool_call_recovery() {
        let settings: Settings = serde_json::from_str(
            r#"{"defaultProvider":"local","defaultModel":"qwen","providers":{"local":
                {"baseUrl":"http://127.0.0.1:8080/v1","temperature":0,"maxTokens":1024,
                 "recoverTextToolCalls":false}}}"#,
        )
        .unwrap();
        let resolved = resolve(ModelFlags::default(), &settings, &[]).unwrap();
        assert_eq!(resolved.config.temperature, Some(0.0));
        assert_eq!(resolved.config.max_tokens, 1024);
        assert!(!resolved.config.recover_text_tool_calls);

        let resolved = resolve(ModelFlags::default(), &local_settings(), &[]).unwrap();
        assert!(resolved.config.recover_text_tool_calls, "on by default");
        assert_eq!(resolved.config.max_tokens, 8192, "the default");
        // A window that is given leaves the prompt room: a request asks for
        // a quarter of it at most, unless maxTokens says otherwise.
        let windowed = |extra: &str| -> Settings {
            serde_json::from_str(&format!(
                r#"{{"defaultProvider":"local","defaultModel":"qwen","providers":{{"local":
                    {{"baseUrl":"http://127.0.0.1:8080/v1","contextWindow":8192{extra}}}}}}}"#
            ))
            .unwrap()
        };
        let resolved = resolve(ModelFlags::default(), &windowed(""), &[]).unwrap();
        let limit = windowed("").recovery("local").answer_limit(&resolved.model);
        assert_eq!((resolved.config.max_tokens, limit), (8192, 2048));
        let explicit = windowed(r#","maxTokens":6000"#);
        let resolved = resolve(ModelFlags::default(), &explicit, &[]).unwrap();
        let limit = explicit.recovery("local").answer_limit(&resolved.model);
        assert_eq!((resolved.config.max_tokens, limit), (6000, 6000));
        let flags = ModelFlags {
            no_text_tool_calls: true,
            ..ModelFlags::default()
        };
        let resolved = resolve(flags, &local_settings(), &[]).unwrap();
        assert!(
            !resolved.config.recover_text_tool_calls,
            "off with the flag"
        );
    }

    #[test]
    fn openai_is_the_default_with_its_key_from_the_environment() {
        let resolved = resolve_bare(ModelFlags::default(), &[("OPENAI_API_KEY", "sk-1")]).unwrap();
        let mut model = Model::new("gpt-4o", "openai", "openai-completions");
        model.supports_images = true;
        assert_eq!(
            resolved,
            ResolvedModel {
                model,
                config: config("https://api.openai.com/v1", Some("sk-1".into())),
            }
        );
    }

    #[test]
    fn anthropic_is_picked_when_only_its_key_is_set() {
        let resolved = resolve_bare(ModelFlags::default(), &[("ANTHROPIC_API_KEY", "k")]).unwrap();
        assert_eq!(
            (resolved.model.provider.as_str(), resolved.model.id.as_str()),
            ("anthropic", "claude-sonnet-4-5")
        );
    }

    #[test]
    fn a_missing_key_says_how_to_set_one() {
        let error = resolve_bare(provider_flag("anthropic"), &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no API key for provider \"anthropic\": set ANTHROPIC_API_KEY or pass --api-key KEY (a provider in /agent/settings.json may name another variable with \"apiKeyEnv\")"
        );
    }

    #[test]
    fn flags_override_the_provider_settings() {
        let resolved = resolve_bare(
            ModelFlags {
                api_key: Some("flag-key".into()),
                ..endpoint_flags("openai", "gpt-4o-mini", "http://proxy/v1")
            },
            &[("OPENAI_API_KEY", "env-key")],
        )
        .unwrap();
        assert_eq!(resolved.model.id, "gpt-4o-mini");
        assert_eq!(
            resolved.config,
            config("http://proxy/v1", Some("flag-key".into()))
        );
    }

    #[test]
    fn a_local_provider_from_settings_needs_no_key() {
        let resolved = resolve(ModelFlags::default(), &local_settings(), &[]).unwrap();
        assert_eq!(
            resolved,
            ResolvedModel {
                model: Model::new("qwen", "local", "openai-completions"),
                config: config("http://127.0.0.1:8080/v1", None),
            }
        );
    }

    #[test]
    fn an_unknown_provider_with_a_base_url_is_openai_compatible() {
        let resolved =
            resolve_bare(endpoint_flags("llama", "m", "http://localhost:9/v1"), &[]).unwrap();
        assert_eq!(
            resolved.model,
            Model::new("m", "llama", "openai-completions")
        );
    }

    #[test]
    fn an_unknown_provider_without_a_url_is_an_error() {
        let error = resolve_bare(provider_flag("nope"), &[]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown provider \"nope\": use one of anthropic, openai (names are case-sensitive), pass --base-url URL for an OpenAI-compatible endpoint, or define it under \"providers\" in settings.json"
        );
    }

    #[test]
    fn provider_prefix_in_the_model_picks_the_provider() {
        let resolved = resolve_bare(
            ModelFlags {
                model: Some("anthropic/claude-haiku-4-5".into()),
                ..ModelFlags::default()
            },
            &[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "o")],
        )
        .unwrap();
        assert_eq!(
            (resolved.model.provider.as_str(), resolved.model.id.as_str()),
            ("anthropic", "claude-haiku-4-5")
        );
    }

    /// `--model openai/gpt-oss-20b`, the model of the default provider (a
    /// vLLM server), switched to the built-in `openai`: the prompt went to
    /// api.openai.com with OPENAI_API_KEY.
    #[test]
    fn a_model_a_provider_is_configured_with_wins_over_the_provider_prefix() {
        let mut settings = local_settings();
        settings.default_model = Some("openai/gpt-oss-20b".into());
        settings.merge(
            serde_json::from_str(
                r#"{"providers":{"router":{"baseUrl":"http://router/v1","defaultModel":"anthropic/claude-x"}}}"#,
            )
            .unwrap(),
        );
        let model = |name: &str| {
            let flags = ModelFlags {
                model: Some(name.into()),
                ..ModelFlags::default()
            };
            let resolved = resolve(flags, &settings, &[("OPENAI_API_KEY", "o")]).unwrap();
            (resolved.model.provider, resolved.model.id)
        };
        let pair = |provider: &str, id: &str| (provider.to_owned(), id.to_owned());
        assert_eq!(
            model("openai/gpt-oss-20b"),
            pair("local", "openai/gpt-oss-20b")
        );
        assert_eq!(
            model("anthropic/claude-x"),
            pair("router", "anthropic/claude-x")
        );
        // A model no provider is configured with: the prefix names one.
        assert_eq!(model("openai/gpt-4o-mini"), pair("openai", "gpt-4o-mini"));
        // `--provider` decides by itself.
        let flags = ModelFlags {
            model: Some("openai/gpt-oss-20b".into()),
            ..provider_flag("openai")
        };
        let resolved = resolve(flags, &settings, &[("OPENAI_API_KEY", "o")]).unwrap();
        assert_eq!(resolved.model.id, "openai/gpt-oss-20b");
        assert_eq!(resolved.config.base_url, "https://api.openai.com/v1");
    }

    #[test]
    fn project_settings_amend_global_ones_per_provider() {
        let mut settings = local_settings();
        let project: Settings = serde_json::from_str(
            r#"{"defaultModel":"coder","providers":{"local":{"apiKeyEnv":"LOCAL_KEY"}}}"#,
        )
        .unwrap();
        settings.merge(project);
        let resolved = resolve(ModelFlags::default(), &settings, &[("LOCAL_KEY", "lk")]).unwrap();
        assert_eq!(
            resolved,
            ResolvedModel {
                model: Model::new("coder", "local", "openai-completions"),
                config: config("http://127.0.0.1:8080/v1", Some("lk".into())),
            }
        );
    }

    #[test]
    fn context_windows_come_from_the_settings_else_the_known_table() {
        let mut settings = local_settings();
        let windows = |s: &Settings| {
            s.provider_names()
                .iter()
                .map(|n| (n.clone(), s.provider(n).unwrap().context_window))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            windows(&settings),
            [
                ("anthropic".to_owned(), None),
                ("local".to_owned(), None),
                ("openai".to_owned(), None),
            ]
        );
        // gpt-5's own window, not a provider-wide 128k.
        let gpt5 = Model::new("gpt-5", "openai", "openai-completions");
        assert_eq!(settings.context_window(&gpt5), Some(400_000));
        settings.merge(
            serde_json::from_str(
                r#"{"providers":{"local":{"contextWindow":32768},"openai":{"contextWindow":1000000}}}"#,
            )
            .unwrap(),
        );
        assert_eq!(
            windows(&settings),
            [
                ("anthropic".to_owned(), None),
                ("local".to_owned(), Some(32_768)),
                ("openai".to_owned(), Some(1_000_000)),
            ]
        );
        assert_eq!(settings.context_window(&gpt5), Some(1_000_000));
    }

    /// The settings of a global file holding `global` and a project's
    /// holding `project`.
    fn load_files(global: &str, project: &str, trusted: bool) -> Settings {
        try_load_files(global, project, trusted).unwrap()
    }

    /// [`Settings::load`] of a global file holding `global` and a
    /// project's holding `project`.
    fn try_load_files(
        global: &str,
        project: &str,
        trusted: bool,
    ) -> Result<Settings, SettingsError> {
        let dir = tempfile::tempdir().unwrap();
        let (agent, cwd) = (dir.path().join("agent"), dir.path().join("proj"));
        for (folder, text) in [
            (agent.clone(), global),
            (cwd.join(PROJECT_CONFIG_DIR), project),
        ] {
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join(SETTINGS_FILE), text).unwrap();
        }
        Settings::load(&agent, &cwd, trusted)
    }

    /// `"defaultModel": 5` in an untrusted project stopped the run with
    /// "invalid type: integer `5`, expected a string", in a key it cannot
    /// set; trusted, the key is used, so the error stays.
    #[test]
    fn keys_a_project_cannot_set_are_ignored_whatever_they_hold() {
        let project = r#"{"defaultModel":5,"defaultProvider":["x"],"providers":7,"remote":"x","skills":1,"retry":{"enabled":false}}"#;
        let settings = load_files(r#"{"defaultModel":"qwen"}"#, project, false);
        assert_eq!(settings.default_model.as_deref(), Some("qwen"));
        assert_eq!(settings.default_provider, None);
        assert_eq!(settings.retry.map(|r| r.enabled), Some(false));
        let error = try_load_files("{}", project, true).unwrap_err();
        assert!(error.reason.contains("invalid type"), "{error}");
        // The keys an untrusted project may set are still checked.
        let error = try_load_files("{}", r#"{"retry":{"enabled":"no"}}"#, false).unwrap_err();
        assert!(error.reason.contains("invalid type"), "{error}");
    }

    /// A project file that is not JSON may hold deny rules, which apply
    /// trusted or not: the run stops, saying why.
    #[test]
    fn an_unreadable_project_file_stops_the_run_even_untrusted() {
        let error = try_load_files("{}", "{oops", false).unwrap_err();
        assert!(error.path.ends_with(".coding-agent/settings.json"));
        assert!(
            error.reason.ends_with(
                "(a project's settings that cannot be read may hold deny rules, so the agent does not start without them: fix the file or remove it)"
            ),
            "{error}"
        );
    }

    /// A file that starts with a byte-order mark is read; one that holds
    /// an array says that settings are an object, not "invalid length 0,
    /// expected struct Settings with 12 elements".
    #[test]
    fn a_byte_order_mark_is_read_and_a_file_of_no_object_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SETTINGS_FILE);
        std::fs::write(&path, "\u{feff}{\"defaultModel\": \"m\"}").unwrap();
        let settings: Settings = read_part(&path).unwrap();
        assert_eq!(settings.default_model.as_deref(), Some("m"));
        std::fs::write(&path, "\u{feff}  \n").unwrap();
        assert_eq!(read_part::<Settings>(&path).unwrap(), Settings::default());
        for text in ["[]", " 5", "\"x\""] {
            std::fs::write(&path, text).unwrap();
            let error = read_part::<Settings>(&path).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "{}: it holds no JSON object: the settings are one object, {{ \"key\": value, ... }}",
                    path.display()
                )
            );
        }
    }

    /// A window of 0 compacted twice before every prompt, a `maxTokens` of
    /// 0 sent every request with `max_tokens: 0`, and a reserve of 0 every
    /// summary request.
    #[test]
    fn sizes_no_model_has_are_left_out() {
        let settings = load_files(
            r#"{"providers":{"local":{"contextWindow":0,"maxTokens":0},"big":{"contextWindow":8192,"maxTokens":100}},"compaction":{"reserveTokens":0,"keepRecentTokens":500}}"#,
            "{}",
            true,
        );
        let sizes: Vec<(Option<u64>, Option<u32>)> = ["local", "big"]
            .map(|name| {
                let provider = settings.provider(name).unwrap();
                (provider.context_window, provider.max_tokens)
            })
            .into();
        assert_eq!(sizes, [(None, None), (Some(8192), Some(100))]);
        let compaction = settings.compaction.unwrap();
        assert_eq!(
            (compaction.reserve_tokens, compaction.keep_recent_tokens),
            (CompactionSettings::default().reserve_tokens, 500)
        );
    }

    #[test]
    fn settings_files_load_global_then_project() {
        let settings = load_files(
            r#"{"defaultProvider":"openai","defaultModel":"gpt-4o","theme":"dark"}"#,
            r#"{"defaultModel":"gpt-4.1"}"#,
            true,
        );
        assert_eq!(
            (
                settings.default_provider.as_deref(),
                settings.default_model.as_deref()
            ),
            (Some("openai"), Some("gpt-4.1"))
        );
    }

    #[test]
    fn a_projects_nested_objects_amend_the_global_ones_key_by_key() {
        let settings = load_files(
            r#"{"retry":{"enabled":false,"provider":{"maxRetries":0}},"compaction":{"reserveTokens":1000},"thinkingBudgets":{"low":100}}"#,
            r#"{"retry":{"baseDelayMs":100},"compaction":{"keepRecentTokens":500},"thinkingBudgets":{"high":900}}"#,
            false,
        );
        let retry = settings.retry.unwrap();
        assert_eq!(
            (
                retry.enabled,
                retry.base_delay_ms,
                retry.provider.max_retries
            ),
            (false, 100, Some(0))
        );
        let compaction = settings.compaction.unwrap();
        assert_eq!(
            (compaction.reserve_tokens, compaction.keep_recent_tokens),
            (1000, 500)
        );
        let budgets = settings.thinking_budgets.unwrap();
        assert_eq!(
            (budgets.low, budgets.high, budgets.medium),
            (100, 900, 8192)
        );
    }

    /// The agent directory seen as a project's (started in home), or a
    /// project file linked to the global one, is no project layer; another
    /// folder's is.
    #[test]
    fn the_global_settings_file_is_no_projects() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let agent = home.join(PROJECT_CONFIG_DIR);
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(agent.join(SETTINGS_FILE), "{}").unwrap();
        assert_eq!(project_config_dir(&agent, home), None);
        assert_eq!(project_settings_file(&agent, home), None);
        let linked = home.join("linked");
        std::fs::create_dir_all(linked.join(PROJECT_CONFIG_DIR)).unwrap();
        let link = linked.join(PROJECT_CONFIG_DIR).join(SETTINGS_FILE);
        std::os::unix::fs::symlink(agent.join(SETTINGS_FILE), &link).unwrap();
        assert_eq!(project_settings_file(&agent, &linked), None);
        let other = home.join("other");
        assert_eq!(
            project_settings_file(&agent, &other),
            Some(other.join(PROJECT_CONFIG_DIR).join(SETTINGS_FILE))
        );
    }

    /// With `HOME` unset or empty the agent directory was `./.coding-agent`:
    /// the repository's own settings, read as the user's.
    #[test]
    fn the_agent_directory_is_never_relative() {
        let home = Some(PathBuf::from("/home/me"));
        assert_eq!(
            agent_dir_in(None, home.clone()),
            Path::new("/home/me/.coding-agent")
        );
        assert_eq!(
            agent_dir_in(Some("".into()), home),
            Path::new("/home/me/.coding-agent")
        );
        assert_eq!(
            agent_dir_in(Some("/elsewhere".into()), None),
            Path::new("/elsewhere")
        );
        assert_eq!(agent_dir_in(None, None), Path::new("/.coding-agent"));
    }

    #[test]
    fn a_broken_settings_file_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SETTINGS_FILE), "{oops").unwrap();
        let error = Settings::load(dir.path(), dir.path(), true).unwrap_err();
        assert_eq!(error.path, dir.path().join(SETTINGS_FILE));
        // One just created, still empty, holds nothing yet.
        std::fs::write(dir.path().join(SETTINGS_FILE), "\n").unwrap();
        assert_eq!(
            Settings::load(dir.path(), dir.path(), true).unwrap(),
            Settings::default()
        );
    }

    #[test]
    fn an_unknown_api_names_the_ones_this_build_speaks() {
        let resolved = ResolvedModel {
            model: Model::new("m", "local", "openai"),
            config: ProviderConfig::new("http://127.0.0.1:9/v1", None),
        };
        let Err(error) = provider_for(&resolved) else {
            panic!("no provider speaks \"openai\"");
        };
        assert_eq!(
            error.to_string(),
            "provider \"local\" uses API \"openai\", which this build does not support: set \"api\" to one of openai-completions, anthropic-messages"
        );
    }
}
