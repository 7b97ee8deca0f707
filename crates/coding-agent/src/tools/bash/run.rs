//! One command run as the bash tool runs it: its output kept by an
//! [`OutputAccumulator`] (escape sequences stripped, the tail within Pi's
//! limits, the whole in a temp file once cut) and sent as progress, at most
//! one snapshot per [`UPDATE_THROTTLE`]. The tool and the user's own
//! commands (RPC `bash`, `!cmd`) both run through [`run_streaming`].

use std::path::Path;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::Content;
use agent_core::{AgentToolResult, UpdateSink};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::BashDetails;
use super::ops::{BashOperations, ExecError, ExecOptions, ExitStatus};
use super::output::{OutputAccumulator, OutputSnapshot};
use crate::support::sync::lock;
use crate::support::truncate::Limits;

/// Progress updates are sent at most this often (Pi's `BASH_UPDATE_THROTTLE_MS`).
pub const UPDATE_THROTTLE: Duration = Duration::from_millis(100);

/// Prefix of the full-output file's name: `pi-bash-<16 hex>.log`.
pub const FULL_OUTPUT_PREFIX: &str = "pi-bash";

/// Output chunks in flight between the command and the accumulator, at most.
const CHUNKS_IN_FLIGHT: usize = 16;

/// What to run, and where.
#[derive(Debug)]
pub struct CommandRun<'a> {
    /// The whole command line.
    pub command: &'a str,
    /// The directory it runs in.
    pub cwd: &'a Path,
    /// Variables set on top of the inherited environment.
    pub env: Vec<(String, String)>,
    /// Killed after this long (`None`: never).
    pub timeout: Option<Duration>,
    /// Where the full-output file goes (`None`: the system's temp dir).
    pub temp_dir: Option<&'a Path>,
}

/// Runs `run` through `ops` until it exits, times out or `cancel` fires,
/// sending snapshots of its output to `updates` (an empty one first, so a
/// UI shows it running); returns how it ended and the final output.
pub async fn run_streaming(
    ops: &dyn BashOperations,
    run: CommandRun<'_>,
    cancel: CancellationToken,
    updates: &UpdateSink,
) -> (Result<ExitStatus, ExecError>, OutputSnapshot) {
    let log = ops.output_log(run.temp_dir, FULL_OUTPUT_PREFIX);
    let accumulator = Arc::new(Mutex::new(OutputAccumulator::new(log, Limits::default())));
    let changed = Arc::new(Notify::new());
    let (on_data, chunks) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let consumer = tokio::task::spawn_blocking({
        let accumulator = Arc::clone(&accumulator);
        let changed = Arc::clone(&changed);
        move || consume(chunks, &accumulator, &changed)
    });

    let mut progress = Progress::new(updates, &accumulator);
    updates.send(AgentToolResult::default());
    let options = ExecOptions {
        env: run.env,
        timeout: run.timeout,
        cancel,
        on_data,
    };
    let mut exec = pin!(ops.exec(run.command, run.cwd, options));
    let mut trailing = pin!(tokio::time::sleep(Duration::ZERO));
    let mut trailing_armed = false;
    let outcome = loop {
        tokio::select! {
            outcome = exec.as_mut() => break outcome,
            () = changed.notified() => {
                let due = match progress.next_due() {
                    None if progress.try_send() => None,
                    None => Some(Instant::now() + UPDATE_THROTTLE),
                    due => due,
                };
                if let Some(due) = due && !trailing_armed {
                    trailing.as_mut().reset(due);
                    trailing_armed = true;
                }
            }
            () = trailing.as_mut(), if trailing_armed => {
                trailing_armed = !progress.try_send();
                if trailing_armed {
                    trailing.as_mut().reset(Instant::now() + UPDATE_THROTTLE);
                }
            }
        }
    };
    if consumer.await.is_err() {
        tracing::warn!("bash output consumer panicked");
    }
    progress.send();
    let snapshot = lock(&accumulator).snapshot();
    (outcome, snapshot)
}

/// Feeds output chunks to the accumulator until the command's side hangs up.
fn consume(
    mut chunks: mpsc::Receiver<Vec<u8>>,
    accumulator: &Mutex<OutputAccumulator>,
    changed: &Notify,
) {
    let mut file_failed = false;
    while let Some(chunk) = chunks.blocking_recv() {
        if let Err(error) = lock(accumulator).push(&chunk)
            && !file_failed
        {
            file_failed = true;
            tracing::warn!("cannot write the full bash output file: {error}");
        }
        changed.notify_one();
    }
    if let Err(error) = lock(accumulator).finish() {
        tracing::warn!("cannot finish the full bash output file: {error}");
    }
}

/// Sends snapshots of the output, at most one per [`UPDATE_THROTTLE`], and
/// only when the output changed since the last one.
struct Progress<'a> {
    updates: &'a UpdateSink,
    accumulator: &'a Mutex<OutputAccumulator>,
    sent_version: u64,
    sent_at: Option<Instant>,
}

impl<'a> Progress<'a> {
    fn new(updates: &'a UpdateSink, accumulator: &'a Mutex<OutputAccumulator>) -> Self {
        Progress {
            updates,
            accumulator,
            sent_version: 0,
            sent_at: None,
        }
    }

    /// When the next update may go, if that is not now.
    fn next_due(&self) -> Option<Instant> {
        let due = self.sent_at? + UPDATE_THROTTLE;
        (due > Instant::now()).then_some(due)
    }

    /// Sends the output as it is now, waiting for the accumulator (once
    /// the consumer is done with it).
    fn send(&mut self) {
        let accumulator = lock(self.accumulator);
        let now = (accumulator.version(), accumulator.snapshot());
        drop(accumulator);
        self.send_snapshot(now);
    }

    /// [`Progress::send`] unless the consumer holds the accumulator; false
    /// then (try again later). An async task must not wait for it: a
    /// remote full-output file is written under that lock, and its write
    /// waits for a reply this runtime has to read, which a worker blocked
    /// here may be the one holding (RPC mode hung on a remote command's
    /// first megabytes).
    fn try_send(&mut self) -> bool {
        let accumulator = match self.accumulator.try_lock() {
            Ok(accumulator) => accumulator,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        };
        let now = (accumulator.version(), accumulator.snapshot());
        drop(accumulator);
        self.send_snapshot(now);
        true
    }

    fn send_snapshot(&mut self, (version, snapshot): (u64, OutputSnapshot)) {
        if version == self.sent_version {
            return;
        }
        self.sent_version = version;
        self.sent_at = Some(Instant::now());
        let content = vec![Content::text(snapshot.truncation.content.clone())];
        let details = BashDetails {
            truncation: snapshot.truncation.truncated.then_some(snapshot.truncation),
            full_output_path: snapshot.full_output_path,
            ended: None,
        };
        self.updates.send(AgentToolResult {
            content,
            details: serde_json::to_value(details).ok(),
            terminate: false,
        });
    }
}
