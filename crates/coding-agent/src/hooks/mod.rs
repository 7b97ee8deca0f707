//! Command hooks in Claude Code's format: shell commands the user configures
//! in `settings.json` (`"hooks"`) that run around tool calls, prompts and
//! the end of a run, read the event as JSON on stdin and answer by exit code
//! or by JSON on stdout (see `docs/extensions.md`).
//!
//! - `PreToolUse` runs in `before_tool_call`, after the permission policy's
//!   deny rules: it may deny (the model reads why), ask, allow, or replace the
//!   arguments (`updatedInput`, validated again by the tool's schema).
//! - `PermissionRequest` runs when a call would wait for approval, before
//!   anyone is asked: it may allow or deny in the user's place (see
//!   [`permission`]).
//! - `PostToolUse` runs in `after_tool_call` after a call that did not
//!   fail: it may add text for the model, replace the output the model
//!   reads, or stop the agent. `PostToolUseFailure` runs there instead after
//!   one that failed: it may add text for the model, or stop the agent.
//! - `UserPromptSubmit`, `Stop` and `SessionStart` run around a prompt (see
//!   [`prompt`]).
//! - `PreCompact`, `SessionEnd` and `Notification` run around the session's
//!   life (see [`lifecycle`]).
//!
//! [`load`] reads the settings files (a project's hooks only once it is
//! trusted), [`config`] their `hooks` key, [`matcher`] selects tools,
//! [`runner`] runs the hooks of an event in parallel (commands each in its
//! own process group, killed on timeout or abort; `http` POSTs the `http`
//! hooks' requests; `judge` asks a model for the `prompt` and `agent`
//! hooks' verdicts),
//! [`outcome`] reads what they said, [`io`] holds the JSON shapes. Hooks fail open by default, as in Claude Code; an entry with
//! `"onError": "block"` turns its crash or timeout into a block.

pub mod config;
mod http;
pub mod io;
mod judge;
pub mod lifecycle;
pub mod load;
pub mod matcher;
pub mod outcome;
pub mod permission;
pub mod prompt;
pub mod runner;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_ai::Content;
use agent_core::{
    AfterToolCallContext, BeforeToolCall, ModelHandle, ToolCallContext, ToolCallHooks, ToolError,
    ToolResultOverride,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use config::{HookConfig, HookEvent, HooksSettings, OnError};
pub use io::PermissionDecision;
pub use judge::Asking;
pub use outcome::Outcome;
pub use permission::{RequestAnswer, stop_the_agent};

use crate::definition::ToolDefinition;
use crate::support::mcp_names::is_mcp_tool;
use crate::support::sync::lock;
use io::{EventInput, HookInput, ToolCallInput};
use outcome::read_runs;
use runner::run_all;

/// The permission mode hooks are told about in a session without a
/// permission guard (with one, the policy's mode).
pub const DEFAULT_PERMISSION_MODE: &str = "default";

/// What the PreToolUse hooks decided about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum PreToolUseDecision {
    /// No hook objected or decided: the usual flow (approval) goes on.
    Proceed {
        /// Replaces the model's arguments.
        updated_input: Option<Value>,
    },
    /// A hook allowed the call: no approval prompt for an ask the mode
    /// made; deny rules (checked before the hooks) and ask rules still hold
    /// (see `guard/gate.rs`).
    Allow {
        /// Replaces the model's arguments.
        updated_input: Option<Value>,
    },
    /// A hook asks the user to approve the call.
    Ask {
        /// Why, for the user.
        reason: Option<String>,
        /// Replaces the model's arguments.
        updated_input: Option<Value>,
    },
    /// A hook refused the call.
    Deny {
        /// What the model reads.
        reason: String,
    },
}

impl PreToolUseDecision {
    /// The verdict when nobody can be asked: `ask` refuses the call (fails
    /// closed), the rest as decided.
    pub fn without_approval(self) -> BeforeToolCall {
        match self {
            PreToolUseDecision::Proceed { updated_input }
            | PreToolUseDecision::Allow { updated_input } => proceed(updated_input),
            PreToolUseDecision::Ask { reason, .. } => BeforeToolCall::Block {
                reason: Some(no_one_to_ask(reason.as_deref())),
            },
            PreToolUseDecision::Deny { reason } => BeforeToolCall::Block {
                reason: Some(reason),
            },
        }
    }
}

/// Run the tool, with the hook's arguments if it gave some.
pub fn proceed(updated_input: Option<Value>) -> BeforeToolCall {
    match updated_input {
        Some(args) => BeforeToolCall::ProceedWith { args },
        None => BeforeToolCall::Proceed,
    }
}

/// What the model reads when a hook asks for an approval nobody can give,
/// with the ways such a call can run (the refusal alone left the user no
/// next step).
pub fn no_one_to_ask(reason: Option<&str>) -> String {
    let mut text =
        "Blocked: a PreToolUse hook asks for approval of this call, and no one can approve it here"
            .to_owned();
    if let Some(reason) = reason {
        text.push_str(": ");
        text.push_str(reason);
    }
    text.push_str(
        " (to let such calls run here, approve them with a PermissionRequest hook; \
         or run in interactive or RPC mode, where the user is asked)",
    );
    text
}

/// The session a hook is told about.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    /// The session's id.
    pub session_id: String,
    /// Its file, when it is saved.
    pub transcript_path: Option<PathBuf>,
    /// The permission mode (`default` until the policy says otherwise).
    pub permission_mode: String,
}

/// The configured hooks of a session, run for its events.
///
/// As [`ToolCallHooks`] it runs PreToolUse and PostToolUse on its own, with
/// an `ask` left to the PermissionRequest hooks and refused when none
/// answers, since nobody is asked; the permission guard calls
/// [`CommandHooks::pre_tool_use`] between its deny rules and its approval
/// instead, and is to pass its final verdict to [`CommandHooks::settle`].
#[derive(Debug)]
pub struct CommandHooks {
    config: HookConfig,
    cwd: PathBuf,
    session: Mutex<SessionInfo>,
    /// PreToolUse's `additionalContext` by call id, for a call that may
    /// still run: added to its result in `post_tool_use`, or to its refusal
    /// in [`CommandHooks::settle`]. Each call's `pre_tool_use` replaces what
    /// an earlier call of the same id left (one refused where `settle` was
    /// not called added its context to a later call's result).
    pending_context: Mutex<HashMap<String, Vec<String>>>,
    /// What `prompt` and `agent` hooks ask with: the session's model, and
    /// the policy an agent hook's tool calls meet.
    asking: Mutex<Asking>,
}

impl CommandHooks {
    /// Hooks of `config` run in `cwd`.
    pub fn new(config: HookConfig, cwd: PathBuf) -> Self {
        CommandHooks {
            config,
            cwd,
            session: Mutex::new(SessionInfo {
                permission_mode: DEFAULT_PERMISSION_MODE.to_owned(),
                ..SessionInfo::default()
            }),
            pending_context: Mutex::default(),
            asking: Mutex::default(),
        }
    }

    /// Lets `prompt` hooks ask the model `handle` names (the session does
    /// this; without it they fail, as a command that cannot start).
    pub fn set_model(&self, handle: ModelHandle) {
        lock(&self.asking).model = Some(handle);
    }

    /// Judges the tool calls of `agent` hooks' models with `check` (the
    /// guard gives its permission policy, so a deny rule holds for them
    /// too; without it their read-only calls run as asked).
    pub fn set_tool_check(&self, check: Arc<dyn ToolCallHooks>) {
        lock(&self.asking).tool_check = Some(check);
    }

    /// Lets `agent` hooks' models read the project through the tools
    /// `lookup` makes, working in `cwd`: the session's own kind of tools
    /// (with `--remote`, the remote host's). Without it they read this
    /// machine's folder the hooks run in.
    pub fn set_project_tools(
        &self,
        lookup: impl Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
        cwd: PathBuf,
    ) -> anyhow::Result<()> {
        let tools = judge::investigator_tools(lookup, cwd)?;
        lock(&self.asking).project_tools = Some(Arc::new(tools));
        Ok(())
    }

    /// True when no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.config.is_empty()
    }

    /// Tells later hooks about the session (its id changes with a new session).
    pub fn set_session(&self, session: SessionInfo) {
        *lock(&self.session) = session;
    }

    /// Runs the PreToolUse hooks matching the call's tool. Deny wins over
    /// ask, ask over allow; `continue: false` denies with its reason. The
    /// hooks' `additionalContext` follows a deny's reason; for a call that
    /// may run, it is kept for its result, and whoever decides the call
    /// after this passes the final verdict to [`CommandHooks::settle`].
    pub async fn pre_tool_use(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> PreToolUseDecision {
        lock(&self.pending_context).remove(&call.tool_call.id);
        let fields = EventInput::PreToolUse(ToolCallInput::of(call));
        let Some(outcome) = self.run(fields, cancel).await else {
            return PreToolUseDecision::Proceed {
                updated_input: None,
            };
        };
        let Outcome {
            mut blocks,
            permission,
            permission_reasons,
            updated_input,
            context,
            stop,
            ..
        } = outcome;
        // `continue: false` stops the agent, as in Claude Code (the call is
        // refused, and the run ends as by the user's Esc).
        if let Some(reason) = &stop {
            stop_the_agent(HookEvent::PreToolUse, reason, cancel);
        }
        blocks.extend(stop);
        if !blocks.is_empty() {
            let reason = format!("Blocked by PreToolUse hook: {}", blocks.join("\n"));
            return PreToolUseDecision::Deny {
                reason: with_context(reason, &context),
            };
        }
        if !context.is_empty() {
            lock(&self.pending_context).insert(call.tool_call.id.clone(), context);
        }
        match permission {
            Some(PermissionDecision::Ask) => PreToolUseDecision::Ask {
                reason: (!permission_reasons.is_empty()).then(|| permission_reasons.join("\n")),
                updated_input,
            },
            Some(PermissionDecision::Allow) => PreToolUseDecision::Allow { updated_input },
            _ => PreToolUseDecision::Proceed { updated_input },
        }
    }

    /// The final verdict on `call`, after [`CommandHooks::pre_tool_use`]
    /// and whatever approval followed: a refused call never reaches
    /// `post_tool_use`, so its PreToolUse `additionalContext` follows the
    /// refusal (the model reads it there, as Claude Code gives it to the
    /// model) and is forgotten; a call that runs keeps it for its result.
    pub fn settle(&self, call: &ToolCallContext<'_>, verdict: BeforeToolCall) -> BeforeToolCall {
        let BeforeToolCall::Block { reason } = verdict else {
            return verdict;
        };
        let context = lock(&self.pending_context)
            .remove(&call.tool_call.id)
            .unwrap_or_default();
        if context.is_empty() {
            return BeforeToolCall::Block { reason };
        }
        let reason = reason.unwrap_or_else(|| agent_core::pipeline::BLOCKED_TEXT.to_owned());
        BeforeToolCall::Block {
            reason: Some(with_context(reason, &context)),
        }
    }

    /// The verdict on `call` without a permission policy: PreToolUse's, an
    /// ask left to the PermissionRequest hooks and refused when none
    /// answers.
    async fn decide(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> BeforeToolCall {
        let decision = self.pre_tool_use(call, cancel).await;
        if let PreToolUseDecision::Ask {
            reason,
            updated_input,
        } = &decision
        {
            let why = reason
                .as_deref()
                .unwrap_or("a PreToolUse hook asks for approval");
            let mut input = ToolCallInput::of(call);
            if let Some(args) = updated_input {
                input.tool_input = args.clone();
            }
            match self.permission_request(input, why, cancel).await {
                // Without a permission policy, `updatedPermissions` has
                // nothing to add rules to.
                Some(RequestAnswer::Allow {
                    updated_input: new, ..
                }) => {
                    return proceed(new.or_else(|| updated_input.clone()));
                }
                Some(RequestAnswer::Deny { reason, interrupt }) => {
                    if interrupt {
                        stop_the_agent(HookEvent::PermissionRequest, &reason, cancel);
                    }
                    return BeforeToolCall::Block {
                        reason: Some(reason),
                    };
                }
                None => {}
            }
        }
        decision.without_approval()
    }

    /// Runs the PostToolUse hooks matching the call's tool, or its
    /// PostToolUseFailure hooks when the call failed: what they add
    /// (feedback, context, PreToolUse's context) follows the result's
    /// content; PostToolUse's `updatedMCPToolOutput` replaces an MCP tool's;
    /// `continue: false` stops the agent after this batch.
    pub async fn post_tool_use(
        &self,
        call: &AfterToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Option<ToolResultOverride> {
        let pre_context = lock(&self.pending_context)
            .remove(&call.call.tool_call.id)
            .unwrap_or_default();
        let input = ToolCallInput::of(&call.call);
        let fields = match call.is_error {
            false => EventInput::PostToolUse {
                call: input,
                tool_response: json!({
                    "content": call.result.content,
                    "details": call.result.details,
                    "isError": false,
                }),
            },
            true => EventInput::PostToolUseFailure {
                call: input,
                error: call
                    .result
                    .content
                    .iter()
                    .filter_map(Content::as_text)
                    .collect::<Vec<_>>()
                    .join("\n"),
                is_interrupt: cancel.is_cancelled(),
            },
        };
        let event = fields.event();
        let outcome = if cancel.is_cancelled() {
            // The user stopped the call: the failure hooks still run (they
            // are told `is_interrupt`), not killed by that same abort, for
            // at most [`config::SESSION_END_TIMEOUT`] as at a session's end.
            let own = CancellationToken::new();
            let deadline = tokio::spawn({
                let own = own.clone();
                async move {
                    tokio::time::sleep(config::SESSION_END_TIMEOUT).await;
                    own.cancel();
                }
            });
            let outcome = self.run(fields, &own).await;
            deadline.abort();
            outcome
        } else {
            self.run(fields, cancel).await
        }
        .unwrap_or_default();
        let added: Vec<Content> = pre_context
            .iter()
            .map(|text| context_text(HookEvent::PreToolUse, text))
            .chain(outcome.blocks.iter().map(|text| feedback_text(event, text)))
            .chain(outcome.context.iter().map(|text| context_text(event, text)))
            .map(Content::text)
            .collect();
        // A failure's output is the tool's error: a hook adds to it, as in
        // Claude Code, and does not replace it. Nor does it replace a
        // built-in tool's output: Claude Code reads `updatedMCPToolOutput`
        // for MCP tools only, so a script of its that answers every tool
        // with one would otherwise hide what bash or read said.
        let updated_output = outcome
            .updated_output
            .filter(|_| !call.is_error && is_mcp_tool(&call.call.tool_call.name));
        if added.is_empty() && updated_output.is_none() && outcome.stop.is_none() {
            return None;
        }
        let mut content = match updated_output {
            Some(output) => replacement_content(output),
            None => call.result.content.clone(),
        };
        content.extend(added);
        if let Some(reason) = &outcome.stop {
            tracing::warn!("{reason}");
        }
        Some(ToolResultOverride {
            content: Some(content),
            terminate: outcome.stop.is_some().then_some(true),
            ..ToolResultOverride::default()
        })
    }

    /// The input of an event: what every event shares, and `fields`.
    fn input(&self, fields: EventInput) -> HookInput {
        let session = lock(&self.session).clone();
        HookInput {
            session_id: session.session_id,
            transcript_path: session
                .transcript_path
                .map(|path| path.to_string_lossy().into_owned())
                .unwrap_or_default(),
            cwd: self.cwd.to_string_lossy().into_owned(),
            permission_mode: session.permission_mode,
            event: fields,
        }
    }

    /// Runs the hooks of the event of `fields` (selected by the tool's name
    /// for tool events) with `fields` in their input; `None` when none is
    /// configured. Warnings are logged.
    async fn run(&self, fields: EventInput, cancel: &CancellationToken) -> Option<Outcome> {
        let event = fields.event();
        let handlers = self.config.handlers(event, fields.matched(), fields.call());
        if handlers.is_empty() {
            return None;
        }
        // Strings, numbers and JSON values only: serialising cannot fail.
        let stdin = serde_json::to_vec(&self.input(fields)).unwrap_or_default();
        let asking = lock(&self.asking).clone();
        let runs = run_all(&handlers, &stdin, &self.cwd, &asking, cancel).await;
        let outcome = read_runs(event, runs);
        for warning in &outcome.warnings {
            tracing::warn!("{warning}");
        }
        Some(outcome)
    }
}

#[async_trait]
impl ToolCallHooks for CommandHooks {
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        let verdict = self.decide(call, cancel).await;
        Ok(self.settle(call, verdict))
    }

    async fn after_tool_call(
        &self,
        call: &AfterToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        Ok(self.post_tool_use(call, cancel).await)
    }
}

/// A refusal's `reason` with the call's PreToolUse `additionalContext`
/// after it: a refused call has no result for it to follow.
fn with_context(mut reason: String, context: &[String]) -> String {
    for text in context {
        reason.push_str("\n\n");
        reason.push_str(&context_text(HookEvent::PreToolUse, text));
    }
    reason
}

/// How a hook's `additionalContext` reads to the model.
pub fn context_text(event: HookEvent, text: &str) -> String {
    format!("{event} hook additional context: {text}")
}

/// How a hook's blocking feedback reads to the model.
pub fn feedback_text(event: HookEvent, text: &str) -> String {
    format!("{event} hook feedback: {text}")
}

/// `updatedMCPToolOutput`: a string, content blocks (MCP's kinds read as a
/// server's are: a resource was sent on as raw JSON), or any other JSON as
/// its text. It takes the tool's output's place in every later request, so
/// its text is bounded as a tool's output is ([`bounded_output`]).
fn replacement_content(output: Value) -> Vec<Content> {
    let blocks = match output {
        Value::String(text) => vec![Content::text(text)],
        other => mcp_blocks(&other)
            .or_else(|| serde_json::from_value::<Vec<Content>>(other.clone()).ok())
            .unwrap_or_else(|| vec![Content::text(other.to_string())]),
    };
    blocks
        .into_iter()
        .map(|block| match block {
            Content::Text(text) => Content::text(bounded_output(&text.text)),
            image => image,
        })
        .collect()
}

#[cfg(feature = "mcp")]
fn mcp_blocks(output: &Value) -> Option<Vec<Content>> {
    crate::mcp::content::hook_blocks(output)
}

/// Without MCP there is no MCP tool whose output a hook could replace.
#[cfg(not(feature = "mcp"))]
fn mcp_blocks(_output: &Value) -> Option<Vec<Content>> {
    None
}

/// `text`'s first 2000 lines and 50 KB (the tools' limits; a single line
/// longer than that is cut after 50 KB, as an MCP result's is), with a line
/// saying how much was cut when it was.
fn bounded_output(text: &str) -> String {
    use crate::support::truncate::{Limits, format_size, head_or_bytes};
    let (shown, lines, whole) = head_or_bytes(text, Limits::default());
    if whole {
        return shown;
    }
    format!(
        "{shown}\n\n[A hook's updatedMCPToolOutput cut to {lines} of {} lines, {} of {}: the limits of a tool's output]",
        text.split('\n').count(),
        format_size(shown.len()),
        format_size(text.len())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hooks_replacement_output_is_bounded_as_a_tools_output_is() {
        let long: String = (1..=3000).map(|i| format!("{i}\n")).collect();
        let content = replacement_content(Value::String(long));
        let text = content[0].as_text().unwrap();
        assert!(
            text.starts_with("1\n2\n") && text.contains("\n2000\n"),
            "{text}"
        );
        assert!(!text.contains("\n2001\n"));
        assert!(
            text.ends_with("[A hook's updatedMCPToolOutput cut to 2000 of 3001 lines, 8.7KB of 13.6KB: the limits of a tool's output]"),
            "{}",
            &text[text.len() - 150..]
        );
        assert_eq!(
            replacement_content(Value::String("short".into())),
            [Content::text("short")]
        );
        // MCP's own kinds of block read as a server's do.
        #[cfg(feature = "mcp")]
        assert_eq!(
            replacement_content(serde_json::json!([
                {"type": "text", "text": "block one"},
                {"type": "resource", "resource": {"uri": "file:///q", "text": "qq"}}
            ])),
            [
                Content::text("block one"),
                Content::text("[resource: file:///q]\nqq")
            ]
        );
        // One line of 3 MB is cut after 50 KB, not to nothing.
        let content = replacement_content(Value::String("Z".repeat(3_000_000)));
        let text = content[0].as_text().unwrap();
        assert!(text.starts_with(&"Z".repeat(50 * 1024)), "{}", &text[..100]);
        assert!(
            text.ends_with("\n\n[A hook's updatedMCPToolOutput cut to 1 of 1 lines, 50.0KB of 2.9MB: the limits of a tool's output]"),
            "{}",
            &text[text.len() - 150..]
        );
    }
}
