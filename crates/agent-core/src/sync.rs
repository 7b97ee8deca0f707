//! The crate's one poison-tolerant lock: each critical section behind our
//! mutexes is a single update, so the state stays consistent across a panic,
//! and a panic in one tool call or subscriber must not take the agent down
//! with it; a poisoned mutex is used as it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking it over if a panicking holder poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
