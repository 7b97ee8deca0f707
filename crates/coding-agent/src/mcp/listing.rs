//! The tools a server lists, read as leniently as the model can use them.
//!
//! rmcp reads a `tools/list` answer whole: one tool that breaks the schema
//! (a tool without `inputSchema`, which servers in the wild send for tools
//! that take nothing) made the whole answer unreadable, and the server
//! failed to start with `Unexpected response type`. Such an answer is read
//! here tool by tool: a missing `inputSchema` is an object schema
//! with no properties, and a tool that still does not parse is left out
//! with a warning naming it, its server's other tools offered.
//!
//! The warnings are returned with the tools, not logged here: a server lists
//! again each time it says its list changed, and a server sending
//! `tools/list_changed` in a loop printed each warning once per listing.
//! The session gives each one once ([`super::McpServers::untold`]).

use std::collections::HashSet;

use rmcp::model::{
    ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::{Value, json};

/// Most pages followed: a server whose cursors never end (each new) must not
/// keep the start waiting past its timeout for nothing.
const MAX_PAGES: usize = 1000;

/// The tools a server listed, and the warnings about those left out.
#[derive(Debug, Clone, Default)]
pub(super) struct Listing {
    pub(super) tools: Vec<Tool>,
    /// One per tool (or page) that could not be read, naming it.
    pub(super) warnings: Vec<String>,
}

/// Every tool `peer` lists, following pagination; `server` names it in
/// warnings. Each page is read tool by tool when rmcp cannot read it whole.
///
/// The pages are followed here, not by rmcp's `list_all_tools`, which
/// follows cursors without end: a server answering every re-list with
/// `{"tools": [], "nextCursor": "same"}` was sent ~15,000 `tools/list` a
/// second and the call that made it re-list never returned. A cursor seen
/// before, or more than [`MAX_PAGES`] pages, ends the listing with a warning
/// naming the server; the tools read so far are kept.
pub(super) async fn list_all_tools(
    peer: &Peer<RoleClient>,
    server: &str,
) -> Result<Listing, ServiceError> {
    let mut listing = Listing::default();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let request = ListToolsRequest {
            method: Default::default(),
            params: cursor
                .clone()
                .map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor))),
            extensions: Default::default(),
        };
        let next = match peer
            .send_request(ClientRequest::ListToolsRequest(request))
            .await?
        {
            ServerResult::ListToolsResult(page) => {
                listing.tools.extend(page.tools);
                page.next_cursor
            }
            ServerResult::CustomResult(CustomResult(page)) => {
                read_page(&page, server, &mut listing);
                page["nextCursor"].as_str().map(str::to_owned)
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        match next {
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.clone()) {
                    listing.warnings.push(format!(
                        "MCP server \"{server}\" answered tools/list with the cursor \"{next}\" a second time; its listing was ended there, with the tools read so far"
                    ));
                    return Ok(listing);
                }
                cursor = Some(next);
            }
            _ => return Ok(listing),
        }
    }
    listing.warnings.push(format!(
        "MCP server \"{server}\" listed its tools on more than {MAX_PAGES} pages; its listing was ended there, with the tools read so far"
    ));
    Ok(listing)
}

/// Adds the tools of one raw `tools/list` page that can be read to
/// `listing`, and a warning for each that cannot.
fn read_page(page: &Value, server: &str, listing: &mut Listing) {
    let Some(listed) = page["tools"].as_array() else {
        listing.warnings.push(format!(
            "MCP server \"{server}\" answered tools/list without a list of tools"
        ));
        return;
    };
    for raw in listed {
        let mut raw = raw.clone();
        if let Some(fields) = raw.as_object_mut() {
            fields
                .entry("inputSchema")
                .or_insert_with(|| json!({"type": "object", "properties": {}}));
        }
        let name = match &raw["name"] {
            Value::String(name) => format!("\"{name}\""),
            Value::Null => "without a name".to_owned(),
            other => other.to_string(),
        };
        match serde_json::from_value::<Tool>(raw) {
            Ok(tool) => listing.tools.push(tool),
            Err(error) => listing.warnings.push(format!(
                "MCP tool {name} of server \"{server}\" left out: its listing cannot be read: {error}"
            )),
        }
    }
}
