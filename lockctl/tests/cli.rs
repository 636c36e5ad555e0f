//! The command line itself, end to end: durations, where the global options
//! go, `run -c`, `--conflict-exit-code`, `--help` and `completions`.

use crate::common;

use std::fs;
use std::time::{Duration, Instant};

use common::*;
use lock_testkit::fixtures::RedisServer;

/// humantime's forms: fractions, sums with and without a space; the wait
/// and the lease are what was written.
#[test]
fn durations_take_fractions_and_sums() {
    let server = RedisServer::start();
    let url = server.url();
    let _holder = Holder::start(&url, &[], &["job"]);
    let started = Instant::now();
    let output = run(&url, &["run", "job", "--wait", "1.5s", "--", "true"]);
    let took = started.elapsed();
    assert_eq!(code(output.status), 75, "{output:?}");
    assert!(
        took >= Duration::from_millis(1400) && took <= Duration::from_millis(3000),
        "gave up after {took:?}"
    );
    assert!(
        one_error_line(&output).contains("not acquired within 1.5s"),
        "{output:?}"
    );

    // A lease of 90 s in both spellings: the key's time to live says so.
    for (name, lease) in [("a", "1m30s"), ("b", "1m 30s")] {
        let holder = Holder::start(&url, &[], &[name, "--wait", "0", "--lease", lease]);
        let pttl = int(&server, &["PTTL", name]);
        assert!((80_000..=90_000).contains(&pttl), "{lease}: PTTL {pttl}");
        let (status, stderr) = holder.finish();
        assert_eq!(code(status), 0, "{stderr}");
    }
}

/// The global options (where the locks are) work before the subcommand, as
/// always, and after it, as in `flock`-style scripts that put the command's
/// own options first.
#[test]
fn global_options_go_before_or_after_the_subcommand() {
    let server = RedisServer::start();
    let url = server.url();
    // Before: the lock `app:job` is held.
    let holder = Holder::start(&url, &["--prefix", "app:"], &["job"]);
    assert_eq!(int(&server, &["EXISTS", "app:job"]), 1);
    // After: the same server and prefix, so the same lock.
    let output = run_bare(&[
        "run", "job", "--url", &url, "--prefix", "app:", "--wait", "0", "--", "true",
    ]);
    assert_eq!(code(output.status), 75, "{output:?}");
    let output = run_bare(&["status", "job", "--json", "--prefix", "app:", "--url", &url]);
    assert_eq!(code(output.status), 0, "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["locked"], true, "{json}");
    // Mixed: --url before, --prefix after.
    let output = lockctl(&url)
        .args([
            "run", "free", "--prefix", "app:", "--", "sh", "-c", "exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(code(output.status), 3, "{output:?}");
    let (status, stderr) = holder.finish();
    assert_eq!(code(status), 0, "{stderr}");
    // After `--` they are the command's arguments, not lockctl's.
    let output = run(&url, &["run", "job", "--", "echo", "--url", "nowhere"]);
    assert_eq!(code(output.status), 0, "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "--url nowhere\n");
}

/// `run NAME -c STRING` is `run NAME -- /bin/sh -c STRING`: the shell runs
/// STRING under the lock, with LOCK_NAME, and its status is lockctl's.
#[test]
fn run_c_runs_a_shell_string_under_the_lock() {
    let server = RedisServer::start();
    let url = server.url();
    let output = run(
        &url,
        &[
            "run",
            "job",
            "-c",
            "echo \"$LOCK_NAME\" | tr a-z A-Z; exit 4",
        ],
    );
    assert_eq!(code(output.status), 4, "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "JOB\n");

    // Held while the string runs, released after.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockctl(&url);
    cmd.args(["run", "job", "--command"])
        .arg(": > ready; while [ -e ready ] && [ ! -e release ]; do sleep 0.02; done")
        .current_dir(dir.path());
    let proc = Proc::spawn(cmd);
    let ready = dir.path().join("ready");
    wait_until("the shell string to start", PATIENCE, || ready.exists());
    assert_eq!(int(&server, &["EXISTS", "job"]), 1, "held while it runs");
    let output = run(&url, &["run", "job", "--wait", "0", "-c", "exit 9"]);
    assert_eq!(code(output.status), 75, "{output:?}");
    fs::write(dir.path().join("release"), "").unwrap();
    let (status, stderr) = proc.wait(PATIENCE);
    assert_eq!(code(status), 0, "{stderr}");
    assert_eq!(int(&server, &["EXISTS", "job"]), 0, "released");
}

/// `-c` and `-- CMD` exclude each other, and one of them is needed: usage
/// errors (64), before any I/O.
#[test]
fn run_needs_exactly_one_of_c_and_a_command() {
    for (args, says) in [
        (
            &["run", "job", "-c", "true", "--", "true"][..],
            "cannot be used with",
        ),
        (&["run", "job"], "<CMD>"),
        (
            &["run", "job", "-c"],
            "a value is required for '--command <STRING>'",
        ),
    ] {
        let output = run("redis://127.0.0.1:1", args);
        assert_eq!(code(output.status), 64, "{args:?}: {output:?}");
        let line = one_error_line(&output);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}

/// `-E N` (flock's spelling) replaces 75, "not acquired", for the lock and
/// for `--permits`; an acquired run still exits with its command's code.
#[test]
fn conflict_exit_code_replaces_75() {
    let server = RedisServer::start();
    let url = server.url();
    let _holder = Holder::start(&url, &[], &["job"]);
    let _permit = Holder::start(&url, &[], &["slots", "--permits", "1"]);
    for args in [
        &["run", "job", "--wait", "0", "-E", "3", "--", "true"][..],
        &[
            "run",
            "job",
            "--wait",
            "100ms",
            "--conflict-exit-code",
            "3",
            "-c",
            "true",
        ],
        &[
            "run",
            "slots",
            "--permits",
            "1",
            "--wait",
            "0",
            "-E",
            "3",
            "--",
            "true",
        ],
    ] {
        let output = run(&url, args);
        assert_eq!(code(output.status), 3, "{args:?}: {output:?}");
        let line = one_error_line(&output);
        assert!(
            line.contains("not acquired") || line.contains("no permit"),
            "{line}"
        );
    }
    let output = run(
        &url,
        &["run", "free", "-E", "3", "--", "sh", "-c", "exit 0"],
    );
    assert_eq!(code(output.status), 0, "{output:?}");
}

/// N must not be 0 (success), nor a code lockctl gives another meaning
/// (64, 65, 69, 70, 76, 77, 78), nor 126 and up (the shell's): usage errors.
#[test]
fn conflict_exit_codes_that_mean_something_else_are_refused() {
    for n in [
        "0", "64", "65", "69", "70", "76", "77", "126", "127", "143", "256", "-1", "x",
    ] {
        let output = run(
            "redis://127.0.0.1:1",
            &[
                "run",
                "job",
                &format!("--conflict-exit-code={n}"),
                "--",
                "true",
            ],
        );
        assert_eq!(code(output.status), 64, "{n}: {output:?}");
        let line = one_error_line(&output);
        assert!(line.contains("--conflict-exit-code <N>"), "{n}: {line}");
        assert!(line.contains("1 to 125"), "{n}: {line}");
    }
}

/// The exit codes at the end of every `--help`, in numeric order: the
/// first number of each entry (`126/127` counts as 126, `128+N` as 128).
#[test]
fn help_lists_exit_codes_in_numeric_order() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["status", "--help"],
        &["list", "--help"],
        &["hold", "--help"],
        &["force-unlock", "--help"],
    ] {
        let output = run_bare(args);
        assert_eq!(code(output.status), 0, "{args:?}: {output:?}");
        let help = String::from_utf8(output.stdout).unwrap();
        let (_, table) = help
            .split_once("Exit codes:\n")
            .unwrap_or_else(|| panic!("{args:?}: no exit codes in {help}"));
        let codes: Vec<u32> = table
            .lines()
            .filter_map(|line| {
                let digits: String = line
                    .trim_start()
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse().ok()
            })
            .collect();
        assert!(
            codes.windows(2).all(|pair| pair[0] < pair[1]),
            "{args:?}: {codes:?} in {table}"
        );
        for code in [0, 64, 65, 69, 70, 75, 76, 77, 78, 126, 128] {
            assert!(codes.contains(&code), "{args:?}: {code} missing in {table}");
        }
    }
}

/// `lockctl completions SHELL` prints a completion script naming lockctl
/// and its commands, without Redis; bash's registers itself when sourced.
#[test]
fn completions_print_a_script_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let output = run("redis://127.0.0.1:1", &["completions", shell]);
        assert_eq!(code(output.status), 0, "{shell}: {output:?}");
        assert!(output.stderr.is_empty(), "{shell}: {output:?}");
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(!script.trim().is_empty(), "{shell}: empty");
        assert!(script.contains("lockctl"), "{shell}: {script}");
        for word in [
            "run",
            "force-unlock",
            "watchdog-timeout",
            "conflict-exit-code",
        ] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
        assert!(
            !script.contains("__supervise"),
            "{shell}: the hidden command"
        );
    }
    let script = run_bare(&["completions", "bash"]).stdout;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lockctl.bash");
    fs::write(&file, script).unwrap();
    let sourced = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p lockctl", file.display()))
        .output()
        .expect("bash runs");
    assert!(sourced.status.success(), "{sourced:?}");
    assert!(
        String::from_utf8_lossy(&sourced.stdout).contains("lockctl"),
        "{sourced:?}"
    );

    let output = run_bare(&["completions", "tcsh"]);
    assert_eq!(code(output.status), 64, "{output:?}");
    assert!(one_error_line(&output).contains("possible values"));
}
