//! The configured MCP servers of a session: started in parallel, each within
//! its startup timeout, either before the session starts
//! ([`McpServers::start`]) or while it runs ([`McpServers::configure`], then
//! [`McpServers::start_all`]: the interactive mode draws its screen at once
//! and offers each server's tools as soon as it has listed them); a server
//! that fails is reported once and the session goes on without it. A server
//! that dies (an HTTP server that cannot be reached) is restarted
//! (reconnected) on its next call, once; after that its tools answer with an
//! error saying why.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_ai::Tool;
use agent_ai::validate::ToolValidator;
use serde::Serialize;
use serde_with::skip_serializing_none;

use super::client::{Connection, OnToolsChanged};
use super::config::{ServerConfig, Source, Transport};
use super::listing::Listing;
use super::tool::McpTool;
use crate::definition::ToolDefinition;
use crate::guard::policy::{Rule, Subject};
use crate::support::mcp_names;
use crate::support::sync::lock;

/// Every configured server and its state.
#[derive(Clone)]
pub struct McpServers {
    servers: Vec<Arc<Server>>,
    listener: Listener,
    /// Marked each time a server's start ends, for [`McpServers::started`].
    start_ended: Arc<tokio::sync::watch::Sender<()>>,
    /// The warnings about left-out tools the user was given already.
    told: Arc<Mutex<HashSet<String>>>,
    /// Only the tools these name are offered (`--tools mcp__server`); all,
    /// when `None`.
    only: Option<Arc<[Rule]>>,
}

/// Told each time a server's tools were listed again (its list changed, or
/// it was restarted), so the session can offer the new tools.
type Listener = Arc<Mutex<Option<Arc<dyn Fn() + Send + Sync>>>>;

/// One server.
pub struct Server {
    config: ServerConfig,
    cwd: PathBuf,
    state: Mutex<State>,
    /// The tools it listed when it last started (or refreshed).
    listing: Mutex<Listing>,
    /// Held while (re)starting, so parallel calls start it once.
    gate: tokio::sync::Mutex<()>,
    /// Held while its tools are listed again after a change.
    refreshing: tokio::sync::Mutex<()>,
    listener: Listener,
}

#[derive(Clone)]
enum State {
    /// Not started yet: configured, and [`McpServers::start_all`] has not
    /// finished with it.
    Starting,
    Disabled,
    Running(Arc<Connection>),
    /// Running after its one restart.
    Restarted(Arc<Connection>),
    Failed(String),
}

/// A listed tool with its server and the names it goes by.
struct NamedTool {
    server: Arc<Server>,
    /// Its name on the server.
    remote: String,
    /// The tool as the model sees it.
    tool: Tool,
}

/// What `/mcp` and RPC `get_state` show for one server.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The configured name.
    pub name: String,
    /// `running`, `stopped` (it exited or could not be reached; restarted
    /// or reconnected at its next call),
    /// `failed` or `disabled`.
    pub status: &'static str,
    /// Why it failed or stopped.
    pub error: Option<String>,
    /// Its tools, by the names the model calls them.
    pub tools: Vec<String>,
}

impl McpServers {
    /// Starts every enabled server in parallel, each within its startup
    /// timeout. Returns the servers and one message per server that failed
    /// (for the user, once).
    pub async fn start(configs: Vec<ServerConfig>, cwd: &Path) -> (Self, Vec<String>) {
        let servers = McpServers::configure(configs, cwd);
        let failures = servers.start_all().await;
        (servers, failures)
    }

    /// The servers of `configs`, none started yet: each is `starting` (or
    /// `disabled`) and offers no tools until [`McpServers::start_all`] has
    /// started it.
    pub fn configure(configs: Vec<ServerConfig>, cwd: &Path) -> Self {
        let listener = Listener::default();
        let servers = configs
            .into_iter()
            .map(|config| Arc::new(Server::new(config, cwd, listener.clone())))
            .collect();
        McpServers {
            servers,
            listener,
            ..McpServers::default()
        }
    }

    /// Offers only the tools `rules` name (`mcp__server`, `mcp__server__*`
    /// or `mcp__server__tool`, as permission rules name them): an allowlist
    /// (`--tools`) holds for the servers' tools too.
    #[must_use]
    pub fn offer_only(mut self, rules: Vec<Rule>) -> Self {
        self.only = Some(rules.into());
        self
    }

    /// Starts the servers still `starting`, in parallel, each within its
    /// startup timeout. Each server's tools are offered (the listener is
    /// told) as soon as it has listed them, not when the slowest is done.
    /// Returns one message per server that failed (for the user, once).
    pub async fn start_all(&self) -> Vec<String> {
        let starting: Vec<&Arc<Server>> = self
            .servers
            .iter()
            .filter(|server| matches!(*lock(&server.state), State::Starting))
            .collect();
        let failures = futures::future::join_all(starting.into_iter().map(|server| async move {
            let (state, failure) = match server.launch().await {
                Ok((connection, listing)) => {
                    *lock(&server.listing) = listing;
                    (State::Running(connection), None)
                }
                Err(reason) => {
                    let failure = format!(
                        "MCP server \"{}\" did not start: {reason}",
                        server.config.name
                    );
                    (State::Failed(reason), Some(failure))
                }
            };
            *lock(&server.state) = state;
            // Offered before `started` wakes, so a prompt that waited for
            // the servers goes out with their tools.
            server.tell_listener();
            self.start_ended.send_replace(());
            failure
        }))
        .await;
        failures.into_iter().flatten().collect()
    }

    /// The names of the servers not started yet, in configuration order.
    pub fn starting(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|server| matches!(*lock(&server.state), State::Starting))
            .map(|server| server.config.name.clone())
            .collect()
    }

    /// Resolves once no server is `starting`: at once after
    /// [`McpServers::start`], and never while [`McpServers::start_all`] has
    /// not been called for servers that are.
    pub async fn started(&self) {
        let mut ended = self.start_ended.subscribe();
        while !self.starting().is_empty() {
            // The sender lives as long as `self`: `changed` cannot fail.
            if ended.changed().await.is_err() {
                return;
            }
        }
    }

    /// Calls `listener` each time a server's tools were listed again (after
    /// `notifications/tools/list_changed`, or a restart); it replaces the
    /// one set before (one session listens at a time).
    pub fn set_listener(&self, listener: impl Fn() + Send + Sync + 'static) {
        *lock(&self.listener) = Some(Arc::new(listener));
    }

    /// The tools of the running servers, named `mcp__<server>__<tool>`, in
    /// server then listing order. A tool whose listing cannot be read, or
    /// whose input schema is not an object or cannot be compiled, is left
    /// out and named in the returned warnings; one without `"type"` is taken
    /// as an object. So is each name of [`McpServers::offer_only`] that
    /// matches none of the tools its running server listed.
    pub fn tool_definitions(&self) -> (Vec<Arc<dyn ToolDefinition>>, Vec<String>) {
        let (named, warnings) = self.named_tools();
        let definitions = named
            .into_iter()
            .map(|named| {
                Arc::new(McpTool::new(named.server, named.remote, named.tool))
                    as Arc<dyn ToolDefinition>
            })
            .collect();
        (definitions, warnings)
    }

    /// Those of `warnings` the user has not been given yet (the tool list is
    /// built again each time a server comes up, changes its list or
    /// restarts: a left-out tool was named every time).
    pub fn untold(&self, warnings: Vec<String>) -> Vec<String> {
        let mut told = lock(&self.told);
        warnings
            .into_iter()
            .filter(|warning| told.insert(warning.clone()))
            .collect()
    }

    /// Each listed tool with its server, its name on the server and the tool
    /// the model sees.
    fn named_tools(&self) -> (Vec<NamedTool>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut listed: Vec<(Arc<Server>, rmcp::model::Tool)> = Vec::new();
        for server in &self.servers {
            let listing = lock(&server.listing).clone();
            warnings.extend(listing.warnings);
            listed.extend(listing.tools.into_iter().map(|tool| (server.clone(), tool)));
        }
        let names = mcp_names::assign(
            listed
                .iter()
                .map(|(server, tool)| (server.config.name.as_str(), tool.name.as_ref())),
        );
        if let Some(rules) = &self.only {
            warnings.extend(self.unknown_tools(rules, &listed, &names));
        }
        let mut named = Vec::new();
        for ((server, remote), name) in listed.into_iter().zip(names) {
            let offered = self
                .only
                .as_ref()
                .is_none_or(|rules| rules.iter().any(|rule| rule.matches(&name, Subject::Call)));
            if !offered {
                continue;
            }
            let mut schema = (*remote.input_schema).clone();
            // Providers take only object schemas, and refuse one without
            // `"type"` (which a tool with arguments meant as an object) or
            // with a list of types (`["object", "null"]`: the arguments
            // are an object whenever there are any).
            let kind = schema.entry("type").or_insert_with(|| "object".into());
            if kind
                .as_array()
                .is_some_and(|kinds| kinds.contains(&"object".into()))
            {
                *kind = "object".into();
            }
            let kind = kind.clone();
            if kind != "object" {
                warnings.push(format!(
                    "MCP tool \"{}\" of server \"{}\" left out: its input schema is of type {kind}, and models are given only tools that take an object",
                    remote.name, server.config.name
                ));
                continue;
            }
            let mut tool = Tool {
                name,
                description: remote.description.as_deref().unwrap_or_default().to_owned(),
                parameters: serde_json::Value::Object(schema),
            };
            // A `$schema` the validator does not know (the https spelling
            // of draft-07, a bare `schema#`) is only a label, which models
            // ignore: the tool is read without it rather than left out.
            if ToolValidator::new(&tool).is_err()
                && let Some(object) = tool.parameters.as_object_mut()
            {
                object.remove("$schema");
            }
            if let Err(error) = ToolValidator::new(&tool) {
                warnings.push(format!(
                    "MCP tool \"{}\" of server \"{}\" left out: its input schema does not compile: {}",
                    remote.name, server.config.name, error.message
                ));
                continue;
            }
            named.push(NamedTool {
                server,
                remote: remote.name.into_owned(),
                tool,
            });
        }
        (named, warnings)
    }

    /// A warning for each of `rules` that names a running server but none of
    /// the tools it listed (`listed`, called `names`): `--tools
    /// mcp__raw__nosuch` started "raw" and offered nothing, silently. Said
    /// as an unknown built-in name is, once the server's tools are known.
    fn unknown_tools(
        &self,
        rules: &[Rule],
        listed: &[(Arc<Server>, rmcp::model::Tool)],
        names: &[String],
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        for server in &self.servers {
            if !matches!(
                *lock(&server.state),
                State::Running(_) | State::Restarted(_)
            ) {
                continue;
            }
            let part = mcp_names::server_part(&server.config.name);
            let tools: Vec<&str> = listed
                .iter()
                .zip(names)
                .filter(|((owner, _), _)| Arc::ptr_eq(owner, server))
                .map(|(_, name)| name.as_str())
                .collect();
            for rule in rules.iter().filter(|rule| rule.names_mcp_server(&part)) {
                if !tools.iter().any(|name| rule.matches(name, Subject::Call)) {
                    warnings.push(format!(
                        "Unknown tool \"{}\" in --tools: MCP server \"{}\" has no tool by that name. Its tools: {}",
                        rule.text,
                        server.config.name,
                        if tools.is_empty() { "none".to_owned() } else { tools.join(", ") }
                    ));
                }
            }
        }
        warnings
    }

    /// Stops every running server, in parallel (see `Connection::close`):
    /// call it when the session ends for good, since a server that does not
    /// exit when its stdin closes would outlive the process. Their tools then
    /// answer that the session ended.
    pub async fn shut_down(&self) {
        futures::future::join_all(self.servers.iter().map(|server| async move {
            let state = std::mem::replace(
                &mut *lock(&server.state),
                State::Failed("the session ended".to_owned()),
            );
            match state {
                State::Running(connection) | State::Restarted(connection) => {
                    connection.close().await;
                }
                // Not running: nothing to stop (and a disabled server stays so).
                other => *lock(&server.state) = other,
            }
        }))
        .await;
    }

    /// Each server's state and tools.
    pub fn status(&self) -> Vec<ServerStatus> {
        let (named, _) = self.named_tools();
        self.servers
            .iter()
            .map(|server| {
                let (status, error) = match &*lock(&server.state) {
                    State::Starting => ("starting", None),
                    State::Disabled => ("disabled", None),
                    State::Running(c) | State::Restarted(c) if !c.is_closed() => ("running", None),
                    State::Running(c) | State::Restarted(c) => (
                        "stopped",
                        Some(format!(
                            "the server {}{}",
                            server.words().0,
                            c.exit_reason()
                        )),
                    ),
                    State::Failed(reason) => ("failed", Some(reason.clone())),
                };
                let tools = named
                    .iter()
                    .filter(|named| Arc::ptr_eq(&named.server, server))
                    .map(|named| named.tool.name.clone())
                    .collect();
                ServerStatus {
                    name: server.config.name.clone(),
                    status,
                    error,
                    tools,
                }
            })
            .collect()
    }
}

impl Default for McpServers {
    fn default() -> Self {
        McpServers {
            servers: Vec::new(),
            listener: Listener::default(),
            start_ended: Arc::new(tokio::sync::watch::Sender::new(())),
            told: Arc::default(),
            only: None,
        }
    }
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.status()).finish()
    }
}

impl Server {
    fn new(config: ServerConfig, cwd: &Path, listener: Listener) -> Self {
        let state = if config.disabled {
            State::Disabled
        } else {
            State::Starting
        };
        Server {
            config,
            cwd: cwd.to_path_buf(),
            state: Mutex::new(state),
            listing: Mutex::new(Listing::default()),
            gate: tokio::sync::Mutex::new(()),
            refreshing: tokio::sync::Mutex::new(()),
            listener,
        }
    }

    /// Starts the server and lists its tools within its startup timeout;
    /// its list changes will come back to [`Server::refresh`].
    async fn launch(self: &Arc<Self>) -> Result<(Arc<Connection>, Listing), String> {
        let server = Arc::downgrade(self);
        let on_tools_changed: OnToolsChanged = Arc::new(move || {
            let server = server.clone();
            Box::pin(async move {
                if let Some(server) = server.upgrade() {
                    server.refresh().await;
                }
            })
        });
        start(&self.config, &self.cwd, on_tools_changed).await
    }

    /// Lists the tools again if the server said they changed, and tells the
    /// listener (which offers them from the next request on). Called when
    /// the notification comes, and after each call of one of its tools, so
    /// a call that changed the list returns only once the new list is
    /// offered; the two wait for each other and list once.
    ///
    /// The wait for the other and the listing together take at most the
    /// server's tool timeout: a server that answered its re-list after 25 s
    /// held the call that made it re-list 25 s past a 3 s `toolTimeoutSec`,
    /// and every later call to it queued behind. Past the timeout the old
    /// tools stay offered, with a warning.
    pub(super) async fn refresh(&self) {
        let timeout = self.config.tool_timeout;
        if tokio::time::timeout(timeout, self.list_again())
            .await
            .is_err()
        {
            tracing::warn!(
                "MCP server \"{}\" said its tools changed, but listing them took longer than {} s (its \"toolTimeoutSec\"); its earlier tools are still offered",
                self.config.name,
                timeout.as_secs_f64()
            );
        }
    }

    /// [`Server::refresh`] without its time limit.
    async fn list_again(&self) {
        let _refreshing = self.refreshing.lock().await;
        let connection = match &*lock(&self.state) {
            State::Running(c) | State::Restarted(c) => c.clone(),
            _ => return,
        };
        if !connection.take_tools_changed() {
            return;
        }
        match connection.list_tools(&self.config.name).await {
            Ok(listing) => {
                *lock(&self.listing) = listing;
                self.tell_listener();
            }
            Err(error) => tracing::warn!(
                "MCP server \"{}\" said its tools changed, but listing them failed: {error}",
                self.config.name
            ),
        }
    }

    fn tell_listener(&self) {
        let listener = lock(&self.listener).clone();
        if let Some(listener) = listener {
            listener();
        }
    }

    /// How the server goes away and comes back, for messages: a process
    /// exits and is restarted, an HTTP server cannot be reached and is
    /// reconnected.
    pub(super) fn words(&self) -> (&'static str, &'static str) {
        match self.config.transport {
            Transport::Stdio { .. } => ("exited", "restarted"),
            Transport::Http { .. } | Transport::LegacySse { .. } => {
                ("could not be reached", "reconnected")
            }
        }
    }

    /// Whether it runs after its one restart (reconnection).
    pub(super) fn was_restarted(&self) -> bool {
        matches!(*lock(&self.state), State::Restarted(_))
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// A live connection: the running one, or, if the server died and has
    /// not been restarted yet, a new one. `Err` says why there is none, for
    /// the model.
    pub(super) async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, String> {
        let _gate = self.gate.lock().await;
        let state = lock(&self.state).clone();
        let name = &self.config.name;
        let (went, again) = self.words();
        match state {
            State::Running(c) | State::Restarted(c) if !c.is_closed() => Ok(c),
            State::Running(dead) => {
                let why = dead.exit_reason();
                match self.launch().await {
                    Ok((connection, listing)) => {
                        *lock(&self.listing) = listing;
                        *lock(&self.state) = State::Restarted(connection.clone());
                        tracing::warn!("MCP server \"{name}\" {went}{why}; {again} it");
                        // Its tools may differ after the restart.
                        self.tell_listener();
                        Ok(connection)
                    }
                    Err(reason) => {
                        let reason = format!("it {went}{why} and could not be {again}: {reason}");
                        *lock(&self.state) = State::Failed(reason.clone());
                        Err(not_running(name, &reason))
                    }
                }
            }
            State::Restarted(dead) => {
                let reason = format!(
                    "it {went} again after being {again} once{}",
                    dead.exit_reason()
                );
                *lock(&self.state) = State::Failed(reason.clone());
                Err(not_running(name, &reason))
            }
            State::Failed(reason) => Err(not_running(name, &reason)),
            State::Disabled => Err(not_running(name, "it is disabled in the settings")),
            State::Starting => Err(not_running(name, "it has not started yet")),
        }
    }
}

/// What the model reads when a server cannot take calls.
fn not_running(name: &str, reason: &str) -> String {
    format!(
        "MCP server \"{name}\" is not running: {reason}. Its tools cannot be used in this session; do the task another way."
    )
}

/// Starts a server and lists its tools within its startup timeout.
async fn start(
    config: &ServerConfig,
    cwd: &Path,
    on_tools_changed: OnToolsChanged,
) -> Result<(Arc<Connection>, Listing), String> {
    let timeout = config.startup_timeout;
    let started = tokio::time::timeout(timeout, async {
        let connection = Connection::start(config, cwd, on_tools_changed).await?;
        let listing = connection.list_tools(&config.name).await?;
        Ok::<_, String>((Arc::new(connection), listing))
    })
    .await;
    match started {
        Ok(result) => result,
        Err(_) => Err(format!(
            "timed out after {} s (raise \"startupTimeoutSec\" in its entry{})",
            timeout.as_secs_f64(),
            match &config.source {
                Source::Global => " in settings.json".to_owned(),
                Source::Project(path) | Source::File(path) => format!(" in {}", path.display()),
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_warning_is_given_once_across_rebuilds_and_clones() {
        let servers = McpServers::default();
        let warnings = || vec!["tool a left out".to_owned(), "tool b left out".to_owned()];
        assert_eq!(servers.untold(warnings()), warnings());
        assert!(servers.clone().untold(warnings()).is_empty());
        assert_eq!(
            servers.untold(vec!["tool c left out".to_owned()]),
            ["tool c left out"]
        );
    }

    /// A server that sent `tools/list_changed` 200 times had each tool its
    /// listing could not hold named 200 times: those warnings were logged at
    /// each listing, not given once as the schema warnings are.
    #[test]
    fn a_listings_warnings_come_with_the_tools_and_are_given_once() {
        let document = serde_json::json!({"mcpServers": {"raw": {"command": "raw"}}});
        let configs = super::super::config::parse_servers(&document, Source::Global).unwrap();
        let servers = McpServers::configure(configs, Path::new("/"));
        let warning = "MCP tool without a name of server \"raw\" left out: ...";
        let mut given = Vec::new();
        // Each listing the session offers the tools of, as it does when told.
        for _listing in 0..3 {
            *lock(&servers.servers[0].listing) = Listing {
                tools: Vec::new(),
                warnings: vec![warning.to_owned()],
            };
            let (_, warnings) = servers.tool_definitions();
            given.extend(servers.untold(warnings));
        }
        assert_eq!(given, [warning]);
    }
}
