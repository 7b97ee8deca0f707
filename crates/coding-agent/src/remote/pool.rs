//! The helper's threads for whole calls (`read`, `ls`; see [`super::whole`]):
//! as many as the host has cores, each taking the next call from one queue,
//! and replies sent together once the queue is empty.
//!
//! A parallel batch's calls arrive together. Given a thread each, ten small
//! reads woke ten threads on two cores, and most of what they cost was the
//! switching between them; their replies also left one by one, waking sshd,
//! ssh and the agent once per reply. A few threads that each run call after
//! call do the same work with fewer switches, and holding each reply while
//! calls still wait sends a batch's replies in one or two writes
//! (`docs/remote.md`, "Parallel batches").
//!
//! A call can block its thread for as long as the file system likes (a FIFO
//! nobody writes, a hung network mount), and nothing can interrupt it. So
//! while calls wait or replies are held, a watchdog looks every [`STALL`]:
//! held replies go out, and when no call was taken since its last look, it
//! adds a thread. Calls behind a blocked one, and replies held behind it,
//! wait about that long at most; a cancelled call in the queue is still
//! answered.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{Notify, mpsc};

use crate::support::blocking::block_on_inline;
use crate::support::sync::lock;

/// How often the watchdog looks while calls wait or replies are held.
pub const STALL: Duration = Duration::from_millis(10);

/// A whole call: runs to its end and gives its reply.
pub type WholeCall<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A queue of whole calls, the threads that run them, and where their
/// replies go.
pub struct WholePool<T> {
    state: Mutex<State<T>>,
    /// Threads to start for a queue that moves.
    threads: usize,
    stall: Duration,
    replies: mpsc::Sender<T>,
    runtime: Handle,
    /// Notified when the last thread leaves an empty queue.
    idle: Notify,
}

struct State<T> {
    queue: VecDeque<WholeCall<T>>,
    /// Replies of finished calls, held while other calls wait.
    held: Vec<T>,
    /// Threads running or about to.
    running: usize,
    /// Calls taken from the queue so far: the watchdog's sign of progress.
    taken: u64,
    watched: bool,
}

impl<T: Send + 'static> WholePool<T> {
    /// A pool of up to `threads` threads on the current runtime (at least
    /// one), sending replies to `replies`; the watchdog looks every `stall`.
    pub fn new(threads: usize, stall: Duration, replies: mpsc::Sender<T>) -> Arc<Self> {
        Arc::new(WholePool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                held: Vec::new(),
                running: 0,
                taken: 0,
                watched: false,
            }),
            threads: threads.max(1),
            stall,
            replies,
            runtime: Handle::current(),
            idle: Notify::new(),
        })
    }

    /// A pool with a thread per core of this host.
    pub fn per_core(replies: mpsc::Sender<T>) -> Arc<Self> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        WholePool::new(cores, STALL, replies)
    }

    /// Queues `call`; a thread runs it (on a thread of the blocking pool,
    /// where its file steps run inline) and its reply is sent.
    pub fn submit(self: &Arc<Self>, call: WholeCall<T>) {
        let (start, watch) = {
            let mut state = lock(&self.state);
            state.queue.push_back(call);
            if state.running < self.threads {
                state.running += 1;
                (true, false)
            } else {
                (false, !std::mem::replace(&mut state.watched, true))
            }
        };
        if start {
            self.start_thread();
        }
        if watch {
            self.runtime.spawn(Arc::clone(self).watch());
        }
    }

    /// Waits until no call runs or waits and no reply is held (the last
    /// replies may still be on their way to the channel).
    pub async fn finished(&self) {
        loop {
            let idle = self.idle.notified();
            {
                let state = lock(&self.state);
                if state.running == 0 && state.queue.is_empty() && state.held.is_empty() {
                    return;
                }
            }
            idle.await;
        }
    }

    fn start_thread(self: &Arc<Self>) {
        let pool = Arc::clone(self);
        self.runtime.spawn_blocking(move || {
            let mut reply = None;
            loop {
                let mut state = lock(&pool.state);
                state.held.extend(reply.take());
                let Some(call) = state.queue.pop_front() else {
                    // Nothing waits: the held replies go now. The thread
                    // counts as gone already, so a call queued meanwhile
                    // starts another.
                    let replies = std::mem::take(&mut state.held);
                    state.running -= 1;
                    drop(state);
                    pool.send(replies);
                    if lock(&pool.state).running == 0 {
                        pool.idle.notify_waiters();
                    }
                    return;
                };
                state.taken += 1;
                let watch = !state.held.is_empty() && !std::mem::replace(&mut state.watched, true);
                drop(state);
                if watch {
                    pool.runtime.spawn(Arc::clone(&pool).watch());
                }
                reply = Some(block_on_inline(&pool.runtime, call));
            }
        });
    }

    /// Sends `replies` in a row, so the writer finds them together; from a
    /// thread that may block (a full channel waits for the writer).
    fn send(&self, replies: Vec<T>) {
        for reply in replies {
            // A closed channel: the connection is gone, nobody reads.
            let _ = self.replies.blocking_send(reply);
        }
    }

    /// While calls wait or replies are held, looks every stall: sends the
    /// held replies, and adds a thread when no call was taken since the
    /// last look.
    async fn watch(self: Arc<Self>) {
        let mut last = lock(&self.state).taken;
        loop {
            tokio::time::sleep(self.stall).await;
            let (held, stalled) = {
                let mut state = lock(&self.state);
                if state.queue.is_empty() && state.held.is_empty() {
                    state.watched = false;
                    return;
                }
                let stalled = !state.queue.is_empty() && state.taken == last;
                last = state.taken;
                if stalled {
                    state.running += 1;
                }
                (std::mem::take(&mut state.held), stalled)
            };
            for reply in held {
                let _ = self.replies.send(reply).await;
            }
            if stalled {
                self.start_thread();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const LONG: Duration = Duration::from_secs(60);
    const DEADLINE: Duration = Duration::from_secs(30);

    /// A call that blocks its thread until `gate` is opened (or dropped), as
    /// a read of a FIFO nobody writes does, then answers `reply`.
    fn gated(reply: u32) -> (std::sync::mpsc::Sender<()>, WholeCall<u32>) {
        let (open, gate) = std::sync::mpsc::channel::<()>();
        (
            open,
            Box::pin(async move {
                let _ = gate.recv();
                reply
            }),
        )
    }

    fn answer(reply: u32) -> WholeCall<u32> {
        Box::pin(async move { reply })
    }

    async fn next(replies: &mut mpsc::Receiver<u32>) -> u32 {
        tokio::time::timeout(DEADLINE, replies.recv())
            .await
            .expect("a reply within the deadline")
            .expect("the pool still sends")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_runs_on_as_many_threads_as_the_pool_has() {
        let (sender, mut replies) = mpsc::channel(64);
        // A watchdog that never looks: no thread is added.
        let pool = WholePool::new(2, LONG, sender);
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        for n in 0..10 {
            let (now, most) = (Arc::clone(&now), Arc::clone(&most));
            pool.submit(Box::pin(async move {
                let running = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(running, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
                now.fetch_sub(1, Ordering::SeqCst);
                n
            }));
        }
        let mut got = Vec::new();
        for _ in 0..10 {
            got.push(next(&mut replies).await);
        }
        got.sort_unstable();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        // Two at once unless the second thread started after the batch ended.
        assert!((1..=2).contains(&most.load(Ordering::SeqCst)));
        tokio::time::timeout(DEADLINE, pool.finished())
            .await
            .expect("the pool goes idle");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replies_are_held_while_calls_wait_and_go_out_together() {
        let (sender, mut replies) = mpsc::channel(64);
        let pool = WholePool::new(1, LONG, sender);
        let (open_first, first) = gated(1);
        let (ran_second, second_ran) = tokio::sync::oneshot::channel();
        let (open_third, third) = gated(3);
        pool.submit(first);
        pool.submit(Box::pin(async move {
            let _ = ran_second.send(());
            2
        }));
        pool.submit(third);
        open_first.send(()).unwrap();
        tokio::time::timeout(DEADLINE, second_ran)
            .await
            .unwrap()
            .unwrap();
        // The third call runs; the first two replies wait for it.
        assert!(replies.try_recv().is_err(), "no reply leaves early");
        open_third.send(()).unwrap();
        assert_eq!(
            [
                next(&mut replies).await,
                next(&mut replies).await,
                next(&mut replies).await
            ],
            [1, 2, 3]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_behind_a_blocked_one_get_a_thread_of_their_own() {
        let (sender, mut replies) = mpsc::channel(64);
        let pool = WholePool::new(1, Duration::from_millis(10), sender);
        let (open, blocked) = gated(1);
        pool.submit(blocked);
        pool.submit(answer(2));
        assert_eq!(
            next(&mut replies).await,
            2,
            "answered while the first blocks"
        );
        open.send(()).unwrap();
        assert_eq!(next(&mut replies).await, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reply_held_behind_a_call_that_blocks_still_goes_out() {
        let (sender, mut replies) = mpsc::channel(64);
        let pool = WholePool::new(1, Duration::from_millis(10), sender);
        let (open, blocked) = gated(2);
        // Submitted together, so the first reply is held while the second
        // call runs, and that one blocks.
        pool.submit(answer(1));
        pool.submit(blocked);
        assert_eq!(next(&mut replies).await, 1, "sent while the second blocks");
        open.send(()).unwrap();
        assert_eq!(next(&mut replies).await, 2);
    }
}
