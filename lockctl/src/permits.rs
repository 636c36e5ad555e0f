//! `lockctl run --permits N`: at most N concurrent runs.
//!
//! The run takes one permit of the expirable-permit semaphore NAME, created
//! with N permits if absent, with a lease: `--lease`, or the watchdog
//! timeout renewed every third of it (`update_lease_time`) while the
//! command runs. So a lockctl that dies gives its permit back within that
//! lease, without anyone's help, as a lock expires. The promise is the
//! lock's (see `run.rs`): a renewal that finds the permit gone, or
//! renewals failing until a grace before the lease's end, stops the
//! command (exit 76); the command's exit gives the permit back and passes
//! its status on.

use std::time::Duration;

use lock_core::{LockClient, LockName, PermitId};
use nix::sys::signal::Signal;
use tokio::time::{sleep_until, Instant};

use crate::child::{self, Group};
use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::signals::Signals;
use crate::{duration, output};

/// How long giving the permit back may take after the command exited.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// One `run --permits`: the semaphore and the lease its permit is held
/// with.
pub(crate) struct Held<'a> {
    pub(crate) client: &'a LockClient,
    pub(crate) name: &'a LockName,
    pub(crate) permits: u64,
    pub(crate) lease: Duration,
    /// Renew the lease while the command runs (no `--lease`).
    pub(crate) renew: bool,
}

impl Held<'_> {
    /// Takes a permit, runs the command, gives the permit back; returns the
    /// exit code.
    pub(crate) async fn run(
        &self,
        args: &RunArgs,
        signals: &mut Signals,
        grace: Duration,
    ) -> Result<u8, Failure> {
        let sem = self.client.permit_expirable_semaphore(self.name)?;
        let acquire = async {
            sem.try_set_permits(self.permits).await?;
            match args.wait {
                Some(wait) => sem.try_acquire_for(wait, Some(self.lease)).await,
                None => sem.acquire(Some(self.lease)).await.map(Some),
            }
        };
        let sent = Instant::now();
        let id = tokio::select! {
            signal = signals.recv() => return Ok(exit::of_signal(signal as i32)),
            acquired = acquire => acquired?,
        };
        let Some(id) = id else {
            let waited = duration::display(args.wait.unwrap_or_default());
            return Err(Failure::new(
                exit::NOT_ACQUIRED,
                format!(
                    "no permit of {:?} within {waited}: all of them are taken",
                    self.name
                ),
            ));
        };
        signals.catch_stop()?;
        let mut command = match child::spawn(&args.cmd, self.name.as_str(), None) {
            Ok(command) => command,
            Err(failure) => {
                self.give_back(&sem, id).await;
                return Err(failure);
            }
        };
        // The lease runs from no earlier than the request was sent.
        let mut expires = sent + self.lease;
        let mut next_renewal = Instant::now() + self.lease / 3;
        loop {
            let lost_at = expires.checked_sub(grace).unwrap_or(expires);
            tokio::select! {
                status = command.wait() => {
                    let status = status.map_err(|e| {
                        Failure::new(exit::SOFTWARE, format!("cannot wait for the command: {e}"))
                    })?;
                    return self.finish(&sem, id, exit::of_status(status)).await;
                }
                () = sleep_until(next_renewal), if self.renew => {
                    let asked = Instant::now();
                    match sem.update_lease_time(id, Some(self.lease)).await {
                        Ok(true) => expires = asked + self.lease,
                        Ok(false) => return self.lost(&mut command, expires, grace, "it was taken back").await,
                        Err(e) => output::error(&format!("warning: renewing the permit failed: {e}")),
                    }
                    next_renewal = Instant::now() + self.lease / 3;
                }
                () = sleep_until(lost_at) => {
                    let why = if self.renew { "it could not be renewed" } else { "its lease ran out" };
                    return self.lost(&mut command, expires, grace, why).await;
                }
                signal = signals.recv() => match signal {
                    Signal::SIGTSTP => command.suspend(),
                    signal => command.ask_to_end(signal),
                },
            }
        }
    }

    /// The permit is gone while the command runs: stop the command by the
    /// lease's end, exit 76.
    async fn lost(
        &self,
        command: &mut Group,
        expires: Instant,
        grace: Duration,
        why: &str,
    ) -> Result<u8, Failure> {
        let until_expiry = expires.saturating_duration_since(Instant::now());
        let stopped = match command.stop(grace.min(until_expiry)).await {
            Ok(_) => "the command was stopped".to_owned(),
            Err(e) => format!("stopping the command failed: {e}"),
        };
        Err(Failure::new(
            exit::LOST,
            format!(
                "the permit of {:?} was lost while the command ran ({why}); {stopped}",
                self.name
            ),
        ))
    }

    /// Gives the permit back after the command exited with `code`.
    async fn finish(
        &self,
        sem: &lock_core::PermitExpirableSemaphore,
        id: PermitId,
        code: u8,
    ) -> Result<u8, Failure> {
        match tokio::time::timeout(RELEASE_TIMEOUT, sem.try_release(id)).await {
            Ok(Ok(true)) => Ok(code),
            Ok(Ok(false)) => Err(Failure::new(
                exit::LOST,
                format!(
                    "the permit of {:?} was no longer held when the command exited with {code} \
                     (its lease ran out while the command ran)",
                    self.name
                ),
            )),
            Ok(Err(e)) => {
                warn_kept(self.name, &Failure::from(e).message);
                Ok(code)
            }
            Err(_) => {
                warn_kept(self.name, "no answer in time");
                Ok(code)
            }
        }
    }

    async fn give_back(&self, sem: &lock_core::PermitExpirableSemaphore, id: PermitId) {
        match tokio::time::timeout(RELEASE_TIMEOUT, sem.try_release(id)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => warn_kept(self.name, &Failure::from(e).message),
            Err(_) => warn_kept(self.name, "no answer in time"),
        }
    }
}

fn warn_kept(name: &LockName, why: &str) {
    output::error(&format!(
        "warning: could not give back the permit of {name:?} ({why}); it comes back when its lease ends"
    ));
}
