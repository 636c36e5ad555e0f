//! The signals `lockctl run` catches, to pass them on to its command.
//!
//! Once these are installed, SIGINT, SIGTERM and SIGHUP no longer kill
//! lockctl: `run` decides what each means at each stage (give up waiting,
//! or pass it on to the command and release the lock after it exits).
//! Handlers do not survive `exec`, so the command starts with the default
//! dispositions.

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, SignalKind};

use crate::exit::{self, Failure};

/// SIGINT, SIGTERM and SIGHUP, caught.
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Catches the signals from now on; one that arrives before
    /// [`Signals::recv`] is called is kept for it.
    pub(crate) fn install() -> Result<Self, Failure> {
        let catch = |kind| {
            signal(kind).map_err(|e| {
                Failure::new(
                    exit::SOFTWARE,
                    format!("cannot install signal handlers: {e}"),
                )
            })
        };
        Ok(Self {
            int: catch(SignalKind::interrupt())?,
            term: catch(SignalKind::terminate())?,
            hup: catch(SignalKind::hangup())?,
        })
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
            // Only when the runtime is shutting down: nothing more comes.
            else => std::future::pending().await,
        }
    }
}
