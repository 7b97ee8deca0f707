//! Runs a built session in its mode: the interactive UI, RPC, or print
//! (text or JSON), with Ctrl-C aborting the run.

use std::sync::Arc;

use agent_ai::Message;
use agent_ai::providers::probe::server_context_window;
use anyhow::Context as _;
use coding_agent::app::AgentSession;
use coding_agent::hooks::lifecycle::SessionEndReason;
use coding_agent::modes::print::{EXIT_INTERRUPTED, EXIT_READER_GONE};
use coding_agent::modes::{PrintFormat, RpcEnd, run_print, run_rpc_with};
use coding_agent::remote::RemoteOperations;
use coding_agent::sandbox::Sandbox;
use coding_agent::tools::bash::ops::BashOperations;
#[cfg(feature = "tui")]
use coding_agent::tools::ls::ops::LsOperations;

use super::build::Built;
use super::{ModeArg, cancel_on_ctrl_c};

/// What print and JSON mode do on Ctrl-C (stderr says it).
const RUN_INTERRUPTED: &str = "aborting the run";

/// What RPC mode does on Ctrl-C (stderr says it).
const RPC_INTERRUPTED: &str = "aborting the run and bash commands";

/// Runs `built` with the prompts `messages` (none for RPC and the
/// interactive UI); returns the exit status.
pub(super) async fn dispatch(messages: &[Message], mut built: Built) -> anyhow::Result<u8> {
    #[cfg(feature = "tui")]
    if let Some(mut interactive) = built.interactive {
        interactive.files = built
            .remote
            .clone()
            .map(|ops| Arc::new(ops) as Arc<dyn LsOperations>);
        interactive.user_bash = Some(user_bash_operations(built.remote, &built.sandbox));
        if let Some(url) = &built.probe_url {
            interactive.served_window = server_context_window(url, &built.options.model.id).await;
        }
        return coding_agent::modes::interactive::run_interactive(built.options, interactive).await;
    }
    let session = AgentSession::new(built.options).context("a built-in tool's schema")?;
    #[cfg(feature = "mcp")]
    if let Some(servers) = built.mcp {
        session.set_mcp(servers.clone());
        // RPC serves commands while they start (see `cli/build.rs`); a
        // prompt's run waits for them.
        if built.mode == ModeArg::Rpc {
            tokio::spawn(async move {
                for failure in servers.start_all().await {
                    tracing::warn!("{failure}");
                }
            });
        }
    }
    if let Some(url) = built.probe_url {
        built.recovery.context_window = server_context_window(&url, &session.model().id).await;
    }
    session.set_recovery(built.recovery);

    match built.mode {
        ModeArg::Rpc => {
            session.set_models(built.models);
            let stop = cancel_on_ctrl_c(RPC_INTERRUPTED);
            let stdin = tokio::io::stdin();
            let bash_ops = user_bash_operations(built.remote, &built.sandbox);
            let end =
                run_rpc_with(session.clone(), bash_ops, stdin, tokio::io::stdout(), &stop).await?;
            // Stopped by a signal too: the hooks' cleanup is bounded by
            // their timeout, and a second signal exits at once.
            session.close(SessionEndReason::Other).await;
            // The session's tools hold a `--remote` connection, whose drop
            // removes its control socket's directory: before any exit.
            drop(session);
            match end {
                RpcEnd::InputClosed => Ok(0),
                // Everything is written and every command has ended. Exit
                // now: the runtime's shutdown would wait for the blocking
                // read of stdin, which the client may never end.
                RpcEnd::Stopped => std::process::exit(EXIT_INTERRUPTED.into()),
                RpcEnd::ReaderGone => std::process::exit(EXIT_READER_GONE.into()),
            }
        }
        ModeArg::Text | ModeArg::Json => {
            let format = if built.mode == ModeArg::Json {
                PrintFormat::Json
            } else {
                PrintFormat::Text
            };
            let interrupt = cancel_on_ctrl_c(RUN_INTERRUPTED);
            let mut stdout = std::io::stdout();
            let mut stderr = std::io::stderr();
            let status = run_print(
                &session,
                messages,
                format,
                &mut stdout,
                &mut stderr,
                &interrupt,
            )
            .await;
            // Output that cannot be written (a reader that went away) does
            // not keep the SessionEnd hooks from their cleanup.
            session.close(SessionEndReason::Other).await;
            Ok(status?)
        }
    }
}

/// Where the user's own commands (RPC `bash`, `!cmd`) run: where the tools
/// do, under the same sandbox.
fn user_bash_operations(
    remote: Option<RemoteOperations>,
    sandbox: &Sandbox,
) -> Arc<dyn BashOperations> {
    match remote {
        Some(ops) => Arc::new(ops),
        None => sandbox.bash_operations(),
    }
}
