//! The file-mutation queue: a first-in-first-out lock per file, so parallel
//! `edit` and `write` calls on one file run one after another (each edit reads
//! what the previous one wrote; no update is lost), while calls on different
//! files run in parallel. Pi's `withFileMutationQueue` (`docs/tool-behaviour.md` §5).
//!
//! A file is queued under its host and the [`FileKey`] the tool's Operations
//! give it ([`MutationTarget`], a supertrait of `WriteOperations` and
//! `EditOperations`), so this module never touches the file system itself. On
//! this machine ([`local_queue_key`]) that is the real path, so two symlinks
//! to one file share a queue, or, for a file with more than one hard link,
//! its device and inode, so its hard links share one too; a file that does
//! not exist yet is keyed by the real path of its nearest existing ancestor
//! plus the rest of the path, which also serialises two writes that create
//! the same new file through a symlinked directory (Pi keys a file by the
//! path as given, which does none of this).
//!
//! Files on a remote host (`--remote`) are keyed by the host and their
//! lexically normalised path (the trait's default): the real path or the
//! inode would cost a round trip to the host, so two symlinks or two hard
//! links to one remote file get two queues.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

use crate::support::paths::{Whose, normalize_lexically, where_links_lead};
use crate::support::sync::lock;

/// What the queue knows a file by on its host. Every name of one file must
/// give the same key, or two read-modify-writes of the file run at once and
/// one of them is lost.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FileKey {
    /// The file's path: where its links lead on this machine, lexically
    /// normalised on a remote host.
    Path(PathBuf),
    /// A file with more than one hard link, by its identity: each of its
    /// names is a path of its own, so keyed by path two edits through two
    /// names of one file ran at once and one was lost (both reported
    /// success).
    Inode {
        /// The file system's device number (`st_dev`).
        device: u64,
        /// The file's inode number on it (`st_ino`).
        inode: u64,
    },
}

/// The host (`None`: this machine) and the file.
type QueueKey = (Option<String>, FileKey);

type Queues = Mutex<HashMap<QueueKey, Arc<AsyncMutex<()>>>>;

/// One lock per file being mutated; entries leave the map when nobody holds or
/// waits for them, so the map stays as small as the set of busy files.
static QUEUES: LazyLock<Queues> = LazyLock::new(Queues::default);

/// Holding this means it is this call's turn to mutate the file. Dropping it
/// passes the turn to the next waiter, in arrival order.
#[derive(Debug)]
pub struct FileMutationGuard {
    key: QueueKey,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for FileMutationGuard {
    fn drop(&mut self) {
        // Release first, then drop the map entry if no one else holds a
        // reference to its lock. Waiters clone the Arc under the map lock, so
        // checking the count under that lock cannot race with a new waiter.
        drop(self.guard.take());
        let mut queues = lock(&QUEUES);
        if queues
            .get(&self.key)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            queues.remove(&self.key);
        }
    }
}

/// Where the files a tool changes live, as the queue needs to know it: the
/// host and the key a file is queued under. The defaults (this machine,
/// the lexical path) touch nothing; the local Operations look the file up
/// ([`local_queue_key`]), a remote host's name their host.
///
/// Both are synchronous on purpose: the calls of one answer start in the
/// order the model wrote them, and each must take its place in the queue
/// before it first yields, or an await here would let a later call overtake
/// it (four chained edits of one file then failed one run in four).
pub trait MutationTarget: Send + Sync {
    /// The machine the files are on: `None` for this one, else a name
    /// unique per remote host, so a remote `/a` and a local `/a` never share
    /// a queue.
    fn host(&self) -> Option<String> {
        None
    }

    /// The key the queue knows the file at `path` (absolute) by, so that
    /// two names of one file share a queue. By default `path` lexically
    /// normalised (on a remote host looking the file up would cost a round
    /// trip).
    fn queue_key(&self, path: &Path) -> FileKey {
        FileKey::Path(normalize_lexically(path))
    }
}

/// Waits for this call's turn to mutate the file `file` on `host` (`None`:
/// this machine); `file` is a [`MutationTarget::queue_key`].
///
/// Tokio's mutex is fair, so turns are granted in the order callers arrived.
pub async fn lock_file(host: Option<&str>, file: &FileKey) -> FileMutationGuard {
    let key = (host.map(str::to_owned), file.clone());
    let lock = {
        let mut queues = lock(&QUEUES);
        Arc::clone(queues.entry(key.clone()).or_default())
    };
    let guard = lock.lock_owned().await;
    FileMutationGuard {
        key,
        guard: Some(guard),
    }
}

/// The caller was cancelled before its mutation finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", crate::support::cancel::ABORTED)]
pub struct Aborted;

/// Runs `mutation` when it is this call's turn to mutate the file at `path`
/// of `target` (Pi's `withFileMutationQueue`), giving up with [`Aborted`] as
/// soon as `cancel` fires, whether while waiting for the turn or while
/// running.
///
/// A mutation already started is not cut off halfway when the caller gives
/// up: it runs to its end on its own task, holding the turn, so the calls
/// queued behind it still see the file it left (in the order they arrived).
/// `mutation` should check `cancel` between its steps so that it starts
/// nothing new once cancelled.
pub async fn with_file_mutation_queue<M, F, T>(
    target: &M,
    path: &Path,
    cancel: &CancellationToken,
    mutation: F,
) -> Result<T, Aborted>
where
    M: MutationTarget + ?Sized,
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    // Computed before the first await, so calls queue in the order they
    // started (see [`MutationTarget`]).
    let (host, file) = (target.host(), target.queue_key(path));
    let turn = lock_file(host.as_deref(), &file);
    let turn = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(Aborted),
        turn = turn => turn,
    };
    let task = tokio::spawn(async move {
        let _turn = turn;
        mutation.await
    });
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Aborted),
        joined = task => match joined {
            Ok(value) => Ok(value),
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            Err(_) => Err(Aborted),
        },
    }
}

/// The queue key of the file at `path` (absolute) on this machine, for the
/// local Operations: where its links lead, as the sandbox judges it
/// ([`where_links_lead`]; a missing tail taken as written), else (a path
/// that cannot be followed) lexically normalised; or, when that is a file
/// with other hard links, its device and inode.
///
/// Only such a file is keyed by inode: it is written in place (a rename
/// would leave its other names the old contents), so its inode stays while
/// calls queue under it. A file with one name is replaced by a rename
/// (DEVIATIONS #10), a new inode each write: keyed by inode, a call
/// arriving after a write would queue apart from the calls still waiting
/// under the old one. A file that does not exist yet is keyed by path, and
/// stays so once created (with one name; another name made in the same
/// batch can only be a symlink, which resolves to that path).
///
/// A few `lstat`s and a `stat` on the caller's thread: cheap next to the
/// edit that follows, and it keeps the queue in call order.
pub fn local_queue_key(path: &Path) -> FileKey {
    use std::os::unix::fs::MetadataExt;

    let real = where_links_lead(path, Whose::This).unwrap_or_else(|| normalize_lexically(path));
    match std::fs::metadata(&real) {
        Ok(meta) if meta.is_file() && meta.nlink() > 1 => FileKey::Inode {
            device: meta.dev(),
            inode: meta.ino(),
        },
        _ => FileKey::Path(real),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// This machine's files, queued as the local Operations queue them.
    struct Local;

    impl MutationTarget for Local {
        fn queue_key(&self, path: &Path) -> FileKey {
            local_queue_key(path)
        }
    }

    /// The key of the file at `path` when it is keyed by path.
    fn by_path(path: impl Into<PathBuf>) -> FileKey {
        FileKey::Path(path.into())
    }

    #[test]
    fn missing_files_are_keyed_under_their_real_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        assert_eq!(
            local_queue_key(&dir.path().join("link/new/file.txt")),
            by_path(real.join("new/file.txt"))
        );
        std::fs::create_dir(dir.path().join("x")).unwrap();
        assert_eq!(
            local_queue_key(&dir.path().join("x/../link/a.txt")),
            by_path(real.join("a.txt"))
        );
    }

    #[test]
    fn symlinks_share_the_key_of_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("alias.txt")).unwrap();
        assert_eq!(
            local_queue_key(&dir.path().join("alias.txt")),
            by_path(std::fs::canonicalize(&target).unwrap())
        );
    }

    /// Two edits through two hard links of one file ran at once and one was
    /// lost: every name of the file, a symlink to one of them too, shares a
    /// key, which a write in place (as a file with other names gets) keeps.
    #[test]
    fn hard_links_share_the_key_of_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let (real, hard) = (dir.path().join("real.txt"), dir.path().join("hard.txt"));
        std::fs::write(&real, "x").unwrap();
        let alone = local_queue_key(&real);
        assert_eq!(alone, by_path(std::fs::canonicalize(&real).unwrap()));
        std::fs::hard_link(&real, &hard).unwrap();
        std::os::unix::fs::symlink(&hard, dir.path().join("alias.txt")).unwrap();
        let key = local_queue_key(&real);
        assert!(matches!(key, FileKey::Inode { .. }), "{key:?}");
        assert_eq!(local_queue_key(&hard), key);
        assert_eq!(local_queue_key(&dir.path().join("alias.txt")), key);
        crate::support::atomic_write::write_atomic(&hard, b"y").unwrap();
        assert_eq!(local_queue_key(&real), key);
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "y");
    }

    #[tokio::test]
    async fn turns_on_one_file_are_granted_in_arrival_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = by_path(dir.path().join("f.txt"));
        let first = lock_file(None, &file).await;
        let key = (None, file.clone());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..5 {
            let (waiter_file, order) = (file.clone(), Arc::clone(&order));
            waiters.push(tokio::spawn(async move {
                let _turn = lock_file(None, &waiter_file).await;
                order.lock().unwrap().push(i);
            }));
            // Let waiter i queue up before waiter i+1 arrives (a waiter
            // that never queues fails the test instead of hanging it).
            let queued = async {
                while Arc::strong_count(QUEUES.lock().unwrap().get(&key).unwrap()) < i + 3 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(60), queued)
                .await
                .unwrap_or_else(|_| panic!("waiter {i} never queued"));
        }
        drop(first);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        assert!(!QUEUES.lock().unwrap().contains_key(&key));
    }

    #[tokio::test]
    async fn cancelling_a_waiter_gives_up_its_turn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let holder = lock_file(None, &local_queue_key(&path)).await;
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = with_file_mutation_queue(&Local, &path, &cancel, async { 1 }).await;
        assert_eq!(result, Err(Aborted));
        drop(holder);
        let live = CancellationToken::new();
        assert_eq!(
            with_file_mutation_queue(&Local, &path, &live, async { 2 }).await,
            Ok(2)
        );
    }

    #[tokio::test]
    async fn an_abandoned_mutation_finishes_before_the_next_turn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
        let cancel = CancellationToken::new();
        let first = {
            let (path, cancel, log) = (path.clone(), cancel.clone(), Arc::clone(&log));
            tokio::spawn(async move {
                with_file_mutation_queue(&Local, &path, &cancel, async move {
                    started_tx.send(()).unwrap();
                    release_rx.await.unwrap();
                    log.lock().unwrap().push("first");
                })
                .await
            })
        };
        started_rx.await.unwrap();
        cancel.cancel();
        assert_eq!(first.await.unwrap(), Err(Aborted));
        let second = {
            let (path, log) = (path.clone(), Arc::clone(&log));
            tokio::spawn(async move {
                let live = CancellationToken::new();
                with_file_mutation_queue(&Local, &path, &live, async move {
                    log.lock().unwrap().push("second");
                })
                .await
            })
        };
        release_tx.send(()).unwrap();
        assert_eq!(second.await.unwrap(), Ok(()));
        assert_eq!(*log.lock().unwrap(), vec!["first", "second"]);
    }

    #[tokio::test]
    async fn different_files_do_not_wait_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let _a = lock_file(None, &by_path(dir.path().join("a.txt"))).await;
        // Would hang if b shared a's queue.
        let b = lock_file(None, &by_path(dir.path().join("b.txt"))).await;
        drop(b);
    }
}
