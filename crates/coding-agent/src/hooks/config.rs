//! The `"hooks"` key of `settings.json`, in Claude Code's shape, and its
//! compiled form.
//!
//! ```json
//! "hooks": {
//!   "PreToolUse": [
//!     {"matcher": "Bash|edit", "hooks": [{"type": "command", "command": "~/bin/check.sh",
//!                                         "timeout": 30, "onError": "block"}]}
//!   ]
//! }
//! ```
//!
//! Events this agent does not run (Claude Code has ~20) and handler types
//! other than `command`, `http`, `prompt` and `agent` are skipped with a
//! warning, so a settings file shared with Claude Code still loads. A matcher
//! that is not a valid regex is an error, and so is a handler marked
//! `"onError": "block"` that cannot run (under such an event too): skipping
//! it would silently turn a security hook off.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::io::ToolCallInput;
use super::matcher::{Matcher, MatcherError};
use crate::guard::policy::{Mode, Places, Policy, RuleError, RuleTexts, SandboxFacts};

/// Claude Code's default timeout of a command hook.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The default timeout of a SessionEnd hook: the user waits for it to quit.
pub const SESSION_END_TIMEOUT: Duration = Duration::from_secs(10);

/// Claude Code's default timeout of a `prompt` hook (a model's verdict).
pub const PROMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// Claude Code's default timeout of an `agent` hook (a model that reads
/// files before its verdict).
pub const AGENT_TIMEOUT: Duration = Duration::from_secs(60);

/// The events a hook can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum HookEvent {
    /// Before a tool runs (after the permission policy's deny rules): may
    /// deny, ask, allow or change the arguments.
    PreToolUse,
    /// When a call would wait for the user's approval: may allow or deny it
    /// in the user's place.
    PermissionRequest,
    /// After a tool ran and did not fail: may add to or replace what the
    /// model reads.
    PostToolUse,
    /// After a tool failed: may add to what the model reads.
    PostToolUseFailure,
    /// When a prompt is submitted: may block it or add context.
    UserPromptSubmit,
    /// When the agent would stop: may make it go on.
    Stop,
    /// When a session starts, is cleared or was compacted: may add context.
    SessionStart,
    /// Before the conversation is compacted: may refuse the compaction.
    PreCompact,
    /// When the session ends (quit, `/new`, the end of a run): for cleanup;
    /// what it says is only logged.
    SessionEnd,
    /// When the agent waits for the user (a call needs approval): for a
    /// desktop notification; what it says is only logged.
    Notification,
}

impl HookEvent {
    /// Every event, in the order the settings document them.
    pub const ALL: [HookEvent; 10] = [
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::PreCompact,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// The event's name in settings and in the hook's input.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    /// The timeout of a hook of this event that sets none.
    pub fn default_timeout(self) -> Duration {
        match self {
            HookEvent::SessionEnd => SESSION_END_TIMEOUT,
            _ => DEFAULT_TIMEOUT,
        }
    }

    /// False for the events that only report (SessionStart, SessionEnd,
    /// Notification): nothing waits on them to refuse it, so what would
    /// block them is a warning (see `hooks/outcome.rs`).
    pub(super) fn can_block(self) -> bool {
        !matches!(
            self,
            HookEvent::SessionStart | HookEvent::SessionEnd | HookEvent::Notification
        )
    }

    /// True for the events about one tool call, the only ones a handler's
    /// `if` applies to.
    fn is_about_a_call(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PermissionRequest
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
        )
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    /// The event `name` differs from only in case (`PreTooluse`): the one
    /// a settings file most likely meant.
    fn named_like(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|event| event.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a hook's failure (a crash, another exit code, a timeout, garbled
/// JSON) does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Claude Code's behaviour: a warning, and the call goes on.
    #[default]
    Warn,
    /// The failure counts as a block (exit code 2), with the failure as the
    /// reason: for a security hook that must not fail open.
    Block,
}

/// `"hooks"` as written in a settings file: event name -> matcher groups.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct HooksSettings(pub BTreeMap<String, Vec<MatcherGroupSettings>>);

/// One `{"matcher": ..., "hooks": [...]}` entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct MatcherGroupSettings {
    /// Tool names (`bash`, `Bash`, `Edit|Write`) or a regex; absent, `""` or
    /// `*` match every tool. SessionStart matches its source
    /// (`startup|resume|clear|compact`), PreCompact its trigger
    /// (`manual|auto`), SessionEnd its reason, Notification its type;
    /// UserPromptSubmit and Stop ignore it.
    #[serde(default)]
    pub matcher: Option<String>,
    /// The handlers to run when the matcher matches.
    #[serde(default)]
    pub hooks: Vec<HandlerSettings>,
}

/// One handler: `{"type": "command", "command": "...", "timeout": 60}`,
/// `{"type": "http", "url": "...", "headers": {...}, "allowedEnvVars": [...]}`
/// or `{"type": "prompt", "prompt": "... $ARGUMENTS ...", "model": "..."}`;
/// every field may be left out.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HandlerSettings {
    /// `command` (the default), `http` or `prompt`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The shell command (`sh -c`).
    pub command: Option<String>,
    /// `http`: where the event's JSON is POSTed.
    pub url: Option<String>,
    /// `http`: headers sent with it; `$VAR` and `${VAR}` in a value are
    /// filled from the environment for the variables `allowedEnvVars`
    /// lists, and are empty for any other.
    pub headers: BTreeMap<String, String>,
    /// `http`: the environment variables headers may use.
    pub allowed_env_vars: Vec<String>,
    /// `prompt`: what the model is asked; `$ARGUMENTS` stands for the
    /// event's JSON (appended when the prompt does not name it).
    pub prompt: Option<String>,
    /// `prompt`: the model asked, by id on the session's provider (default:
    /// the session's model).
    pub model: Option<String>,
    /// Seconds before the hook's process group is killed (default 600).
    pub timeout: Option<f64>,
    /// What a failure does (default `warn`, as Claude Code).
    pub on_error: OnError,
    /// Claude Code's `if`: a permission rule (`Bash(rm *)`, `edit(src/**)`);
    /// the hook runs only for calls it matches (tool events only).
    #[serde(rename = "if")]
    pub condition: Option<String>,
}

impl HooksSettings {
    /// Adds `other`'s groups after this one's (hooks from every scope run).
    pub fn extend(&mut self, other: HooksSettings) {
        for (event, groups) in other.0 {
            self.0.entry(event).or_default().extend(groups);
        }
    }

    /// The hooks to run, and a warning for each entry skipped; `places`
    /// say what the paths of an `if` rule are relative to, as the
    /// permission policy's.
    pub fn compile(&self, places: &Places) -> Result<(HookConfig, Vec<String>), HooksError> {
        let mut config = HookConfig::default();
        let mut warnings = Vec::new();
        for (name, groups) in &self.0 {
            let Some(event) = HookEvent::from_name(name) else {
                let unsupported = match HookEvent::named_like(name) {
                    Some(meant) => {
                        format!("hooks: event \"{name}\" is not supported (did you mean {meant}?)")
                    }
                    None => format!("hooks: event \"{name}\" is not supported"),
                };
                // A guard under a misspelled event (`PreTooluse`) never
                // ran, with only this warning at the start.
                let mut handlers = groups.iter().flat_map(|group| &group.hooks);
                if handlers.any(|handler| handler.on_error == OnError::Block) {
                    return Err(HooksError::Guard(format!(
                        "{unsupported}, so a hook under it cannot run"
                    )));
                }
                warnings.push(format!("{unsupported}; skipped"));
                continue;
            };
            for group in groups {
                let matcher = Matcher::new(group.matcher.as_deref().unwrap_or_default())?;
                let mut handlers = Vec::new();
                for handler in &group.hooks {
                    match handler.compile(event) {
                        Ok(mut compiled) => {
                            compiled.condition =
                                handler.condition(event, &compiled, places, &mut warnings)?;
                            handlers.push(compiled);
                        }
                        // A guard that cannot run fails closed: skipping
                        // it would let every call it guards through.
                        Err(broken) if handler.on_error == OnError::Block => {
                            let broken = broken.trim_end_matches("; skipped").to_owned();
                            return Err(HooksError::Guard(broken));
                        }
                        Err(warning) => warnings.push(warning),
                    }
                }
                if !handlers.is_empty() {
                    config.groups.push(Group {
                        event,
                        matcher,
                        handlers,
                    });
                }
            }
        }
        Ok((config, warnings))
    }
}

/// Hook settings the agent does not start with.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// A matcher that is not a valid regex: skipping it would silently turn
    /// a security hook off.
    #[error(transparent)]
    Matcher(#[from] MatcherError),
    /// A handler marked `onError: "block"` that cannot run (no command, an
    /// unknown type, a bad timeout, an unsupported event), for the same
    /// reason.
    #[error("{0}; it is marked \"onError\": \"block\", so the agent does not start without it")]
    Guard(String),
    /// An `if` that is not a permission rule: skipping it would run the hook
    /// on every call, and ignoring the hook would turn a guard off.
    #[error("hooks: {event} hook \"{hook}\": \"if\": {error}")]
    Condition {
        /// The event.
        event: HookEvent,
        /// The hook's command, URL or prompt.
        hook: String,
        /// Why the rule cannot be parsed.
        error: RuleError,
    },
}

impl HandlerSettings {
    fn compile(&self, event: HookEvent) -> Result<Handler, String> {
        let given = |value: &Option<String>, what: &str| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| format!("hooks: {event} {what}; skipped"))
        };
        let action = match self.kind.as_deref().unwrap_or("command") {
            "command" => {
                Action::Command(given(&self.command, "command handler without a command")?)
            }
            "http" => Action::Http(HttpHook {
                url: given(&self.url, "http handler without a url")?,
                headers: self.headers.clone(),
                allowed_env_vars: self.allowed_env_vars.clone(),
            }),
            "prompt" => Action::Prompt(self.prompt_hook(event, "prompt")?),
            "agent" => Action::Agent(self.prompt_hook(event, "agent")?),
            kind => {
                return Err(format!(
                    "hooks: {event} handler of type \"{kind}\" is not supported (only \"command\", \"http\", \"prompt\" and \"agent\"); skipped"
                ));
            }
        };
        let command = action.name();
        let timeout = match self.timeout.map(|s| (s, Duration::try_from_secs_f64(s))) {
            None if matches!(action, Action::Prompt(_)) => {
                event.default_timeout().min(PROMPT_TIMEOUT)
            }
            None if matches!(action, Action::Agent(_)) => {
                event.default_timeout().min(AGENT_TIMEOUT)
            }
            None => event.default_timeout(),
            Some((_, Ok(timeout))) if !timeout.is_zero() => timeout,
            Some((seconds, _)) if seconds > 0.0 => {
                return Err(format!(
                    "hooks: {event} hook \"{command}\" has timeout {seconds:e}, too large to wait for; leave it out for the event's default; skipped"
                ));
            }
            Some((seconds, _)) => {
                return Err(format!(
                    "hooks: {event} hook \"{command}\" has timeout {seconds}; a timeout is a positive number of seconds; skipped"
                ));
            }
        };
        Ok(Handler {
            action,
            timeout,
            on_error: self.on_error,
            condition: None,
        })
    }

    /// The handler's `if` as a [`Condition`]; `None` without one, and on an
    /// event about no call, where it is ignored with a warning.
    fn condition(
        &self,
        event: HookEvent,
        handler: &Handler,
        places: &Places,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Condition>, HooksError> {
        let Some(text) = self.condition.as_deref() else {
            return Ok(None);
        };
        if !event.is_about_a_call() {
            warnings.push(format!(
                "hooks: {event} hook \"{}\" has \"if\", which only tool events read; it is ignored",
                handler.name()
            ));
            return Ok(None);
        }
        Condition::new(text, places)
            .map(Some)
            .map_err(|error| HooksError::Condition {
                event,
                hook: handler.name().to_owned(),
                error,
            })
    }

    /// A `prompt` or `agent` handler's prompt and model.
    fn prompt_hook(&self, event: HookEvent, kind: &str) -> Result<PromptHook, String> {
        let prompt = self.prompt.as_deref().map(str::trim).unwrap_or_default();
        if prompt.is_empty() {
            return Err(format!(
                "hooks: {event} {kind} handler without a prompt; skipped"
            ));
        }
        Ok(PromptHook {
            prompt: prompt.to_owned(),
            model: self.model.clone().filter(|model| !model.trim().is_empty()),
        })
    }
}

/// One hook to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Handler {
    /// What it does.
    pub action: Action,
    /// When its process group is killed, or its request given up.
    pub timeout: Duration,
    /// What its failure does.
    pub on_error: OnError,
    /// Its `if`: the calls it runs for (every one without).
    pub condition: Option<Condition>,
}

/// A handler's `if`: a permission rule in the policy's own syntax (Claude
/// Code's tool names accepted), judged by the policy itself, so a call
/// matches it exactly when the same rule in `permissions.deny` would deny
/// it (every part of a command line, paths as the tools resolve them).
#[derive(Debug, Clone)]
pub struct Condition {
    /// The rule as written (trimmed), as the policy names a rule that decided.
    text: String,
    /// A policy whose one rule is this.
    policy: Arc<Policy>,
}

impl PartialEq for Condition {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Condition {
    /// Parses `text` as a permission rule; `places` resolve its paths.
    fn new(text: &str, places: &Places) -> Result<Self, RuleError> {
        let rules = RuleTexts {
            deny: vec![text.to_owned()],
            ..RuleTexts::default()
        };
        let policy = Policy::new(
            Mode::Default,
            SandboxFacts::default(),
            places.clone(),
            &rules,
        )?;
        Ok(Self {
            text: text.trim().to_owned(),
            policy: Arc::new(policy),
        })
    }

    /// True when the rule matches `call`. (A call the built-in lists deny
    /// never reaches the hooks, so a verdict without this rule is a miss.)
    fn matches(&self, call: &ToolCallInput) -> bool {
        let verdict = self.policy.check(&call.tool_name, &call.tool_input);
        verdict.rule.as_deref() == Some(self.text.as_str())
    }
}

impl Handler {
    /// The command or URL, as messages about the hook name it.
    pub fn name(&self) -> &str {
        self.action.name()
    }
}

/// What a hook does with the event's JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `sh -c` this command, the JSON on its stdin.
    Command(String),
    /// POST it to a URL.
    Http(HttpHook),
    /// Ask a model for a verdict on it.
    Prompt(PromptHook),
    /// Ask a model that may read the project's files first (read, grep,
    /// find, ls) for a verdict on it.
    Agent(PromptHook),
}

impl Action {
    /// The command or URL.
    pub fn name(&self) -> &str {
        match self {
            Action::Command(command) => command,
            Action::Http(hook) => &hook.url,
            Action::Prompt(hook) | Action::Agent(hook) => &hook.prompt,
        }
    }
}

/// A `prompt` or `agent` hook: a model reads the event (an agent hook's
/// also the project's files) and answers whether it may go on (see
/// `hooks/judge.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptHook {
    /// What the model is asked (`$ARGUMENTS`: the event's JSON).
    pub prompt: String,
    /// A model id on the session's provider, instead of the session's model.
    pub model: Option<String>,
}

/// An `http` hook: where it POSTs the event's JSON and with what headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpHook {
    /// The URL.
    pub url: String,
    /// The headers, as written (`$VAR` not yet filled).
    pub headers: BTreeMap<String, String>,
    /// The environment variables the headers may use.
    pub allowed_env_vars: Vec<String>,
}

#[derive(Debug, Clone)]
struct Group {
    event: HookEvent,
    matcher: Matcher,
    handlers: Vec<Handler>,
}

/// The compiled hooks of every scope.
#[derive(Debug, Clone, Default)]
pub struct HookConfig {
    groups: Vec<Group>,
}

impl HookConfig {
    /// Adds `other`'s hooks after these.
    pub fn extend(&mut self, other: HookConfig) {
        self.groups.extend(other.groups);
    }

    /// True when no hook is configured (nothing ever runs).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The handlers of `event` whose matcher matches `matched` (a tool's
    /// name, or what the event's matchers select on:
    /// [`super::io::EventInput::matched`]; `None`: an event without a
    /// matcher, where matchers are not consulted) and whose `if` matches
    /// `call` (the tool events' call; a handler with an `if` runs for no
    /// other), in settings order;
    /// an identical command runs once (Claude Code), blocking on failure if
    /// any of its entries says so, with the longest timeout.
    pub fn handlers(
        &self,
        event: HookEvent,
        matched: Option<&str>,
        call: Option<&ToolCallInput>,
    ) -> Vec<Handler> {
        let mut handlers: Vec<Handler> = Vec::new();
        let matching = self.groups.iter().filter(|group| {
            group.event == event && matched.is_none_or(|value| group.matcher.matches(value))
        });
        let chosen = matching
            .flat_map(|group| &group.handlers)
            .filter(|handler| {
                handler
                    .condition
                    .as_ref()
                    .is_none_or(|condition| call.is_some_and(|call| condition.matches(call)))
            });
        for handler in chosen {
            match handlers.iter_mut().find(|h| h.action == handler.action) {
                Some(seen) => {
                    seen.timeout = seen.timeout.max(handler.timeout);
                    if handler.on_error == OnError::Block {
                        seen.on_error = OnError::Block;
                    }
                }
                None => handlers.push(handler.clone()),
            }
        }
        handlers
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    /// The places `if` rules are resolved in.
    fn places() -> Places {
        Places::for_cwd(std::path::Path::new("/work"))
    }

    fn settings(value: serde_json::Value) -> HooksSettings {
        serde_json::from_value(value).unwrap()
    }

    /// A command handler with no `if`.
    fn command_handler(command: &str, timeout: Duration, on_error: OnError) -> Handler {
        Handler {
            action: Action::Command(command.into()),
            timeout,
            on_error,
            condition: None,
        }
    }

    fn commands(config: &HookConfig, event: HookEvent, tool: Option<&str>) -> Vec<String> {
        config
            .handlers(event, tool, None)
            .into_iter()
            .map(|h| h.name().to_owned())
            .collect()
    }

    /// A bad `if` stops the start as a bad matcher does; one on an event
    /// about no call is ignored with a warning.
    #[test]
    fn a_bad_if_is_an_error_and_one_on_a_non_tool_event_a_warning() {
        let error = settings(json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": "check.sh", "if": "Bash(rm *"}]}]}))
        .compile(&places())
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "hooks: PreToolUse hook \"check.sh\": \"if\": invalid permission rule `Bash(rm *`: a `(` needs a closing `)` at the end"
        );
        let (config, warnings) = settings(json!({"Stop": [{"hooks": [
            {"type": "command", "command": "stop.sh", "if": "Bash(rm *)"}]}]}))
        .compile(&places())
        .unwrap();
        assert_eq!(
            warnings,
            ["hooks: Stop hook \"stop.sh\" has \"if\", which only tool events read; it is ignored"]
        );
        assert_eq!(commands(&config, HookEvent::Stop, None), ["stop.sh"]);
    }

    #[test]
    fn claude_code_settings_compile_with_their_defaults() {
        let (config, warnings) = settings(json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "check.sh", "timeout": 30, "onError": "block"},
                {"type": "command", "command": "log.sh"}
            ]}]
        }))
        .compile(&places())
        .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            config.handlers(HookEvent::PreToolUse, Some("bash"), None),
            [
                command_handler("check.sh", Duration::from_secs(30), OnError::Block),
                command_handler("log.sh", DEFAULT_TIMEOUT, OnError::Warn),
            ]
        );
        assert!(
            config
                .handlers(HookEvent::PreToolUse, Some("read"), None)
                .is_empty()
        );
        assert!(
            config
                .handlers(HookEvent::PostToolUse, Some("bash"), None)
                .is_empty()
        );
    }

    #[test]
    fn identical_commands_run_once_with_the_strictest_settings() {
        let (config, _) = settings(json!({
            "PostToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": "a.sh", "timeout": 5}]},
                {"matcher": "edit", "hooks": [
                    {"type": "command", "command": "a.sh", "timeout": 9, "onError": "block"},
                    {"type": "command", "command": "b.sh"}
                ]}
            ]
        }))
        .compile(&places())
        .unwrap();
        assert_eq!(
            config.handlers(HookEvent::PostToolUse, Some("edit"), None),
            [
                command_handler("a.sh", Duration::from_secs(9), OnError::Block),
                command_handler("b.sh", DEFAULT_TIMEOUT, OnError::Warn),
            ]
        );
        assert_eq!(
            commands(&config, HookEvent::PostToolUse, Some("write")),
            ["a.sh"]
        );
    }

    #[test]
    fn lifecycle_events_match_on_what_they_name_and_prompt_events_ignore_matchers() {
        let (config, _) = settings(json!({
            "SessionStart": [{"matcher": "startup|clear", "hooks": [{"type": "command", "command": "s.sh"}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "e.sh"}]}],
            "Stop": [{"matcher": "never", "hooks": [{"type": "command", "command": "t.sh"}]}]
        }))
        .compile(&places())
        .unwrap();
        let start = |source| commands(&config, HookEvent::SessionStart, Some(source));
        assert_eq!(
            (start("startup"), start("clear")),
            (vec!["s.sh".to_owned()], vec!["s.sh".to_owned()])
        );
        assert!(start("compact").is_empty());
        assert_eq!(
            commands(&config, HookEvent::SessionEnd, Some("other")),
            ["e.sh"]
        );
        assert_eq!(commands(&config, HookEvent::Stop, None), ["t.sh"]);
        let end = config.handlers(HookEvent::SessionEnd, Some("other"), None);
        assert_eq!(
            end[0].timeout, SESSION_END_TIMEOUT,
            "the user waits to quit"
        );
        let started = config.handlers(HookEvent::SessionStart, Some("startup"), None);
        assert_eq!(started[0].timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn unsupported_entries_are_skipped_with_a_warning_each() {
        let (config, warnings) = settings(json!({
            "SubagentStop": [{"hooks": [{"type": "command", "command": "n.sh"}]}],
            "PreToolUse": [{"hooks": [
                {"type": "agent", "prompt": " "},
                {"type": "webhook", "url": "https://x"},
                {"type": "http", "url": " "},
                {"type": "command"},
                {"type": "command", "command": "x.sh", "timeout": 0},
                {"type": "command", "command": "y.sh", "timeout": 1e30}
            ]}]
        }))
        .compile(&places())
        .unwrap();
        assert!(config.is_empty());
        assert_eq!(
            warnings,
            [
                "hooks: PreToolUse agent handler without a prompt; skipped",
                "hooks: PreToolUse handler of type \"webhook\" is not supported (only \"command\", \"http\", \"prompt\" and \"agent\"); skipped",
                "hooks: PreToolUse http handler without a url; skipped",
                "hooks: PreToolUse command handler without a command; skipped",
                "hooks: PreToolUse hook \"x.sh\" has timeout 0; a timeout is a positive number of seconds; skipped",
                "hooks: PreToolUse hook \"y.sh\" has timeout 1e30, too large to wait for; leave it out for the event's default; skipped",
                "hooks: event \"SubagentStop\" is not supported; skipped",
            ]
        );
    }

    /// A guard under a misspelled event (`PreTooluse`) never ran, with
    /// only a warning at the start: it stops the start as any guard that
    /// cannot run does, and both texts name the event meant.
    #[test]
    fn a_guard_under_an_unsupported_event_stops_the_start_naming_a_near_miss() {
        let hooks = |on_error: &str| {
            settings(json!({"PreTooluse": [{"matcher": "bash", "hooks": [
                {"command": "check.sh"},
                {"command": "guard.sh", "onError": on_error}
            ]}]}))
            .compile(&places())
        };
        assert_eq!(
            hooks("block").unwrap_err().to_string(),
            "hooks: event \"PreTooluse\" is not supported (did you mean PreToolUse?), so a hook under it cannot run; it is marked \"onError\": \"block\", so the agent does not start without it"
        );
        let (config, warnings) = hooks("warn").unwrap();
        assert!(config.is_empty());
        assert_eq!(
            warnings,
            ["hooks: event \"PreTooluse\" is not supported (did you mean PreToolUse?); skipped"]
        );
    }

    #[test]
    fn an_invalid_matcher_regex_is_an_error_not_a_skipped_hook() {
        let error = settings(json!({
            "PreToolUse": [{"matcher": "mcp__(", "hooks": [{"type": "command", "command": "x"}]}]
        }))
        .compile(&places())
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("hooks: matcher \"mcp__(\" is not a valid regex: "),
            "{error}"
        );
    }

    #[test]
    fn scopes_add_up_global_first() {
        let mut global = settings(json!({
            "Stop": [{"hooks": [{"type": "command", "command": "global.sh"}]}]
        }));
        global.extend(settings(json!({
            "Stop": [{"hooks": [{"type": "command", "command": "project.sh"}]}]
        })));
        let (config, _) = global.compile(&places()).unwrap();
        assert_eq!(
            commands(&config, HookEvent::Stop, None),
            ["global.sh", "project.sh"]
        );
    }

    /// A guard (`onError: "block"`) that cannot run stops the start, as a
    /// bad matcher does; it was skipped with a warning, so a timeout of 0
    /// on `exit 2` let every call it guarded through.
    #[test]
    fn a_broken_guard_stops_the_start_and_a_broken_warner_is_skipped() {
        for broken in [
            json!({"command": "exit 2", "timeout": 0}),
            json!({"command": "exit 2", "timeout": -1}),
            json!({"type": "Command", "command": "exit 2"}),
            json!({"command": " "}),
        ] {
            let mut guard = broken.clone();
            guard["onError"] = json!("block");
            let error = settings(json!({"PreToolUse": [{"matcher": "bash", "hooks": [guard]}]}))
                .compile(&places())
                .unwrap_err();
            assert!(
                error.to_string().ends_with(
                    "it is marked \"onError\": \"block\", so the agent does not start without it"
                ),
                "{error}"
            );
            let (config, warnings) =
                settings(json!({"PreToolUse": [{"matcher": "bash", "hooks": [broken]}]}))
                    .compile(&places())
                    .unwrap();
            assert!(config.groups.is_empty());
            assert_eq!(warnings.len(), 1, "{warnings:?}");
        }
    }
}
