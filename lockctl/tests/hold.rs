//! `lockctl hold`: the lock taken and kept while stdin stays open, as a
//! shell script's coproc would use it, and let go when stdin closes, on a
//! signal, or lost (exit 76).

use crate::common;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// A running `lockctl hold`, its stdin a pipe kept by the test (as a
/// coproc's), killed when dropped.
struct Holding {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The lines of its stdout, as they come.
    lines: mpsc::Receiver<String>,
}

impl Holding {
    /// Starts `lockctl --url <url> <global…> hold <args…>`.
    fn start(url: &str, global: &[&str], args: &[&str]) -> Self {
        let mut child = lockctl(url)
            .args(global)
            .arg("hold")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lockctl starts");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (send, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// The next line on its stdout, waited for up to PATIENCE.
    fn line(&self) -> String {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("a line on stdout in time")
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).expect("pid fits"))
    }

    /// Closes its stdin, as a coproc's writer does.
    fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits up to `within` for it to exit; the status and stderr.
    fn wait(mut self, within: Duration) -> (std::process::ExitStatus, String) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let mut stderr = String::new();
                if let Some(mut pipe) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                return (status, stderr);
            }
            assert!(
                Instant::now() < deadline,
                "lockctl hold did not exit in {within:?}"
            );
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The coproc use: spawn, read the line, find the lock held in Redis (its
/// holder's field), close stdin, find it released.
#[test]
fn hold_keeps_the_lock_until_stdin_closes() {
    let server = RedisServer::start();
    let url = server.url();
    let mut holding = Holding::start(&url, &[], &["job"]);
    assert_eq!(holding.line(), "held job");
    let fields = strings(&server, &["HGETALL", "job"]);
    assert_eq!(fields.len(), 2, "one holder: {fields:?}");
    assert_eq!(fields[1], "1");
    let status = status_json(&url, &["job"]);
    assert_eq!(status["locked"], true);
    // Someone else cannot have it meanwhile.
    let output = run(&url, &["run", "job", "--wait", "0", "--", "true"]);
    assert_eq!(code(output.status), 75, "{output:?}");
    assert!(holding.child.try_wait().unwrap().is_none(), "still holding");

    holding.close_stdin();
    let (status, stderr) = holding.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

/// The watchdog renews the lock while held: past several watchdog
/// timeouts it is still ours, with a time to live.
#[test]
fn hold_renews_the_lock() {
    let server = RedisServer::start();
    let url = server.url();
    let mut holding = Holding::start(&url, &["--watchdog-timeout", "1s"], &["job"]);
    assert_eq!(holding.line(), "held job");
    thread::sleep(Duration::from_millis(2500));
    let pttl = int(&server, &["PTTL", "job"]);
    assert!((1..=1000).contains(&pttl), "PTTL {pttl}");
    holding.close_stdin();
    let (status, stderr) = holding.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

/// `--fenced` puts the token last on the line; SIGTERM (and SIGINT) let go
/// as closing stdin does.
#[test]
fn hold_prints_the_token_and_lets_go_on_a_signal() {
    let server = RedisServer::start();
    let url = server.url();
    let mut tokens = Vec::new();
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let holding = Holding::start(&url, &[], &["job", "--fenced"]);
        let line = holding.line();
        let (held, token) = line.rsplit_once(' ').expect("a token");
        assert_eq!(held, "held job", "{line}");
        tokens.push(token.parse::<u64>().expect("a number"));
        assert_eq!(int(&server, &["EXISTS", "job"]), 1);
        kill(holding.pid(), signal).unwrap();
        let (status, stderr) = holding.wait(PATIENCE);
        assert_eq!(code(status), 0, "{signal}: {stderr}");
        assert_eq!(int(&server, &["EXISTS", "job"]), 0, "{signal}: released");
    }
    assert!(tokens[1] > tokens[0], "{tokens:?}");
}

/// The other kinds: a permit of a semaphore, the read side of a
/// read-write lock, a fair lock; each held, then given back.
#[test]
fn hold_takes_every_kind() {
    let server = RedisServer::start();
    let url = server.url();
    for (args, check) in [
        (&["jobs", "--permits", "2"][..], ["ZCARD", "{jobs}:timeout"]),
        (&["rw", "--read"], ["EXISTS", "rw"]),
        (&["fair", "--fair"], ["EXISTS", "fair"]),
        (&["lean", "--lean"], ["EXISTS", "lean"]),
    ] {
        let mut holding = Holding::start(&url, &[], args);
        assert_eq!(holding.line(), format!("held {}", args[0]));
        assert_eq!(int(&server, &check), 1, "{args:?}");
        holding.close_stdin();
        let (status, stderr) = holding.wait(PATIENCE);
        assert_eq!(code(status), 0, "{args:?}: {stderr}");
        assert_eq!(int(&server, &check), 0, "{args:?}: given back");
    }
    assert_eq!(text(&server.cmd(&["GET", "jobs"])), "2");
}

/// Held elsewhere: after --wait, exit 75 (or -E's code), nothing on
/// stdout.
#[test]
fn hold_not_acquired_exits_75() {
    let server = RedisServer::start();
    let url = server.url();
    let _holder = Holder::start(&url, &[], &["job"]);
    for (args, want) in [
        (&["job", "--wait", "100ms"][..], 75),
        (&["job", "--wait", "0", "-E", "3"], 3),
    ] {
        let output = lockctl(&url)
            .arg("hold")
            .args(args)
            .stdin(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(code(output.status), want, "{args:?}: {output:?}");
        assert!(output.stdout.is_empty(), "{output:?}");
        assert!(one_error_line(&output).contains("not acquired"));
    }
}

/// The lock taken away while held (DEL, or `lockctl force-unlock`): found
/// at the next renewal, said on stderr, exit 76 at once, stdin still open.
#[test]
fn a_lost_hold_exits_76() {
    let server = RedisServer::start();
    let url = server.url();
    for take_away in ["DEL", "force-unlock"] {
        let holding = Holding::start(&url, &["--watchdog-timeout", "1s"], &["job"]);
        assert_eq!(holding.line(), "held job");
        if take_away == "DEL" {
            server.cmd(&["DEL", "job"]);
        } else {
            let output = run(&url, &["force-unlock", "job"]);
            assert_eq!(code(output.status), 0, "{output:?}");
        }
        let taken = Instant::now();
        let (status, stderr) = holding.wait(PATIENCE);
        // Found at the next renewal, every 333 ms.
        assert!(
            taken.elapsed() < Duration::from_secs(2),
            "{take_away}: exited {:?} after",
            taken.elapsed()
        );
        assert_eq!(code(status), 76, "{take_away}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(
            lines[0].starts_with("lockctl: lock \"job\" was lost while held"),
            "{stderr}"
        );
    }
}

/// `hold --lean --fenced`: the lean lock held with a token (the key a
/// string with our owner, shown so by `status`, refusing a raw `SET NX`),
/// then force-unlocked: exit 76.
#[test]
fn hold_lean_holds_the_lean_lock_until_force_unlocked() {
    let server = RedisServer::start();
    let url = server.url();
    let holding = Holding::start(
        &url,
        &["--watchdog-timeout", "1s"],
        &["job", "--lean", "--fenced"],
    );
    let line = holding.line();
    let (held, token) = line.rsplit_once(' ').expect("a token");
    assert_eq!(held, "held job", "{line}");
    token.parse::<u64>().expect("a number");
    assert_eq!(text(&server.cmd(&["TYPE", "job"])), "string");
    let owner = text(&server.cmd(&["GET", "job"]));
    assert!(lock_redis::Owner::parse_field(&owner).is_some(), "{owner}");
    assert_eq!(
        server.cmd(&["SET", "job", "x", "NX"]),
        lock_testkit::fixtures::redis::Value::Nil
    );
    let status = status_json(&url, &["job"]);
    assert_eq!(status["kind"], "lean_lock", "{status}");
    assert_eq!(status["holders"][0]["field"], owner.as_str(), "{status}");

    let output = run(&url, &["force-unlock", "job"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    let (status, stderr) = holding.wait(PATIENCE);
    assert_eq!(code(status), 76, "{stderr}");
    assert!(
        stderr.starts_with("lockctl: lock \"job\" was lost while held"),
        "{stderr}"
    );
}
