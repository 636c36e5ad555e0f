//! The fault driver: while the workers loop, it picks the worker whose
//! command is in its critical section and strikes it, in a fixed rotation
//! of four faults, recording each.

use std::fmt;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::{FaultProxy, RedisServer};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::common::{group_gone_by, process_group};
use crate::log::{self, now_ns, RunId, Section};
use crate::worker::Worker;
use crate::WATCHDOG_TIMEOUT;

/// What the driver does to a holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fault {
    /// SIGKILL of its lockctl.
    Kill,
    /// SIGSTOP of its lockctl for a while, then SIGCONT.
    Stop,
    /// The server closes its connections (`CLIENT KILL ADDR`, found
    /// through its proxy's [`FaultProxy::server_addrs`]).
    ClientKill,
    /// Its proxy drops all traffic for a while, then heals.
    Partition,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Kill => "SIGKILL",
            Self::Stop => "SIGSTOP",
            Self::ClientKill => "CLIENT KILL",
            Self::Partition => "partition",
        })
    }
}

/// One step of the driver's plan: a fault, how long it lasts (pauses and
/// partitions), and how much work the struck command should have left.
#[derive(Debug, Clone, Copy)]
struct Blow {
    fault: Fault,
    lasts: Duration,
    /// The struck command's work left, at least and at most.
    left: (Duration, Duration),
}

/// Long enough that the fault lands inside the critical section.
const ANY_LEFT: (Duration, Duration) = (Duration::from_millis(150), Duration::MAX);
/// The command outlives the lock: it works on past the lock's expiry (at
/// most the watchdog timeout after the fault), so a second holder can
/// enter beside it.
const OUTLIVES: (Duration, Duration) = (Duration::from_millis(1800), Duration::MAX);
/// The command ends by itself soon after the lock has expired (at most
/// the watchdog timeout into the partition), so a second holder may enter
/// beside it first, and long before the heal: lockctl then releases a lock
/// that is gone, with the server out of reach for longer than its release
/// timeout (3 s). It also ends before lockctl's first renewal in the
/// partition can time out (lockctl's command timeout is 2 s), so lockctl
/// cannot learn of the loss from that either, unless it keeps time itself.
const ENDS_IN_PARTITION: (Duration, Duration) =
    (Duration::from_millis(1700), Duration::from_millis(1950));

/// How long a pause, and a short partition, last: well past the watchdog
/// timeout, so the lock expires meanwhile.
const PAUSE: Duration = Duration::from_millis(2500);
const _: () = assert!(PAUSE.as_millis() > WATCHDOG_TIMEOUT.as_millis() + 500);
/// A long partition: past [`ENDS_IN_PARTITION`] plus lockctl's release
/// timeout.
const LONG_PARTITION: Duration = Duration::from_millis(6500);

/// What the driver deals, in turn.
const PLAN: [Blow; 8] = {
    const fn blow(fault: Fault, lasts: Duration, left: (Duration, Duration)) -> Blow {
        Blow { fault, lasts, left }
    }
    const NOW: Duration = Duration::ZERO;
    [
        blow(Fault::Kill, NOW, ANY_LEFT),
        blow(Fault::Stop, PAUSE, OUTLIVES),
        blow(Fault::ClientKill, NOW, ANY_LEFT),
        blow(Fault::Partition, LONG_PARTITION, ENDS_IN_PARTITION),
        blow(Fault::Kill, NOW, ANY_LEFT),
        blow(Fault::Stop, PAUSE, OUTLIVES),
        blow(Fault::ClientKill, NOW, ANY_LEFT),
        blow(Fault::Partition, PAUSE, OUTLIVES),
    ]
};

/// At most this many faults in one test.
const MAX_FAULTS: usize = 12;

/// The quiet time after each fault, for the workers to recover.
const RECOVERY: Duration = Duration::from_secs(1);

/// No fault starts later than this before the end of the chaos.
const ROOM: Duration = Duration::from_secs(4);

/// How long a SIGKILLed lockctl's command may take to be seen gone before
/// that counts as surviving it (see `KILL_BOUND` for the bound asserted).
const GONE_PATIENCE: Duration = Duration::from_secs(2);

/// The driver waits up to this long for a holder with the work left its
/// blow wants, then takes any holder. Short enough that the whole plan
/// fits in the chaos time even when no such holder comes along.
const PREFER_FOR: Duration = Duration::from_secs(3);

/// A fault as it was carried out.
#[derive(Debug, Clone)]
pub(crate) struct Strike {
    pub(crate) fault: Fault,
    pub(crate) run: RunId,
    pub(crate) at_ns: u64,
    /// Kill: when the command's process group was seen gone (`None`: not
    /// within 2 s). Stop: when continued. Partition: when healed. Client
    /// kill: `at_ns`.
    pub(crate) end_ns: Option<u64>,
    /// What else there is to say (connections closed, a pause's length).
    pub(crate) note: String,
}

pub(crate) struct Driver<'a> {
    pub(crate) server: &'a RedisServer,
    pub(crate) proxies: &'a [FaultProxy],
    pub(crate) workers: &'a [Worker],
    pub(crate) log: &'a Path,
}

impl Driver<'_> {
    /// Strikes holders, one blow at a time in [`PLAN`], until shortly
    /// before `until`; returns what it did.
    pub(crate) fn drive_until(&self, until: Instant) -> Vec<Strike> {
        let mut strikes = Vec::new();
        while strikes.len() < MAX_FAULTS {
            let blow = PLAN[strikes.len() % PLAN.len()];
            let Some(target) = self.pick_holder(blow.left, until) else {
                break;
            };
            // The holder may have finished between the pick and the blow:
            // then the same blow goes to the next one.
            if let Some(strike) = self.strike(blow, &target) {
                strikes.push(strike);
                thread::sleep(RECOVERY);
            }
        }
        strikes
    }

    /// A section in progress whose command has `left` work left (after
    /// [`PREFER_FOR`], any), or `None` once it is too late for another
    /// fault.
    fn pick_holder(&self, left: (Duration, Duration), until: Instant) -> Option<Section> {
        let started = Instant::now();
        loop {
            if Instant::now() + ROOM > until {
                return None;
            }
            let (least, most) = if started.elapsed() < PREFER_FOR {
                left
            } else {
                ANY_LEFT
            };
            let now = now_ns();
            let holder = log::read(self.log).into_values().find(|s| {
                let left = s.planned_end_ns().saturating_sub(now);
                s.exit_ns.is_none()
                    && left >= nanos(least)
                    && left <= nanos(most)
                    && self.workers[s.run.worker].is_running(s.run)
            });
            if holder.is_some() {
                return holder;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Deals `blow` to the holder of `target`.
    fn strike(&self, blow: Blow, target: &Section) -> Option<Strike> {
        let fault = blow.fault;
        let worker = &self.workers[target.run.worker];
        let mut strike = Strike {
            fault,
            run: target.run,
            at_ns: now_ns(),
            end_ns: None,
            note: String::new(),
        };
        match fault {
            Fault::Kill => {
                // The command's group, which the supervisor must take down.
                let group = process_group(Pid::from_raw(target.pid))?;
                let killed = Instant::now();
                strike.at_ns = now_ns();
                if !worker.with_running(target.run, |pid| signal(pid, Signal::SIGKILL)) {
                    return None;
                }
                strike.end_ns = group_gone_by(group, GONE_PATIENCE)
                    .map(|gone| strike.at_ns + nanos(gone - killed));
            }
            Fault::Stop => {
                strike.at_ns = now_ns();
                if !worker.with_running(target.run, |pid| signal(pid, Signal::SIGSTOP)) {
                    return None;
                }
                thread::sleep(blow.lasts);
                // Only a run killed as hung meanwhile is not there to go on.
                worker.with_running(target.run, |pid| signal(pid, Signal::SIGCONT));
                strike.end_ns = Some(now_ns());
            }
            Fault::ClientKill => {
                if !worker.is_running(target.run) {
                    return None;
                }
                strike.at_ns = now_ns();
                let mut closed = 0;
                for addr in self.proxies[target.run.worker].server_addrs() {
                    let addr = addr.to_string();
                    // A connection that closed meanwhile is not found: 0.
                    if let Ok(Value::Int(n)) =
                        self.server.try_cmd(&["CLIENT", "KILL", "ADDR", &addr])
                    {
                        closed += n;
                    }
                }
                strike.end_ns = Some(strike.at_ns);
                strike.note = format!("{closed} connection(s) closed");
            }
            Fault::Partition => {
                if !worker.is_running(target.run) {
                    return None;
                }
                let proxy = &self.proxies[target.run.worker];
                strike.at_ns = now_ns();
                proxy.partition();
                thread::sleep(blow.lasts);
                proxy.heal();
                strike.end_ns = Some(now_ns());
            }
        }
        if strike.note.is_empty() {
            let left = target.planned_end_ns().saturating_sub(strike.at_ns) / 1_000_000;
            strike.note = format!("command had {left} ms of work left");
        }
        if let (Fault::Stop | Fault::Partition, Some(end)) = (fault, strike.end_ns) {
            let lasted = end.saturating_sub(strike.at_ns) / 1_000_000;
            strike.note = format!("{} ms, {}", lasted, strike.note);
        }
        Some(strike)
    }
}

fn signal(pid: Pid, signal: Signal) {
    kill(pid, signal).unwrap_or_else(|e| panic!("{signal} to lockctl {pid}: {e}"));
}

/// `d` in nanoseconds, `u64::MAX` for [`Duration::MAX`].
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
