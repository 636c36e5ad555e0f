//! `lockctl __supervise`: the process between `lockctl run` and its
//! command, there so that the command never outlives lockctl.
//!
//! `lockctl run` starts it (re-executing itself, see [`crate::child`]) as
//! the leader of a new process group. The command it starts stays in that
//! group, and so do the command's own children unless they leave it, so
//! lockctl reaches all of them with one `killpg`: passing on signals,
//! stopping the command when the lock is lost, killing what is left when
//! the command has exited.
//!
//! What lockctl cannot do is act once it has been killed (SIGKILL, the OOM
//! killer): nobody renews the lock then, it expires, and the next holder
//! enters while the command would still run. So on Linux the supervisor
//! asks the kernel for a signal when its parent dies (`PR_SET_PDEATHSIG`)
//! and then kills the whole group, itself included, with SIGKILL: there is
//! no time for a polite SIGTERM, the lock is already unguarded. The parent
//! may have died before that request took effect; the supervisor then finds
//! it has been reparented and starts nothing. Elsewhere there is no such
//! signal, and a command whose lockctl is killed runs on (the README says
//! so).
//!
//! The supervisor blocks every signal it can, so signals sent to the group
//! (by lockctl, by the command, by anyone) reach the command but never end
//! the supervisor; it takes SIGCHLD and the parent-death signal with
//! `sigwait`, and exits with the command's status as a shell reports it:
//! the code, 128+N for death by signal N, 127/126 when the command cannot
//! be started. It is synchronous (no runtime, one thread), so the blocked
//! mask covers the whole process.
//!
//! Why a separate process rather than setting the parent-death signal in
//! the command between fork and exec: that needs `pre_exec`, which is
//! unsafe, and this workspace forbids unsafe code.

use std::ffi::CString;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};

use nix::spawn::{posix_spawnp, PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags};
use nix::sys::signal::{killpg, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, getppid, Pid};

use crate::cli::SuperviseArgs;
use crate::{child, exit, output};

/// The signal the kernel sends the supervisor when lockctl dies. Any signal
/// the supervisor waits for would do: it decides by whether its parent
/// changed, not by which signal came.
const PARENT_DIED: Signal = Signal::SIGTERM;

/// The supervisor's exit code when lockctl was gone before the command
/// started: as if the command had been killed (SIGKILL), which is what
/// would have happened to it. Nobody is left to read it.
const ORPHANED: u8 = 128 + 9;

/// Runs `lockctl __supervise`; returns the exit code.
pub(crate) fn run(args: &SuperviseArgs) -> u8 {
    // In ps and top, "lockctl" rather than "exe" (from /proc/self/exe).
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_name(c"lockctl");
    let parent = Pid::from_raw(args.parent);
    let waited = match block_signals() {
        Ok(waited) => waited,
        Err(e) => {
            output::error(&format!("cannot block signals: {e}"));
            return exit::SOFTWARE;
        }
    };
    match watch_parent(parent) {
        Ok(()) => {}
        Err(Unwatched::Gone) => {
            output::error("lockctl ended before the command started; not starting it");
            return ORPHANED;
        }
        Err(Unwatched::Failed(e)) => {
            output::error(&format!("cannot ask for the parent-death signal: {e}"));
            return exit::SOFTWARE;
        }
    }
    let command = match start(args) {
        Ok(command) => command,
        Err(failure) => {
            output::error(&failure.message);
            return failure.code;
        }
    };
    wait(command, parent, &waited)
}

/// Blocks every signal that can be blocked, so that none ends the
/// supervisor, and returns the set it waits for. The command starts with an
/// empty mask (see [`start`]).
fn block_signals() -> nix::Result<SigSet> {
    SigSet::all().thread_block()?;
    let mut waited = SigSet::empty();
    waited.add(Signal::SIGCHLD);
    waited.add(PARENT_DIED);
    Ok(waited)
}

/// Why the supervisor cannot guard the command.
#[derive(Debug, PartialEq)]
enum Unwatched {
    /// The parent is already gone (this process was reparented).
    Gone,
    /// The kernel refused the request.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Failed(nix::Error),
}

/// Asks for [`PARENT_DIED`] when `parent` dies, then checks that it has not
/// died already: a parent that died before the request took effect sends
/// nothing, but has left this process reparented.
fn watch_parent(parent: Pid) -> Result<(), Unwatched> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_pdeathsig(PARENT_DIED).map_err(Unwatched::Failed)?;
    if getppid() == parent {
        Ok(())
    } else {
        Err(Unwatched::Gone)
    }
}

/// Starts the command in this process's group, with the environment lockctl
/// gave the supervisor; returns its pid.
///
/// `posix_spawn` rather than `std::process::Command`: the command must
/// start with an empty signal mask, not with this process's all-blocked
/// one, and std leaves the mask as it is. SIGPIPE, which the Rust runtime
/// ignores, is put back to its default, as std would.
fn start(args: &SuperviseArgs) -> Result<Pid, exit::Failure> {
    let program = args
        .cmd
        .first()
        .ok_or_else(|| exit::Failure::new(exit::USAGE, "no command given after --"))?;
    let cannot = |e: nix::Error| child::spawn_failure(program, &e.into());
    // Neither arguments nor the environment can hold a NUL byte: both came
    // to this process as C strings.
    let argv = args
        .cmd
        .iter()
        .map(|arg| CString::new(arg.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| cannot(nix::Error::EINVAL))?;
    let envp = std::env::vars_os()
        .map(|(key, value)| {
            let mut pair = key.into_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            CString::new(pair)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| cannot(nix::Error::EINVAL))?;
    let mut attr = PosixSpawnAttr::init().map_err(cannot)?;
    attr.set_sigmask(&SigSet::empty()).map_err(cannot)?;
    let mut defaults = SigSet::empty();
    defaults.add(Signal::SIGPIPE);
    attr.set_sigdefault(&defaults).map_err(cannot)?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )
    .map_err(cannot)?;
    let actions = PosixSpawnFileActions::init().map_err(cannot)?;
    posix_spawnp(&argv[0], &actions, &attr, &argv, &envp).map_err(cannot)
}

/// Waits for the command to exit, and kills the group should the parent
/// die meanwhile; returns the command's status as an exit code.
fn wait(command: Pid, parent: Pid, waited: &SigSet) -> u8 {
    loop {
        match waitpid(command, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return exit::of_code(code),
            Ok(WaitStatus::Signaled(_, signal, _)) => return exit::of_signal(signal as i32),
            // Still running, or stopped or continued.
            Ok(_) => {}
            Err(e) => {
                // lockctl kills what is left of the group when we exit.
                output::error(&format!("cannot wait for the command: {e}"));
                return exit::SOFTWARE;
            }
        }
        // Only SIGCHLD and PARENT_DIED can come, and which one came does
        // not matter: the checks around this say what happened.
        let _ = waited.wait();
        if getppid() != parent {
            // The group is this process's: this ends the supervisor too.
            let _ = killpg(getpgrp(), Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_that_is_already_gone_is_noticed() {
        let real = getppid();
        let gone = Pid::from_raw(real.as_raw().wrapping_add(1));
        assert_eq!(watch_parent(gone), Err(Unwatched::Gone));
        assert_eq!(watch_parent(real), Ok(()));
        // This is the test runner, not a supervisor: no signal for it.
        #[cfg(target_os = "linux")]
        nix::sys::prctl::set_pdeathsig(None).unwrap();
    }
}
