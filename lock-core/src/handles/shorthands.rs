//! The acquire methods every lock has, written once: each lock type
//! implements `acquire(AcquireOptions)` and gets `lock`, `lock_with_lease`,
//! `try_lock`, `try_lock_with_lease`, `try_lock_for`,
//! `try_lock_for_with_lease` and `run_locked` from [`acquire_shorthands!`],
//! with the same names, arguments and docs on every type. The semaphores
//! with leased permits follow the same pattern (`acquire`,
//! `acquire_with_lease`, `try_acquire`, `try_acquire_with_lease`,
//! `try_acquire_for`, `try_acquire_for_with_lease`): the plain form is
//! renewed by the watchdog, `_with_lease` expires, `wait` comes before
//! `lease`.

/// Writes the shorthands for `impl $lock`, whose guard is `$guard`. The
/// type must have `async fn acquire(&self, AcquireOptions) ->
/// Result<Option<$guard>>` and `$guard` a `run_locked`; `$what` names what
/// is taken, for the docs ("the lock", "every member", "a quorum of the
/// members").
macro_rules! acquire_shorthands {
    ($lock:ty, $guard:ty, $what:literal) => {
        impl $lock {
            #[doc = concat!("Takes ", $what, ", waiting as long as it takes; the watchdog")]
            /// keeps it while the guard lives (see [`acquire`](Self::acquire)
            /// for what a wait does through store outages).
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire).
            ///
            /// # Cancel safety
            /// Cancel-safe: dropping the future leaves nothing held, queued or
            /// subscribed on the caller's behalf (an acquisition already on the
            /// wire is released again in the background).
            pub async fn lock(&self) -> $crate::Result<$guard> {
                self.acquire_or_fail($crate::AcquireOptions::new()).await
            }

            #[doc = concat!("Takes ", $what, " for `lease` at most, waiting as long as it")]
            /// takes. No renewal: it expires after `lease` whatever happens.
            /// The guard reports the loss a safety margin before the lease ends
            /// ([`crate::ClientConfig::safety_margin`]).
            ///
            /// # Errors
            /// [`crate::LockError::InvalidArgument`] for a zero or over-long
            /// lease, or one not longer than its safety margin, before any I/O;
            /// otherwise as [`acquire`](Self::acquire).
            ///
            /// # Cancel safety
            /// As [`lock`](Self::lock).
            pub async fn lock_with_lease(
                &self,
                lease: ::std::time::Duration,
            ) -> $crate::Result<$guard> {
                self.acquire_or_fail($crate::AcquireOptions::new().lease(lease))
                    .await
            }

            /// Tries once, without waiting: `Ok(None)`, holding nothing, when
            /// someone else holds it.
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire), and retryable errors that
            /// outlived the retry policy ([`crate::ClientConfig::retry`]): a
            /// try does not wait out an outage.
            ///
            /// # Cancel safety
            /// As [`lock`](Self::lock).
            pub async fn try_lock(&self) -> $crate::Result<Option<$guard>> {
                self.acquire($crate::AcquireOptions::new().no_wait()).await
            }

            #[doc = concat!("Tries once for ", $what, ", without waiting, to hold it for")]
            /// `lease` at most: `Ok(None)`, holding nothing, when someone else
            /// holds it.
            ///
            /// # Errors
            /// As [`lock_with_lease`](Self::lock_with_lease) and
            /// [`try_lock`](Self::try_lock).
            ///
            /// # Cancel safety
            /// As [`lock`](Self::lock).
            pub async fn try_lock_with_lease(
                &self,
                lease: ::std::time::Duration,
            ) -> $crate::Result<Option<$guard>> {
                self.acquire($crate::AcquireOptions::new().no_wait().lease(lease))
                    .await
            }

            #[doc = concat!("Waits up to `wait` for ", $what, " (watchdog lease): `Ok(None)`,")]
            /// holding nothing, when the wait ran out. Store outages are waited
            /// out until the deadline. Returns within `wait` plus
            /// [`crate::WAIT_OVERSHOOT`] whatever the store does: a call still
            /// unanswered then finishes in the background (what it takes is
            /// released).
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire), and the retryable error of the
            /// last attempt when the store was still unavailable at the
            /// deadline (a timeout when it never answered).
            ///
            /// # Cancel safety
            /// As [`lock`](Self::lock).
            pub async fn try_lock_for(
                &self,
                wait: ::std::time::Duration,
            ) -> $crate::Result<Option<$guard>> {
                self.acquire($crate::AcquireOptions::new().wait(wait)).await
            }

            #[doc = concat!("Waits up to `wait` for ", $what, " and holds it for `lease` at")]
            /// most.
            ///
            /// # Errors
            /// As [`lock_with_lease`](Self::lock_with_lease) and
            /// [`try_lock_for`](Self::try_lock_for).
            ///
            /// # Cancel safety
            /// As [`lock`](Self::lock).
            pub async fn try_lock_for_with_lease(
                &self,
                wait: ::std::time::Duration,
                lease: ::std::time::Duration,
            ) -> $crate::Result<Option<$guard>> {
                self.acquire($crate::AcquireOptions::new().wait(wait).lease(lease))
                    .await
            }

            #[doc = concat!("Takes ", $what, " as [`lock`](Self::lock) does, runs `work`")]
            /// while it is held, then unlocks: `work` is cancelled if the lock
            /// is lost (see [`crate::Guard::run_locked`]).
            ///
            /// # Errors
            /// As [`lock`](Self::lock), then as [`crate::Guard::run_locked`].
            ///
            /// # Cancel safety
            /// As [`lock`](Self::lock), then as [`crate::Guard::run_locked`].
            pub async fn run_locked<T>(
                &self,
                work: impl AsyncFnOnce(&$guard) -> T,
            ) -> $crate::Result<T> {
                self.lock().await?.run_locked(work).await
            }

            /// [`acquire`](Self::acquire) for a wait without end, which only
            /// ends with the lock or an error.
            async fn acquire_or_fail(
                &self,
                opts: $crate::AcquireOptions,
            ) -> $crate::Result<$guard> {
                debug_assert_eq!(opts.wait, $crate::Wait::Forever);
                match self.acquire(opts).await? {
                    Some(guard) => Ok(guard),
                    None => Err($crate::LockError::protocol(concat!(
                        "an unbounded wait ended without ",
                        $what
                    ))),
                }
            }
        }
    };
}

pub(crate) use acquire_shorthands;
