//! The file-mutation queue: a first-in-first-out lock per file, so parallel
//! `edit` and `write` calls on one file run one after another (each edit reads
//! what the previous one wrote; no update is lost), while calls on different
//! files run in parallel. Pi's `withFileMutationQueue` (spec §6).
//!
//! Files are keyed by their real path, so two symlinks to one file share a
//! queue. A file that does not exist yet is keyed by the real path of its
//! nearest existing ancestor plus the rest of the path; this also serialises
//! two writes that create the same new file through a symlinked directory,
//! which Pi's key (the unresolved path) does not.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

type Queues = Mutex<HashMap<PathBuf, Arc<AsyncMutex<()>>>>;

/// One lock per file being mutated; entries leave the map when nobody holds or
/// waits for them, so the map stays as small as the set of busy files.
static QUEUES: LazyLock<Queues> = LazyLock::new(Queues::default);

/// Holding this means it is this call's turn to mutate the file. Dropping it
/// passes the turn to the next waiter, in arrival order.
#[derive(Debug)]
pub struct FileMutationGuard {
    key: PathBuf,
    guard: Option<OwnedMutexGuard<()>>,
}

impl Drop for FileMutationGuard {
    fn drop(&mut self) {
        // Release first, then drop the map entry if no one else holds a
        // reference to its lock. Waiters clone the Arc under the map lock, so
        // checking the count under that lock cannot race with a new waiter.
        drop(self.guard.take());
        let mut queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
        if queues
            .get(&self.key)
            .is_some_and(|lock| Arc::strong_count(lock) == 1)
        {
            queues.remove(&self.key);
        }
    }
}

/// Waits for this call's turn to mutate `path` (an absolute path).
///
/// Tokio's mutex is fair, so turns are granted in the order callers arrived.
pub async fn lock_file(path: &Path) -> FileMutationGuard {
    let lexical = normalize_lexically(path);
    let key = tokio::task::spawn_blocking(move || queue_key(&lexical))
        .await
        .unwrap_or_else(|_| normalize_lexically(path));
    let lock = {
        let mut queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(queues.entry(key.clone()).or_default())
    };
    let guard = lock.lock_owned().await;
    FileMutationGuard {
        key,
        guard: Some(guard),
    }
}

/// Runs `f` when it is this call's turn to mutate `path`, holding the turn
/// until `f` finishes (or is dropped).
pub async fn with_file_mutation_queue<F, T>(path: &Path, f: F) -> T
where
    F: Future<Output = T>,
{
    let _turn = lock_file(path).await;
    f.await
}

/// The real path of `path`; for a path that does not exist, the real path of
/// its nearest existing ancestor joined with the remaining components.
fn queue_key(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => queue_key(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// Removes `.` and resolves `..` without touching the file system, as Node's
/// `path.resolve` does before Pi takes the real path.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn missing_files_are_keyed_under_their_real_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        assert_eq!(
            queue_key(&dir.path().join("link/new/file.txt")),
            real.join("new/file.txt")
        );
        assert_eq!(
            queue_key(&normalize_lexically(&dir.path().join("x/../link/a.txt"))),
            real.join("a.txt")
        );
    }

    #[test]
    fn symlinks_share_the_key_of_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("alias.txt")).unwrap();
        assert_eq!(
            queue_key(&dir.path().join("alias.txt")),
            std::fs::canonicalize(&target).unwrap()
        );
    }

    #[tokio::test]
    async fn turns_on_one_file_are_granted_in_arrival_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let first = lock_file(&path).await;
        let key = queue_key(&path);
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..5 {
            let (waiter_path, order) = (path.clone(), Arc::clone(&order));
            waiters.push(tokio::spawn(async move {
                with_file_mutation_queue(&waiter_path, async { order.lock().unwrap().push(i) })
                    .await
            }));
            // Let waiter i queue up before waiter i+1 arrives.
            while Arc::strong_count(QUEUES.lock().unwrap().get(&key).unwrap()) < i + 3 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        drop(first);
        for waiter in waiters {
            waiter.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        assert!(!QUEUES.lock().unwrap().contains_key(&key));
    }

    #[tokio::test]
    async fn different_files_do_not_wait_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let _a = lock_file(&dir.path().join("a.txt")).await;
        // Would hang if b shared a's queue.
        let b = lock_file(&dir.path().join("b.txt")).await;
        drop(b);
    }
}
