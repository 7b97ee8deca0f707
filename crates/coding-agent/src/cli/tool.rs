//! `coding-agent tool NAME ARGS_JSON`: one tool call run the way the agent
//! loop runs it, printed as one JSON object.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::{Content, ToolCall};
use agent_core::{AgentTool, NoHooks, ToolSet, run_single_tool_call};
use anyhow::Context as _;
use coding_agent::definition::ContextFactory;
use coding_agent::guard::config::GuardConfigError;
use coding_agent::guard::policy::{Places, RuleTexts};
use coding_agent::guard::{self, Guard, Mode, NoApprover, Policy, RuleFiles};
use coding_agent::remote::{RemoteOperations, remote_tool};
use coding_agent::sandbox::{Sandbox, SandboxSettings};
use coding_agent::settings::{SETTINGS_FILE, agent_dir};
use coding_agent::tools::BUILTIN_TOOL_NAMES;
use coding_agent::{ToolContext, wrap_tool_definition};
use serde::Serialize;
use serde_json::Value;

use super::sandbox::{bypass_sandbox, start_remote_sandbox, start_sandbox};
use super::{ToolArgs, UsageError, cancel_on_ctrl_c};

/// What `tool` does on Ctrl-C (stderr says it).
const INTERRUPTED: &str = "cancelling the call";

/// What `coding-agent tool` prints: the parts of the tool-result message a
/// caller needs, with `details` always present (`null` when the tool gave none).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolOutput<'a> {
    is_error: bool,
    content: &'a [Content],
    details: &'a Option<Value>,
}

/// Runs one tool call as the agent loop runs it and prints its result as one
/// JSON object (not when Ctrl-C came before the call).
pub(super) async fn tool_command(args: ToolArgs) -> anyhow::Result<()> {
    crate::logging::to_stderr();
    // Installed first, so Ctrl-C while the arguments are still being read also
    // cancels the call instead of killing the process.
    let cancel = cancel_on_ctrl_c(INTERRUPTED);
    let remote = args.remote.connect(args.cwd.as_deref(), None).await?;
    let cwd = match &remote {
        Some(host) => host.cwd().to_path_buf(),
        None => working_directory(args.cwd.as_deref())?,
    };
    let arguments = tokio::select! {
        arguments = read_arguments(&args.args_json) => arguments?,
        // Before any call: nothing to print, and the process ends by the
        // signal (`cli::main`). The first Ctrl-C only said so, and the read
        // of stdin went on waiting.
        () = cancel.cancelled() => return Ok(()),
    };

    // The flags only: a script's result must not depend on settings files.
    // Remote bash is sandboxed by the remote kernel, when it can.
    let settings = SandboxSettings::default();
    let (sandbox, remote_ops) = match &remote {
        _ if args.permission_mode == Some(Mode::Bypass) => {
            let sandbox = bypass_sandbox(&args.sandbox);
            (sandbox, remote.clone().map(RemoteOperations::new))
        }
        Some(host) => {
            let (sandbox, commands) = start_remote_sandbox(&args.sandbox, &settings, host).await?;
            let ops = RemoteOperations::new(Arc::clone(host)).with_sandbox(commands);
            (sandbox, Some(ops))
        }
        None => (start_sandbox(&args.sandbox, &settings, &cwd)?, None),
    };
    let places = super::remote::policy_places(&cwd, remote.as_deref());
    let tools = ToolSet::new(builtin_agent_tools(cwd.clone(), &sandbox, remote_ops))
        .context("a built-in tool's schema")?;
    let call = ToolCall {
        id: "call_cli".into(),
        name: args.name,
        arguments,
        thought_signature: None,
        recovered_from_text: None,
    };
    // The same five steps the agent loop runs: with no hooks, or with the
    // policy of --permission-mode when it is given.
    let message = match args.permission_mode {
        Some(mode) => {
            let guard = flag_guard(mode, places, &sandbox).map_err(UsageError::Guard)?;
            run_single_tool_call(&tools, &call, &guard, &cancel).await
        }
        None => run_single_tool_call(&tools, &call, &NoHooks, &cancel).await,
    };

    let output = ToolOutput {
        is_error: message.is_error,
        content: &message.content,
        details: &message.details,
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &output).context("cannot write the result")?;
    writeln!(stdout).context("cannot write the result")?;
    stdout.flush().context("cannot write the result")
}

/// The guard of `tool --permission-mode MODE`: that mode's policy with no
/// rules (a script's result must not depend on settings files), no hooks,
/// and no one to ask; paths are judged in `places`.
pub(super) fn flag_guard(
    mode: Mode,
    places: Places,
    sandbox: &Sandbox,
) -> Result<Guard, GuardConfigError> {
    let policy = Policy::new(
        mode,
        guard::sandbox_facts(sandbox.status()),
        places,
        &RuleTexts::default(),
    )?;
    Ok(Guard::new(
        policy,
        None,
        Arc::new(NoApprover::without_rules()),
        // No one asks, so no rule is ever saved.
        RuleFiles {
            project: None,
            global: agent_dir().join(SETTINGS_FILE),
        },
    ))
}

/// `--cwd` made absolute (symlinks kept, as Pi keeps `process.cwd()`), or the
/// current directory.
pub(super) fn working_directory(cwd: Option<&Path>) -> anyhow::Result<PathBuf> {
    let Some(path) = cwd else {
        return std::env::current_dir().context("cannot read the current directory");
    };
    let bad = |reason: String| UsageError::BadCwd {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(std::path::absolute(path).map_err(|e| bad(e.to_string()))?),
        Ok(_) => Err(bad("not a directory".into()).into()),
        Err(e) => Err(bad(e.to_string()).into()),
    }
}

/// ARGS_JSON parsed, read from standard input when it is `-`. Any JSON value
/// is accepted: a non-object is the model's mistake, which validation reports.
pub(super) async fn read_arguments(args_json: &str) -> anyhow::Result<Value> {
    let text = if args_json == "-" {
        // A thread of its own, not a blocking task of the runtime: a read
        // left waiting when Ctrl-C ends the command would hold the runtime's
        // shutdown for its whole grace; this thread ends with the process.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let read = std::io::stdin().read_to_string(&mut text).map(|_| text);
            let _ = sender.send(read);
        });
        receiver.await?.map_err(UsageError::Stdin)?
    } else {
        args_json.to_owned()
    };
    Ok(serde_json::from_str(&text).map_err(UsageError::BadJson)?)
}

/// The built-in tools present in this build, as the loop sees them, each
/// executing in `cwd`: on `remote` when given, else confined to `sandbox`.
fn builtin_agent_tools(
    cwd: PathBuf,
    sandbox: &Sandbox,
    remote: Option<RemoteOperations>,
) -> Vec<Arc<dyn AgentTool>> {
    let ctx_factory: ContextFactory = Arc::new(move |cancel| ToolContext {
        cancel,
        ..ToolContext::new(cwd.clone())
    });
    BUILTIN_TOOL_NAMES
        .iter()
        .filter_map(|name| match &remote {
            Some(ops) => remote_tool(name, ops),
            None => sandbox.builtin_tool(name),
        })
        .map(|definition| wrap_tool_definition(definition, ctx_factory.clone()))
        .collect()
}
