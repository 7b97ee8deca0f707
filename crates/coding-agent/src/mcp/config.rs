//! Which MCP servers to start: `"mcpServers"` in the global and project
//! `settings.json`, the project's `.mcp.json` (Claude Code's project file),
//! and files given with `--mcp-config`, in the shape users copy from other
//! clients (Claude Code, Cursor):
//!
//! ```json
//! { "mcpServers": {
//!     "time": { "command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"} },
//!     "docs": { "type": "http", "url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer x"} },
//!     "old":  { "command": "old-server", "disabled": true }
//! } }
//! ```
//!
//! A later source replaces a server of the same name whole: global, then
//! the project's `.mcp.json` and `settings.json`, then each `--mcp-config`
//! file in order. A project's servers are commands the project chose, so
//! they start only once the project is trusted. `${VAR}` and
//! `${VAR:-default}` in `command`, `args`, `env`, `cwd`, `url` and `headers`
//! are replaced by the environment variable, as Claude Code does; an unset
//! variable without a default is an error naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::settings::read_json_file;
use crate::support::mcp_names::{server_name_problem, server_part};
use crate::support::paths::expand_own_home;

/// How long a server may take to start and list its tools, unless it says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one tool call may take, unless the server's entry says.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One entry of `"mcpServers"` as written; keys other clients add
/// (`autoApprove`, ...) are ignored, so copied entries work.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    /// `"stdio"`, `"http"` (also `"streamable-http"`) or `"sse"`; guessed
    /// from the other keys when absent (a `url` is streamable HTTP).
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
    startup_timeout_sec: Option<f64>,
    tool_timeout_sec: Option<f64>,
    /// Cline's name for the per-call timeout, in seconds.
    timeout: Option<f64>,
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the inherited environment.
        env: BTreeMap<String, String>,
        /// Its working directory (default: the agent's).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint (`"type": "http"`, or a `url` without a type).
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
    /// A server of the older HTTP+SSE transport (`"type": "sse"`); this
    /// build cannot connect to one and says so when it would start.
    LegacySse {
        /// The endpoint.
        url: String,
    },
}

/// One server, ready to start.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The name from `"mcpServers"`; tools are called `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// `"disabled": true`: listed, never started.
    pub disabled: bool,
    /// Time allowed to start and list tools (`startupTimeoutSec`).
    pub startup_timeout: Duration,
    /// Time allowed per call (`toolTimeoutSec`).
    pub tool_timeout: Duration,
    /// Where the entry came from.
    pub source: Source,
}

/// Where a server's entry came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The global `settings.json`.
    Global,
    /// The project's `.coding-agent/settings.json` or `.mcp.json`.
    Project(PathBuf),
    /// A `--mcp-config` file.
    File(PathBuf),
}

/// A configuration file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, naming the server when one entry is at fault.
    pub reason: String,
}

/// Claude Code's project file of MCP servers, in the project's root.
pub const PROJECT_MCP_FILE: &str = ".mcp.json";

/// The project's files that may hold `"mcpServers"`, in the order they
/// apply: Claude Code's `.mcp.json`, then our own `settings.json` (unless
/// it is the global one of `agent_dir`, whose servers are the user's).
pub fn project_files(agent_dir: &Path, cwd: &Path) -> Vec<PathBuf> {
    std::iter::once(cwd.join(PROJECT_MCP_FILE))
        .chain(crate::settings::project_settings_file(agent_dir, cwd))
        .collect()
}

/// The servers of every source, later sources winning by name, in name
/// order. `project` servers are left out unless `project_trusted`; the
/// second value names those left out, so the user can be told once.
pub fn load(
    global: &Path,
    project: &[PathBuf],
    files: &[PathBuf],
    project_trusted: bool,
) -> Result<(Vec<ServerConfig>, Vec<String>), ConfigError> {
    let mut servers = BTreeMap::new();
    let mut untrusted = Vec::new();
    for config in read_file(global, Source::Global, false)? {
        servers.insert(config.name.clone(), config);
    }
    for path in project {
        if !project_trusted {
            // Only named: an untrusted project's file is neither expanded
            // nor checked, so it cannot stop the start (an unset
            // `${GITHUB_TOKEN}`, a syntax error) before anyone trusted it.
            for name in server_names(path) {
                if !untrusted.contains(&name) {
                    untrusted.push(name);
                }
            }
            continue;
        }
        for config in read_file(path, Source::Project(path.clone()), false)? {
            servers.insert(config.name.clone(), config);
        }
    }
    for file in files {
        for config in read_file(file, Source::File(file.clone()), true)? {
            servers.insert(config.name.clone(), config);
        }
    }
    untrusted.sort();
    let servers: Vec<ServerConfig> = servers.into_values().collect();
    check_names_apart(&servers, global)?;
    Ok((servers, untrusted))
}

/// Refuses two servers whose tools would be named alike (`a` and `a.`,
/// `a_b` and `a__b`: both `mcp__a__...`, `mcp__a_b__...`): a permission rule
/// or a hook matcher written for one would cover the other.
fn check_names_apart(servers: &[ServerConfig], global: &Path) -> Result<(), ConfigError> {
    let mut parts: BTreeMap<String, &str> = BTreeMap::new();
    for server in servers.iter().filter(|server| !server.disabled) {
        let part = server_part(&server.name);
        if let Some(other) = parts.insert(part.clone(), &server.name) {
            let path = match &server.source {
                Source::Global => global.to_path_buf(),
                Source::Project(path) | Source::File(path) => path.clone(),
            };
            return Err(ConfigError {
                path,
                reason: format!(
                    "MCP servers \"{other}\" and \"{}\" would give their tools the same names (mcp__{part}__...), so a permission rule for one would cover the other: rename one",
                    server.name
                ),
            });
        }
    }
    Ok(())
}

/// The servers of one file; a settings file that does not exist has none,
/// a `--mcp-config` file (`required`) must exist.
fn read_file(
    path: &Path,
    source: Source,
    required: bool,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let error = |reason: String| ConfigError {
        path: path.to_path_buf(),
        reason,
    };
    // Read as every part of the agent reads a settings file: an empty
    // one (just created) holds nothing, where it stopped every start with
    // "EOF while parsing a value", and a byte-order mark is skipped.
    match read_json_file::<Value>(path) {
        Ok(Some(value)) => parse_servers(&value, source).map_err(error),
        Ok(None) => match std::fs::metadata(path) {
            Err(missing) if required => Err(error(missing.to_string())),
            _ => Ok(Vec::new()),
        },
        Err(e) => Err(error(e.to_string())),
    }
}

/// The names of the servers a file defines and does not disable; none when
/// it cannot be read or parsed.
pub fn server_names(path: &Path) -> Vec<String> {
    let document: Value = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let Some(servers) = document.get("mcpServers").and_then(Value::as_object) else {
        return Vec::new();
    };
    servers
        .iter()
        .filter(|(_, server)| server.get("disabled") != Some(&Value::Bool(true)))
        .map(|(name, _)| name.clone())
        .collect()
}

/// The `"mcpServers"` of a settings or config document.
pub fn parse_servers(document: &Value, source: Source) -> Result<Vec<ServerConfig>, String> {
    let Some(servers) = document.get("mcpServers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_object() else {
        return Err("\"mcpServers\" must be an object of servers by name".to_owned());
    };
    let env = |name: &str| std::env::var(name).ok();
    // One by one, so an error names the server it is in.
    let mut configs = Vec::with_capacity(servers.len());
    for (name, raw) in servers {
        let raw: RawServer = serde_json::from_value(raw.clone())
            .map_err(|e| format!("MCP server \"{name}\": {e}"))?;
        configs.push(server_config(name.clone(), raw, source.clone(), &env)?);
    }
    // By name, as the servers of every source are ordered.
    configs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(configs)
}

fn server_config(
    name: String,
    raw: RawServer,
    source: Source,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    let bad = |what: &str| format!("MCP server \"{name}\": {what}");
    if let Some(problem) = server_name_problem(&name) {
        return Err(bad(&problem));
    }
    // A disabled server is listed, never started: a variable it names may
    // well be unset (a missing token is the usual reason to disable one),
    // and that must not stop the agent: it stays as written.
    let lenient = |key: &str| env(key).or_else(|| Some(format!("${{{key}}}")));
    let env: &dyn Fn(&str) -> Option<String> = if raw.disabled { &lenient } else { env };
    let expand = |text: &str| expand_variables(text, env).map_err(|e| bad(&e));
    let expand_map = |map: BTreeMap<String, String>| {
        map.into_iter()
            .map(|(key, value)| Ok((key, expand(&value)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()
    };
    let timeout = |seconds: Option<f64>, default: Duration, key: &str| match seconds {
        None => Ok(default),
        // `try_`: a huge number (1e30) is refused, not a crash.
        Some(s)
            if s > 0.0
                && let Ok(timeout) = Duration::try_from_secs_f64(s) =>
        {
            Ok(timeout)
        }
        Some(s) if s > 0.0 => Err(bad(&format!(
            "{key} of {s:e} seconds is too large: leave it out for the default"
        ))),
        Some(s) => Err(bad(&format!(
            "{key} must be a positive number of seconds, not {s}"
        ))),
    };
    let transport = match (raw.kind.as_deref(), raw.command, raw.url) {
        (None | Some("stdio"), Some(command), None) => Transport::Stdio {
            command: expand(&command)?,
            args: raw
                .args
                .iter()
                .map(|arg| expand(arg))
                .collect::<Result<_, _>>()?,
            env: expand_map(raw.env)?,
            cwd: match raw.cwd {
                Some(cwd) => Some(expand_own_home(&PathBuf::from(expand(
                    &cwd.to_string_lossy(),
                )?))),
                None => None,
            },
        },
        (None | Some("http" | "streamable-http" | "streamableHttp"), None, Some(url)) => {
            Transport::Http {
                url: expand(&url)?,
                headers: expand_map(raw.headers)?,
            }
        }
        (Some("sse"), None, Some(url)) => Transport::LegacySse { url: expand(&url)? },
        (_, Some(_), Some(_)) => {
            return Err(bad(
                "give either \"command\" (stdio) or \"url\" (HTTP), not both",
            ));
        }
        (_, None, None) => {
            return Err(bad("needs \"command\" (stdio) or \"url\" (HTTP)"));
        }
        (Some(kind), _, _) => {
            return Err(bad(&format!(
                "\"type\": \"{kind}\" does not fit its keys (\"stdio\" takes \"command\", \"http\" takes \"url\")"
            )));
        }
    };
    Ok(ServerConfig {
        startup_timeout: timeout(
            raw.startup_timeout_sec,
            DEFAULT_STARTUP_TIMEOUT,
            "startupTimeoutSec",
        )?,
        tool_timeout: match (raw.tool_timeout_sec, raw.timeout) {
            (None, Some(seconds)) => timeout(Some(seconds), DEFAULT_TOOL_TIMEOUT, "timeout")?,
            (seconds, _) => timeout(seconds, DEFAULT_TOOL_TIMEOUT, "toolTimeoutSec")?,
        },
        name,
        transport,
        disabled: raw.disabled,
        source,
    })
}

/// `text` with each `${VAR}` replaced by the variable and each
/// `${VAR:-default}` by the variable or, when it is unset or empty, the
/// default. `Err` names a variable that is unset and has no default.
fn expand_variables(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (env(name).filter(|value| !value.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "${{{name}}} is not set (set it, or give a default: ${{{name}:-value}})"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_and_http_entries_parse_with_default_timeouts() {
        let document = json!({"mcpServers": {
            "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "env": {"A": "1"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}, "toolTimeoutSec": 5}
        }});
        let servers = parse_servers(&document, Source::Global).unwrap();
        assert_eq!(
            servers,
            vec![
                ServerConfig {
                    name: "time".into(),
                    transport: Transport::Stdio {
                        command: "mcp-server-time".into(),
                        args: vec!["--local-timezone".into(), "UTC".into()],
                        env: BTreeMap::from([("A".into(), "1".into())]),
                        cwd: None,
                    },
                    disabled: false,
                    startup_timeout: DEFAULT_STARTUP_TIMEOUT,
                    tool_timeout: DEFAULT_TOOL_TIMEOUT,
                    source: Source::Global,
                },
                ServerConfig {
                    name: "web".into(),
                    transport: Transport::Http {
                        url: "http://127.0.0.1:9/mcp".into(),
                        headers: BTreeMap::from([("X".into(), "y".into())]),
                    },
                    disabled: false,
                    startup_timeout: DEFAULT_STARTUP_TIMEOUT,
                    tool_timeout: Duration::from_secs(5),
                    source: Source::Global,
                },
            ]
        );
    }

    #[test]
    fn an_entry_that_is_neither_stdio_nor_http_names_the_server() {
        let cases = [
            (
                json!({}),
                "MCP server \"x\": needs \"command\" (stdio) or \"url\" (HTTP)",
            ),
            (
                json!({"command": "a", "url": "b"}),
                "MCP server \"x\": give either \"command\" (stdio) or \"url\" (HTTP), not both",
            ),
            (
                json!({"type": "http", "command": "a"}),
                "MCP server \"x\": \"type\": \"http\" does not fit its keys (\"stdio\" takes \"command\", \"http\" takes \"url\")",
            ),
            (
                json!({"command": "a", "startupTimeoutSec": 0}),
                "MCP server \"x\": startupTimeoutSec must be a positive number of seconds, not 0",
            ),
            // Too large for a Duration: refused, not a crash.
            (
                json!({"command": "a", "toolTimeoutSec": 1e30}),
                "MCP server \"x\": toolTimeoutSec of 1e30 seconds is too large: leave it out for the default",
            ),
            // A value of the wrong type names its server too.
            (
                json!({"command": "a", "toolTimeoutSec": "5"}),
                "MCP server \"x\": invalid type: string \"5\", expected f64",
            ),
        ];
        for (entry, expected) in cases {
            let document = json!({"mcpServers": {"x": entry}});
            assert_eq!(
                parse_servers(&document, Source::Global).unwrap_err(),
                expected
            );
        }
    }

    #[test]
    fn project_servers_wait_for_trust_and_later_sources_win() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("global.json");
        let project = dir.path().join("project.json");
        let extra = dir.path().join("extra.json");
        std::fs::write(
            &global,
            r#"{"mcpServers": {"a": {"command": "global-a"}, "b": {"command": "global-b"}}}"#,
        )
        .unwrap();
        std::fs::write(
            &project,
            r#"{"mcpServers": {"b": {"command": "project-b"}, "p": {"command": "p"}, "off": {"command": "o", "disabled": true}}}"#,
        )
        .unwrap();
        std::fs::write(&extra, r#"{"mcpServers": {"a": {"command": "file-a"}}}"#).unwrap();
        let command = |config: &ServerConfig| match &config.transport {
            Transport::Stdio { command, .. } => command.clone(),
            Transport::Http { url, .. } | Transport::LegacySse { url } => url.clone(),
        };

        let project = [project];
        let (servers, untrusted) =
            load(&global, &project, std::slice::from_ref(&extra), false).unwrap();
        assert_eq!(
            servers.iter().map(command).collect::<Vec<_>>(),
            ["file-a", "global-b"]
        );
        assert_eq!(untrusted, ["b", "p"]);

        // Until the project is trusted its file is only named: an unset
        // variable or a bad value there does not stop the start.
        let broken = dir.path().join("broken.json");
        std::fs::write(
            &broken,
            r#"{"mcpServers": {"b": {"command": "x", "env": {"T": "${SURELY_UNSET_VAR_42}"}}, "p": {"command": "p", "toolTimeoutSec": 0}}}"#,
        )
        .unwrap();
        let (servers, untrusted) =
            load(&global, &[broken], std::slice::from_ref(&extra), false).unwrap();
        assert_eq!(
            servers.iter().map(command).collect::<Vec<_>>(),
            ["file-a", "global-b"]
        );
        assert_eq!(untrusted, ["b", "p"]);

        let (servers, untrusted) = load(&global, &project, &[extra], true).unwrap();
        assert_eq!(
            servers.iter().map(command).collect::<Vec<_>>(),
            ["file-a", "project-b", "o", "p"]
        );
        assert!(untrusted.is_empty());
    }

    #[test]
    fn a_missing_mcp_config_file_is_an_error_but_missing_settings_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let project = [missing.clone()];
        assert!(load(&missing, &project, &[], true).unwrap().0.is_empty());
        let error = load(&missing, &project, std::slice::from_ref(&missing), true).unwrap_err();
        assert_eq!(error.path, missing);
        // An empty settings file (just created) holds no server, as the
        // rest of the agent reads it; a byte-order mark is no JSON.
        let empty = dir.path().join("settings.json");
        std::fs::write(&empty, "").unwrap();
        assert!(load(&empty, &[], &[], true).unwrap().0.is_empty());
        std::fs::write(
            &empty,
            "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
        )
        .unwrap();
        assert_eq!(load(&empty, &[], &[], true).unwrap().0.len(), 1);
    }

    /// Tools are told apart by `mcp__<server>__`: two servers that would
    /// share it, or a server that would leave its tools no room, are refused
    /// with what to change.
    #[test]
    fn servers_whose_tools_would_share_a_name_start_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("global.json");
        let extra = dir.path().join("extra.json");
        std::fs::write(&global, r#"{"mcpServers": {"a": {"command": "x"}}}"#).unwrap();
        std::fs::write(&extra, r#"{"mcpServers": {"a.": {"command": "y"}}}"#).unwrap();
        let error = load(&global, &[], std::slice::from_ref(&extra), true).unwrap_err();
        assert_eq!(
            (error.path, error.reason),
            (
                extra.clone(),
                r#"MCP servers "a" and "a." would give their tools the same names (mcp__a__...), so a permission rule for one would cover the other: rename one"#.to_owned()
            )
        );
        // A disabled one has no tools to confuse.
        std::fs::write(
            &extra,
            r#"{"mcpServers": {"a.": {"command": "y", "disabled": true}}}"#,
        )
        .unwrap();
        assert!(load(&global, &[], std::slice::from_ref(&extra), true).is_ok());

        let long = "time-server-for-the-production-cluster-eu-west";
        std::fs::write(
            &extra,
            format!(r#"{{"mcpServers": {{"{long}": {{"command": "y"}}}}}}"#),
        )
        .unwrap();
        let error = load(&global, &[], &[extra], true).unwrap_err();
        assert!(
            error.reason.starts_with(&format!(
                "MCP server \"{long}\": its name is too long for its tools' names"
            )),
            "{}",
            error.reason
        );
    }

    #[test]
    fn a_servers_cwd_under_tilde_is_in_the_home_directory() {
        let document = json!({"mcpServers": {"s": {"command": "x", "cwd": "~/work"}}});
        let servers = parse_servers(&document, Source::Global).unwrap();
        let Transport::Stdio { cwd, .. } = &servers[0].transport else {
            panic!("a stdio server");
        };
        let home = crate::support::paths::home_dir().unwrap();
        assert_eq!(cwd.as_deref(), Some(home.join("work").as_path()));
    }

    #[test]
    fn variables_expand_with_defaults_and_an_unset_one_is_named() {
        let env = |name: &str| (name == "HOME").then(|| "/home/me".to_owned());
        assert_eq!(
            expand_variables("${HOME}/bin:${PORT:-8080}:${HOME:-x}", &env).unwrap(),
            "/home/me/bin:8080:/home/me"
        );
        assert_eq!(
            expand_variables("plain $HOME ${", &env).unwrap(),
            "plain $HOME ${"
        );
        let document =
            json!({"mcpServers": {"gh": {"command": "gh-mcp", "env": {"TOKEN": "${GH_TOKEN}"}}}});
        let raw: BTreeMap<String, RawServer> =
            serde_json::from_value(document["mcpServers"].clone()).unwrap();
        let (name, raw) = raw.into_iter().next().unwrap();
        assert_eq!(
            server_config(name, raw, Source::Global, &env).unwrap_err(),
            "MCP server \"gh\": ${GH_TOKEN} is not set (set it, or give a default: ${GH_TOKEN:-value})"
        );
        // Disabled (the usual reason: the token is missing), it is listed
        // and never started, so an unset variable stops nothing.
        let mut document = document;
        document["mcpServers"]["gh"]["disabled"] = json!(true);
        let raw: BTreeMap<String, RawServer> =
            serde_json::from_value(document["mcpServers"].clone()).unwrap();
        let (name, raw) = raw.into_iter().next().unwrap();
        let disabled = server_config(name, raw, Source::Global, &env).unwrap();
        assert!(disabled.disabled);
    }

    #[test]
    fn sse_entries_and_clines_timeout_are_understood() {
        let document = json!({"mcpServers": {
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            "slow": {"command": "s", "timeout": 120}
        }});
        let servers = parse_servers(&document, Source::Global).unwrap();
        assert_eq!(
            servers[0].transport,
            Transport::LegacySse {
                url: "http://127.0.0.1:9/sse".into()
            }
        );
        assert_eq!(servers[1].tool_timeout, Duration::from_secs(120));
    }
}
