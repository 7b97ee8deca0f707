//! Blocking file work, kept off the async runtime's workers.
//!
//! The local Operations run each file-system step on tokio's blocking pool,
//! so a slow disk or network mount never stalls the runtime. A tool that
//! takes several steps (read: access, first bytes, line window) pays
//! a thread hop for each. Where a whole tool call runs next to the files on a
//! thread that may block anyway (the remote helper's `read` and `ls`,
//! `remote/whole.rs`), [`block_on_inline`] runs it there, and every step
//! inside runs inline: one hop a call instead of one a step. On two busy
//! cores, those hops were most of what ten reads at once cost the helper.

use std::cell::Cell;
use std::io;

thread_local! {
    /// Set while [`block_on_inline`] drives a future on this thread.
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` on tokio's blocking pool, or right here when this thread is
/// one [`block_on_inline`] lent to a whole call. A lost blocking task (the
/// runtime shutting down) reads as an I/O error.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    if INLINE.get() {
        return work();
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}

/// Drives `future` to its end on this thread, which must be one that may
/// block (a thread of the blocking pool); the [`blocking`] steps it takes
/// run inline. The remote helper runs each whole `read` or `ls` this way,
/// reply included, so a call wakes one thread, not a worker and a thread.
pub fn block_on_inline<F: Future>(handle: &tokio::runtime::Handle, future: F) -> F::Output {
    /// Clears the flag however the future ends: pool threads are reused.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            INLINE.set(false);
        }
    }
    INLINE.set(true);
    let _reset = Reset;
    handle.block_on(future)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn steps_hop_to_the_pool_unless_the_whole_call_is_on_it() {
        let here = thread();
        let step = blocking(|| Ok(thread())).await.unwrap();
        assert_ne!(step, here, "a step leaves the runtime's worker");

        let handle = tokio::runtime::Handle::current();
        let (lent, steps) = tokio::task::spawn_blocking(move || {
            block_on_inline(&handle, async {
                let lent = thread();
                let first = blocking(|| Ok(thread())).await.unwrap();
                let second = blocking(|| Ok(thread())).await.unwrap();
                (lent, [first, second])
            })
        })
        .await
        .unwrap();
        assert_ne!(lent, here);
        assert_eq!(steps, [lent, lent], "steps run inline on the lent thread");

        // The thread goes back to the pool without the flag.
        let after = tokio::task::spawn_blocking(|| INLINE.get()).await.unwrap();
        assert!(!after);
    }
}
