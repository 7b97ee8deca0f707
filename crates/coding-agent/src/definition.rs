//! `ToolDefinition`, the context it executes in, and the wrapper that turns it
//! into an [`AgentTool`] the loop can run; and [`TypedTool`], the typed layer
//! a tool written in Rust uses: its arguments and details are Rust types, and
//! [`Typed`] does the parsing and the cancellation once for every such tool.
//!
//! `ToolDefinition` stays untyped for tools whose schema arrives at run time
//! (an MCP server's tools).

use std::path::PathBuf;
use std::sync::Arc;

use agent_ai::{Content, Model, Tool};
use agent_core::{AgentTool, AgentToolResult, ExecutionMode, ToolError, UpdateSink};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::support::cancel::ABORTED;

use crate::render::result::{ListKind, list_lines};
use crate::render::{RenderOptions, StyledLine, generic};

/// Everything a tool's `execute` gets besides its arguments. Made per call.
///
/// There is no user-interface handle: a call that needs the user's consent
/// asks through the permission guard (`guard::approval`), before it runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Directory relative paths resolve against.
    pub cwd: PathBuf,
    /// Fires when the call is cancelled; long work must stop promptly.
    pub cancel: CancellationToken,
    /// The model the agent is talking to, when known (read checks image support).
    pub model: Option<Model>,
    /// Where the call sends progress (partial results) while it runs.
    pub updates: UpdateSink,
}

impl ToolContext {
    /// A context with only a working directory; progress is dropped.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            cancel: CancellationToken::new(),
            model: None,
            updates: UpdateSink::discard(),
        }
    }
}

/// A tool as the product knows it.
///
/// Compared with [`AgentTool`], `execute` also gets a [`ToolContext`], and the
/// definition carries what the product shows around the tool: a one-line
/// snippet for the system prompt's tool list, guidelines, and renderers.
#[async_trait]
pub trait ToolDefinition: Send + Sync {
    /// Name, description and parameter schema, as the model sees them.
    fn tool(&self) -> &Tool;

    /// A short human label for UIs.
    fn label(&self) -> &str;

    /// One line for "Available tools:" in the system prompt; tools without one
    /// are left out of that list.
    fn prompt_snippet(&self) -> Option<&str> {
        None
    }

    /// Bullets appended to the system prompt's guidelines while the tool is active.
    fn prompt_guidelines(&self) -> &[&str] {
        &[]
    }

    /// Whether this tool may share a batch with others.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Parallel
    }

    /// Compatibility shim run before schema validation.
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(arguments)
    }

    /// Runs the tool.
    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<AgentToolResult, ToolError>;

    /// How a call shows in a terminal. `args` is the JSON parsed so far, so
    /// while the call streams any field may be missing or partial
    /// (`options.is_partial`). By default: the tool name and its arguments.
    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        generic::call_lines(&self.tool().name, args, options)
    }

    /// How a result shows in a terminal, for progress updates
    /// (`options.is_partial`) as for the final result. By default: the first
    /// lines of its text and any notice, images as placeholders; errors in
    /// the error style.
    fn render_result(
        &self,
        result: &AgentToolResult,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        generic::result_lines(result, is_error, options)
    }
}

/// Makes a [`ToolContext`] for one call, given the call's cancellation token;
/// the call's token and progress sink then replace the context's `cancel` and
/// `updates`, so a factory that makes its own token cannot stop cancellation.
pub type ContextFactory = Arc<dyn Fn(CancellationToken) -> ToolContext + Send + Sync>;

/// Turns a [`ToolDefinition`] into an [`AgentTool`]. `ctx_factory` runs once per
/// call, so every call sees the current cwd, model and UI; the loop never sees
/// the context.
pub fn wrap_tool_definition(
    definition: Arc<dyn ToolDefinition>,
    ctx_factory: ContextFactory,
) -> Arc<dyn AgentTool> {
    Arc::new(WrappedTool {
        definition,
        ctx_factory,
    })
}

struct WrappedTool {
    definition: Arc<dyn ToolDefinition>,
    ctx_factory: ContextFactory,
}

#[async_trait]
impl AgentTool for WrappedTool {
    fn tool(&self) -> &Tool {
        self.definition.tool()
    }

    fn label(&self) -> &str {
        self.definition.label()
    }

    fn execution_mode(&self) -> ExecutionMode {
        self.definition.execution_mode()
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        self.definition.prepare_arguments(arguments)
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        // The call's own token, whatever the factory put there: a factory
        // that built its context with `ToolContext::new` (a fresh token
        // nobody cancels) let a cancelled `bash sleep 2` run to its end.
        let ctx = ToolContext {
            cancel: cancel.clone(),
            updates,
            ..(self.ctx_factory)(cancel)
        };
        self.definition.execute(params, ctx).await
    }
}

/// How [`Typed`] treats a cancellation that comes while the tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCancel {
    /// Stop waiting and answer [`ToolSpec::aborted`] at once: for tools that
    /// change nothing, so work dropped midway loses nothing.
    Abort,
    /// Let the tool answer for itself: bash kills its process and reports the
    /// output so far; edit and write stop only between steps, so a file is
    /// never changed behind an "aborted".
    ToolAnswers,
}

/// What a [`TypedTool`] answers: what the model reads and typed details (for
/// UIs, hooks and logs; never sent to the model).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput<D> {
    /// What the model reads (text and images).
    pub content: Vec<Content>,
    /// Structured data about the result.
    pub details: Option<D>,
}

impl<D> ToolOutput<D> {
    /// One text block, no details.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![Content::text(text)],
            details: None,
        }
    }

    /// Sets `details`.
    #[must_use]
    pub fn with_details(mut self, details: D) -> Self {
        self.details = Some(details);
        self
    }

    /// Sets `details` unless they report nothing (equal their default): Pi
    /// leaves `details` out of a result with nothing to report.
    #[must_use]
    pub fn with_details_if_any(self, details: D) -> Self
    where
        D: Default + PartialEq,
    {
        if details == D::default() {
            self
        } else {
            self.with_details(details)
        }
    }
}

/// How a [`TypedTool`] fails: the text the model reads (what went wrong and
/// what to do next) and typed details about the failure.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure<D> {
    /// The whole text the model reads.
    pub message: String,
    /// Structured data about the failure (an exit code, a path).
    pub details: Option<D>,
}

impl<D> ToolFailure<D> {
    /// A failure with this text and no details.
    pub fn new(message: impl Into<String>) -> Self {
        ToolFailure {
            message: message.into(),
            details: None,
        }
    }

    /// Sets `details`.
    #[must_use]
    pub fn with_details(mut self, details: D) -> Self {
        self.details = Some(details);
        self
    }
}

/// Untyped errors (from shared helpers) fail a typed tool without details.
impl<D> From<ToolError> for ToolFailure<D> {
    fn from(error: ToolError) -> Self {
        ToolFailure::new(error.message())
    }
}

/// A failure with its details as JSON is the loop's [`ToolError`].
impl From<ToolFailure<Value>> for ToolError {
    fn from(failure: ToolFailure<Value>) -> Self {
        let error = ToolError::new(failure.message);
        match failure.details {
            Some(details) => error.with_details(details),
            None => error,
        }
    }
}

/// What a [`TypedTool`] declares about itself besides its types: its name,
/// the texts around it, and how it takes cancellation. One `const` a tool,
/// built from [`ToolSpec::new`] with the fields that differ, so the defaults
/// are written once, here.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: &'static str,
    /// A short human label for UIs.
    pub label: &'static str,
    /// What the model reads about the tool.
    pub description: &'static str,
    /// One line for "Available tools:" in the system prompt.
    pub prompt_snippet: Option<&'static str>,
    /// Bullets appended to the system prompt's guidelines.
    pub prompt_guidelines: &'static [&'static str],
    /// What a cancelled call answers.
    pub aborted: &'static str,
    /// What a cancellation during `run` does.
    pub on_cancel: OnCancel,
    /// Whether this tool may share a batch with others.
    pub execution_mode: ExecutionMode,
    /// The words of a list tool's result (grep, find, ls): its result shows
    /// as the number of items and the first lines (all when expanded).
    /// `None`: the generic result.
    pub list_result: Option<ListKind>,
}

impl ToolSpec {
    /// A tool with these name, label and description and the defaults: no
    /// prompt snippet or guidelines, [`ABORTED`] when cancelled, cancellation
    /// answered at once ([`OnCancel::Abort`]), run in parallel, not a list.
    pub const fn new(name: &'static str, label: &'static str, description: &'static str) -> Self {
        ToolSpec {
            name,
            label,
            description,
            prompt_snippet: None,
            prompt_guidelines: &[],
            aborted: ABORTED,
            on_cancel: OnCancel::Abort,
            execution_mode: ExecutionMode::Parallel,
            list_result: None,
        }
    }
}

/// A tool whose arguments and details are Rust types. The argument struct is
/// the schema the model sees (`Tool::for_args`), and [`Typed`] parses the
/// validated arguments into it, so `run` starts from a typed value; details
/// are serialised on the way out and parsed back for the renderers.
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; doc comments become the schema's descriptions.
    type Args: JsonSchema + DeserializeOwned + Send;
    /// What UIs and hooks read about a result or a failure.
    type Details: Serialize + DeserializeOwned + Send + Sync;

    /// Its name, texts and behaviour, in one value.
    const SPEC: ToolSpec;

    /// Compatibility shim run before schema validation.
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(arguments)
    }

    /// Runs the tool on parsed arguments. Not called for a call already
    /// cancelled. Implemented as an `async fn`; the future is `Send` so that
    /// [`Typed`] can run it behind the object-safe [`ToolDefinition`].
    fn run(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<ToolOutput<Self::Details>, ToolFailure<Self::Details>>> + Send;

    /// How a call shows in a terminal; see [`ToolDefinition::render_call`].
    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        generic::call_lines(Self::SPEC.name, args, options)
    }

    /// How a result shows in a terminal; see
    /// [`ToolDefinition::render_result`]. `details` are the result's details
    /// when they parse as [`Self::Details`](TypedTool::Details) (a hook may
    /// have replaced them). By default: [`ToolSpec::list_result`]'s list, or
    /// the generic result.
    fn render_result(
        &self,
        result: &AgentToolResult,
        details: Option<&Self::Details>,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        let _ = details;
        match Self::SPEC.list_result {
            Some(kind) => list_lines(result, is_error, kind, options),
            None => generic::result_lines(result, is_error, options),
        }
    }
}

/// A [`TypedTool`] as a [`ToolDefinition`]: holds the tool's schema (built
/// once) and does, for every typed tool, what each would otherwise repeat:
/// the cancellation check, parsing the arguments, racing the run against
/// cancellation, and serialising the details.
pub struct Typed<T: TypedTool> {
    tool: Tool,
    inner: T,
}

impl<T: TypedTool> Typed<T> {
    /// Wraps `inner`, building its schema from `T::Args`.
    pub fn new(inner: T) -> Self {
        Typed {
            tool: Tool::for_args::<T::Args>(T::SPEC.name, T::SPEC.description),
            inner,
        }
    }

    /// The typed tool.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

/// The typed tool; the schema built from its arguments is left out (the
/// built-in tools show their name).
impl<T: TypedTool + std::fmt::Debug> std::fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Typed")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The tool with its default parts (the built-in tools: on this machine).
impl<T: TypedTool + Default> Default for Typed<T> {
    fn default() -> Self {
        Typed::new(T::default())
    }
}

/// Details as JSON. A derived `Serialize` of a details struct cannot fail;
/// if one ever did, the result keeps its text and loses only its details.
fn details_json<D: Serialize>(details: Option<D>) -> Option<Value> {
    details.and_then(|details| serde_json::to_value(details).ok())
}

#[async_trait]
impl<T: TypedTool> ToolDefinition for Typed<T> {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        T::SPEC.label
    }

    fn prompt_snippet(&self) -> Option<&str> {
        T::SPEC.prompt_snippet
    }

    fn prompt_guidelines(&self) -> &[&str] {
        T::SPEC.prompt_guidelines
    }

    fn execution_mode(&self) -> ExecutionMode {
        T::SPEC.execution_mode
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        self.inner.prepare_arguments(arguments)
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<AgentToolResult, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new(T::SPEC.aborted));
        }
        // Validation already ran, so a failure here means the struct and its
        // schema disagree; the error still reaches the model.
        let args: T::Args = serde_json::from_value(params).map_err(|e| {
            ToolError::new(format!(
                "Invalid arguments for tool \"{}\": {e}",
                T::SPEC.name
            ))
        })?;
        let run = self.inner.run(args, &ctx);
        let outcome = match T::SPEC.on_cancel {
            OnCancel::Abort => tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => return Err(ToolError::new(T::SPEC.aborted)),
                outcome = run => outcome,
            },
            OnCancel::ToolAnswers => run.await,
        };
        match outcome {
            Ok(output) => Ok(AgentToolResult {
                content: output.content,
                details: details_json(output.details),
                terminate: false,
            }),
            Err(failure) => Err(ToolFailure {
                message: failure.message,
                details: details_json(failure.details),
            }
            .into()),
        }
    }

    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        self.inner.render_call(args, options)
    }

    fn render_result(
        &self,
        result: &AgentToolResult,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        let details: Option<T::Details> = result
            .details
            .as_ref()
            .and_then(|details| T::Details::deserialize(details).ok());
        self.inner
            .render_result(result, details.as_ref(), is_error, options)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Keeps the token of the context it executes in.
    struct KeepsToken {
        tool: Tool,
        token: Mutex<Option<CancellationToken>>,
    }

    #[async_trait]
    impl ToolDefinition for KeepsToken {
        fn tool(&self) -> &Tool {
            &self.tool
        }

        fn label(&self) -> &str {
            "Keeps"
        }

        async fn execute(
            &self,
            _params: Value,
            ctx: ToolContext,
        ) -> Result<AgentToolResult, ToolError> {
            *self.token.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctx.cancel);
            Ok(AgentToolResult::text("kept"))
        }
    }

    // A factory that made its context with `ToolContext::new` (a fresh token)
    // turned cancellation off: a cancelled `bash sleep 2` ran to its end.
    #[tokio::test]
    async fn a_tool_sees_the_calls_cancellation_whatever_token_its_factory_gave() {
        let definition = Arc::new(KeepsToken {
            tool: Tool {
                name: "keeps".into(),
                description: "Keeps its token.".into(),
                parameters: serde_json::json!({"type": "object"}),
            },
            token: Mutex::new(None),
        });
        let factory: ContextFactory = Arc::new(|_cancel| ToolContext::new("/tmp"));
        let tool = wrap_tool_definition(definition.clone(), factory);
        let cancel = CancellationToken::new();
        let result = tool
            .execute(
                "1",
                serde_json::json!({}),
                cancel.clone(),
                UpdateSink::discard(),
            )
            .await;
        assert!(result.is_ok());
        cancel.cancel();
        let seen = definition
            .token
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        assert!(seen.is_some_and(|token| token.is_cancelled()));
    }
}
