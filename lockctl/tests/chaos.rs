//! Chaos: several workers loop `lockctl run --fenced` on one lock, each
//! through its own fault proxy, while a driver strikes whoever holds it,
//! following a plan (see `chaos/driver.rs`): SIGKILL of its lockctl;
//! SIGSTOP past the watchdog timeout while its command works on past the
//! lock's expiry; CLIENT KILL of its connections; a partition past the
//! watchdog timeout, long (6.5 s) while its command ends inside it, or
//! short (2.5 s) while its command outlives it. Every command logs its
//! critical section; the verdict (see `chaos/verdict.rs`) checks that
//! fencing tokens rise and that sections overlap only where lockctl said
//! the lock was lost (exit 76).
//!
//! Bounded: 30 s of chaos, every run killed after 20 s, every wait
//! bounded; the whole test takes well under a minute. Set `CHAOS_SEED` to
//! replay the workers' random choices (timing still differs).
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

use std::thread;
use std::time::{Duration, Instant};

use driver::{Driver, Fault};
use lock_testkit::fixtures::{FaultProxy, RedisServer};
use worker::Worker;

/// The lock every worker takes.
const LOCK: &str = "chaos";
/// `--watchdog-timeout` of every run: short, so a holder struck by a
/// fault loses the lock within the test.
const WATCHDOG_TIMEOUT: Duration = Duration::from_millis(1500);
/// `--wait` of every run: runs that do not get the lock by then exit 75.
const WAIT: Duration = Duration::from_secs(3);
const WORKERS: usize = 4;
/// How long workers start new runs and the driver strikes.
const CHAOS_FOR: Duration = Duration::from_secs(30);

#[test]
fn lockctl_run_excludes_or_says_it_lost_the_lock_under_chaos() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("sections.log");
    let proxies: Vec<FaultProxy> = (0..WORKERS)
        .map(|_| FaultProxy::in_front_of(&server))
        .collect();
    let workers: Vec<Worker> = proxies
        .iter()
        .enumerate()
        .map(|(index, proxy)| Worker::new(index, proxy.url()))
        .collect();
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("chaos: CHAOS_SEED={seed}");

    let origin_ns = log::now_ns();
    let until = Instant::now() + CHAOS_FOR;
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
    let verdict = verdict::judge(&sections, &runs, &strikes, origin_ns);
    eprintln!("{}", verdict.report());
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
}
