//! The one poison-tolerant lock: state behind our mutexes stays consistent
//! across a panic (each critical section is a single update), and a panic in
//! one tool call must not take every later call down with it, so a poisoned
//! mutex is used as it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking it over if a panicking holder poisoned it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
