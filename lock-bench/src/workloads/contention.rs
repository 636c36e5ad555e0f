//! W2H's contention, shared by W2H and W2H-redlock: 8 tasks over 4
//! clients on one lock, each holding it about 1 ms, so every release has
//! waiters. Records each handoff (from just before the holder calls
//! `unlock()` to just after another task's `lock()` returns) and each
//! wait of a `lock()` that started while another task held the lock.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::Barrier;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::latency::Latencies;
use crate::locker::Locker;

/// Clients (lockers) a contention runs with.
pub(crate) const CLIENTS: usize = 4;
/// Tasks contending, spread over the clients.
pub(crate) const TASKS: usize = 8;
pub(crate) const HOLD: Duration = Duration::from_millis(1);

/// Who released the lock last, and when (just before calling `unlock()`).
type LastRelease = Arc<Mutex<Option<(usize, Instant)>>>;

/// Which task holds the lock (set when its `lock()` returned, cleared when
/// its `unlock()` returned: a `lock()` called while a release is on the
/// wire must wait too, the lock is held until the release runs), and how
/// many acquisitions there were. A `lock()` waited when another task held
/// the lock as it was called, or took it before the call returned.
type Holder = Arc<Mutex<(Option<usize>, u64)>>;

/// What the tasks of one contention saw, added up.
#[derive(Default)]
pub(crate) struct Contention {
    /// Release → acquisition by another task.
    pub(crate) handoffs: Latencies,
    /// `lock()` calls that started while another task held the lock: call
    /// to return.
    pub(crate) waits: Latencies,
    pub(crate) acquisitions: u64,
    /// Acquisitions right after the same task's own release.
    pub(crate) again: u64,
}

impl Contention {
    fn add(&mut self, other: Contention) {
        self.handoffs.extend(other.handoffs);
        self.waits.extend(other.waits);
        self.acquisitions += other.acquisitions;
        self.again += other.again;
    }
}

/// [`TASKS`] tasks over `lockers` contend for the lock `name` for
/// `window`; `before_start` runs once the tasks are spawned, just before
/// they are let go (where the caller resets command statistics).
pub(crate) async fn contend<L: Locker>(
    lockers: &[L],
    name: &str,
    window: Duration,
    before_start: impl Future<Output = Result<()>>,
) -> Result<Contention> {
    let name: Arc<str> = Arc::from(name);
    let last: LastRelease = Arc::default();
    let holder: Holder = Arc::default();
    let barrier = Arc::new(Barrier::new(TASKS + 1));
    let mut set = JoinSet::new();
    for me in 0..TASKS {
        let locker = lockers[me % lockers.len()].clone();
        let (name, last, barrier) = (Arc::clone(&name), Arc::clone(&last), Arc::clone(&barrier));
        let holder = Arc::clone(&holder);
        set.spawn(async move {
            barrier.wait().await;
            let deadline = Instant::now() + window;
            let mut out = Contention::default();
            loop {
                let called = Instant::now();
                let (held_by, taken) = *lock(&holder);
                let held_by_other = held_by.is_some_and(|h| h != me);
                let Ok(held) = tokio::time::timeout_at(deadline, locker.lock(&name)).await else {
                    break;
                };
                let held = held?;
                let now = Instant::now();
                let waited = {
                    let mut holder = lock(&holder);
                    let waited = held_by_other || holder.1 != taken;
                    *holder = (Some(me), holder.1 + 1);
                    waited
                };
                if waited {
                    out.waits.push(now - called);
                }
                let previous = lock(&last).take();
                match previous {
                    Some((who, released)) if who != me => out.handoffs.push(now - released),
                    Some(_) => out.again += 1,
                    None => {}
                }
                out.acquisitions += 1;
                tokio::time::sleep(HOLD).await;
                *lock(&last) = Some((me, Instant::now()));
                locker.unlock_bounded(held).await?;
                lock(&holder).0 = None;
                if Instant::now() >= deadline {
                    break;
                }
            }
            anyhow::Ok(out)
        });
    }
    // On an error here the dropped set aborts the tasks at the barrier.
    before_start.await?;
    barrier.wait().await;
    let mut all = Contention::default();
    while let Some(result) = set.join_next().await {
        all.add(result.context("a contending task panicked")??);
    }
    Ok(all)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
