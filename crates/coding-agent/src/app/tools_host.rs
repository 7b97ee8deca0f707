//! Where a session's tools ran, recorded in its file so that a session
//! going on elsewhere is warned about: its history names the files of the
//! machine its tools acted on, so continuing a `--remote` session without
//! the flag (`-c`, `/resume`, RPC `switch_session`) would run the tools here
//! on paths of there.

use serde_json::json;

use crate::session::SessionManager;

/// The `custom` session entry (Pi's entry for an extension's data, which
/// Pi skips) recording where the session's tools run: `{"remote": TARGET}`,
/// or `{"remote": null}` for this machine.
pub const TOOLS_HOST_TYPE: &str = "tools_host";

/// Records in `session` that its tools run on `now` (a `--remote` target,
/// `None` for this machine) when that changed, and warns when they ran on a
/// remote host before. Only the flags (or settings) decide where the tools
/// run; the warning says how to go back.
pub fn note(session: &mut SessionManager, now: Option<&str>) {
    let last = session
        .last_custom(TOOLS_HOST_TYPE)
        .and_then(|data| data.get("remote")?.as_str().map(str::to_owned));
    if last.as_deref() == now {
        return;
    }
    if let Some(last) = &last {
        tracing::warn!(
            "this session's tools ran on {last}; now they run on {}. To continue there, add --remote {last}",
            now.unwrap_or("this machine")
        );
    }
    if let Err(error) = session.append_custom(TOOLS_HOST_TYPE, json!({ "remote": now })) {
        tracing::warn!("cannot save the session: {error}");
    }
}
