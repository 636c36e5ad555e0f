//! `lockctl force-unlock`: delete a lock whoever holds it, and tell its
//! waiters the way its own kind does.
//!
//! Each kind's waiters listen on their kind's channel only (a reentrant or
//! lean lock's on `redisson_lock__channel:{name}`, a read-write lock's on
//! `redisson_rwlock:{name}`, a fair lock's queue head on a channel of its
//! own), so the unlock has to go through the handle of the kind that is
//! stored: any other publishes where nobody listens, and the waiters only
//! get in at their next timed look. The kind is read from what is stored
//! ([`lock_redis::LockClient::describe`]); a fair lock's hash looks like a
//! reentrant lock's, so a lock with a non-empty fair queue (or `--fair`)
//! is unlocked as a fair lock. A lean lock (any text that is not an
//! integer, whoever wrote it) is deleted through its own handle: the
//! reentrant one refuses a string.
//!
//! A semaphore's holds are broken only when asked how (`--permits N`,
//! `--permit ID`: see `force_permits`); without either, a semaphore or a
//! latch is refused, and the message names the option that applies.

use lock_redis::{Description, LockClient, LockName};

use crate::cli::{ForceUnlockArgs, Global};
use crate::exit::{Failure, DATA};
use crate::{connect, force_permits, output};

/// What was unlocked, and whether it existed.
enum Unlocked {
    /// A reentrant lock: when it existed, its channel was told.
    Lock(bool),
    /// A fair lock: its queue head, if any, was told either way.
    Fair(bool),
    /// A read-write lock: when it existed, its channel was told.
    ReadWrite(bool),
    /// A lean lock: when it existed, its channel was told.
    Lean(bool),
}

/// Runs `lockctl force-unlock`; returns the exit code: 0 whether or not the
/// lock existed, like `rm -f`, because either way it is free now, which is
/// what was asked. The printed line says which it was, and says waiters
/// were told only when a notice was published to them. A name that holds
/// a semaphore or a latch without `--permits`/`--permit`, or anything else
/// that is not a lock, exits 65, untouched.
pub(crate) async fn run(global: &Global, args: ForceUnlockArgs) -> Result<u8, Failure> {
    let name = LockName::new(&args.name).map_err(|e| Failure::lock("bad lock name", &e))?;
    let client = connect::client(global).await?;
    let line = match (args.permits, args.permit) {
        (Some(permits), _) => force_permits::reset(&client, &name, permits).await,
        (None, Some(id)) => force_permits::release(&client, &name, id).await,
        (None, None) => unlock(&client, &name, args.fair)
            .await
            .map(|u| line(&name, u)),
    };
    client.close().await;
    output::stdout(&line?);
    Ok(0)
}

/// What `run` prints for a lock.
fn line(name: &LockName, unlocked: Unlocked) -> String {
    match unlocked {
        Unlocked::Lock(true) => format!("{name}: unlocked (it was held; waiters were woken)\n"),
        Unlocked::ReadWrite(true) => {
            format!("{name}: unlocked the read-write lock (it was held; waiters were woken)\n")
        }
        Unlocked::Lean(true) => {
            format!("{name}: unlocked the lean lock (it was held; waiters were woken)\n")
        }
        Unlocked::Fair(true) => format!(
            "{name}: unlocked the fair lock (it was held; the head of its queue, if any, was woken)\n"
        ),
        Unlocked::Fair(false) => format!(
            "{name}: was not locked; the head of its fair queue, if any, was woken\n"
        ),
        Unlocked::Lock(false) | Unlocked::ReadWrite(false) | Unlocked::Lean(false) => {
            format!("{name}: was not locked; nothing to do\n")
        }
    }
}

async fn unlock(client: &LockClient, name: &LockName, fair: bool) -> Result<Unlocked, Failure> {
    match client.describe(name).await? {
        Description::ReadWriteLock(_) => Ok(Unlocked::ReadWrite(
            client.read_write_lock(name)?.force_unlock().await?,
        )),
        Description::LeanLock(_) => Ok(Unlocked::Lean(
            client.lean_lock(name)?.force_unlock().await?,
        )),
        Description::Free | Description::Lock(_) => {
            let fair_lock = client.fair_lock(name)?;
            // A free fair lock may still have a queue whose head has to be
            // told (its holder's lease ran out without a notice).
            if fair || !fair_lock.info().await?.queue.is_empty() {
                Ok(Unlocked::Fair(fair_lock.force_unlock().await?))
            } else {
                Ok(Unlocked::Lock(client.lock(name)?.force_unlock().await?))
            }
        }
        Description::SemaphoreOrLatch(_) => Err(not_a_lock(
            name,
            "a semaphore or count-down latch",
            "use --permits N to reset a semaphore to N free permits (a latch cannot be \
             force-unlocked)",
        )),
        Description::PermitExpirableSemaphore(_) => Err(not_a_lock(
            name,
            "an expirable-permit semaphore",
            "use --permits N to reset it to N permits (dropping every leased one) or \
             --permit ID to release one",
        )),
        Description::Unknown { store_type } => Err(not_a_lock(
            name,
            &format!("a {store_type}"),
            "force-unlock changes nothing there",
        )),
        other => Err(not_a_lock(
            name,
            &format!("{other:?}"),
            "force-unlock changes nothing there",
        )),
    }
}

fn not_a_lock(name: &LockName, what: &str, instead: &str) -> Failure {
    Failure::new(
        DATA,
        format!("key {name:?} holds {what}, not a lock: {instead}"),
    )
}
