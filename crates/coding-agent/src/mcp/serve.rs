//! `coding-agent mcp serve`: the built-in tools offered to other MCP clients
//! over stdio, with the names, descriptions and schemas the model sees.
//!
//! Every call runs through the same pipeline as the agent's own
//! ([`run_single_tool_call_with_updates`]): validation with Pi's coercions
//! and error text, the hooks (the permission guard with
//! `--permission-mode`: [`ToolServer::with_hooks`]), the file-mutation queue the tool instances
//! share, bash's bounded output. A tool's progress updates become MCP
//! progress notifications; a client's `notifications/cancelled` cancels the
//! call (bash kills its command's process group), and so does the server's
//! stop (SIGTERM, SIGINT, SIGHUP) for every call in flight. JSON-RPC's
//! parse and params errors, which rmcp does not send, are answered on the
//! way in (`mcp/serve_io.rs`).
//!
//! Calls a client sends without waiting for their answers start in the
//! order they arrived (`InArrivalOrder`), so calls on one file are applied
//! in that order, as the agent applies the calls of one answer; each call
//! still runs alongside the others once started.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use agent_ai::{Content, ToolCall};
use agent_core::{
    AgentToolResult, NoHooks, ToolCallHooks, ToolSet, run_single_tool_call_with_updates,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, ContentBlock,
    ErrorCode, Implementation, InitializeResult, JsonRpcMessage, JsonRpcRequest, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The MCP server over a set of tools.
pub struct ToolServer {
    tools: Arc<ToolSet>,
    hooks: Arc<dyn ToolCallHooks>,
    /// Cancels every call in flight when the server is stopped.
    stop: CancellationToken,
    /// Held by each call in flight (its count says how many).
    in_flight: Arc<()>,
}

/// How long a stopped server waits for its cancelled calls to end (their
/// commands killed) before it exits anyway.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long a call's answer waits for its last progress notifications to
/// be sent before they are dropped.
const PROGRESS_FLUSH: Duration = Duration::from_secs(1);

impl ToolServer {
    /// A server offering `tools`, with no hooks around the calls.
    pub fn new(tools: ToolSet) -> Self {
        ToolServer {
            tools: Arc::new(tools),
            hooks: Arc::new(NoHooks),
            stop: CancellationToken::new(),
            in_flight: Arc::new(()),
        }
    }

    /// The same server with `hooks` as every call's `before_tool_call` and
    /// `after_tool_call` (the permission guard of `--permission-mode`: an
    /// MCP client has no way to answer an approval, so an ask is refused
    /// with the text the model reads).
    #[must_use]
    pub fn with_hooks(mut self, hooks: Arc<dyn ToolCallHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Serves MCP on this process's stdin and stdout until the client
    /// closes them, or `stop` is cancelled (SIGTERM, as a client ending its
    /// server sends after a short wait): then the calls in flight are
    /// cancelled, so a running command's process group is killed, not left
    /// to run on after the server is gone.
    pub async fn serve_stdio(self, stop: CancellationToken) -> anyhow::Result<()> {
        let (calls, in_flight) = (self.stop.clone(), Arc::clone(&self.in_flight));
        let (input, output, writer) =
            super::serve_io::checked(tokio::io::stdin(), tokio::io::stdout());
        let running = self
            .serve(InArrivalOrder::new(AsyncRwTransport::new_server(
                input, output,
            )))
            .await
            .map_err(|e| anyhow::anyhow!("MCP handshake failed: {e}"))?;
        let client_closed = tokio::select! {
            done = running.waiting() => {
                done?;
                true
            }
            () = stop.cancelled() => false,
        };
        calls.cancel();
        let deadline = tokio::time::Instant::now() + STOP_GRACE;
        while Arc::strong_count(&in_flight) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The answers still queued reach the client: when it closed stdin
        // right after its requests, some answers of calls that ran were
        // lost with the process. (rmcp, on input EOF, waits up to 5 s for
        // the calls in flight and sends their answers first.)
        if client_closed {
            let _ = tokio::time::timeout_at(deadline, writer).await;
        }
        Ok(())
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "coding-agent",
                env!("CARGO_PKG_VERSION"),
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools.definitions().iter().map(mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Taken before anything returns: a call that ends at once lets the
        // next one start too (dropped).
        let arrival = context.extensions.remove::<Arc<Arrival>>();
        if self.tools.get(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("Tool {} not found", request.name),
                None,
            ));
        }
        let call = ToolCall {
            id: context.id.to_string(),
            name: request.name.to_string(),
            arguments: Value::Object(request.arguments.unwrap_or_default()),
            thought_signature: None,
            recovered_from_text: None,
        };
        let _in_flight = Arc::clone(&self.in_flight);
        // The client's cancellation, or the server's stop.
        let cancel = self.stop.child_token();
        let client_cancels = {
            let (client, cancel) = (context.ct.clone(), cancel.clone());
            tokio::spawn(async move {
                client.cancelled().await;
                cancel.cancel();
            })
        };
        let (progress, forwarded) = progress_forwarder(&context).unzip();
        let on_update = |update: &AgentToolResult| {
            if let Some(progress) = &progress {
                let _ = progress.send(text_of(&update.content));
            }
        };
        let run = run_single_tool_call_with_updates(
            &self.tools,
            &call,
            self.hooks.as_ref(),
            &cancel,
            &on_update,
        );
        let message = start_in_turn(arrival, run).await;
        client_cancels.abort();
        // Progress stops before the result, as the spec asks: notifications
        // still queued went out after the answer. Those that cannot go out
        // soon are dropped: once the client closed stdin, rmcp still sends
        // answers but no notifications, and the answer must not wait.
        drop(progress);
        if let Some(mut forwarded) = forwarded
            && tokio::time::timeout(PROGRESS_FLUSH, &mut forwarded)
                .await
                .is_err()
        {
            forwarded.abort();
        }
        let content = message.content.into_iter().map(content_block).collect();
        Ok(if message.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

/// Runs `call` once the calls that arrived before it have started, up to
/// its first wait; then lets the next call start, and runs on beside it.
/// A tool takes its place in the file-mutation queue before it first waits
/// (`MutationTarget`), so calls on one file queue in the order they
/// arrived, as the agent's calls of one answer queue in the order written.
/// Without an `arrival` (served on a transport that hands out none) it
/// just runs.
async fn start_in_turn<F: Future>(arrival: Option<Arc<Arrival>>, call: F) -> F::Output {
    if let Some(arrival) = &arrival {
        arrival.turn().await;
    }
    let mut call = std::pin::pin!(call);
    let first = futures::poll!(call.as_mut());
    drop(arrival);
    match first {
        Poll::Ready(output) => output,
        Poll::Pending => call.await,
    }
}

/// A transport that hands each `tools/call` request an [`Arrival`] as it
/// comes in, and says "Method not found" in full ([`method_not_found`]). rmcp reads requests in order but runs each on a task of its
/// own, and the tasks start in any order: a client's write and four chained
/// edits of one file, sent without waiting for the answers, were applied
/// in random order (the file ended `B`, `C` or `D` about half the time,
/// not `E`), ten writes of one file left another than the last.
struct InArrivalOrder<T> {
    inner: T,
    /// The calls started so far, which every ticket shares.
    started: Arc<watch::Sender<Started>>,
    /// The number the next call gets.
    arrived: u64,
}

impl<T> InArrivalOrder<T> {
    fn new(inner: T) -> Self {
        InArrivalOrder {
            inner,
            started: Arc::new(watch::Sender::new(Started::default())),
            arrived: 0,
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for InArrivalOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        method_not_found(&mut item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::CallToolRequest(call),
            ..
        }) = &mut message
        {
            call.extensions.insert(Arc::new(Arrival {
                number: self.arrived,
                started: Arc::clone(&self.started),
            }));
            self.arrived += 1;
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// JSON-RPC's "Method not found" where rmcp's `-32601` says only the
/// method (`resources/list`), which read as an answer rather than an error.
fn method_not_found(item: &mut TxJsonRpcMessage<RoleServer>) {
    if let JsonRpcMessage::Error(answer) = item
        && answer.error.code == ErrorCode::METHOD_NOT_FOUND
        && !answer.error.message.starts_with("Method not found")
    {
        answer.error.message = format!("Method not found: {}", answer.error.message).into();
    }
}

/// Which calls have started: every one numbered below `next`, and those in
/// `ahead` (a call that ended at once, or that rmcp refused before it
/// reached the handler, while an earlier one was still to start).
#[derive(Debug, Default)]
struct Started {
    next: u64,
    ahead: BTreeSet<u64>,
}

/// A `tools/call` request's place in the order the calls arrived in.
/// Dropping it says the call has started (or never will), which lets the
/// next one start.
#[derive(Debug)]
struct Arrival {
    number: u64,
    started: Arc<watch::Sender<Started>>,
}

impl Arrival {
    /// Waits until every call that arrived earlier has started.
    async fn turn(&self) {
        // This ticket holds the sender, so the wait cannot fail.
        let _ = self
            .started
            .subscribe()
            .wait_for(|started| started.next == self.number)
            .await;
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        self.started.send_modify(|started| {
            started.ahead.insert(self.number);
            while started.ahead.remove(&started.next) {
                started.next += 1;
            }
        });
    }
}

/// The tool as MCP lists it: the same name, description and schema.
fn mcp_tool(tool: &agent_ai::Tool) -> rmcp::model::Tool {
    let schema = match &tool.parameters {
        Value::Object(schema) => schema.clone(),
        _ => serde_json::Map::new(),
    };
    rmcp::model::Tool::new(tool.name.clone(), tool.description.clone(), schema)
}

fn content_block(content: Content) -> ContentBlock {
    match content {
        Content::Text(text) => ContentBlock::text(text.text),
        Content::Image(image) => ContentBlock::image(image.data.to_string(), image.mime_type),
    }
}

fn text_of(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// When the client asked for progress (a `progressToken`), a sender whose
/// texts go out as numbered progress notifications, in order, and the task
/// sending them, which ends once the sender is dropped and every text
/// queued was sent. Each carries the last line of the update (bash's
/// updates are its whole output tail); updates with no text are not sent.
fn progress_forwarder(
    context: &RequestContext<RoleServer>,
) -> Option<(
    tokio::sync::mpsc::UnboundedSender<String>,
    tokio::task::JoinHandle<()>,
)> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
    let forwarding = tokio::spawn(async move {
        let mut count = 0.0;
        while let Some(text) = receiver.recv().await {
            let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
                continue;
            };
            count += 1.0;
            let notice = ProgressNotificationParam::new(token.clone(), count).with_message(line);
            if peer.notify_progress(notice).await.is_err() {
                break;
            }
        }
    });
    Some((sender, forwarding))
}
