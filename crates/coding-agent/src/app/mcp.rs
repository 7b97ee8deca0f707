//! The session's MCP servers: their tools are offered after the session's
//! own, and offered again whenever a server's list changes (the change takes
//! effect at the next request: [`agent_core::Agent::set_tools`]).

use std::future::Future;
use std::sync::Arc;

use super::{AgentSession, lock};
use crate::mcp::{McpServers, ServerStatus};

impl AgentSession {
    /// Offers the tools of `servers` from the next request on, and follows
    /// their list changes. A session resumed in their place takes them over
    /// by calling this again.
    pub fn set_mcp(&self, servers: McpServers) {
        let session = Arc::downgrade(&self.inner);
        servers.set_listener(move || {
            if let Some(inner) = session.upgrade() {
                AgentSession { inner }.offer_mcp_tools();
            }
        });
        *lock(&self.inner.mcp) = Some(servers);
        self.offer_mcp_tools();
    }

    /// Stops the MCP servers: the session ends for good (the process is
    /// about to exit).
    pub async fn shut_down_mcp(&self) {
        let servers = lock(&self.inner.mcp).clone();
        if let Some(servers) = servers {
            servers.shut_down().await;
        }
    }

    /// The MCP servers' states and tools (empty when none are configured).
    pub fn mcp_status(&self) -> Vec<ServerStatus> {
        lock(&self.inner.mcp)
            .as_ref()
            .map(McpServers::status)
            .unwrap_or_default()
    }

    /// Resolves once the tools that arrive at run time are listed: none of
    /// the session's MCP servers is still starting (each is up, failed or
    /// disabled). At once when there are none, or they were started before
    /// [`AgentSession::set_mcp`]. A mode that starts them in the background
    /// waits on this before a prompt, so its first request carries their
    /// tools.
    pub fn extra_tools_listed(&self) -> impl Future<Output = ()> + Send + 'static {
        let servers = lock(&self.inner.mcp).clone();
        async move {
            if let Some(servers) = servers {
                servers.started().await;
            }
        }
    }

    /// Offers the built-ins and the servers' current tools.
    fn offer_mcp_tools(&self) {
        let Some(servers) = lock(&self.inner.mcp).clone() else {
            return;
        };
        let (definitions, warnings) = servers.tool_definitions();
        for warning in servers.untold(warnings) {
            tracing::warn!("{warning}");
        }
        if let Err(error) = self.set_extra_tools(definitions) {
            tracing::warn!("the MCP servers' tools are not offered: {error}");
        }
    }
}
