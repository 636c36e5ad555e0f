//! [`Held`]: what every guard of a held lock or permit offers, and the one
//! helper that runs work under any of them ([`run_locked`]), behind every
//! guard's and lock's `run_locked`.
//!
//! Every service that holds a lock around work writes the same `select!`
//! on the guard's loss; this is that `select!`, written once, so the loss
//! and the unlock are never forgotten.

use std::future::Future;

use crate::error::{LockError, Result};

/// A held lock or permit: it can be lost, checked and released.
pub trait Held: Send + Sync + Sized {
    /// Resolves when the lock is known lost; cancel-safe, it only observes.
    fn lost(&self) -> impl Future<Output = ()> + Send;

    /// `Err(LockLost)` once the lock is known lost.
    ///
    /// # Errors
    /// [`LockError::LockLost`].
    fn check(&self) -> Result<()>;

    /// Releases the lock (unlocks a guard, gives a permit back).
    ///
    /// # Errors
    /// [`LockError::NotHeld`] when it was no longer held; backend errors.
    fn release(self) -> impl Future<Output = Result<()>> + Send;
}

/// Runs `work` while `guard` is held, then releases it: the body of every
/// guard's `run_locked` (their docs say what it promises).
///
/// # Errors
/// [`LockError::LockLost`] when the guard was lost before `work` ended;
/// the release's errors.
pub async fn run_locked<G: Held, T>(guard: G, work: impl AsyncFnOnce(&G) -> T) -> Result<T> {
    let finished = {
        let work = work(&guard);
        tokio::select! {
            // A loss noticed together with the end of the work wins: the
            // output may have been produced after the lock was gone.
            biased;
            () = guard.lost() => None,
            value = work => Some(value),
        }
    };
    match finished {
        None => Err(guard.check().err().unwrap_or_else(lost_without_name)),
        Some(value) => match guard.release().await {
            Ok(()) => Ok(value),
            Err(LockError::NotHeld { name, what }) => Err(LockError::LockLost { name, what }),
            Err(e) => Err(e),
        },
    }
}

/// `lost()` resolved but `check()` passed: cannot happen for the guards of
/// this crate (both read the same state), kept typed rather than a panic.
fn lost_without_name() -> LockError {
    LockError::protocol("the guard reported its lock lost, then held again")
}
