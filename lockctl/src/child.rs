//! The command `lockctl run` runs, as a process group: starting it (behind
//! its supervisor, see [`crate::supervise`]) with the lock in its
//! environment, signalling it, stopping it when the lock is lost, and
//! killing what it leaves behind.
//!
//! The supervisor leads the group and the command starts in it, so one
//! `killpg` on the supervisor's pid reaches the command and its children.
//! The group's id stays reserved while the supervisor is not yet reaped,
//! which is why every signal here is sent before reaping it.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{self, ExitStatus};
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::signal::unix::{signal, SignalKind};

use crate::cli::SUPERVISE;
use crate::exit::{self, Failure};

/// The command's environment variable holding the lock's name.
pub(crate) const LOCK_NAME: &str = "LOCK_NAME";
/// The command's environment variable holding the fencing token.
pub(crate) const LOCK_TOKEN: &str = "LOCK_TOKEN";

/// The longest a command told to stop (SIGTERM) gets before SIGKILL.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);

/// How long a command gets between SIGTERM and SIGKILL when the lock is
/// lost, for a hold of `lease` kept by a client with `watchdog_timeout`.
///
/// The client reports the loss this much (plus its clock-drift allowance)
/// before the lease ends, and the SIGKILL comes at the lease's end at the
/// latest, so the command never runs beside the next holder. A quarter of
/// the lease at most, so short leases still leave most of the lease to work
/// in (and the client accepts the margin: it must stay under a third of the
/// watchdog timeout).
pub(crate) fn stop_grace(lease: Duration, watchdog_timeout: Duration) -> Duration {
    STOP_GRACE.min(lease / 4).min(watchdog_timeout / 4)
}

/// The running command: its supervisor, which leads its process group.
///
/// Dropping it before the command was seen to exit kills the group
/// (SIGKILL): should lockctl fail while the command runs, the command must
/// not run on without the lock.
pub(crate) struct Group {
    supervisor: process::Child,
    /// The supervisor's pid, which is the group's id.
    id: Pid,
    /// Set once the supervisor is reaped; from then on the group's id may
    /// name another group, and nothing more is sent to it.
    status: Option<ExitStatus>,
    children_exited: tokio::signal::unix::Signal,
}

/// Starts `cmd` (program and arguments) in a new process group, with stdin,
/// stdout and stderr inherited, and `LOCK_NAME` (and `LOCK_TOKEN` when
/// `token` is given) in its environment.
///
/// Must be called on the thread that stays alive as long as lockctl does
/// (the main thread): on Linux the supervisor's parent-death signal fires
/// when the thread that started it ends.
///
/// # Errors
/// 126 when the supervisor cannot be started. The supervisor reports a
/// command it cannot start as a shell would (127 not found, 126 not
/// executable) through its exit status.
pub(crate) fn spawn(cmd: &[OsString], name: &str, token: Option<u64>) -> Result<Group, Failure> {
    let cannot = |e: io::Error| {
        Failure::new(
            exit::CANNOT_EXECUTE,
            format!("cannot start the command's supervisor: {e}"),
        )
    };
    // Listening before the supervisor exists, so its exit is never missed.
    let children_exited = signal(SignalKind::child()).map_err(cannot)?;
    let mut command = process::Command::new(supervisor_program().map_err(cannot)?);
    command
        .arg0(
            std::env::args_os()
                .next()
                .unwrap_or_else(|| "lockctl".into()),
        )
        .args([SUPERVISE, "--parent", &process::id().to_string(), "--"])
        .args(cmd)
        .env(LOCK_NAME, name)
        // A new group, led by the supervisor, which the command joins.
        .process_group(0);
    match token {
        Some(token) => command.env(LOCK_TOKEN, token.to_string()),
        // A LOCK_TOKEN inherited from an outer `lockctl run --fenced` is
        // not a token of this lock: never let it look like one.
        None => command.env_remove(LOCK_TOKEN),
    };
    let supervisor = command.spawn().map_err(cannot)?;
    let id = i32::try_from(supervisor.id())
        .map(Pid::from_raw)
        .map_err(|_| cannot(io::Error::other("pid out of range")))?;
    Ok(Group {
        supervisor,
        id,
        status: None,
        children_exited,
    })
}

/// This very program, to run as the supervisor.
fn supervisor_program() -> io::Result<PathBuf> {
    // The running binary even if an upgrade replaced the file meanwhile,
    // where the path current_exe returns would name the new one (with
    // perhaps another idea of `__supervise`) or nothing.
    #[cfg(target_os = "linux")]
    {
        let running = PathBuf::from("/proc/self/exe");
        if running.exists() {
            return Ok(running);
        }
    }
    std::env::current_exe()
}

/// The failure for a command that cannot be started, as a shell reports
/// it: 127 when the program is not found, 126 when it cannot be executed.
pub(crate) fn spawn_failure(program: &OsString, err: &io::Error) -> Failure {
    let program = program.to_string_lossy();
    match err.kind() {
        io::ErrorKind::NotFound => {
            Failure::new(exit::NOT_FOUND, format!("{program}: command not found"))
        }
        io::ErrorKind::PermissionDenied => Failure::new(
            exit::CANNOT_EXECUTE,
            format!("{program}: permission denied"),
        ),
        _ => Failure::new(exit::CANNOT_EXECUTE, format!("cannot run {program}: {err}")),
    }
}

impl Group {
    /// Sends `signal` to the whole group, unless the command has been
    /// seen to exit.
    pub(crate) fn signal(&self, signal: Signal) {
        if self.status.is_none() {
            // Cannot fail while the supervisor is unreaped: it is in the
            // group, if only as a zombie.
            let _ = killpg(self.id, signal);
        }
    }

    /// Sends `signal`, one that asks the command to end (SIGINT, SIGTERM,
    /// SIGHUP), to the group, and SIGCONT after it: a stopped command (by
    /// SIGSTOP, or by SIGTTIN for reading the terminal from its background
    /// group) would otherwise act on it only once someone continued it.
    pub(crate) fn ask_to_end(&self, signal: Signal) {
        self.signal(signal);
        self.signal(Signal::SIGCONT);
    }

    /// Stops the group (SIGTSTP, as Ctrl-Z would) and then lockctl itself
    /// (SIGSTOP, as Ctrl-Z would have, had lockctl not caught it); when
    /// lockctl is continued (`fg`, `bg`, SIGCONT), continues the group.
    pub(crate) fn suspend(&self) {
        self.signal(Signal::SIGTSTP);
        // A signal to oneself is delivered before kill returns: lockctl is
        // stopped here, and goes on from here when continued.
        let _ = kill(Pid::this(), Signal::SIGSTOP);
        self.signal(Signal::SIGCONT);
    }

    /// Waits for the command to exit and kills (SIGKILL) whatever it left
    /// running in its group: that would run on without the lock. Returns
    /// the command's status as the supervisor reports it.
    ///
    /// # Cancel safety
    /// Cancel-safe: the exit is looked for anew at each call.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.reap()? {
                return Ok(status);
            }
            if self.children_exited.recv().await.is_none() {
                // Only when the runtime is shutting down: nothing more comes.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Stops the command: SIGTERM to the group (see
    /// [`Group::ask_to_end`]), then SIGKILL after `grace`, and waits for it
    /// to exit.
    ///
    /// # Cancel safety
    /// Not meant to be cancelled: a dropped call may leave the command
    /// running until the group is dropped (which kills it).
    pub(crate) async fn stop(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        self.ask_to_end(Signal::SIGTERM);
        if let Ok(status) = tokio::time::timeout(grace, self.wait()).await {
            return status;
        }
        self.signal(Signal::SIGKILL);
        self.wait().await
    }

    /// The supervisor's status if it has exited, after killing the rest of
    /// the group; `None` while it runs.
    #[cfg(target_os = "linux")]
    fn reap(&mut self) -> io::Result<Option<ExitStatus>> {
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};

        if self.status.is_some() {
            return Ok(self.status);
        }
        // Look without reaping: the group's id stays reserved meanwhile.
        let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        if waitid(Id::Pid(self.id), peek)? == WaitStatus::StillAlive {
            return Ok(None);
        }
        self.signal(Signal::SIGKILL);
        self.status = self.supervisor.try_wait()?;
        Ok(self.status)
    }

    /// The supervisor's status if it has exited, after killing the rest of
    /// the group; `None` while it runs.
    #[cfg(not(target_os = "linux"))]
    fn reap(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_some() {
            return Ok(self.status);
        }
        // No waitid(WNOWAIT) here: the supervisor is reaped first. Its id
        // stays reserved while anything is left in the group; a group left
        // empty answers ESRCH, unless the id was taken by a new group in
        // the microseconds between.
        let status = self.supervisor.try_wait()?;
        if status.is_some() {
            let _ = killpg(self.id, Signal::SIGKILL);
        }
        self.status = status;
        Ok(status)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.signal(Signal::SIGKILL);
            // Reaped now if already dead; otherwise by init once lockctl,
            // which is failing, has exited.
            let _ = self.supervisor.try_wait();
        }
    }
}
