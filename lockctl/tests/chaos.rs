//! Chaos: several workers loop `lockctl run` of one hold (the fenced lock,
//! or one of two permits of a semaphore), each through its own fault
//! proxy, while a driver strikes whoever holds it, following a plan (see
//! `chaos/driver.rs`): SIGKILL of its lockctl; SIGSTOP past the watchdog
//! timeout while its command works on past the hold's expiry; CLIENT KILL
//! of its connections; a partition past the watchdog timeout, long (6.5 s)
//! while its command ends inside it, or short (2.5 s) while its command
//! outlives it. Every command logs its critical section; the verdict (see
//! `chaos/verdict.rs`) checks that fencing tokens rise (the lock) and that
//! more sections than the hold allows (1, or the permits) are inside at
//! once only where lockctl said an earlier one's hold was lost (exit 76)
//! or its lockctl was SIGKILLed and the command went with it. The
//! semaphore must also have every permit back at the end.
//!
//! Bounded: 30 s of chaos for the lock, 25 s for the semaphore, every run
//! killed after 20 s, every wait bounded; each test takes well under a
//! minute. The two tests take turns, not to stretch each other's timing.
//! Set `CHAOS_SEED` to replay the workers' random choices (timing still
//! differs).
//!
//! Linux only, as the supervisor's parent-death signal and `/proc` are.
#![cfg(target_os = "linux")]

mod common;
#[path = "chaos/driver.rs"]
mod driver;
#[path = "chaos/log.rs"]
mod log;
#[path = "chaos/verdict.rs"]
mod verdict;
#[path = "chaos/worker.rs"]
mod worker;

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use driver::{Driver, Fault};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::{FaultProxy, RedisServer};
use verdict::Verdict;
use worker::{Hold, Worker, RUN_LIMIT};

/// `--watchdog-timeout` of every run: short, so a holder struck by a
/// fault loses the lock (or permit) within the test.
const WATCHDOG_TIMEOUT: Duration = Duration::from_millis(1500);
/// `--wait` of every run: runs that do not get the lock (or a permit) by
/// then exit 75.
const WAIT: Duration = Duration::from_secs(3);
const WORKERS: usize = 4;

/// Held by the test that runs: the two run one after the other, as each
/// times lockctl against the watchdog on a machine that may have only two
/// cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn lockctl_run_excludes_or_says_it_lost_the_lock_under_chaos() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    chaos(Hold::Lock, Duration::from_secs(30));
}

/// Four workers on two permits: at most two commands inside at once,
/// unless an earlier holder was told its permit was lost (exit 76) or was
/// SIGKILLed with its command; and none of the permits is lost for good.
#[test]
fn lockctl_run_permits_admits_at_most_n_or_says_a_permit_was_lost_under_chaos() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let hold = Hold::Permits(2);
    let (server, verdict) = chaos(hold, Duration::from_secs(25));
    assert!(
        verdict.most_inside >= hold.capacity(),
        "never {} inside at once: the permits were not shared",
        hold.capacity()
    );
    assert_every_permit_comes_back(&server, hold);
}

/// Runs the workers on `hold` and the driver for `chaos_for`, prints the
/// report and asserts no violation and that every fault was dealt;
/// returns the server for a last look.
fn chaos(hold: Hold, chaos_for: Duration) -> (RedisServer, Verdict) {
    let started = Instant::now();
    let server = RedisServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("sections.log");
    let proxies: Vec<FaultProxy> = (0..WORKERS)
        .map(|_| FaultProxy::in_front_of(&server))
        .collect();
    let workers: Vec<Worker> = proxies
        .iter()
        .enumerate()
        .map(|(index, proxy)| Worker::new(index, proxy.url(), hold))
        .collect();
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("chaos: CHAOS_SEED={seed}");

    let origin_ns = log::now_ns();
    let until = Instant::now() + chaos_for;
    let (runs, strikes) = thread::scope(|scope| {
        let looping: Vec<_> = workers
            .iter()
            .map(|worker| {
                let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(worker.index as u64));
                let (log_path, dir) = (&log_path, dir.path());
                scope.spawn(move || worker.run_until(until, log_path, dir, &mut rng))
            })
            .collect();
        let driver = Driver {
            server: &server,
            proxies: &proxies,
            workers: &workers,
            log: &log_path,
        };
        let strikes = driver.drive_until(until);
        let runs: Vec<_> = looping
            .into_iter()
            .flat_map(|worker| worker.join().expect("a worker panicked"))
            .collect();
        (runs, strikes)
    });
    let sections = log::read(&log_path);
    let verdict = verdict::judge(&sections, &runs, &strikes, origin_ns, hold);
    eprintln!(
        "chaos on {hold} ({:.1} s): {}",
        started.elapsed().as_secs_f64(),
        verdict.report()
    );
    assert!(
        verdict.violations.is_empty(),
        "{} violation(s):\n{}",
        verdict.violations.len(),
        verdict.violations.join("\n")
    );
    // Not vacuous: sections were entered, and every fault was dealt.
    assert!(verdict.entered >= 10, "only {} sections", verdict.entered);
    for fault in [
        Fault::Kill,
        Fault::Stop,
        Fault::ClientKill,
        Fault::Partition,
    ] {
        assert!(
            verdict.strikes.contains_key(&fault),
            "no {fault} was dealt: {:?}",
            verdict.strikes
        );
    }
    (server, verdict)
}

/// After the chaos, with every lockctl gone: all the semaphore's permits
/// are there to take, none lost and none made. The leases of SIGKILLed
/// holders run out by themselves (within the watchdog timeout); that is
/// waited for, not timed: the wait's bound only keeps a failure from
/// hanging the test.
fn assert_every_permit_comes_back(server: &RedisServer, hold: Hold) {
    let name = hold.name();
    // The free permits and the live leases, as `lockctl status` sees
    // them (one shape with leases or without).
    let status = || {
        let output = common::run(&server.url(), &["status", "--json", name]);
        assert_eq!(common::code(output.status), 0, "{output:?}");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("status JSON");
        let free = match json["kind"].as_str() {
            Some("semaphore_or_latch") => json["value"].as_i64(),
            _ => None,
        };
        let leased = json["permits"].as_array().map(Vec::len);
        match (free, leased) {
            (Some(free), Some(leased)) => (free, leased),
            _ => panic!("not the semaphore: {json}"),
        }
    };
    let leases_key = format!("{{{name}}}:timeout");
    let waited = Instant::now();
    loop {
        let (free, leased) = status();
        if leased == 0 {
            break;
        }
        assert!(
            waited.elapsed() < RUN_LIMIT,
            "{leased} permit(s) still leased ({free} free) {RUN_LIMIT:?} after the last \
             lockctl exited: leases {:?}, server time {:?}",
            server.cmd(&["ZRANGE", &leases_key, "0", "-1", "WITHSCORES"]),
            server.cmd(&["TIME"])
        );
        thread::sleep(Duration::from_millis(50));
    }
    // All at once, through lockctl: a run holding one permit runs a run
    // that takes the next, and so on, each trying once.
    let url = server.url();
    let n = hold.capacity().to_string();
    let take_one = ["run", "--permits", &n, "--wait", "0s", name, "--"];
    let mut inner: Vec<&str> = vec!["true"];
    for _ in 1..hold.capacity() {
        let mut outer = vec![env!("CARGO_BIN_EXE_lockctl"), "--url", &url];
        outer.extend(take_one);
        outer.append(&mut inner);
        inner = outer;
    }
    let output = common::lockctl(&url)
        .args(take_one)
        .args(inner)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("lockctl runs");
    assert_eq!(
        common::code(output.status),
        0,
        "not all {n} permits of {name:?} could be taken at once: {output:?}"
    );
    // Given back: the free count is the total again, and taking them
    // reclaimed every expired lease, so none is left to come back later.
    let total = i64::try_from(hold.capacity()).expect("a small count");
    assert_eq!(status(), (total, 0), "(free, leased) after all were taken");
    let leases = server.cmd(&["ZCARD", &leases_key]);
    assert_eq!(leases, Value::Int(0), "leases left over");
}
