//! `lockctl hold`: take the lock and keep it until told to let go, for a
//! shell script that holds a lock around several steps (a coproc) or a
//! person at a terminal.
//!
//! Once held, one line on stdout says so: `held NAME`, or with `--fenced`
//! `held NAME TOKEN` (the token is the last word). The client's watchdog
//! renews the lock (or `--lease` bounds it) until one of:
//!
//! - stdin reaches its end (its writer closed it): released, exit 0. Only a
//!   stdin that is not a terminal is read: a background `lockctl hold`
//!   reading its terminal would be stopped by SIGTTIN, and a stopped
//!   lockctl renews nothing. At a terminal, Ctrl-C lets go.
//! - SIGINT, SIGTERM or SIGHUP: released, exit 0.
//! - the lock is lost (deleted, force-unlocked, renewals failing until it
//!   expired, the lease over): one line on stderr, exit 76 at once.
//!
//! A release that finds the lock no longer held reports it lost too (76):
//! whoever relied on holding it was not protected all along.

use std::io::{IsTerminal as _, Read as _};

use tokio::sync::oneshot;

use crate::cli::{Global, HoldArgs, LockArgs};
use crate::exit::{self, Failure};
use crate::output;
use crate::take::{self, how_lost, Released, Session, Step};

/// Runs `lockctl hold`; returns the exit code.
pub(crate) async fn run(global: &Global, args: HoldArgs) -> Result<u8, Failure> {
    let args = args.lock;
    let mut session = match Session::open(global, &args).await? {
        Step::Ready(session) => session,
        Step::Interrupted(signal) => return Ok(exit::of_signal(signal as i32)),
    };
    let code = hold(&mut session, &args).await;
    session.close(take::is_lost(&code)).await;
    code
}

/// Why the hold ended.
enum Ended {
    /// stdin ended, or a signal asked to let go.
    LetGo,
    /// The lock was lost.
    Lost,
}

async fn hold(session: &mut Session, args: &LockArgs) -> Result<u8, Failure> {
    let guard = match session.acquire(args).await? {
        Step::Ready(guard) => guard,
        Step::Interrupted(signal) => return Ok(exit::of_signal(signal as i32)),
    };
    let subject = session.subject(args);
    let line = match guard.fencing_token() {
        Some(token) => format!("held {} {token}\n", session.name),
        None => format!("held {}\n", session.name),
    };
    output::stdout(&line);
    let ended = tokio::select! {
        () = guard.lost() => Ended::Lost,
        _ = session.signals.recv() => Ended::LetGo,
        () = stdin_end() => Ended::LetGo,
    };
    let how = how_lost(args);
    match ended {
        Ended::Lost => {
            // Gone already: dropping the guard only ends its bookkeeping.
            drop(guard);
            Err(Failure::new(
                exit::LOST,
                format!("{subject} was lost while held ({how})"),
            ))
        }
        Ended::LetGo => match take::release(guard, &subject).await {
            Released::Done => Ok(0),
            Released::NotHeld => Err(Failure::new(
                exit::LOST,
                format!("{subject} was no longer held when let go ({how})"),
            )),
        },
    }
}

/// Resolves when stdin has reached its end (or cannot be read); never for
/// a terminal (see the module docs). What comes is read and dropped.
///
/// The reading is a thread of its own, blocked in `read`: nothing waits
/// for it, and it ends with the process.
async fn stdin_end() {
    if std::io::stdin().is_terminal() {
        return std::future::pending().await;
    }
    let (ended, receiver) = oneshot::channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0_u8; 4096];
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        let _ = ended.send(());
    });
    // Err (the thread gone without a word) is an end of stdin too.
    let _ = receiver.await;
}
