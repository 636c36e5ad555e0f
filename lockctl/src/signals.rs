//! The signals `lockctl run` catches, to pass them on to its command.
//!
//! Once these are installed, SIGINT, SIGTERM and SIGHUP no longer kill
//! lockctl: `run` decides what each means at each stage (give up waiting,
//! or pass it on to the command and release the lock after it exits).
//! Handlers do not survive `exec`, so the command starts with the default
//! dispositions.
//!
//! Once the command runs, SIGTSTP (Ctrl-Z) is caught too: the command is in
//! a process group of its own, which the terminal's Ctrl-Z does not reach,
//! so `run` stops it along with lockctl (see `Group::suspend`). Were
//! lockctl alone stopped, the command would run on while nobody renews the
//! lock.

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, SignalKind};

use crate::exit::{self, Failure};

/// SIGINT, SIGTERM and SIGHUP, caught; SIGTSTP too after
/// [`Signals::catch_stop`].
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    tstp: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Catches the signals from now on; one that arrives before
    /// [`Signals::recv`] is called is kept for it.
    pub(crate) fn install() -> Result<Self, Failure> {
        Ok(Self {
            int: catch(SignalKind::interrupt())?,
            term: catch(SignalKind::terminate())?,
            hup: catch(SignalKind::hangup())?,
            tstp: None,
        })
    }

    /// Catches SIGTSTP from now on, for as long as lockctl runs: it no
    /// longer stops lockctl by itself, [`Signals::recv`] returns it.
    pub(crate) fn catch_stop(&mut self) -> Result<(), Failure> {
        if self.tstp.is_none() {
            self.tstp = Some(catch(SignalKind::from_raw(Signal::SIGTSTP as i32))?);
        }
        Ok(())
    }

    /// The next signal caught.
    ///
    /// # Cancel safety
    /// Cancel-safe: a signal is never consumed by a dropped call.
    pub(crate) async fn recv(&mut self) -> Signal {
        tokio::select! {
            Some(()) = self.int.recv() => Signal::SIGINT,
            Some(()) = self.term.recv() => Signal::SIGTERM,
            Some(()) = self.hup.recv() => Signal::SIGHUP,
            Some(()) = recv_some(&mut self.tstp) => Signal::SIGTSTP,
            // Only when the runtime is shutting down: nothing more comes.
            else => std::future::pending().await,
        }
    }
}

fn catch(kind: SignalKind) -> Result<tokio::signal::unix::Signal, Failure> {
    signal(kind).map_err(|e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot install signal handlers: {e}"),
        )
    })
}

/// The next signal from `stream`, or never when there is none.
async fn recv_some(stream: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match stream {
        Some(stream) => stream.recv().await,
        None => None,
    }
}
