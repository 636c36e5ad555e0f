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

use nix::sys::signal::Signal;

use crate::child::{self, Group};
use crate::cli::{Global, RunArgs};
use crate::exit::{self, Failure};
use crate::held::Held;
use crate::signals::Signals;
use crate::take::{self, how_lost, Released, Session, Step};

/// Runs `lockctl run`; returns the exit code.
pub(crate) async fn run(global: &Global, args: RunArgs) -> Result<u8, Failure> {
    let mut session = match Session::open(global, &args.lock).await? {
        Step::Ready(session) => session,
        Step::Interrupted(signal) => return Ok(exit::of_signal(signal as i32)),
    };
    let code = hold_and_run(&mut session, &args).await;
    let lost = take::is_lost(&code);
    session.close(lost).await;
    code
}

async fn hold_and_run(session: &mut Session, args: &RunArgs) -> Result<u8, Failure> {
    let guard = match session.acquire(&args.lock).await? {
        Step::Ready(guard) => guard,
        Step::Interrupted(signal) => return Ok(exit::of_signal(signal as i32)),
    };
    let subject = session.subject(&args.lock);
    let (name, grace, signals) = (&session.name, session.grace, &mut session.signals);

    // From here on Ctrl-Z must stop the command too (see signals.rs).
    let spawned = signals
        .catch_stop()
        .and_then(|()| child::spawn(&args.argv(), name.as_str(), guard.fencing_token()));
    let mut command = match spawned {
        Ok(command) => command,
        Err(failure) => {
            take::release(guard, &subject).await;
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
            let how = how_lost(&args.lock);
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

/// Releases the lock (`subject`, see [`Session::subject`]) after the
/// command exited; the exit code is the command's unless the lock turns
/// out to have been lost.
async fn finish(guard: Held, subject: &str, status: ExitStatus) -> Result<u8, Failure> {
    let code = exit::of_status(status);
    match take::release(guard, subject).await {
        Released::Done => Ok(code),
        Released::NotHeld => Err(Failure::new(
            exit::LOST,
            format!(
                "{subject} was no longer held when the command exited with {code} \
                 (it expired or was deleted while the command ran)"
            ),
        )),
    }
}
