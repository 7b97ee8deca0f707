//! The tools a server lists, read as leniently as the model can use them.
//!
//! rmcp reads a `tools/list` answer whole: one tool that breaks the schema
//! (a tool without `inputSchema`, which servers in the wild send for tools
//! that take nothing) made the whole answer unreadable, and the server
//! failed to start with `Unexpected response type`. Such an answer is read
//! again here tool by tool: a missing `inputSchema` is an object schema
//! with no properties, and a tool that still does not parse is left out
//! with a warning naming it, its server's other tools offered.

use rmcp::model::{
    ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::{Value, json};

/// Most pages followed: a server whose cursors never end must not keep the
/// start waiting past its timeout for nothing.
const MAX_PAGES: usize = 1000;

/// Every tool `peer` lists (following pagination); `server` names it in
/// warnings.
pub(super) async fn list_all_tools(
    peer: &Peer<RoleClient>,
    server: &str,
) -> Result<Vec<Tool>, ServiceError> {
    match peer.list_all_tools().await {
        Err(ServiceError::UnexpectedResponse) => list_leniently(peer, server).await,
        listed => listed,
    }
}

/// [`list_all_tools`] page by page, each answer read tool by tool.
async fn list_leniently(peer: &Peer<RoleClient>, server: &str) -> Result<Vec<Tool>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let request = ListToolsRequest {
            method: Default::default(),
            params: cursor
                .map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor))),
            extensions: Default::default(),
        };
        let next = match peer
            .send_request(ClientRequest::ListToolsRequest(request))
            .await?
        {
            ServerResult::ListToolsResult(page) => {
                tools.extend(page.tools);
                page.next_cursor
            }
            ServerResult::CustomResult(CustomResult(page)) => {
                tools.extend(tools_of(&page, server));
                page["nextCursor"].as_str().map(str::to_owned)
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        match next {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
    Ok(tools)
}

/// The tools of one raw `tools/list` page that can be read.
fn tools_of(page: &Value, server: &str) -> Vec<Tool> {
    let Some(listed) = page["tools"].as_array() else {
        tracing::warn!("MCP server \"{server}\" answered tools/list without a list of tools");
        return Vec::new();
    };
    listed
        .iter()
        .filter_map(|raw| {
            let mut raw = raw.clone();
            if let Some(fields) = raw.as_object_mut() {
                fields
                    .entry("inputSchema")
                    .or_insert_with(|| json!({"type": "object", "properties": {}}));
            }
            let name = match raw["name"].as_str() {
                Some(name) => format!("\"{name}\""),
                None => "without a name".to_owned(),
            };
            serde_json::from_value::<Tool>(raw)
                .inspect_err(|error| {
                    tracing::warn!(
                        "MCP tool {name} of server \"{server}\" left out: its listing cannot be read: {error}"
                    );
                })
                .ok()
        })
        .collect()
}
