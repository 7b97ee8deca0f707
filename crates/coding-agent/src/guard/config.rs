//! Where the policy comes from: the `permissions` key of the global and the
//! project `settings.json`, the flags, and the project's trust.
//!
//! ```json
//! { "permissions": { "allow": ["bash(cargo test)"], "ask": ["bash(git push:*)"],
//!                    "deny": ["read(~/.ssh/**)"], "defaultMode": "default" } }
//! ```
//!
//! Rules from every source are merged (so a deny anywhere wins); the mode is
//! the flag's, else the project's, else the global one. An untrusted
//! project's file only tightens: its `deny` and `ask` rules apply, its
//! `allow` rules do not, and its `defaultMode` only when stricter.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::policy::{Decision, Mode, Places, Policy, Rule, RuleError, RuleTexts, SandboxFacts};
use super::trust::{Trust, TrustError};
use crate::settings::{
    FileError, SETTINGS_FILE, UNREADABLE_PROJECT_FILE, project_settings_file, read_json_file,
    slip_of,
};

/// The `permissions` object of one settings file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
// A mistyped key (`denny`) would leave its rules doing nothing, silently:
// refused, as a rule that does not parse is.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionSettings {
    /// Rules that let calls run unasked.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that make calls ask.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules that refuse calls.
    #[serde(default)]
    pub deny: Vec<String>,
    /// The mode without `--permission-mode`.
    pub default_mode: Option<Mode>,
    /// How long an approval asked of an RPC client may take before it is a
    /// deny (default [`DEFAULT_APPROVAL_TIMEOUT`]).
    pub approval_timeout_secs: Option<u64>,
}

/// How long an RPC client has to answer an approval request.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest `approvalTimeoutSecs` taken (a day): a client is sent the
/// timeout in milliseconds, which must stay a number JavaScript can hold.
pub const MAX_APPROVAL_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Debug, Default, Deserialize)]
struct SettingsFile {
    #[serde(default)]
    permissions: PermissionSettings,
    /// The file's other keys, looked at only for a slip of `permissions`.
    #[serde(flatten)]
    others: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

/// The command line's say in the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuardFlags {
    /// `--permission-mode`.
    pub mode: Option<Mode>,
    /// `--allow RULE` (repeatable).
    pub allow: Vec<String>,
    /// `--deny RULE` (repeatable).
    pub deny: Vec<String>,
    /// `--trust`: trust this project's settings.
    pub trust: bool,
}

/// The policy of a session and what the user should be told about it.
#[derive(Debug, Clone)]
pub struct GuardSetup {
    /// The policy.
    pub policy: Policy,
    /// Notices for the user (an untrusted project's ignored settings, bypass).
    pub notices: Vec<String>,
    /// The project's settings were ignored in part because it is not trusted;
    /// the interactive mode offers to trust it.
    pub untrusted_project_settings: bool,
    /// `permissions.approvalTimeoutSecs` (the project's, else the global's):
    /// waiting less or more allows nothing by itself, so a project may set it.
    pub approval_timeout: Duration,
}

/// Settings that cannot be used: a file that is not JSON, a bad rule.
#[derive(Debug, thiserror::Error)]
pub enum GuardConfigError {
    /// A settings file cannot be read or parsed.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A rule cannot be parsed.
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// The trust file cannot be read.
    #[error(transparent)]
    Trust(#[from] TrustError),
}

/// What `bypass` says on stderr or in the transcript.
pub const BYPASS_WARNING: &str = "permission mode bypass: no call is asked about and bash is not sandboxed; deny rules and the always-deny list still apply";

/// Builds the policy of a session in `cwd`.
pub fn load(
    agent_dir: &Path,
    cwd: &Path,
    flags: &GuardFlags,
    sandbox: SandboxFacts,
) -> Result<GuardSetup, GuardConfigError> {
    load_in(agent_dir, cwd, Places::for_cwd(cwd), flags, sandbox)
}

/// Builds the policy of a session in `cwd` (whose settings and trust
/// apply) for tools judged in `places`: with `--remote`, the remote
/// directory and the remote user's home, since the paths are paths there.
pub fn load_in(
    agent_dir: &Path,
    cwd: &Path,
    places: Places,
    flags: &GuardFlags,
    sandbox: SandboxFacts,
) -> Result<GuardSetup, GuardConfigError> {
    let global_path = agent_dir.join(SETTINGS_FILE);
    let global = read(&global_path)?;
    let project_path = project_settings_file(agent_dir, cwd);
    let project = match &project_path {
        // Its deny and ask rules apply trusted or not: without them, no run.
        Some(path) => read(path).map_err(|error| match error {
            GuardConfigError::File { path, reason } => GuardConfigError::File {
                path,
                reason: format!("{reason} {UNREADABLE_PROJECT_FILE}"),
            },
            other => other,
        })?,
        None => PermissionSettings::default(),
    };
    let mut notices = Vec::new();
    // Each file's rules on their own first, so that a bad one is reported
    // with the file it is in.
    notices.extend(check_rules(&global_path, &global, &places)?);
    if let Some(path) = &project_path {
        notices.extend(check_rules(path, &project, &places)?);
    }
    // A rule that cannot be parsed fails below, in `Policy::new`.
    let unknown_flags = flags
        .allow
        .iter()
        .chain(&flags.deny)
        .filter(|text| Rule::parse(text, &places).is_ok_and(|rule| !rule.names_a_known_tool()));
    notices.extend(unknown_flags.map(|text| unknown_tool_warning("--allow/--deny", text)));
    let trusted = Trust::load(agent_dir, flags.trust)?.is_trusted(cwd);

    let mut rules = RuleTexts::default();
    rules.deny.extend(
        global
            .deny
            .iter()
            .chain(&project.deny)
            .chain(&flags.deny)
            .cloned(),
    );
    rules
        .ask
        .extend(global.ask.iter().chain(&project.ask).cloned());
    rules
        .allow
        .extend(global.allow.iter().chain(&flags.allow).cloned());

    let mut mode = global.default_mode.unwrap_or_default();
    let mut ignored = Vec::new();
    if trusted {
        rules.allow.extend(project.allow.iter().cloned());
        mode = project.default_mode.unwrap_or(mode);
    } else {
        if !project.allow.is_empty() {
            ignored.push(format!("{} allow rule(s)", project.allow.len()));
        }
        match project.default_mode {
            Some(m) if m.strictness() >= mode.strictness() => mode = m,
            Some(m) => ignored.push(format!("defaultMode {}", m.name())),
            None => {}
        }
    }
    // A project's sandbox settings only tighten, trusted or not
    // (`SandboxSettings::tighten_with`): what would loosen it is ignored.
    let sandbox_ignored = match &project_path {
        Some(path) if !trusted => loosening_sandbox(&global_path, path),
        _ => Vec::new(),
    };
    if let (false, Some(path)) = (
        ignored.is_empty() && sandbox_ignored.is_empty(),
        &project_path,
    ) {
        let sandbox = ignored_note(&sandbox_ignored, |names| {
            format!(
                "; its sandbox settings only tighten the sandbox, trusted or not (ignored: {names})"
            )
        });
        let rules = ignored_note(&ignored, |names| {
            format!(" (ignored: {names}); trust the project with --trust")
        });
        notices.push(format!(
            "{} is not trusted, so only its deny and ask rules apply{rules}{sandbox}",
            path.display(),
        ));
    }
    let mode = flags.mode.unwrap_or(mode);
    if mode == Mode::Bypass {
        notices.push(BYPASS_WARNING.to_owned());
    }
    let policy = Policy::new(mode, sandbox, places, &rules)?;
    let approval_timeout = project
        .approval_timeout_secs
        .or(global.approval_timeout_secs)
        .map_or(DEFAULT_APPROVAL_TIMEOUT, |secs| {
            Duration::from_secs(secs).min(MAX_APPROVAL_TIMEOUT)
        });
    Ok(GuardSetup {
        policy,
        notices,
        untrusted_project_settings: !ignored.is_empty(),
        approval_timeout,
    })
}

/// A part of the untrusted project's notice: `note` of the names in
/// `ignored`, joined; nothing when nothing of that kind was ignored.
fn ignored_note(ignored: &[String], note: impl FnOnce(&str) -> String) -> String {
    if ignored.is_empty() {
        String::new()
    } else {
        note(&ignored.join(", "))
    }
}

/// The `sandbox` settings of the project file at `project` that would
/// loosen the sandbox the global file at `global` sets, and are ignored:
/// a less strict `mode`, `allowNetwork: true`, `writableRoots`. A file
/// that cannot be read names none (its errors are reported where the
/// settings are loaded).
fn loosening_sandbox(global: &Path, project: &Path) -> Vec<String> {
    use crate::sandbox::SandboxSettings;
    #[derive(Default, Deserialize)]
    struct SandboxFile {
        #[serde(default)]
        sandbox: SandboxSettings,
    }
    let read = |path: &Path| {
        read_json_file::<SandboxFile>(path)
            .ok()
            .flatten()
            .unwrap_or_default()
            .sandbox
    };
    let (global, project) = (read(global), read(project));
    let mut ignored = Vec::new();
    if let Some(mode) = project.mode
        && mode.strictness() < global.mode.unwrap_or_default().strictness()
    {
        ignored.push(format!("sandbox.mode {mode}"));
    }
    if project.allow_network == Some(true) {
        ignored.push("sandbox.allowNetwork true".to_owned());
    }
    if !project.writable_roots.is_empty() {
        ignored.push("sandbox.writableRoots".to_owned());
    }
    ignored
}

/// Parses the rules of the settings file at `path`: an error names the file;
/// the warnings name rules about no tool this agent has (a mistyped name, or
/// Claude Code's `Glob` or `WebFetch`), which match nothing it calls.
fn check_rules(
    path: &Path,
    settings: &PermissionSettings,
    places: &Places,
) -> Result<Vec<String>, GuardConfigError> {
    let mut warnings = Vec::new();
    for text in settings
        .allow
        .iter()
        .chain(&settings.ask)
        .chain(&settings.deny)
    {
        let rule = Rule::parse(text, places).map_err(|error| GuardConfigError::File {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
        if !rule.names_a_known_tool() {
            warnings.push(unknown_tool_warning(&path.display().to_string(), text));
        }
    }
    Ok(warnings)
}

/// The warning for a rule (from `source`: a settings file, or the
/// command line) about a tool this agent does not have.
fn unknown_tool_warning(source: &str, text: &str) -> String {
    format!(
        "{source}: the permission rule `{text}` names no tool this agent has ({}, or mcp__SERVER__TOOL); it matches only a tool of that name",
        crate::tools::BUILTIN_TOOL_NAMES.join(", ")
    )
}

fn read(path: &Path) -> Result<PermissionSettings, GuardConfigError> {
    let error = |reason: String| GuardConfigError::File {
        path: path.to_path_buf(),
        reason,
    };
    match read_json_file::<SettingsFile>(path) {
        // `"Permissions"` or `"permisions"` left its deny rules out, the
        // policy reading the file as one without rules: refused, as a
        // mistyped key inside `permissions` is.
        Ok(Some(file)) => match slip_of(file.others.keys().map(String::as_str), "permissions") {
            Some(slip) => Err(error(format!(
                "`{slip}` is not read: did you mean `permissions`? Its rules would not apply; rename the key"
            ))),
            None => Ok(file.permissions),
        },
        Ok(None) => Ok(PermissionSettings::default()),
        Err(FileError::Parse(e)) => Err(error(format!("permissions: {e}"))),
        Err(e) => Err(error(e.to_string())),
    }
}

/// Adds `rule` to the `permissions` list of `list` (`allow` for "always
/// allow"; `ask`, `deny` for a hook's `updatedPermissions`) of the settings
/// file at `path`, keeping every other key in its order; creates the file
/// if needed. The file is written pretty-printed, ending with a newline.
pub fn remember_rule(path: &Path, list: Decision, rule: &str) -> Result<(), GuardConfigError> {
    let key = match list {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
    };
    let error = |reason: String| GuardConfigError::File {
        path: path.to_path_buf(),
        reason,
    };
    let mut settings: Value = read_json_file(path)
        .map_err(|e| error(e.to_string()))?
        .unwrap_or_else(|| Value::Object(Default::default()));
    let Some(root) = settings.as_object_mut() else {
        return Err(error("the settings are not a JSON object".to_owned()));
    };
    let permissions = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(permissions) = permissions.as_object_mut() else {
        return Err(error("`permissions` is not a JSON object".to_owned()));
    };
    let rules = permissions
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(rules) = rules.as_array_mut() else {
        return Err(error(format!("`permissions.{key}` is not a list")));
    };
    if !rules.iter().any(|r| r.as_str() == Some(rule)) {
        rules.push(Value::String(rule.to_owned()));
    }
    // A text file ends with a newline: without it the user's settings
    // showed "No newline at end of file" in their diffs once a rule was
    // remembered. (The layout is serde_json's, two-space indents, which
    // keeps a file laid out so as it was but for the rule.)
    let mut text = serde_json::to_string_pretty(&settings).map_err(|e| error(e.to_string()))?;
    text.push('\n');
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| error(e.to_string()))?;
    }
    crate::support::atomic_write::write_atomic(path, text.as_bytes())
        .map_err(|e| error(e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::guard::Decision;

    /// Where a project in `dir` keeps its settings.
    fn project_file(dir: &Path) -> PathBuf {
        dir.join(crate::settings::PROJECT_CONFIG_DIR)
            .join(SETTINGS_FILE)
    }

    struct Dirs {
        agent: tempfile::TempDir,
        project: tempfile::TempDir,
    }

    fn dirs(global: &Value, project: &Value) -> Dirs {
        let (Ok(agent), Ok(project_dir)) = (tempfile::tempdir(), tempfile::tempdir()) else {
            panic!("tempdir");
        };
        let write = |path: PathBuf, value: &Value| {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).ok();
            }
            std::fs::write(&path, value.to_string()).ok();
        };
        write(agent.path().join(SETTINGS_FILE), global);
        write(project_file(project_dir.path()), project);
        Dirs {
            agent,
            project: project_dir,
        }
    }

    fn setup(d: &Dirs, flags: &GuardFlags) -> GuardSetup {
        match load(
            d.agent.path(),
            d.project.path(),
            flags,
            SandboxFacts::default(),
        ) {
            Ok(setup) => setup,
            Err(e) => panic!("{e}"),
        }
    }

    fn bash(setup: &GuardSetup, command: &str) -> Decision {
        setup
            .policy
            .check("bash", &json!({ "command": command }))
            .decision
    }

    /// A bad rule names the file it is in; a rule about no tool this agent
    /// has is a warning (it would silently never match).
    #[test]
    fn a_bad_rule_names_its_file_and_a_rule_about_no_known_tool_is_warned_about() {
        let d = dirs(
            &json!({"permissions": {"deny": ["raed", "mcp__fs__read", "Read(x)"]}}),
            &json!({"permissions": {"deny": ["rm -rf"]}}),
        );
        let project = project_file(d.project.path());
        assert_eq!(
            load_error(&d).unwrap(),
            format!(
                "{}: invalid permission rule `rm -rf`: a rule starts with a tool name such as `bash` or `read`",
                project.display()
            )
        );
        std::fs::write(&project, "{}").unwrap();
        let setup = setup(&d, &GuardFlags::default());
        assert_eq!(
            setup.notices,
            [format!(
                "{}: the permission rule `raed` names no tool this agent has (read, bash, edit, write, grep, find, ls, or mcp__SERVER__TOOL); it matches only a tool of that name",
                d.agent.path().join(SETTINGS_FILE).display()
            )]
        );
    }

    /// An untrusted project's deny rules apply: a file whose rules cannot
    /// be read stops the run, saying why.
    #[test]
    fn an_unreadable_project_file_stops_the_run_saying_why() {
        let d = dirs(&json!({}), &json!({}));
        std::fs::write(project_file(d.project.path()), "{oops").unwrap();
        assert_eq!(
            load_error(&d).unwrap(),
            format!(
                "{}: permissions: key must be a string at line 1 column 2 {UNREADABLE_PROJECT_FILE}",
                project_file(d.project.path()).display()
            )
        );
    }

    /// `denny` would leave its rules doing nothing, and a day is the
    /// longest approval wait.
    #[test]
    fn a_mistyped_key_is_refused_and_the_approval_timeout_is_bounded() {
        let d = dirs(
            &json!({"permissions": {"approvalTimeoutSecs": u64::MAX}}),
            &json!({"permissions": {"denny": ["bash(rm:*)"]}}),
        );
        let error = load_error(&d).unwrap();
        assert!(
            error.contains("permissions: unknown field `denny`, expected one of `allow`, `ask`, `deny`, `defaultMode`, `approvalTimeoutSecs`"),
            "{error}"
        );
        std::fs::write(project_file(d.project.path()), "{}").unwrap();
        assert_eq!(
            setup(&d, &GuardFlags::default()).approval_timeout,
            MAX_APPROVAL_TIMEOUT
        );
    }

    /// `"Permissions"` or `"permisions"` was read as no key at all: its
    /// deny rules never applied, and nothing said so. Pi's other keys and
    /// another tool's are no slip of it.
    #[test]
    fn a_misspelled_permissions_key_is_refused() {
        for slip in ["Permissions", "permisions", "permissons", "PERMISSION"] {
            let d = dirs(&json!({slip: {"deny": ["read"]}}), &json!({}));
            assert_eq!(
                load_error(&d).unwrap(),
                format!(
                    "{}: `{slip}` is not read: did you mean `permissions`? Its rules would not apply; rename the key",
                    d.agent.path().join(SETTINGS_FILE).display()
                )
            );
        }
        let d = dirs(
            &json!({"theme": "dark", "hooks": {}, "permissionMode": "x", "permissions": {"deny": ["read"]}}),
            &json!({}),
        );
        assert_eq!(load_error(&d), None);
    }

    #[test]
    fn an_untrusted_project_only_tightens_until_trusted() {
        let d = dirs(
            &json!({"permissions": {"allow": ["bash(make)"]}}),
            &json!({"permissions": {"allow": ["bash(*)"], "deny": ["bash(make)"], "defaultMode": "bypass"}}),
        );
        let untrusted = setup(&d, &GuardFlags::default());
        assert_eq!(untrusted.policy.mode(), Mode::Default);
        assert_eq!(bash(&untrusted, "cargo build"), Decision::Ask);
        assert_eq!(bash(&untrusted, "make"), Decision::Deny);
        assert!(untrusted.untrusted_project_settings);
        assert_eq!(
            untrusted.notices,
            [format!(
                "{} is not trusted, so only its deny and ask rules apply (ignored: 1 allow rule(s), defaultMode bypass); trust the project with --trust",
                project_file(d.project.path()).display()
            )]
        );
        let trusted = setup(
            &d,
            &GuardFlags {
                trust: true,
                ..GuardFlags::default()
            },
        );
        assert_eq!(trusted.policy.mode(), Mode::Bypass);
        assert_eq!(trusted.notices, [BYPASS_WARNING]);
        let d = dirs(
            &json!({}),
            &json!({"sandbox": {"mode": "off", "allowNetwork": true, "writableRoots": ["/"]}}),
        );
        assert_eq!(
            setup(&d, &GuardFlags::default()).notices,
            [format!(
                "{} is not trusted, so only its deny and ask rules apply; its sandbox settings only tighten the sandbox, trusted or not (ignored: sandbox.mode off, sandbox.allowNetwork true, sandbox.writableRoots)",
                project_file(d.project.path()).display()
            )]
        );
        assert_eq!(bash(&trusted, "cargo build"), Decision::Allow);
        assert_eq!(bash(&trusted, "make"), Decision::Deny);
        assert_eq!(trusted.notices, [BYPASS_WARNING]);
    }

    #[test]
    fn flags_add_rules_and_pick_the_mode() {
        let d = dirs(&json!({"permissions": {"defaultMode": "plan"}}), &json!({}));
        let flags = GuardFlags {
            mode: Some(Mode::Default),
            allow: vec!["bash(cargo build)".into()],
            deny: vec!["bash(ls)".into()],
            trust: false,
        };
        let s = setup(&d, &flags);
        assert_eq!(s.policy.mode(), Mode::Default);
        assert_eq!(bash(&s, "cargo build"), Decision::Allow);
        assert_eq!(bash(&s, "ls"), Decision::Deny);
        assert!(s.notices.is_empty());
        // A flag's rule about no tool this agent has is warned about, as a
        // settings file's is.
        let flags = GuardFlags {
            deny: vec!["WebFetch".into()],
            ..flags
        };
        assert_eq!(
            setup(&d, &flags).notices,
            [
                "--allow/--deny: the permission rule `WebFetch` names no tool this agent has (read, bash, edit, write, grep, find, ls, or mcp__SERVER__TOOL); it matches only a tool of that name"
            ]
        );
    }

    /// Claude Code's mode names in settings carry over: `acceptEdits` is our
    /// default (edits in the workspace run unasked), `bypassPermissions`
    /// our bypass.
    #[test]
    fn claude_codes_mode_names_are_read() {
        for (name, mode) in [
            ("acceptEdits", Mode::Default),
            ("bypassPermissions", Mode::Bypass),
        ] {
            let d = dirs(&json!({"permissions": {"defaultMode": name}}), &json!({}));
            assert_eq!(
                setup(&d, &GuardFlags::default()).policy.mode(),
                mode,
                "{name}"
            );
        }
        assert_eq!(Mode::Bypass.hook_name(), "bypassPermissions");
        assert_eq!(Mode::Plan.hook_name(), "plan");
    }

    /// What loading the settings of `d` without flags fails with, if it does.
    fn load_error(d: &Dirs) -> Option<String> {
        load(
            d.agent.path(),
            d.project.path(),
            &GuardFlags::default(),
            SandboxFacts::default(),
        )
        .err()
        .map(|e| e.to_string())
    }

    #[test]
    fn a_bad_rule_or_mode_in_settings_is_an_error_naming_it() {
        let cases = [
            (
                json!({"permissions": {"allow": ["bash(ls"]}}),
                "invalid permission rule `bash(ls`: a `(` needs a closing `)` at the end",
            ),
            (
                json!({"permissions": {"defaultMode": "yolo"}}),
                "permissions: unknown permission mode `yolo` (expected one of: default, auto, plan, bypass) at line 1 column 37",
            ),
        ];
        for (settings, error) in cases {
            let d = dirs(&settings, &json!({}));
            let file = d.agent.path().join(SETTINGS_FILE);
            assert_eq!(load_error(&d), Some(format!("{}: {error}", file.display())));
        }
    }

    #[test]
    fn always_allow_adds_the_rule_and_keeps_other_settings() -> Result<(), GuardConfigError> {
        let d = dirs(
            &json!({"defaultModel": "m", "permissions": {"deny": ["grep"]}}),
            &json!({}),
        );
        let path = d.agent.path().join(SETTINGS_FILE);
        remember_rule(&path, Decision::Allow, "bash(cargo test)")?;
        remember_rule(&path, Decision::Allow, "bash(cargo test)")?;
        remember_rule(&path, Decision::Deny, "bash(git push:*)")?;
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let saved: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            saved,
            json!({"defaultModel": "m", "permissions": {
                "deny": ["grep", "bash(git push:*)"], "allow": ["bash(cargo test)"]}})
        );
        Ok(())
    }

    /// "Always allow everywhere" rewrote the global settings without their
    /// final newline; a file laid out as this one writes stays as it was
    /// but for the rule.
    #[test]
    fn always_allow_keeps_the_layout_and_the_final_newline() -> Result<(), GuardConfigError> {
        let dir = tempfile::tempdir().map_err(|e| GuardConfigError::File {
            path: PathBuf::new(),
            reason: e.to_string(),
        })?;
        let path = dir.path().join(SETTINGS_FILE);
        let before = "{\n  \"defaultModel\": \"m\",\n  \"permissions\": {\n    \"allow\": [\n      \"read\"\n    ]\n  }\n}\n";
        std::fs::write(&path, before).ok();
        remember_rule(&path, Decision::Allow, "bash(cargo test)")?;
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_default(),
            before.replace("\"read\"\n", "\"read\",\n      \"bash(cargo test)\"\n")
        );
        Ok(())
    }
}
