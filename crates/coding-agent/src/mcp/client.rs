//! One connection to one MCP server, on the official SDK (`rmcp`): start it,
//! list its tools, call one with a timeout, progress and cancellation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientNotification,
    ClientRequest, Implementation, JsonRpcMessage, ProgressNotificationParam, ServerNotification,
    ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestHandle, RoleClient, RunningService,
    RxJsonRpcMessage, ServiceError, TxJsonRpcMessage,
};
use rmcp::transport::Transport as RmcpTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, Transport};
use super::http::LastFailure;
use super::listing::Listing;
use super::stdio::{StdioTransport, TOO_LARGE, UNREADABLE};
use crate::support::process_group::{ProcessGroup, detached_command};
use crate::support::sync::lock;

/// How much of a server's stderr is kept to explain why it failed.
const STDERR_TAIL: usize = 2000;

/// How long closing a connection may take: a stdio server has 3 s to exit
/// after its stdin closes, then 3 s after SIGTERM, then is killed
/// ([`StdioTransport`]).
const CLOSE_WAIT: Duration = Duration::from_secs(8);

/// What a connection does when its server says its tools changed: re-list
/// them (the connection's flag is already set when it runs).
pub type OnToolsChanged = Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// Receives what the server sends on its own: progress and list changes.
#[derive(Clone)]
struct Handler {
    progress: ProgressDispatcher,
    tools_changed: Arc<AtomicBool>,
    on_tools_changed: OnToolsChanged,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.handle_notification(params).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The flag is set already ([`Watched`]); rmcp runs each notification
        // handler in a task of its own, so listing the tools again from here
        // holds nothing up.
        (self.on_tools_changed)().await;
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("coding-agent", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A running server.
pub struct Connection {
    peer: Peer<RoleClient>,
    /// What receives the server's notifications (it shares its state with
    /// the copy the service runs).
    handler: Handler,
    /// The service, until [`Connection::close`] takes it.
    running: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// A stdio server's process group: what the server started goes when it
    /// goes (killed when the connection is closed or dropped).
    group: Option<ProcessGroup>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Why a request could not be sent (an HTTP server that stopped
    /// answering): the connection counts as gone, so the next call
    /// connects again, once, as for a process that exited.
    lost: Mutex<Option<String>>,
    /// An HTTP server's last failed request, in a few words.
    http_failure: Option<LastFailure>,
}

/// How a call ended without a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The per-call timeout passed; the server was told to cancel.
    #[error("timed out after {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The user aborted; the server was told to cancel.
    #[error("aborted")]
    Aborted,
    /// The server went away (its process exited, the connection closed).
    #[error("the server closed the connection{0}")]
    Closed(String),
    /// The request could not be sent (an HTTP server that is down).
    #[error("{0}")]
    Unreachable(String),
    /// An HTTP server answered the request with a failure (a server error,
    /// a body that is not MCP): that call failed, the connection stands.
    #[error("{0}")]
    Answered(String),
    /// The server answered with a protocol error (unknown tool, bad params).
    #[error("{0}")]
    Protocol(String),
}

impl Connection {
    /// Starts the server and completes the MCP handshake; the caller bounds
    /// the time it may take. `on_tools_changed` runs when the server sends
    /// `notifications/tools/list_changed`.
    pub async fn start(
        config: &ServerConfig,
        default_cwd: &std::path::Path,
        on_tools_changed: OnToolsChanged,
    ) -> Result<Self, String> {
        let handler = Handler {
            progress: ProgressDispatcher::default(),
            tools_changed: Arc::default(),
            on_tools_changed,
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut http_failure = None;
        let mut group = None;
        let serving = handler.clone();
        let service = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let dir = cwd.as_deref().unwrap_or(default_cwd);
                // Said as such: the spawn's ENOENT would blame the command.
                if !dir.is_dir() {
                    return Err(format!(
                        "its working directory \"{}\" is not a directory that exists",
                        dir.display()
                    ));
                }
                // Its own session and group, so what it starts (a server
                // run through `npx`, `sh -c`) is stopped with it.
                let mut process = detached_command(command);
                process.args(args).envs(env).current_dir(dir);
                // Its stderr is piped, not inherited: a server's logs would
                // scribble over the terminal UI, and they explain failures.
                let (transport, child_stderr) = StdioTransport::spawn(process)
                    .map_err(|e| format!("cannot run \"{command}\": {e}"))?;
                group = Some(ProcessGroup::of(transport.id()));
                if let Some(child_stderr) = child_stderr {
                    tokio::spawn(keep_tail(child_stderr, stderr.clone()));
                }
                match serve(serving, transport).await {
                    Ok(service) => service,
                    Err(error) => {
                        return Err(format!(
                            "{}{}",
                            handshake_failure(&error),
                            last_words(&stderr).await
                        ));
                    }
                }
            }
            Transport::Http { url, headers } => {
                let (transport, last_failure) =
                    super::http::transport(url, headers).map_err(|e| format!("{url}: {e}"))?;
                let served = serve(serving, transport).await;
                let why = lock(&last_failure).clone();
                http_failure = Some(last_failure);
                served.map_err(|error| {
                    format!(
                        "{url}: the MCP handshake failed: {}",
                        why.unwrap_or_else(|| error.to_string())
                    )
                })?
            }
            Transport::LegacySse { url } => {
                return Err(format!(
                    "{url}: the HTTP+SSE transport (\"type\": \"sse\") is not supported; if the server also offers streamable HTTP (often at /mcp), give that URL with \"type\": \"http\""
                ));
            }
        };
        Ok(Connection {
            peer: service.peer().clone(),
            handler,
            running: tokio::sync::Mutex::new(Some(service)),
            group,
            stderr,
            lost: Mutex::new(None),
            http_failure,
        })
    }

    /// Every tool the server offers (following pagination); a tool whose
    /// listing cannot be read is left out, and named with `server` in the
    /// listing's warnings ([`super::listing`]).
    ///
    /// A stdio server that exits right after the handshake says so, with
    /// its stderr, as one that exits during it does: it read "Transport
    /// closed" or "Transport send error: ... Broken pipe".
    pub(super) async fn list_tools(&self, server: &str) -> Result<Listing, String> {
        match super::listing::list_all_tools(&self.peer, server).await {
            Ok(listing) => Ok(listing),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                if self.http_failure.is_none() =>
            {
                Err(format!(
                    "it exited before listing its tools{}",
                    last_words(&self.stderr).await
                ))
            }
            Err(error) => Err(self.describe(&error)),
        }
    }

    /// Whether the server said its tools changed since the last call (and
    /// forgets that it did).
    pub fn take_tools_changed(&self) -> bool {
        self.handler.tools_changed.swap(false, Ordering::SeqCst)
    }

    /// Whether the connection is gone (the process exited, a request could
    /// not be sent, or it was closed).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed() || lock(&self.lost).is_some()
    }

    /// Ends the connection as the MCP specification says: a stdio server's
    /// stdin is closed, and a server still running after 3 s is sent
    /// SIGTERM, then after 3 s more killed ([`StdioTransport`]); an HTTP
    /// server's session is ended. Then what a stdio server started is
    /// killed with its group. Calls still running fail as for a server that
    /// stopped.
    pub async fn close(&self) {
        if let Some(mut running) = self.running.lock().await.take() {
            let _ = running.close_with_timeout(CLOSE_WAIT).await;
        }
        // The leader is gone; its group lives on while what it started
        // does, and then nothing can take its number as a group id.
        if let Some(group) = &self.group {
            group.kill();
        }
    }

    /// Why the server went away: ` (stderr: ...)` from the end of its
    /// stderr, or ` (<why a request could not be sent>)`; empty when
    /// neither says.
    pub fn exit_reason(&self) -> String {
        match &*lock(&self.lost) {
            Some(why) => format!(" ({why})"),
            None => tail_text(&self.stderr),
        }
    }

    /// Calls `tool`. Progress notifications go to `on_progress`; on timeout
    /// or `cancel` the server is sent `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
        cancel: &CancellationToken,
        on_progress: &(dyn Fn(ProgressNotificationParam) + Send + Sync),
    ) -> Result<CallToolResult, CallError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = arguments {
            params.arguments = Some(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let peer = &self.peer;
        let handle: RequestHandle<RoleClient> = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.call_error(&e))?;
        let request_id = handle.id.clone();
        let mut progress = self
            .handler
            .progress
            .subscribe(handle.progress_token.clone())
            .await;
        let response = handle.await_response();
        tokio::pin!(response);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let reason = loop {
            tokio::select! {
                response = &mut response => {
                    // Progress already received is still worth showing.
                    while let Some(Some(update)) = progress.next().now_or_never() {
                        on_progress(update);
                    }
                    return match response {
                        Ok(ServerResult::CallToolResult(result)) => Ok(result),
                        Ok(other) => serde_json::to_value(&other)
                            .ok()
                            .and_then(super::content::with_unknown_blocks_said)
                            .ok_or_else(|| CallError::Answered(not_a_tool_result(&other))),
                        Err(error) => Err(self.call_error(&error)),
                    };
                }
                Some(update) = progress.next() => on_progress(update),
                () = &mut deadline => break CallError::Timeout(timeout),
                () = cancel.cancelled() => break CallError::Aborted,
            }
        };
        let notice = CancelledNotification::new(CancelledNotificationParam::new(
            Some(request_id),
            Some(reason.to_string()),
        ));
        // Best effort: a server that is gone cannot be told.
        let _ = peer
            .send_notification(ClientNotification::CancelledNotification(notice))
            .await;
        Err(reason)
    }

    fn call_error(&self, error: &ServiceError) -> CallError {
        match error {
            ServiceError::TransportClosed if self.http_failure.is_none() => {
                CallError::Closed(tail_text(&self.stderr))
            }
            // An HTTP transport closes when the server's event stream broke
            // and could not be resumed.
            ServiceError::TransportClosed => {
                CallError::Closed(format!(" ({})", self.lose("the connection closed".into())))
            }
            ServiceError::TransportSend(error) => match super::http::answered_failure(error) {
                Some(why) => CallError::Answered(why),
                None => CallError::Unreachable(self.lose(error.to_string())),
            },
            // Answers the transport made up for one the server sent but
            // the client could not take (`super::stdio`).
            ServiceError::McpError(data) if [TOO_LARGE, UNREADABLE].contains(&data.code) => {
                CallError::Answered(data.message.to_string())
            }
            ServiceError::McpError(data) => CallError::Protocol(data.message.to_string()),
            other => CallError::Protocol(other.to_string()),
        }
    }

    /// Marks the connection gone (see [`Connection::is_closed`]) and says
    /// why: the HTTP transport's last failure, else `fallback`.
    fn lose(&self, fallback: String) -> String {
        let why = self
            .http_failure
            .as_ref()
            .and_then(|failure| lock(failure).clone())
            .unwrap_or(fallback);
        *lock(&self.lost) = Some(why.clone());
        why
    }

    fn describe(&self, error: &ServiceError) -> String {
        format!("{error}{}", tail_text(&self.stderr))
    }
}

/// What the model reads of an answer to `tools/call` that is no tool
/// result (a bare value, content of a type the protocol does not have): the
/// server's JSON, its start if long, rather than the SDK's debug text.
fn not_a_tool_result(answer: &ServerResult) -> String {
    const SHOWN: usize = 300;
    let json = serde_json::to_string(answer).unwrap_or_else(|e| e.to_string());
    let shown = match json.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}...", &json[..end]),
        None => json,
    };
    format!("its answer is not a tool result: {shown}")
}

/// Why the handshake failed, for the user: a server that went away says so
/// the same way whether the pipe broke while the request was written or
/// the answer never came (its stderr, added by the caller, says why).
fn handshake_failure(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError::{ConnectionClosed, TransportError};
    match error {
        ConnectionClosed(_) | TransportError { .. } => {
            "it exited during the MCP handshake".to_owned()
        }
        other => format!("the MCP handshake failed: {other}"),
    }
}

/// Runs the MCP handshake over `transport`, watched for list changes.
async fn serve<T: RmcpTransport<RoleClient> + 'static>(
    handler: Handler,
    transport: T,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError> {
    let watched = Watched {
        inner: transport,
        tools_changed: handler.tools_changed.clone(),
    };
    handler.serve(watched).await
}

/// A transport that notes `notifications/tools/list_changed` as it arrives,
/// in order with the answers: rmcp runs notification handlers in tasks of
/// their own, so a call answered right after the server announced a change
/// could otherwise return before the change is seen.
struct Watched<T> {
    inner: T,
    tools_changed: Arc<AtomicBool>,
}

impl<T: RmcpTransport<RoleClient>> RmcpTransport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notification)) = &message
            && matches!(
                notification.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.tools_changed.store(true, Ordering::SeqCst);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes the server wrote to stderr.
async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    crate::support::stderr_tail::keep_tail(stderr, &tail, STDERR_TAIL).await;
}

/// [`tail_text`] once a stdio server that went away has had a moment to
/// finish writing why.
async fn last_words(tail: &Mutex<Vec<u8>>) -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    tail_text(tail)
}

/// ` (stderr: <its last lines>)`, or nothing when the server wrote nothing.
fn tail_text(tail: &Mutex<Vec<u8>>) -> String {
    let bytes = lock(tail);
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {text})")
    }
}
