//! Taking the lock for `run` and `hold`: connecting, acquiring what
//! [`LockArgs`] ask for (a lock of some kind, a RedLock or a permit) within
//! `--wait`, giving up on a signal, releasing, and closing the clients.
//!
//! Signals are caught from the start, so that Ctrl-C while connecting or
//! waiting gives up cleanly (leaving the fair queue, undoing an acquisition
//! on the wire) instead of killing the process mid-request.

use std::time::Duration;

use lock_redis::{
    AcquireOptions, ClientConfig, LockClient, LockName, PermitExpirableSemaphore, RedLock,
};
use nix::sys::signal::Signal;
use tokio::time::Instant;

use crate::cli::{Global, LockArgs};
use crate::exit::{self, Failure};
use crate::held::{subject, Held};
use crate::signals::Signals;
use crate::{child, connect, duration, output};

/// How long releasing may take. The release is retried on errors; if
/// Redis is gone, the lock expires with its lease anyway, so there is no
/// point in keeping the caller waiting longer.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long closing the client may wait for requests still in flight
/// (a background release, an abandoned acquisition being undone).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

/// A step that a signal may cut short: lockctl then exits 128+N quietly.
pub(crate) enum Step<T> {
    Ready(T),
    Interrupted(Signal),
}

/// The clients (one, or one per `--redlock` server) and what taking and
/// keeping the lock needs around them.
pub(crate) struct Session {
    pub(crate) name: LockName,
    pub(crate) clients: Vec<LockClient>,
    pub(crate) signals: Signals,
    /// How long before the lease's end a loss is reported (see
    /// [`child::stop_grace`]): the time a command gets to stop.
    pub(crate) grace: Duration,
    /// When `--wait` runs out, counted from before connecting.
    deadline: Option<Instant>,
}

impl Session {
    /// Checks `args` and connects.
    pub(crate) async fn open(global: &Global, args: &LockArgs) -> Result<Step<Self>, Failure> {
        let name = LockName::new(&args.name).map_err(|e| Failure::lock("bad lock name", &e))?;
        check_redlock(args)?;
        if let Some(lease) = args.lease {
            // The library checks it too, but only after connecting: a usage
            // error should not depend on Redis being up.
            lock_redis::lease_millis(lease, "--lease").map_err(Failure::from)?;
        }
        let mut signals = Signals::install()?;
        // Loss is reported `grace` (plus the drift allowance) before the
        // lease ends, so a command can be stopped before anyone else can
        // hold the lock.
        let grace = child::stop_grace(
            args.lease.unwrap_or(global.watchdog_timeout),
            global.watchdog_timeout,
        );
        let config = ClientConfig::default().loss_margin(grace);
        // `--wait` bounds connecting and waiting together: a server that is
        // restarting or failing over is waited for as a held lock is.
        let deadline = args.wait.and_then(|wait| Instant::now().checked_add(wait));
        let connecting = async {
            if args.redlock.is_empty() {
                Ok(vec![connect::client_by(global, config, deadline).await?])
            } else {
                connect::redlock_clients(global, &args.redlock, config).await
            }
        };
        let clients = tokio::select! {
            signal = signals.recv() => return Ok(Step::Interrupted(signal)),
            clients = connecting => clients?,
        };
        Ok(Step::Ready(Self {
            name,
            clients,
            signals,
            grace,
            deadline,
        }))
    }

    /// Takes what `args` ask for, waiting up to what connecting left of
    /// `--wait` (`--wait 0s` still tries once). Not acquired: a failure
    /// with `-E`'s code (75 by default).
    pub(crate) async fn acquire(&mut self, args: &LockArgs) -> Result<Step<Held>, Failure> {
        let wait = args.wait.map(|wait| {
            self.deadline
                .map_or(wait, |d| d.saturating_duration_since(Instant::now()))
        });
        let acquired = tokio::select! {
            // Dropping the acquisition is cancel-safe; closing the client
            // then waits for whatever it left in flight.
            signal = self.signals.recv() => return Ok(Step::Interrupted(signal)),
            acquired = acquire(&self.clients, &self.name, args, wait) => acquired,
        };
        match acquired.map_err(|failure| not_acquired_as(failure, args.conflict_exit_code))? {
            Some(held) => Ok(Step::Ready(held)),
            None => {
                let name = &self.name;
                let waited = duration::display(args.wait.unwrap_or_default());
                let why = if args.permits.is_some() {
                    format!("no permit of {name:?} within {waited}: all of them are taken")
                } else {
                    format!(
                        "lock {name:?} not acquired within {waited}: it is held by someone else"
                    )
                };
                Err(Failure::new(args.conflict_exit_code, why))
            }
        }
    }

    /// What is held, named for messages (see [`subject`]).
    pub(crate) fn subject(&self, args: &LockArgs) -> String {
        subject(args.permits.is_some(), &self.name)
    }

    /// Closes the clients. Once the lock is known `lost` there is nothing
    /// left to release, and a frozen server would only delay the exit:
    /// then they are closed without waiting.
    pub(crate) async fn close(self, lost: bool) {
        let close_timeout = if lost { Duration::ZERO } else { CLOSE_TIMEOUT };
        let closing = futures::future::join_all(self.clients.iter().map(LockClient::close));
        let _ = tokio::time::timeout(close_timeout, closing).await;
    }
}

/// The fewest `--redlock` servers that tolerate one down: a majority of 3
/// is 2.
const REDLOCK_FEWEST: usize = 3;

/// Refuses a `--redlock` of fewer than [`REDLOCK_FEWEST`] servers without
/// `--allow-few-masters` (exit 64, before any I/O): it would look like a
/// fault-tolerant lock and be none.
fn check_redlock(args: &LockArgs) -> Result<(), Failure> {
    let n = args.redlock.len();
    if n == 0 || n >= REDLOCK_FEWEST || args.allow_few_masters {
        return Ok(());
    }
    let what = if n == 1 {
        "1 server: that is a plain lock on it".to_owned()
    } else {
        format!("{n} servers: a majority of {n} is all of them, so losing any one loses the lock")
    };
    Err(Failure::new(
        exit::USAGE,
        format!(
            "--redlock names {what}; a RedLock needs at least {REDLOCK_FEWEST} independent \
             masters to survive one failing (5 survive two). Name more, or add \
             --allow-few-masters to accept it"
        ),
    ))
}

/// Whether an outcome is the lock's loss (exit 76).
pub(crate) fn is_lost(code: &Result<u8, Failure>) -> bool {
    matches!(code, Err(failure) if failure.code == exit::LOST)
}

/// Takes the lock `args` ask for: on the one client, a RedLock over every
/// client (`--redlock`, of lean locks with `--lean`), or a permit
/// (`--permits`), waiting up to `wait`.
async fn acquire(
    clients: &[LockClient],
    name: &LockName,
    args: &LockArgs,
    wait: Option<Duration>,
) -> Result<Option<Held>, Failure> {
    if let Some(permits) = args.permits {
        let sem = clients[0].permit_expirable_semaphore(name)?;
        if !sem.try_set_permits(permits).await? {
            check_permits(&sem, permits, args.set_permits).await?;
        }
        // No --lease: the watchdog renews the permit while it is held.
        let permit = match (wait, args.lease) {
            (Some(wait), Some(lease)) => sem.try_acquire_for_with_lease(wait, lease).await?,
            (Some(wait), None) => sem.try_acquire_for(wait).await?,
            (None, Some(lease)) => Some(sem.acquire_with_lease(lease).await?),
            (None, None) => Some(sem.acquire().await?),
        };
        return Ok(permit.map(Held::Permit));
    }
    let mut opts = AcquireOptions::new();
    if let Some(wait) = wait {
        opts = opts.wait(wait);
    }
    if let Some(lease) = args.lease {
        opts = opts.lease(lease);
    }
    if args.fenced {
        opts = opts.fenced();
    }
    if !args.redlock.is_empty() {
        let locks = clients
            .iter()
            .map(|client| {
                if args.lean {
                    client.lean_lock(name)
                } else {
                    client.lock(name)
                }
            })
            .collect::<lock_redis::Result<Vec<_>>>()?;
        // Its errors are one member's, given when too many failed for a
        // majority: say so, or it reads as the whole lock's only server.
        let taken = RedLock::new(locks)?.acquire(opts).await.map_err(|e| {
            Failure::lock(
                "too many --redlock servers failed for a majority; one of them",
                &e,
            )
        })?;
        return Ok(taken.map(Held::Red));
    }
    let client = &clients[0];
    // `--fair`, `--lean`, `--read` and `--write` pick the handle's kind;
    // the client serves them all.
    let lock = if args.fair {
        client.fair_lock(name)?.as_lock().clone()
    } else if args.lean {
        client.lean_lock(name)?
    } else if args.read {
        client.read_write_lock(name)?.read().clone()
    } else if args.write {
        client.read_write_lock(name)?.write().clone()
    } else {
        client.lock(name)?
    };
    Ok(lock.acquire(opts).await?.map(Held::One))
}

/// An existing semaphore must have the `--permits` asked for (as `consul
/// lock -n` refuses a conflicting limit), or holders that disagree would
/// each believe their own limit; `--set-permits` changes it instead. Its
/// size is its free permits plus those taken (leased and not expired: the
/// count reclaims expired ones first), the total Redisson's `getPermits`
/// reports, so taken permits never look like a smaller semaphore.
///
/// A mismatch is a usage error (64): the command line contradicts the
/// semaphore, and the fix is on the command line (the other count, or
/// `--set-permits`); nothing is changed.
async fn check_permits(
    sem: &PermitExpirableSemaphore,
    permits: u64,
    set: bool,
) -> Result<(), Failure> {
    let total = sem.permits().await?;
    if i64::try_from(permits) == Ok(total) {
        return Ok(());
    }
    if set {
        return Ok(sem.set_permits(permits).await?);
    }
    let name = sem.name();
    Err(Failure::new(
        exit::USAGE,
        format!(
            "semaphore {name:?} has {total} {} (free and taken), not the {permits} of \
             --permits; run with --permits {total}, or add --set-permits to make it {permits}",
            if total == 1 { "permit" } else { "permits" }
        ),
    ))
}

/// A failure to acquire that means "not acquired" exits `code` (`-E`), as
/// a wait that ran out does: a hold given back for want of replicas, or
/// one whose reply came after its lease ran out (the library's `LockLost`,
/// which before CMD started cannot mean that CMD's lock was lost).
fn not_acquired_as(failure: Failure, code: u8) -> Failure {
    if matches!(failure.code, exit::NOT_ACQUIRED | exit::LOST) {
        Failure { code, ..failure }
    } else {
        failure
    }
}

/// How a hold taken with `args` is lost, for messages.
pub(crate) fn how_lost(args: &LockArgs) -> String {
    match (args.lease, args.permits) {
        (Some(lease), _) => format!("its lease of {} ran out", duration::display(lease)),
        (None, None) => "it was deleted, force-unlocked or could not be renewed".to_owned(),
        (None, Some(_)) => {
            "it was released elsewhere, its semaphore deleted, or it could not be renewed"
                .to_owned()
        }
    }
}

/// What releasing found.
pub(crate) enum Released {
    /// Released, or not (Redis did not answer or failed: a warning was
    /// printed, and the lock expires with its lease).
    Done,
    /// No longer held: it expired or was deleted before the release.
    NotHeld,
}

/// Releases `guard` (`subject`, see [`Session::subject`]).
pub(crate) async fn release(guard: Held, subject: &str) -> Released {
    match tokio::time::timeout(RELEASE_TIMEOUT, guard.unlock()).await {
        Ok(Ok(())) => Released::Done,
        Ok(Err(e)) if e.is_not_held() => Released::NotHeld,
        Ok(Err(e)) => {
            warn_unreleased(subject, &Failure::from(e).message);
            Released::Done
        }
        Err(_) => {
            warn_unreleased(subject, "no answer in time");
            Released::Done
        }
    }
}

/// The outcome stands; the lock expires with its lease, as the renewals
/// stopped when the release began.
fn warn_unreleased(subject: &str, why: &str) {
    output::error(&format!(
        "warning: could not release {subject} ({why}); it expires with its lease"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_lost_before_the_command_started_was_not_acquired() {
        let late = Failure::lock("", &lock_redis::LockError::lock_lost("jobs"));
        assert_eq!(late.code, exit::LOST);
        assert_eq!(not_acquired_as(late, 3).code, 3);
        let refused = Failure::new(exit::NOT_ACQUIRED, "not replicated");
        assert_eq!(
            not_acquired_as(refused, exit::NOT_ACQUIRED).code,
            exit::NOT_ACQUIRED
        );
        let down = Failure::new(exit::UNAVAILABLE, "down");
        assert_eq!(not_acquired_as(down, 3).code, exit::UNAVAILABLE);
    }
}
