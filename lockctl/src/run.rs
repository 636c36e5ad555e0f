//! `lockctl run`: take the lock, run a command while holding it, release it.
//!
//! The promise: the command runs only while this process holds the lock.
//! So every way the hold can end while the command still runs ends the
//! command too:
//!
//! - The command exits: the lock is released and its status is passed on.
//!   Should the release find the lock no longer ours (it expired or was
//!   deleted before the command finished), that is reported as a lost lock
//!   (exit 76), since part of the run may have gone unprotected.
//! - The lock is lost (the guard's lost signal: deleted or force-unlocked
//!   and seen at the next renewal, renewals failing until the lease ran
//!   out, or a fixed `--lease` running out): the command gets SIGTERM, then
//!   SIGKILL at the lease's end at the latest, and lockctl exits 76 without
//!   waiting for the server. The client reports such a loss a grace period
//!   (`child::stop_grace`: up to 2 s, at most a quarter of the lease) plus a
//!   clock-drift allowance *before* the lease ends, so the command is gone
//!   before another client can take the lock. (A lock deleted by someone
//!   else, e.g. `force-unlock`, is gone at once: the command still gets the
//!   grace, up to its lease's end.)
//! - lockctl is told to stop (SIGINT, SIGTERM, SIGHUP): the signal is passed
//!   on to the command, lockctl waits for it to exit, then releases. A
//!   signal that arrives while still waiting for the lock just gives up.
//! - lockctl itself dies (SIGKILL): nobody renews the lock, so it expires
//!   within the watchdog timeout (or the lease). On Linux the command's
//!   supervisor gets the parent-death signal and kills the command's group
//!   at once (see `supervise.rs`); elsewhere the command runs on, orphaned.
//!
//! "The command" is its whole process group (see `child.rs`): signals,
//! stops and kills reach a shell's children too, and whatever the command
//! leaves running when it exits is killed before the lock is released.
//!
//! `--permits N` holds one permit of the expirable-permit semaphore NAME
//! (created with N permits if absent) instead of the lock, under the same
//! promise: the permit's guard is renewed by the client's watchdog (or
//! leased for `--lease`) and tells of its loss as a lock's guard does (its
//! lease ran out, or a renewal found it released elsewhere or its
//! semaphore deleted), so a lockctl that dies gives its permit back
//! within the watchdog timeout, without anyone's help.

use std::process::ExitStatus;
use std::time::Duration;

use lock_core::{
    AcquireOptions, ClientConfig, LockClient, LockName, PermitExpirableSemaphore, RedLock,
};
use nix::sys::signal::Signal;

use crate::child::{self, Group};
use crate::cli::{Global, RunArgs};
use crate::exit::{self, Failure};
use crate::held::{subject, Held};
use crate::signals::Signals;
use crate::{connect, duration, output};

/// How long releasing may take after the command exited. The release is
/// retried on errors; if Redis is gone, the lock expires with its lease
/// anyway, so there is no point in keeping the caller waiting longer.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long closing the client may wait for requests still in flight
/// (a background release, an abandoned acquisition being undone).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs `lockctl run`; returns the exit code.
pub(crate) async fn run(global: &Global, args: RunArgs) -> Result<u8, Failure> {
    let name = LockName::new(&args.name).map_err(|e| Failure::lock("bad lock name", &e))?;
    if let Some(lease) = args.lease {
        // The library checks it too, but only after connecting: a usage
        // error should not depend on Redis being up.
        lock_core::lease_millis(lease, "--lease").map_err(Failure::from)?;
    }
    // Caught from the start, so that Ctrl-C while connecting or waiting
    // gives up cleanly (leaving the fair queue, undoing an acquisition on
    // the wire) instead of killing the process mid-request.
    let mut signals = Signals::install()?;
    // Loss is reported `grace` (plus the drift allowance) before the lease
    // ends, so the command can be stopped before anyone else can hold it.
    let grace = child::stop_grace(
        args.lease.unwrap_or(global.watchdog_timeout),
        global.watchdog_timeout,
    );
    let config = ClientConfig::default().loss_margin(grace);
    // `--wait` bounds connecting and waiting together: a server that is
    // restarting or failing over is waited for as a held lock is.
    let deadline = args
        .wait
        .and_then(|wait| tokio::time::Instant::now().checked_add(wait));
    let connecting = async {
        if args.redlock.is_empty() {
            Ok(vec![connect::client_by(global, config, deadline).await?])
        } else {
            connect::redlock_clients(global, &args.redlock, config).await
        }
    };
    let clients = tokio::select! {
        signal = signals.recv() => return Ok(exit::of_signal(signal as i32)),
        clients = connecting => clients?,
    };
    let code = hold_and_run(&clients, &name, &args, deadline, &mut signals, grace).await;
    // Once the lock is known lost there is nothing left to release, and a
    // frozen server would only delay the exit: close without waiting.
    let lost = matches!(&code, Err(failure) if failure.code == exit::LOST);
    let close_timeout = if lost { Duration::ZERO } else { CLOSE_TIMEOUT };
    let closing = futures::future::join_all(clients.iter().map(LockClient::close));
    let _ = tokio::time::timeout(close_timeout, closing).await;
    code
}

/// Takes the lock `args` ask for: on the one client, a RedLock over every
/// client (`--redlock`), or a permit (`--permits`), waiting up to `wait`.
async fn acquire(
    clients: &[LockClient],
    name: &LockName,
    args: &RunArgs,
    wait: Option<Duration>,
) -> Result<Option<Held>, Failure> {
    if let Some(permits) = args.permits {
        let sem = clients[0].permit_expirable_semaphore(name)?;
        if !sem.try_set_permits(permits).await? {
            check_permits(&sem, permits).await?;
        }
        // No --lease: the watchdog renews the permit while it is held.
        let permit = match wait {
            Some(wait) => sem.try_acquire_for(wait, args.lease).await?,
            None => Some(sem.acquire(args.lease).await?),
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
            .map(|client| client.lock(name))
            .collect::<lock_core::Result<Vec<_>>>()?;
        return Ok(RedLock::new(locks)?.acquire(opts).await?.map(Held::Red));
    }
    let client = &clients[0];
    // `--fair`, `--read` and `--write` pick the handle's kind; the client
    // serves them all.
    let lock = if args.fair {
        client.fair_lock(name)?.as_lock().clone()
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
/// lock -n` refuses a conflicting limit), or runs that disagree would each
/// believe their own limit. Its size is its free permits plus those taken
/// (leased and not expired: the count reclaims expired ones first), the
/// total Redisson's `getPermits` reports, so taken permits never look like
/// a smaller semaphore.
async fn check_permits(sem: &PermitExpirableSemaphore, permits: u64) -> Result<(), Failure> {
    let total = sem.permits().await?;
    if i64::try_from(permits) == Ok(total) {
        return Ok(());
    }
    let name = sem.name();
    Err(Failure::new(
        exit::DATA,
        format!(
            "semaphore {name:?} has {total} {} (free and taken), not the {permits} of \
             --permits; run with --permits {total}, or change its count first \
             (set_permits in the library)",
            if total == 1 { "permit" } else { "permits" }
        ),
    ))
}

async fn hold_and_run(
    clients: &[LockClient],
    name: &LockName,
    args: &RunArgs,
    deadline: Option<tokio::time::Instant>,
    signals: &mut Signals,
    grace: Duration,
) -> Result<u8, Failure> {
    // What connecting left of the wait; `--wait 0s` still tries once.
    let wait = args.wait.map(|wait| {
        deadline.map_or(wait, |d| {
            d.saturating_duration_since(tokio::time::Instant::now())
        })
    });
    let guard = tokio::select! {
        // Dropping the acquisition is cancel-safe; closing the client then
        // waits for whatever it left in flight.
        signal = signals.recv() => return Ok(exit::of_signal(signal as i32)),
        acquired = acquire(clients, name, args, wait) => {
            acquired.map_err(|failure| not_acquired_as(failure, args.conflict_exit_code))?
        }
    };
    let Some(guard) = guard else {
        let waited = duration::display(args.wait.unwrap_or_default());
        let why = if args.permits.is_some() {
            format!("no permit of {name:?} within {waited}: all of them are taken")
        } else {
            format!("lock {name:?} not acquired within {waited}: it is held by someone else")
        };
        return Err(Failure::new(args.conflict_exit_code, why));
    };
    let subject = subject(args.permits.is_some(), name);

    // From here on Ctrl-Z must stop the command too (see signals.rs).
    let spawned = signals
        .catch_stop()
        .and_then(|()| child::spawn(&args.argv(), name.as_str(), guard.fencing_token()));
    let mut command = match spawned {
        Ok(command) => command,
        Err(failure) => {
            release(guard, &subject).await;
            return Err(failure);
        }
    };
    match wait_or_lose(&mut command, &guard, signals).await? {
        Ended::Exited(status) => finish(guard, &subject, status).await,
        Ended::Lost => {
            // The command first: it must not run on without the lock. The
            // SIGKILL comes by the lease's end, when another client may
            // take the lock.
            let until_expiry = guard
                .lease_deadline()
                .saturating_duration_since(tokio::time::Instant::now());
            let stopped = command.stop(grace.min(until_expiry)).await;
            // The hold is gone already; dropping the guard just stops its
            // bookkeeping (its release finds nothing to release).
            drop(guard);
            let how = match (args.lease, args.permits) {
                (Some(lease), _) => format!("its lease of {} ran out", duration::display(lease)),
                (None, None) => "it was deleted, force-unlocked or could not be renewed".to_owned(),
                (None, Some(_)) => {
                    "it was released elsewhere, its semaphore deleted, or it could not be renewed"
                        .to_owned()
                }
            };
            let stopped = match stopped {
                Ok(_) => "the command was stopped".to_owned(),
                Err(e) => format!("stopping the command failed: {e}"),
            };
            Err(Failure::new(
                exit::LOST,
                format!("{subject} was lost while the command ran ({how}); {stopped}"),
            ))
        }
    }
}

/// A failure to acquire that means "not acquired" (a hold given back for
/// want of replicas) exits `code` (`-E`), as a wait that ran out does.
fn not_acquired_as(failure: Failure, code: u8) -> Failure {
    if failure.code == exit::NOT_ACQUIRED {
        Failure { code, ..failure }
    } else {
        failure
    }
}

/// How the command's run under the lock ended.
enum Ended {
    /// The command exited by itself (or by a signal passed on to it).
    Exited(ExitStatus),
    /// The lock was lost while the command ran; it is still running.
    Lost,
}

/// Waits for the command to exit or the lock to be lost, passing on the
/// signals lockctl receives meanwhile.
async fn wait_or_lose(
    command: &mut Group,
    guard: &Held,
    signals: &mut Signals,
) -> Result<Ended, Failure> {
    loop {
        tokio::select! {
            status = command.wait() => {
                return status.map(Ended::Exited).map_err(|e| {
                    // Dropping the group kills it; the guard's drop
                    // releases the lock.
                    Failure::new(exit::SOFTWARE, format!("cannot wait for the command: {e}"))
                });
            }
            () = guard.lost() => return Ok(Ended::Lost),
            signal = signals.recv() => match signal {
                Signal::SIGTSTP => command.suspend(),
                signal => command.ask_to_end(signal),
            },
        }
    }
}

/// Releases the lock (`subject`, see [`subject`]) after the command
/// exited; the exit code is the command's unless the lock turns out to
/// have been lost.
async fn finish(guard: Held, subject: &str, status: ExitStatus) -> Result<u8, Failure> {
    let code = exit::of_status(status);
    match tokio::time::timeout(RELEASE_TIMEOUT, guard.unlock()).await {
        Ok(Ok(())) => Ok(code),
        Ok(Err(e)) if e.is_not_held() => Err(Failure::new(
            exit::LOST,
            format!(
                "{subject} was no longer held when the command exited with {code} \
                 (it expired or was deleted while the command ran)"
            ),
        )),
        Ok(Err(e)) => {
            warn_unreleased(subject, &Failure::from(e).message);
            Ok(code)
        }
        Err(_) => {
            warn_unreleased(subject, "no answer in time");
            Ok(code)
        }
    }
}

/// Releases the lock when the command could not be started at all.
async fn release(guard: Held, subject: &str) {
    match tokio::time::timeout(RELEASE_TIMEOUT, guard.unlock()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn_unreleased(subject, &Failure::from(e).message),
        Err(_) => warn_unreleased(subject, "no answer in time"),
    }
}

/// The command's status stands; the lock expires with its lease, as the
/// renewals stopped when the release began.
fn warn_unreleased(subject: &str, why: &str) {
    output::error(&format!(
        "warning: could not release {subject} ({why}); it expires with its lease"
    ));
}
