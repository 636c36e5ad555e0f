//! `lockctl force-unlock --permits N` and `--permit ID`: breaking the holds
//! of a semaphore, either kind, through the library's own calls, so that
//! its waiters are told on its channel (`redisson_sc:{NAME}`) with the
//! payload its kind publishes when permits come back: the new count, which
//! wakes up to that many waiters per client.
//!
//! - `--permits N` on a plain semaphore (one integer: the library's
//!   `Semaphore`, Redisson's `RSemaphore`) takes every free permit and adds
//!   N (`drain_permits`, then `add_permits`, which publishes N). The store
//!   keeps no holders of a plain semaphore: a holder that gives its permits
//!   back later adds them on top of N, as one that gave them back between
//!   the two calls does.
//! - `--permits N` on an expirable-permit semaphore (`run --permits`'s)
//!   drops every leased permit, each released by its id as the store listed
//!   them (each release publishes the new count), then sets the total to N
//!   (`set_permits`): the holders are broken as a lock's are, and learn of
//!   it at their next renewal (a `lockctl run --permits` holder stops its
//!   command, exit 76). A permit taken after the listing stays taken and
//!   counts in N.
//! - `--permit ID` releases that one leased permit (`try_release`).
//!
//! A count-down latch stores the same integer as a plain semaphore, so
//! nothing tells them apart: `--permits N` on a latch sets its count (its
//! waiters listen on the latch's channel and are not told). A name where
//! nothing is stored is left alone: `--permits` creates no semaphore.

use futures::stream::{self, StreamExt as _, TryStreamExt as _};
use lock_redis::{Description, LockClient, LockName, PermitExpirableSemaphore, PermitId};

use crate::exit::{Failure, DATA, SOFTWARE};

/// How many leased permits are released at once: a semaphore may have
/// thousands, and one request each in flight at a time would be slow.
const RELEASES_IN_FLIGHT: usize = 16;

/// `--permits N`: the line to print.
pub(crate) async fn reset(
    client: &LockClient,
    name: &LockName,
    permits: u64,
) -> Result<String, Failure> {
    let woken = if permits > 0 {
        "waiters, if any, were woken"
    } else {
        "no permit is free: waiters keep waiting"
    };
    match client.describe(name).await? {
        Description::PermitExpirableSemaphore(s) => {
            let sem = client.permit_expirable_semaphore(name)?;
            let ids = s
                .permits
                .iter()
                .map(|p| p.id.parse::<PermitId>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Failure::lock("a permit id the store listed", &e))?;
            let dropped = release_all(&sem, &ids).await?;
            sem.set_permits(permits).await?;
            Ok(format!(
                "{name}: reset the expirable-permit semaphore to {}, {} dropped ({woken})\n",
                count(permits, "permit"),
                count(dropped, "leased permit"),
            ))
        }
        Description::SemaphoreOrLatch(counter) => {
            let sem = client.semaphore(name)?;
            sem.drain_permits().await?;
            if permits > 0 {
                // Checked against MAX_PERMITS by the flag's parser.
                sem.add_permits(i64::try_from(permits).unwrap_or(i64::MAX))
                    .await?;
            }
            Ok(format!(
                "{name}: reset the semaphore from {} to {} ({woken})\n",
                counter.value,
                count(permits, "free permit"),
            ))
        }
        Description::Free => Ok(format!(
            "{name}: no semaphore there; nothing to do (--permits creates none)\n"
        )),
        Description::Lock(_) | Description::LeanLock(_) | Description::ReadWriteLock(_) => {
            Err(Failure::new(
                DATA,
                format!(
                    "key {name:?} holds a lock, not a semaphore: force-unlock it without \
                     --permits"
                ),
            ))
        }
        other => Err(not_a_semaphore(name, &other)),
    }
}

/// `--permit ID`: the line to print.
pub(crate) async fn release(
    client: &LockClient,
    name: &LockName,
    id: PermitId,
) -> Result<String, Failure> {
    match client.describe(name).await? {
        Description::PermitExpirableSemaphore(_) => {
            let sem = client.permit_expirable_semaphore(name)?;
            if sem.try_release(id).await? {
                Ok(format!(
                    "{name}: released permit {id} (waiters, if any, were woken)\n"
                ))
            } else {
                Err(Failure::new(
                    DATA,
                    format!(
                        "permit {id} of semaphore {name:?} is not taken (never was, given \
                         back, or its lease ended); `lockctl status {name}` lists those taken"
                    ),
                ))
            }
        }
        Description::SemaphoreOrLatch(_) => Err(Failure::new(
            DATA,
            format!(
                "key {name:?} holds a semaphore (or count-down latch) with no leased permits: \
                 no permit {id} to release. --permit releases a permit of an expirable-permit \
                 semaphore (run --permits) by id; --permits N resets a semaphore's count"
            ),
        )),
        Description::Free => Err(Failure::new(
            DATA,
            format!("nothing is stored under {name:?}: no permit {id} to release"),
        )),
        Description::Lock(_) | Description::LeanLock(_) | Description::ReadWriteLock(_) => {
            Err(Failure::new(
                DATA,
                format!(
                    "key {name:?} holds a lock, not a semaphore: force-unlock it without \
                     --permit"
                ),
            ))
        }
        other => Err(not_a_semaphore(name, &other)),
    }
}

/// Releases each of `ids` by itself (one that ended meanwhile is simply
/// not released); returns how many were.
async fn release_all(sem: &PermitExpirableSemaphore, ids: &[PermitId]) -> Result<u64, Failure> {
    let released: Vec<bool> = stream::iter(ids.iter().map(|&id| sem.try_release(id)))
        .buffer_unordered(RELEASES_IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(released.into_iter().filter(|&r| r).count() as u64)
}

/// `1 permit`, `2 permits`.
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn not_a_semaphore(name: &LockName, d: &Description) -> Failure {
    match d {
        Description::Unknown { store_type } => Failure::new(
            DATA,
            format!(
                "key {name:?} holds a {store_type}, not a semaphore: force-unlock changes \
                 nothing there"
            ),
        ),
        other => Failure::new(SOFTWARE, format!("no semaphore view of {other:?}")),
    }
}
