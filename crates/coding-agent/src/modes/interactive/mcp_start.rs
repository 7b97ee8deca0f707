//! The MCP servers' start in the interactive mode: the screen is up at once
//! and the servers start behind it, each offering its tools as soon as it
//! has listed them. A prompt sent before they are all up waits for them, so
//! its first request carries their tools; Esc sends it without them. Without
//! the `mcp` feature there is nothing to start.

#[cfg(feature = "mcp")]
use tokio::task::JoinHandle;

#[cfg(feature = "mcp")]
use crate::app::AgentSession;
#[cfg(feature = "mcp")]
use crate::render::Style;
use crate::render::StyledLine;

/// The servers of the run and their start, while it goes on.
#[derive(Default)]
pub(super) struct McpStart {
    #[cfg(feature = "mcp")]
    servers: Option<crate::mcp::McpServers>,
    /// Ends with the servers that failed; `None` once it has been reported.
    #[cfg(feature = "mcp")]
    task: Option<JoinHandle<Vec<String>>>,
}

#[cfg(feature = "mcp")]
impl McpStart {
    /// Offers `servers`' tools to `session` from the moment each is up, and
    /// starts them in the background.
    pub(super) fn begin(session: &AgentSession, servers: Option<crate::mcp::McpServers>) -> Self {
        let Some(servers) = servers else {
            return McpStart::default();
        };
        session.set_mcp(servers.clone());
        let starting = servers.clone();
        McpStart {
            servers: Some(servers),
            task: Some(tokio::spawn(async move { starting.start_all().await })),
        }
    }

    /// The servers not up yet, by name (empty when all are, or none is
    /// configured).
    pub(super) fn starting(&self) -> Vec<String> {
        self.servers
            .as_ref()
            .map(crate::mcp::McpServers::starting)
            .unwrap_or_default()
    }

    /// Resolves when every server is up or has failed, with the notices the
    /// user reads about it: the summary (`MCP: 2 servers, 13 tools`), then a
    /// warning per failed server. Resolves once; never again after that.
    pub(super) async fn ended(&mut self) -> Vec<StyledLine> {
        let Some(task) = self.task.as_mut() else {
            return std::future::pending().await;
        };
        let failures = task
            .await
            .unwrap_or_else(|error| vec![format!("The MCP servers' start failed: {error}")]);
        self.task = None;
        let status = self
            .servers
            .as_ref()
            .map(crate::mcp::McpServers::status)
            .unwrap_or_default();
        let summary = crate::mcp::report::summary(&status);
        std::iter::once(StyledLine::new(summary, Style::Dim))
            .chain(
                failures
                    .into_iter()
                    .map(|failure| StyledLine::new(format!("Warning: {failure}"), Style::Warning)),
            )
            .collect()
    }
}

#[cfg(not(feature = "mcp"))]
impl McpStart {
    pub(super) fn starting(&self) -> Vec<String> {
        Vec::new()
    }

    pub(super) async fn ended(&mut self) -> Vec<StyledLine> {
        std::future::pending().await
    }
}
