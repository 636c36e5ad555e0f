//! The command never outlives lockctl: its whole process group (a shell and
//! the shell's own children) is signalled, stopped and killed with it.
//!
//! Linux only: the parent-death signal and `/proc` are.
#![cfg(target_os = "linux")]

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tempfile::TempDir;

/// A shell that starts a grandchild and waits for it, writing both pids.
/// The grandchild writes nowhere: should it outlive its lockctl, it must
/// not hold the test's stderr pipe open.
const SHELL_AND_GRANDCHILD: &str =
    "echo $$ > pid; sleep 30 >/dev/null 2>&1 & echo $! > child; wait";

/// `lockctl run` of a shell with a grandchild, both running.
struct Family {
    lockctl: Proc,
    shell: Pid,
    grandchild: Pid,
    dir: TempDir,
    // Dropped last: kills whatever a failed test left running.
    _cleanup: KillOnDrop,
}

impl Family {
    fn start(url: &str, global: &[&str], script: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = lockctl(url);
        cmd.args(global)
            .args(["run", "job", "--", "sh", "-c", script])
            .current_dir(dir.path());
        let lockctl = Proc::spawn(cmd);
        let shell = read_pid(&dir.path().join("pid"));
        let grandchild = read_pid(&dir.path().join("child"));
        Self {
            lockctl,
            shell,
            grandchild,
            dir,
            _cleanup: KillOnDrop(vec![shell, grandchild]),
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }
}

#[test]
fn a_sigkilled_lockctl_takes_the_command_and_its_children_along() {
    let server = RedisServer::start();
    let family = Family::start(
        &server.url(),
        &["--watchdog-timeout", "1500ms"],
        SHELL_AND_GRANDCHILD,
    );
    assert_eq!(int(&server, &["EXISTS", "job"]), 1);
    // The next holder queues up; it may enter once the lock expires.
    let entered = family.path("entered");
    let mut cmd = lockctl(&server.url());
    cmd.args([
        "--watchdog-timeout",
        "1500ms",
        "run",
        "job",
        "--wait",
        "10s",
    ])
    .args(["--", "sh", "-c", ": > entered"])
    .current_dir(family.dir.path());
    let next = Proc::spawn(cmd);

    family.lockctl.signal(Signal::SIGKILL);
    let killed = Instant::now();
    let took = all_gone_after(&[family.shell, family.grandchild], killed)
        .expect("the command or its child still runs after lockctl was SIGKILLed");
    assert!(
        !entered.exists(),
        "the next holder entered while the command still ran"
    );
    // The kernel ends them with lockctl, not the lease's end: gone before
    // the 1.5 s lock could have expired, however loaded the machine.
    assert!(took < Duration::from_millis(1500), "gone after {took:?}");

    let (status, stderr) = next.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    assert!(entered.exists());
}

#[test]
fn sigterm_reaches_the_commands_children() {
    let server = RedisServer::start();
    let family = Family::start(&server.url(), &[], SHELL_AND_GRANDCHILD);
    family.lockctl.signal(Signal::SIGTERM);
    let (status, stderr) = family.lockctl.wait(PATIENCE);
    assert_eq!(code(status), 128 + 15, "{stderr}");
    let gone = all_gone_after(&[family.shell, family.grandchild], Instant::now());
    assert!(gone.is_some(), "the command's child still runs");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

#[test]
fn a_lost_lock_stops_the_commands_children() {
    let server = RedisServer::start();
    let family = Family::start(
        &server.url(),
        &["--watchdog-timeout", "1s"],
        SHELL_AND_GRANDCHILD,
    );
    server.cmd(&["DEL", "job"]);
    let (status, stderr) = family.lockctl.wait(PATIENCE);
    assert_eq!(code(status), 76, "{stderr}");
    let gone = all_gone_after(&[family.shell, family.grandchild], Instant::now());
    assert!(gone.is_some(), "the command's child still runs");
}

#[test]
fn children_left_running_are_killed_when_the_command_exits() {
    let server = RedisServer::start();
    let family = Family::start(
        &server.url(),
        &[],
        // Exits at once, leaving its child behind.
        "echo $$ > pid; sleep 30 >/dev/null 2>&1 & echo $! > child",
    );
    let (status, stderr) = family.lockctl.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    let gone = all_gone_after(&[family.grandchild], Instant::now());
    assert!(gone.is_some(), "the command's child outlived lockctl");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

#[test]
fn ctrl_z_stops_the_command_along_with_lockctl() {
    let server = RedisServer::start();
    let family = Family::start(&server.url(), &[], SHELL_AND_GRANDCHILD);
    let all = [family.lockctl.pid(), family.shell, family.grandchild];
    let stopped = |pid| process_state(pid) == Some('T');
    // What the terminal sends lockctl's process group on Ctrl-Z.
    family.lockctl.signal(Signal::SIGTSTP);
    wait_until("all three to stop", PATIENCE, || {
        all.into_iter().all(stopped)
    });
    // What `fg` sends it.
    family.lockctl.signal(Signal::SIGCONT);
    wait_until("all three to go on", PATIENCE, || {
        !all.into_iter().any(stopped)
    });
    family.lockctl.signal(Signal::SIGTERM);
    let (status, stderr) = family.lockctl.wait(PATIENCE);
    assert_eq!(code(status), 128 + 15, "{stderr}");
}

#[test]
fn a_stopped_command_still_acts_on_sigterm() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&server.url());
    cmd.args([
        "run",
        "job",
        "--",
        "sh",
        "-c",
        "echo $$ > pid; kill -STOP $$",
    ])
    .current_dir(dir.path());
    let lockctl = Proc::spawn(cmd);
    let shell = read_pid(&dir.path().join("pid"));
    let _cleanup = KillOnDrop(vec![shell]);
    wait_until("the command to stop", PATIENCE, || {
        process_state(shell) == Some('T')
    });
    lockctl.signal(Signal::SIGTERM);
    let (status, stderr) = lockctl.wait(PATIENCE);
    assert_eq!(code(status), 128 + 15, "{stderr}");
}

/// The race check: a supervisor that finds it is no longer the child of the
/// lockctl that started it (which died before it could ask for the
/// parent-death signal) starts nothing.
#[test]
fn a_supervisor_whose_lockctl_is_gone_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let supervise = |parent: u32| {
        Command::new(env!("CARGO_BIN_EXE_lockctl"))
            .args(["__supervise", "--parent", &parent.to_string()])
            .args(["--", "sh", "-c", ": > ran; exit 3"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    // Its parent is this test, not pid 1.
    let output = supervise(1);
    assert_eq!(code(output.status), 128 + 9, "{output:?}");
    assert!(!dir.path().join("ran").exists(), "the command ran");
    let output = supervise(std::process::id());
    assert_eq!(code(output.status), 3, "{output:?}");
    assert!(dir.path().join("ran").exists(), "the command did not run");
}
