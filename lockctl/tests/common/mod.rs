//! Helpers for the end-to-end tests: the built `lockctl` binary against a
//! real `redis-server` on a loopback port.
//!
//! Nothing here sleeps for a fixed time to let something happen: every
//! wait polls its condition up to a deadline and fails loudly at it.

#![allow(dead_code)] // each test binary uses its own subset

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use lock_redis::KeyLayout;
use lock_redis::LockName;
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;

/// The longest any condition in these tests is waited for before failing.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// `lockctl` with no options, and no `REDIS_URL`, `REDIS_PASSWORD` or
/// `LOCK_TOKEN` leaking in from the environment of the test run.
pub(crate) fn lockctl_bare() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockctl"));
    cmd.env_remove("REDIS_URL")
        .env_remove("REDIS_PASSWORD")
        .env_remove("REDIS_USERNAME")
        .env_remove("LOCK_TOKEN")
        .env("RUST_BACKTRACE", "1"); // a panic must still not show one
    cmd
}

/// `lockctl --url <server>`, with no `REDIS_URL`, `REDIS_PASSWORD` or
/// `LOCK_TOKEN` leaking in from the environment of the test run.
pub(crate) fn lockctl(url: &str) -> Command {
    let mut cmd = lockctl_bare();
    cmd.arg("--url").arg(url);
    cmd
}

/// Runs `lockctl args…` (no `--url` in front) to the end.
pub(crate) fn run_bare(args: &[&str]) -> Output {
    lockctl_bare()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("lockctl runs")
}

/// Runs `lockctl --url <url> args…` to the end.
pub(crate) fn run(url: &str, args: &[&str]) -> Output {
    lockctl(url)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("lockctl runs")
}

/// The exit code, failing the test on death by a signal.
pub(crate) fn code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| panic!("lockctl died by a signal: {status:?}"))
}

/// The stderr of a failed run: exactly one `lockctl: …` line, no panic.
pub(crate) fn one_error_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "want one line on stderr, got {stderr:?}");
    assert!(lines[0].starts_with("lockctl: "), "{stderr:?}");
    assert!(!stderr.contains("panicked"), "{stderr:?}");
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr:?}");
    stderr
}

/// Polls `cond` until it holds; panics naming `what` after `within`.
pub(crate) fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// The command contenders run: appends `start` and, 0.3 s later, `end` to
/// the file `f`, so interleaved runs show as `start start end end`.
pub(crate) const CONTENDER_SCRIPT: &str = "echo start >> f; sleep 0.3; echo end >> f";

/// Starts `lockctl --url <url> <global…> run <name> -- sh -c
/// CONTENDER_SCRIPT` in `dir`.
pub(crate) fn contender(url: &str, global: &[&str], name: &str, dir: &Path) -> Proc {
    let mut cmd = lockctl(url);
    cmd.args(global)
        .args(["run", name, "--", "sh", "-c", CONTENDER_SCRIPT])
        .current_dir(dir);
    Proc::spawn(cmd)
}

/// A `lockctl` process that is killed (and reaped) when dropped.
pub(crate) struct Proc {
    child: Option<Child>,
}

impl Proc {
    pub(crate) fn spawn(mut cmd: Command) -> Self {
        let child = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lockctl starts");
        Self { child: Some(child) }
    }

    pub(crate) fn pid(&self) -> Pid {
        let id = self.child.as_ref().expect("running").id();
        Pid::from_raw(i32::try_from(id).expect("pid fits"))
    }

    pub(crate) fn signal(&self, signal: Signal) {
        kill(self.pid(), signal).expect("lockctl can be signalled");
    }

    /// Whether it has exited (without reaping it for good).
    pub(crate) fn has_exited(&mut self) -> bool {
        let child = self.child.as_mut().expect("running");
        child.try_wait().expect("try_wait").is_some()
    }

    /// Waits up to `within` for it to exit; false if it did not.
    pub(crate) fn exits_within(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while !self.has_exited() {
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Waits up to `within` for it to exit; returns the status and stderr.
    pub(crate) fn wait(mut self, within: Duration) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + within;
        loop {
            if child.try_wait().expect("try_wait").is_some() {
                let output = child.wait_with_output().expect("output");
                let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
                return (output.status, stderr);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("lockctl did not exit within {within:?}");
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A `lockctl run` whose command says when it started (a `ready` file,
/// its pid in `pid`) and holds the lock until [`Holder::release`].
pub(crate) struct Holder {
    pub(crate) proc: Option<Proc>,
    dir: TempDir,
}

impl Holder {
    /// Starts `lockctl --url <url> <global…> run <run_args…> -- <hold>`
    /// and waits until the command runs.
    pub(crate) fn start(url: &str, global: &[&str], run_args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cmd = lockctl(url);
        cmd.args(global).arg("run").args(run_args).arg("--").args([
            "sh",
            "-c",
            // Also ends when the temp dir is gone: an orphaned command
            // (its lockctl killed) must never outlive the test.
            "echo $$ > pid; : > ready; while [ -e ready ] && [ ! -e release ]; do sleep 0.02; done",
        ]);
        cmd.current_dir(dir.path());
        let holder = Self {
            proc: Some(Proc::spawn(cmd)),
            dir,
        };
        holder.wait_ready();
        holder
    }

    fn wait_ready(&self) {
        let ready = self.path("ready");
        wait_until("the held command to start", PATIENCE, || ready.exists());
    }

    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// The command's pid.
    pub(crate) fn command_pid(&self) -> Pid {
        read_pid(&self.path("pid"))
    }

    /// Lets the command finish.
    pub(crate) fn release(&self) {
        fs::write(self.path("release"), "").expect("release file");
    }

    /// Releases and waits for lockctl to exit.
    pub(crate) fn finish(mut self) -> (ExitStatus, String) {
        self.release();
        self.proc.take().expect("running").wait(PATIENCE)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // The command ends by itself even when lockctl was killed; then
        // lockctl (if alive) ends with it.
        self.release();
        if let Some(mut proc) = self.proc.take() {
            // No panic here (a drop may run while a test fails): a lockctl
            // still running after this is killed by Proc's drop.
            let _ = proc.exits_within(PATIENCE);
        }
    }
}

/// A pid written by `echo $$ > file`, once the file is complete.
pub(crate) fn read_pid(file: &Path) -> Pid {
    let mut pid = None;
    wait_until("the command's pid", PATIENCE, || {
        pid = fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        pid.is_some()
    });
    Pid::from_raw(pid.expect("parsed"))
}

/// Whether a process with `pid` exists (signal 0 probes without sending).
pub(crate) fn process_exists(pid: Pid) -> bool {
    kill(pid, None).is_ok()
}

/// Whether the process `pid` has ended: gone, or a zombie (dead, waiting
/// for a parent that may be a container's init that never reaps).
pub(crate) fn process_gone(pid: Pid) -> bool {
    matches!(process_state(pid), None | Some('Z' | 'X'))
}

/// The state letter `/proc/<pid>/stat` shows (`R`, `S`, `T` stopped, `Z`
/// zombie, …), or `None` when there is no such process.
pub(crate) fn process_state(pid: Pid) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state …`; comm may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// The process group `pid` is in (from `/proc/<pid>/stat`), or `None`
/// when there is no such process.
pub(crate) fn process_group(pid: Pid) -> Option<Pid> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    let pgrp = rest.split_whitespace().nth(2)?.parse().ok()?;
    Some(Pid::from_raw(pgrp))
}

/// The live (not zombie) processes of the process group `pgid`.
pub(crate) fn group_members(pgid: Pid) -> Vec<Pid> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .map(Pid::from_raw)
        // A process that ends meanwhile reads as gone, which it is.
        .filter(|&pid| process_group(pid) == Some(pgid) && !process_gone(pid))
        .collect()
}

/// Polls every 5 ms, for up to `within`, until the process group `pgid`
/// has no live member; returns when that was seen, or `None` if some
/// still run.
pub(crate) fn group_gone_by(pgid: Pid, within: Duration) -> Option<Instant> {
    let deadline = Instant::now() + within;
    loop {
        if group_members(pgid).is_empty() {
            return Some(Instant::now());
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Polls every 5 ms, for up to 2 s, until every one of `pids` has ended;
/// returns how long that took from `since`, or `None` if some still run.
pub(crate) fn all_gone_after(pids: &[Pid], since: Instant) -> Option<Duration> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        if pids.iter().all(|&pid| process_gone(pid)) {
            return Some(since.elapsed());
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Kills (SIGKILL) the processes it names when dropped: a test that fails
/// must not leave its commands running.
pub(crate) struct KillOnDrop(pub(crate) Vec<Pid>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if !process_gone(pid) {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
    }
}

pub(crate) fn layout() -> KeyLayout {
    KeyLayout::default()
}

pub(crate) fn lock_name(name: &str) -> LockName {
    LockName::new(name).expect("valid name")
}

/// An integer reply, failing on anything else.
pub(crate) fn int(server: &RedisServer, args: &[&str]) -> i64 {
    match server.cmd(args) {
        Value::Int(n) => n,
        other => panic!("{args:?} answered {other:?}"),
    }
}

/// A list of strings (e.g. `LRANGE`, `HGETALL` in RESP2).
pub(crate) fn strings(server: &RedisServer, args: &[&str]) -> Vec<String> {
    let items = match server.cmd(args) {
        Value::Array(items) => items,
        Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        other => panic!("{args:?} answered {other:?}"),
    };
    items.into_iter().map(|v| text(&v)).collect()
}

/// A bulk or simple string reply as text.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => panic!("not a string: {other:?}"),
    }
}

/// The JSON object `lockctl status --json` printed.
pub(crate) fn status_json(url: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["status", "--json"];
    all.extend_from_slice(args);
    let output = run(url, &all);
    assert_eq!(code(output.status), 0, "{output:?}");
    serde_json::from_slice(&output.stdout).expect("status --json prints JSON")
}
