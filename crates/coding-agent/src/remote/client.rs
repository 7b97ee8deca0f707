//! The local end of the helper channel: sends [`Call`]s, routes each
//! [`Reply`] to the call with its id, and turns a dropped connection into
//! [`Lost`] for every call in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::protocol::{Call, Frame, Reply, read_frame, write_frames};
use crate::support::sync::lock;

/// Bytes read from the helper's channel at a time, at most.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Calls waiting to be written, at most.
const CALLS_IN_FLIGHT: usize = 64;

/// The connection to the remote host ended; the text says why, in ssh's
/// words when it gave any.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Remote connection lost: {0}")]
pub struct Lost(pub String);

/// Each waiting call's replies. Unbounded: the one reader of the helper's
/// stdout must never wait for a call to take its replies, or a call whose
/// taker waits for another call (bash, whose output log is appended to on
/// the remote host as the output comes) waits for itself; with room for 16
/// replies a call, a command printing more than a few MiB hung for good.
/// What a call's channel holds is bounded by the helper instead: it sends
/// at most `OUTPUT_WINDOW` output chunks not yet taken.
type Pending = Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<Reply>>>>;

/// One helper channel shared by every call.
#[derive(Debug)]
pub struct HelperChannel {
    calls: mpsc::Sender<Frame<Call>>,
    pending: Pending,
    next_id: AtomicU64,
    /// Why the channel closed, once it has.
    lost: Arc<OnceLock<String>>,
    closed: CancellationToken,
    /// Bytes received from the helper so far.
    received: Arc<AtomicU64>,
}

impl HelperChannel {
    /// Starts the reader and writer tasks on the helper's stdout and stdin.
    /// `why_lost` is asked, once the channel ends, for the reason to report
    /// (ssh's last words).
    pub fn start<W, R, F>(to_helper: W, from_helper: R, why_lost: F) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
        R: AsyncRead + Unpin + Send + 'static,
        F: Future<Output = String> + Send + 'static,
    {
        let (calls, outgoing) = mpsc::channel(CALLS_IN_FLIGHT);
        let pending: Pending = Arc::default();
        let lost = Arc::new(OnceLock::new());
        let closed = CancellationToken::new();
        let received = Arc::new(AtomicU64::new(0));
        tokio::spawn(write_calls(
            to_helper,
            outgoing,
            pending.clone(),
            closed.clone(),
        ));
        // Buffered: the replies of a batch arrive together and are read
        // with one system call, not two per frame.
        tokio::spawn(route_replies(
            tokio::io::BufReader::with_capacity(
                READ_BUFFER_BYTES,
                Counted {
                    inner: from_helper,
                    count: Arc::clone(&received),
                },
            ),
            Arc::clone(&pending),
            Arc::clone(&lost),
            closed.clone(),
            why_lost,
        ));
        HelperChannel {
            calls,
            pending,
            next_id: AtomicU64::new(1),
            lost,
            closed,
            received,
        }
    }

    /// Bytes received from the helper since the channel started: what the
    /// link carried back (a read near the end of a huge file moves only
    /// its window).
    pub fn bytes_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Whether the channel has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Ends the channel as lost for `why` (a link found stalled): every
    /// caller still waiting gets `Lost`, and the next call opens a new
    /// connection instead of waiting on this one too.
    pub fn abandon(&self, why: String) {
        let _ = self.lost.set(why);
        self.closed.cancel();
        lock(&self.pending).clear();
    }

    /// Fires when the channel ends.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    fn lost(&self) -> Lost {
        Lost(
            self.lost
                .get()
                .cloned()
                .unwrap_or_else(|| "the ssh connection closed".into()),
        )
    }

    /// Sends `call`; its replies come through the returned [`CallReplies`].
    pub async fn start_call(&self, call: Call) -> Result<CallReplies<'_>, Lost> {
        if self.is_closed() {
            return Err(self.lost());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, replies) = mpsc::unbounded_channel();
        lock(&self.pending).insert(id, sender);
        let call_replies = CallReplies {
            channel: self,
            id,
            replies,
            finished: false,
            cancel_sent: false,
        };
        if self.calls.send(Frame { id, body: call }).await.is_err() {
            return Err(self.lost());
        }
        Ok(call_replies)
    }

    /// Asks the helper whether it still answers: a call that hears nothing
    /// for a while may be a long command, or a helper that stopped (a
    /// suspended process, a host swapping itself to a halt) behind a link
    /// that is up, which ssh's keepalives never notice: such a call waited
    /// for ever. No answer within [`PING_GRACE`] ends the channel, lost;
    /// the next call reconnects.
    async fn check_alive(&self) -> Result<(), Lost> {
        let mut pong = self.start_call(Call::Ping).await?;
        match tokio::time::timeout(PING_GRACE, pong.replies.recv()).await {
            Ok(Some(_)) => {
                pong.finished = true;
                Ok(())
            }
            Ok(None) => Err(self.lost()),
            Err(_) => {
                self.abandon(format!(
                    "the helper on the remote host has not answered for {} s (the connection is up, but the helper is stopped or the host is overloaded)",
                    (QUIET_BEFORE_PING + PING_GRACE).as_secs()
                ));
                Err(self.lost())
            }
        }
    }

    /// Runs `call` to its one reply; cancelling asks the helper to stop and
    /// still waits for its answer (so a write that already happened is
    /// reported as done).
    pub async fn call(&self, call: Call, cancel: &CancellationToken) -> Result<Reply, Lost> {
        let mut replies = self.start_call(call).await?;
        loop {
            match replies.next(cancel).await? {
                Some(reply) if reply.is_final() => return Ok(reply),
                // Output chunks of a call that is not bash: nothing to keep.
                Some(_) => {}
                None => return Err(Lost("the helper sent no final reply".into())),
            }
        }
    }
}

/// How long a cancelled call waits for the helper's next reply before the
/// link counts as stalled.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// How long a call hears nothing before it asks whether the helper still
/// answers ([`HelperChannel::check_alive`]).
const QUIET_BEFORE_PING: Duration = Duration::from_secs(30);

/// How long the helper has to answer a ping.
const PING_GRACE: Duration = Duration::from_secs(10);

/// The replies of one call. Dropped before its final reply, it cancels the
/// call on the helper, so nothing runs there for a caller that left.
#[derive(Debug)]
pub struct CallReplies<'a> {
    channel: &'a HelperChannel,
    id: u64,
    replies: mpsc::UnboundedReceiver<Reply>,
    finished: bool,
    cancel_sent: bool,
}

impl CallReplies<'_> {
    /// The next reply; sends the helper a cancel once `cancel` fires (and
    /// keeps waiting for the final reply). `Ok(None)` only after the final
    /// reply was returned.
    pub async fn next(&mut self, cancel: &CancellationToken) -> Result<Option<Reply>, Lost> {
        if self.finished {
            return Ok(None);
        }
        let reply = if self.cancel_sent {
            self.recv_after_cancel().await?
        } else {
            loop {
                tokio::select! {
                    reply = self.replies.recv() => break reply,
                    () = cancel.cancelled() => {
                        self.send_cancel();
                        break self.recv_after_cancel().await?;
                    }
                    () = tokio::time::sleep(QUIET_BEFORE_PING) => self.channel.check_alive().await?,
                }
            }
        };
        match reply {
            Some(reply) => {
                self.finished = reply.is_final();
                if !self.finished {
                    // The helper may send another (see `OUTPUT_WINDOW`).
                    let taken = Frame {
                        id: self.id,
                        body: Call::Taken,
                    };
                    let _ = self.channel.calls.send(taken).await;
                }
                Ok(Some(reply))
            }
            None => Err(self.channel.lost()),
        }
    }

    /// The next reply of a cancelled call, which the helper sends at once
    /// (it kills what runs and answers): none within [`CANCEL_GRACE`] is a
    /// stalled link (a suspended host, a network gone without a reset),
    /// given up on, so a stop takes seconds, not ssh's keepalive minute or,
    /// with keepalives off, for ever. The next call reconnects.
    async fn recv_after_cancel(&mut self) -> Result<Option<Reply>, Lost> {
        match tokio::time::timeout(CANCEL_GRACE, self.replies.recv()).await {
            Ok(reply) => Ok(reply),
            Err(_) => {
                self.channel.abandon(format!(
                    "no answer from the remote host {} s after the call was cancelled (the connection is stalled)",
                    CANCEL_GRACE.as_secs()
                ));
                Err(self.channel.lost())
            }
        }
    }

    /// Asks the helper to cancel this call, once.
    fn send_cancel(&mut self) {
        if self.cancel_sent {
            return;
        }
        self.cancel_sent = true;
        let calls = self.channel.calls.clone();
        let id = self.id;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = calls
                    .send(Frame {
                        id,
                        body: Call::Cancel,
                    })
                    .await;
            });
        }
    }
}

impl Drop for CallReplies<'_> {
    fn drop(&mut self) {
        lock(&self.channel.pending).remove(&self.id);
        if !self.finished {
            self.send_cancel();
        }
    }
}

/// A reader that counts the bytes it passes on.
struct Counted<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.count.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}

async fn write_calls<W: AsyncWrite + Unpin>(
    mut to_helper: W,
    mut outgoing: mpsc::Receiver<Frame<Call>>,
    pending: Pending,
    closed: CancellationToken,
) {
    let mut buffer = Vec::new();
    // A call too large to send is refused to its caller, not sent.
    let mut refuse = |id, why: String| {
        if let Some(caller) = lock(&pending).remove(&id) {
            let _ = caller.send(Reply::Refused(format!("it is {why}")));
        }
        None
    };
    loop {
        let frame = tokio::select! {
            frame = outgoing.recv() => frame,
            () = closed.cancelled() => None,
        };
        let Some(frame) = frame else { break };
        if write_frames(
            &mut to_helper,
            frame,
            &mut outgoing,
            &mut buffer,
            &mut refuse,
        )
        .await
        .is_err()
        {
            break;
        }
    }
}

async fn route_replies<R: AsyncRead + Unpin, F: Future<Output = String>>(
    mut from_helper: R,
    pending: Pending,
    lost: Arc<OnceLock<String>>,
    closed: CancellationToken,
    why_lost: F,
) {
    let broken = loop {
        match read_frame::<Reply>(&mut from_helper).await {
            Ok(Some(Frame { id, body })) => {
                let sender = {
                    let mut pending = lock(&pending);
                    if body.is_final() {
                        pending.remove(&id)
                    } else {
                        pending.get(&id).cloned()
                    }
                };
                if let Some(sender) = sender {
                    // The caller may have left; its replies are dropped.
                    let _ = sender.send(body);
                }
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    let mut reason = why_lost.await;
    if reason.is_empty() {
        reason = broken.unwrap_or_else(|| "the ssh connection closed".into());
    }
    let _ = lost.set(reason);
    closed.cancel();
    // Every caller still waiting sees its sender dropped: `Lost`.
    lock(&pending).clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::protocol::read_greeting;

    /// A channel to a helper served in this process over a pipe, and the
    /// helper's task.
    async fn served_helper() -> (HelperChannel, tokio::task::JoinHandle<std::io::Result<()>>) {
        let (local, remote) = tokio::io::duplex(1 << 16);
        let (remote_read, remote_write) = tokio::io::split(remote);
        let helper = tokio::spawn(crate::remote::helper::serve(remote_read, remote_write));
        let (mut local_read, local_write) = tokio::io::split(local);
        read_greeting(&mut local_read).await.unwrap();
        let channel = HelperChannel::start(local_write, local_read, async { String::new() });
        (channel, helper)
    }

    #[tokio::test]
    async fn calls_run_concurrently_and_a_closed_helper_ends_them_as_lost() {
        let (channel, helper) = served_helper().await;
        let dir = tempfile::tempdir().unwrap();
        let never = CancellationToken::new();
        let (a, b) = tokio::join!(
            channel.call(Call::LsExists(dir.path().to_path_buf()), &never),
            channel.call(Call::LsExists(dir.path().join("nothing")), &never),
        );
        assert!(matches!(a.unwrap(), Reply::Exists(true)));
        assert!(matches!(b.unwrap(), Reply::Exists(false)));
        helper.abort();
        let _ = helper.await;
        channel.closed().cancelled().await;
        assert_eq!(
            channel
                .call(Call::LsExists(dir.path().to_path_buf()), &never)
                .await
                .unwrap_err()
                .to_string(),
            "Remote connection lost: the ssh connection closed"
        );
    }

    /// A channel to a helper that reads nothing and answers nothing (a
    /// stalled link, a stopped helper) while the returned end is held.
    fn unanswered_channel() -> (HelperChannel, tokio::io::DuplexStream) {
        let (local, remote) = tokio::io::duplex(1 << 16);
        let (local_read, local_write) = tokio::io::split(local);
        let channel = HelperChannel::start(local_write, local_read, async { String::new() });
        (channel, remote)
    }

    /// A call cancelled on a link that carries nothing any more ends, lost,
    /// after [`CANCEL_GRACE`], and so does the channel (the next call
    /// reconnects): it waited for ssh's keepalives, a minute, or for ever
    /// with them off.
    #[tokio::test(start_paused = true)]
    async fn a_call_cancelled_on_a_stalled_link_ends_after_the_grace() {
        let (channel, _stalled) = unanswered_channel();
        let cancel = CancellationToken::new();
        let mut replies = channel
            .start_call(Call::LsExists("/".into()))
            .await
            .unwrap();
        cancel.cancel();
        let started = tokio::time::Instant::now();
        let lost = replies.next(&cancel).await.unwrap_err();
        assert_eq!(started.elapsed(), CANCEL_GRACE);
        assert_eq!(
            lost.to_string(),
            "Remote connection lost: no answer from the remote host 10 s after the call was cancelled (the connection is stalled)"
        );
        assert!(channel.is_closed());
    }

    /// A call that hears nothing asks whether the helper still answers; a
    /// helper that does not (stopped, behind a link that is up) ends the
    /// call and the channel, where the call waited for ever.
    #[tokio::test(start_paused = true)]
    async fn a_call_to_a_helper_that_stopped_answering_ends_lost() {
        let (channel, _stopped) = unanswered_channel();
        let never = CancellationToken::new();
        let started = tokio::time::Instant::now();
        let lost = channel
            .call(Call::LsExists("/".into()), &never)
            .await
            .unwrap_err();
        assert_eq!(started.elapsed(), QUIET_BEFORE_PING + PING_GRACE);
        assert_eq!(
            lost.to_string(),
            "Remote connection lost: the helper on the remote host has not answered for 40 s (the connection is up, but the helper is stopped or the host is overloaded)"
        );
        assert!(channel.is_closed());
    }

    /// Runs `command` (unconfined, no timeout) in `cwd` through `channel`
    /// until it exits, calling `after_chunk` once each chunk of output is
    /// taken: its whole output, and whether it ended with an exit status
    /// (not an error).
    async fn run_bash(
        channel: &HelperChannel,
        command: &str,
        cwd: &std::path::Path,
        mut after_chunk: impl AsyncFnMut(),
    ) -> (Vec<u8>, bool) {
        let bash = Call::Bash(crate::remote::protocol::BashCall {
            command: command.into(),
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
            timeout_ms: None,
            sandbox: None,
        });
        let never = CancellationToken::new();
        let mut replies = channel.start_call(bash).await.unwrap();
        let mut output = Vec::new();
        loop {
            match replies.next(&never).await.unwrap() {
                Some(Reply::Output(chunk)) => {
                    output.extend_from_slice(&chunk.0);
                    after_chunk().await;
                }
                Some(Reply::Exit(status)) => return (output, status.is_ok()),
                other => panic!("{other:?}"),
            }
        }
    }

    /// A helper that answers its pings keeps a long call going: a command
    /// may run silent for hours.
    #[tokio::test(start_paused = true)]
    async fn a_long_silent_call_to_a_helper_that_answers_goes_on() {
        let (channel, _helper) = served_helper().await;
        let dir = tempfile::tempdir().unwrap();
        let started = tokio::time::Instant::now();
        let (output, exited) =
            run_bash(&channel, "sleep 1; echo done", dir.path(), async || {}).await;
        assert!(exited);
        assert_eq!(output, b"done\n");
        // The paused clock ran ahead while the command slept for real: it
        // was pinged, and answered, many times over.
        assert!(
            started.elapsed() > QUIET_BEFORE_PING * 2,
            "{:?}",
            started.elapsed()
        );
        assert!(!channel.is_closed());
    }

    /// A bash call whose output is taken by something that calls the
    /// helper again for each chunk (as its full-output log does) gets all
    /// of it: the reader of the helper's replies never waits for one call.
    #[tokio::test]
    async fn a_calls_taker_may_call_again_before_taking_its_next_reply() {
        let (channel, _helper) = served_helper().await;
        let dir = tempfile::tempdir().unwrap();
        let never = CancellationToken::new();
        let call_again = async || {
            let again = channel.call(Call::LsExists(dir.path().to_path_buf()), &never);
            assert!(matches!(again.await.unwrap(), Reply::Exists(true)));
        };
        let taken = tokio::time::timeout(
            Duration::from_secs(120),
            run_bash(&channel, "seq 1 1000000", dir.path(), call_again),
        )
        .await
        .expect("the bash call's replies stopped coming");
        let expected: String = (1..=1_000_000).map(|n| format!("{n}\n")).collect();
        assert_eq!((taken.0.len(), taken.1), (expected.len(), true));
        assert!(taken.0 == expected.as_bytes());
    }
}
