//! The command `lockctl run` runs: starting it with the lock in its
//! environment, signalling it, and stopping it when the lock is lost.

use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::exit::{self, Failure};

/// The command's environment variable holding the lock's name.
pub(crate) const LOCK_NAME: &str = "LOCK_NAME";
/// The command's environment variable holding the fencing token.
pub(crate) const LOCK_TOKEN: &str = "LOCK_TOKEN";

/// How long a command told to stop (SIGTERM) gets before SIGKILL.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);

/// Starts `cmd` (program and arguments) with stdin, stdout and stderr
/// inherited, and `LOCK_NAME` (and `LOCK_TOKEN` when `token` is given) in
/// its environment.
///
/// # Errors
/// As a shell: 127 when the program is not found, 126 when it cannot be
/// executed.
pub(crate) fn spawn(cmd: &[OsString], name: &str, token: Option<u64>) -> Result<Child, Failure> {
    let (program, args) = cmd
        .split_first()
        .ok_or_else(|| Failure::new(exit::USAGE, "no command given after --"))?;
    let mut command = Command::new(program);
    command.args(args).env(LOCK_NAME, name);
    match token {
        Some(token) => command.env(LOCK_TOKEN, token.to_string()),
        // A LOCK_TOKEN inherited from an outer `lockctl run --fenced` is
        // not a token of this lock: never let it look like one.
        None => command.env_remove(LOCK_TOKEN),
    };
    // Should lockctl fail before it has seen the command exit, the command
    // must not run on without the lock.
    command.kill_on_drop(true);
    command.spawn().map_err(|e| spawn_failure(program, &e))
}

fn spawn_failure(program: &OsString, err: &io::Error) -> Failure {
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

/// Sends `signal` to the command, unless it has already been reaped.
pub(crate) fn signal(child: &Child, signal: Signal) {
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return;
    };
    // ESRCH (it exited meanwhile) is fine: its exit is what we wait for.
    let _ = kill(Pid::from_raw(pid), signal);
}

/// Stops the command: SIGTERM, then SIGKILL after `grace`, and waits for it
/// to exit.
///
/// # Cancel safety
/// Not meant to be cancelled: a dropped call may leave the command running
/// until its handle is dropped (which kills it).
pub(crate) async fn stop(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    signal(child, Signal::SIGTERM);
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return status;
    }
    // Failing only when the command has exited meanwhile; wait reaps it.
    let _ = child.start_kill();
    child.wait().await
}
