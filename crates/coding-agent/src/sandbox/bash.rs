//! bash under the sandbox: [`SandboxedBashOperations`] starts every command
//! through the sandbox helper, and when a command fails after printing a
//! permission error, adds a line saying the sandbox refused it, so the model
//! asks instead of retrying.

use std::path::Path;

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::helper::helper_launcher;
use super::policy::SandboxPolicy;
use crate::tools::bash::log::OutputLog;
use crate::tools::bash::ops::{
    BashOperations, ExecError, ExecOptions, ExitStatus, LocalBashOperations, OutputSender,
};

/// What a denied `open`, `connect` or `bind` prints, lower-cased: EACCES
/// (Landlock's file-system and TCP denials) and EPERM (its scoped sockets).
const PERMISSION_ERRORS: [&[u8]; 2] = [b"permission denied", b"operation not permitted"];

/// With the network off, these too: curl says only that it could not
/// connect, and Node (npm, `fetch`) only `connect EACCES 1.2.3.4:443`:
/// neither has the words above, and the model took the server for down.
/// Every TCP connect fails there, so the notice is right.
const NETWORK_OFF_ERRORS: [&[u8]; 4] = [
    b"permission denied",
    b"operation not permitted",
    b"couldn't connect to server",
    b"connect eacces",
];

/// Bytes of the previous chunk kept, so an error split across two chunks is
/// still found.
const CARRY_BYTES: usize = 32;

/// Output chunks in flight between the command and the scan.
const CHUNKS_IN_FLIGHT: usize = 16;

/// Runs bash commands on this machine inside the sandbox.
#[derive(Debug)]
pub struct SandboxedBashOperations {
    inner: LocalBashOperations,
    policy: SandboxPolicy,
}

impl SandboxedBashOperations {
    /// Commands run with the default shell under `policy`, started through
    /// `helper` (a binary whose `main` calls
    /// [`super::helper::run_if_invoked`]; for the `coding-agent` binary,
    /// itself).
    pub fn new(helper: &Path, policy: SandboxPolicy) -> Self {
        Self::with_operations(LocalBashOperations::new(), helper, policy)
    }

    /// As [`SandboxedBashOperations::new`], with a configured shell.
    pub fn with_operations(
        inner: LocalBashOperations,
        helper: &Path,
        policy: SandboxPolicy,
    ) -> Self {
        SandboxedBashOperations {
            inner: inner.launched_by(helper_launcher(helper, &policy)),
            policy,
        }
    }
}

#[async_trait]
impl BashOperations for SandboxedBashOperations {
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        options: ExecOptions,
    ) -> Result<ExitStatus, ExecError> {
        let on_data = options.on_data.clone();
        let (scanned, chunks) = mpsc::channel(CHUNKS_IN_FLIGHT);
        let options = ExecOptions {
            on_data: scanned,
            ..options
        };
        let errors: &[&[u8]] = if self.policy.allow_network {
            &PERMISSION_ERRORS
        } else {
            &NETWORK_OFF_ERRORS
        };
        let (outcome, saw_denial) = tokio::join!(
            self.inner.exec(command, cwd, options),
            forward_and_scan(chunks, &on_data, errors)
        );
        if saw_denial && matches!(outcome, Ok(ExitStatus::Code(code)) if code != 0) {
            let notice = format!("\n{}\n", self.policy.bash_denial_notice());
            // A closed receiver means nobody reads the output any more.
            let _ = on_data.send(notice.into_bytes()).await;
        }
        outcome
    }

    /// The commands run on this machine: their full output goes where the
    /// local one keeps it (the workspace's temp directory, writable in the
    /// sandbox).
    fn output_log(&self, dir: Option<&Path>, prefix: &str) -> Box<dyn OutputLog> {
        self.inner.output_log(dir, prefix)
    }
}

/// Passes every chunk on; true when the output held one of `errors`
/// (lower-case).
async fn forward_and_scan(
    mut chunks: mpsc::Receiver<Vec<u8>>,
    on_data: &OutputSender,
    errors: &[&[u8]],
) -> bool {
    let mut saw_denial = false;
    let mut window: Vec<u8> = Vec::new();
    while let Some(chunk) = chunks.recv().await {
        if !saw_denial {
            window.extend(chunk.iter().map(u8::to_ascii_lowercase));
            saw_denial = errors
                .iter()
                .any(|error| memchr::memmem::find(&window, error).is_some());
            let keep = window.len().saturating_sub(CARRY_BYTES);
            window.drain(..keep);
        }
        // Keep draining even when nobody reads, so the command never blocks.
        let _ = on_data.send(chunk).await;
    }
    saw_denial
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn scan(chunks: &[&str]) -> (bool, String) {
        scan_for(chunks, &PERMISSION_ERRORS).await
    }

    async fn scan_for(chunks: &[&str], errors: &[&[u8]]) -> (bool, String) {
        let (input, receiver) = mpsc::channel(8);
        let (output, mut forwarded) = mpsc::channel(8);
        for chunk in chunks {
            input.send(chunk.as_bytes().to_vec()).await.unwrap();
        }
        drop(input);
        let saw = forward_and_scan(receiver, &output, errors).await;
        drop(output);
        let mut text = String::new();
        while let Some(chunk) = forwarded.recv().await {
            text.push_str(&String::from_utf8(chunk).unwrap());
        }
        (saw, text)
    }

    #[tokio::test]
    async fn permission_errors_are_found_across_chunks_and_output_is_kept() {
        assert_eq!(
            scan(&["touch: cannot touch '/x': Permis", "sion denied\n"]).await,
            (true, "touch: cannot touch '/x': Permission denied\n".into())
        );
        assert_eq!(
            scan(&["EACCES: PERMISSION DENIED"]).await,
            (true, "EACCES: PERMISSION DENIED".into())
        );
        assert_eq!(
            scan(&["kill: Operation not permitted"]).await,
            (true, "kill: Operation not permitted".into())
        );
        assert_eq!(
            scan(&["No such file\n"]).await,
            (false, "No such file\n".into())
        );
    }

    #[tokio::test]
    async fn with_the_network_off_curls_failed_connect_counts_too() {
        let curl = "curl: (7) Failed to connect to 127.0.0.1 port 8080 after 0 ms: Couldn't connect to server\n";
        assert!(scan_for(&[curl], &NETWORK_OFF_ERRORS).await.0);
        assert!(!scan_for(&[curl], &PERMISSION_ERRORS).await.0);
    }

    /// How other clients word the sandbox's refused connect: Node's (and
    /// so npm's) has neither "permission denied" nor "not permitted", and
    /// got no notice.
    #[tokio::test]
    async fn with_the_network_off_every_common_clients_refused_connect_counts() {
        for refused in [
            "Error: connect EACCES 127.0.0.1:18115\n    at TCPConnectWrap.afterConnect",
            "npm error code EACCES\nnpm error syscall connect\nnpm error errno EACCES\nnpm error request to https://registry.npmjs.org/x failed, reason: connect EACCES 104.16.0.35:443",
            "PermissionError: [Errno 13] Permission denied",
            "dial tcp 127.0.0.1:8080: connect: permission denied",
            "ssh: connect to host example.com port 22: Permission denied",
        ] {
            assert!(
                scan_for(&[refused], &NETWORK_OFF_ERRORS).await.0,
                "{refused}"
            );
        }
    }
}
