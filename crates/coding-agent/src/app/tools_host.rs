//! Where a session's tools ran, recorded in its file so that a session
//! going on elsewhere is warned about: its history names the files of the
//! machine its tools acted on, so continuing a `--remote` session without
//! the flag (`-c`, `/resume`, RPC `switch_session`) would run the tools here
//! on paths of there.

use serde_json::json;

use crate::session::SessionManager;

/// The `custom` session entry (Pi's entry for an extension's data, which
/// Pi skips) recording where the session's tools run: `{"remote": TARGET,
/// "flags": "--remote TARGET --ssh-config FILE"}`, or `{"remote": null}`
/// for this machine.
pub const TOOLS_HOST_TYPE: &str = "tools_host";

/// A remote host the tools act on, as the session file records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsHost {
    /// The `--remote` target with its directory (`ssh://dev@box/srv/app`).
    pub target: String,
    /// The flags that reach it again (`--remote`, and `--ssh-config`,
    /// `--ssh-option` when they were given): what the warning says to add.
    pub flags: String,
}

/// Records in `session` that its tools run on `now` (`None`: this machine)
/// when that changed, and warns when they ran on a remote host before.
/// Only the flags (or settings) decide where the tools run; the warning
/// says how to go back.
pub fn note(session: &mut SessionManager, now: Option<&ToolsHost>) {
    let last = session.last_custom(TOOLS_HOST_TYPE);
    let last_target = last
        .as_ref()
        .and_then(|data| data.get("remote")?.as_str().map(str::to_owned));
    if last_target.as_deref() == now.map(|host| host.target.as_str()) {
        return;
    }
    if let Some(target) = &last_target {
        // Entries before the flags were recorded name the target alone.
        let flags = last
            .as_ref()
            .and_then(|data| data.get("flags")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("--remote {target}"));
        tracing::warn!(
            "this session's tools ran on {target}; now they run on {}. To continue there, add {flags}",
            now.map_or("this machine", |host| host.target.as_str())
        );
    }
    let data = match now {
        Some(host) => json!({"remote": host.target, "flags": host.flags}),
        None => json!({"remote": null}),
    };
    if let Err(error) = session.append_custom(TOOLS_HOST_TYPE, data) {
        tracing::warn!("cannot save the session: {error}");
    }
}
