//! A worker: `lockctl run --fenced` (or `run --permits N`) of the chaos
//! command, again and again, through the worker's own proxy, recording how
//! each run ended.

use std::fmt;
use std::fs::{self, File};
use std::ops::RangeInclusive;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use nix::unistd::Pid;

use crate::common::lockctl;
use crate::log::{self, now_ns, RunId};
use crate::{WAIT, WATCHDOG_TIMEOUT};

/// What every run of a chaos test takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hold {
    /// The lock `chaos`, fenced (`run --fenced`): one holder at a time,
    /// each with a fencing token above the last.
    Lock,
    /// One permit of the expirable-permit semaphore `chaos-permits`, made
    /// with this many (`run --permits N`): up to N holders at a time, and
    /// no tokens, as a semaphore has none.
    Permits(u32),
}

impl Hold {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Lock => "chaos",
            Self::Permits(_) => "chaos-permits",
        }
    }

    /// How many sections may be inside at once.
    pub(crate) fn capacity(self) -> usize {
        match self {
            Self::Lock => 1,
            Self::Permits(n) => usize::try_from(n).expect("a small count"),
        }
    }

    /// Whether sections get fencing tokens.
    pub(crate) fn fenced(self) -> bool {
        self == Self::Lock
    }

    /// `lockctl run`'s options that take it.
    fn run_args(self) -> Vec<String> {
        match self {
            Self::Lock => vec!["--fenced".to_owned()],
            Self::Permits(n) => vec!["--permits".to_owned(), n.to_string()],
        }
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Lock => write!(f, "fenced lock {:?}", self.name()),
            Self::Permits(n) => write!(f, "{n} permits of {:?}", self.name()),
        }
    }
}

/// How long an ordinary command works, in ms.
const SHORT_WORK_MS: RangeInclusive<u64> = 50..=400;
/// How long a long command works, in ms: past the watchdog timeout, so
/// that a holder paused or cut off meanwhile can lose the lock to another
/// worker while its command still runs.
const LONG_WORK_MS: RangeInclusive<u64> = 2000..=3000;
/// One run in this many is long.
const LONG_ONE_IN: u8 = 3;

/// How long one run may take before it counts as hung and is killed.
/// Generous: waiting (`--wait`), working, a pause or partition by the
/// driver, the stop grace and the release and close timeouts add up to
/// about 15 s at worst.
pub(crate) const RUN_LIMIT: Duration = Duration::from_secs(20);

/// How often a worker looks whether its lockctl has exited.
const POLL: Duration = Duration::from_millis(10);

/// One worker and the lockctl it is running now, if any.
pub(crate) struct Worker {
    pub(crate) index: usize,
    url: String,
    hold: Hold,
    running: Mutex<Option<Current>>,
}

/// The lockctl of a run in progress; killed and reaped when dropped, so
/// that a failing test leaves nothing running.
struct Current {
    id: RunId,
    child: Child,
}

impl Drop for Current {
    fn drop(&mut self) {
        // Both are harmless once it has exited and been reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a run's lockctl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal (the driver's SIGKILL).
    Signal(i32),
    /// It was still running after [`RUN_LIMIT`] and was killed.
    Hung,
}

impl Outcome {
    fn of(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Code(code),
            (None, Some(signal)) => Self::Signal(signal),
            (None, None) => unreachable!("a Unix process exits or is killed"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exit {code}"),
            Self::Signal(signal) => write!(f, "signal {signal}"),
            Self::Hung => write!(f, "hung ({}s)", RUN_LIMIT.as_secs()),
        }
    }
}

/// One `lockctl run` as the worker saw it.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) id: RunId,
    pub(crate) started_ns: u64,
    /// When the worker saw lockctl gone (within [`POLL`]).
    pub(crate) ended_ns: u64,
    pub(crate) outcome: Outcome,
    /// What lockctl (and its command) wrote to stderr.
    pub(crate) stderr: String,
}

impl Worker {
    pub(crate) fn new(index: usize, url: String, hold: Hold) -> Self {
        Self {
            index,
            url,
            hold,
            running: Mutex::new(None),
        }
    }

    /// Runs lockctl again and again until `until` (the last run may end
    /// later, within [`RUN_LIMIT`]); its commands append to `log`, its
    /// stderr files go to `dir`.
    pub(crate) fn run_until(
        &self,
        until: Instant,
        log: &Path,
        dir: &Path,
        rng: &mut fastrand::Rng,
    ) -> Vec<Run> {
        let mut runs = Vec::new();
        let mut run = 0;
        while Instant::now() < until {
            run += 1;
            let id = RunId {
                worker: self.index,
                run,
            };
            let work_ms = if rng.u8(..LONG_ONE_IN) == 0 {
                rng.u64(LONG_WORK_MS)
            } else {
                rng.u64(SHORT_WORK_MS)
            };
            runs.push(self.run_once(id, work_ms, log, dir));
        }
        runs
    }

    fn run_once(&self, id: RunId, work_ms: u64, log: &Path, dir: &Path) -> Run {
        let stderr_path = dir.join(format!("{}.stderr", id.env()));
        let stderr = File::create(&stderr_path).expect("stderr file");
        let watchdog = format!("{}ms", WATCHDOG_TIMEOUT.as_millis());
        let wait = format!("{}ms", WAIT.as_millis());
        let mut cmd = lockctl(&self.url);
        cmd.args(["--watchdog-timeout", &watchdog, "run"])
            .args(self.hold.run_args())
            .args([
                "--wait",
                &wait,
                self.hold.name(),
                "--",
                "sh",
                "-c",
                log::COMMAND,
            ])
            .env("CHAOS_RUN", id.env())
            .env("CHAOS_LOG", log)
            .env("CHAOS_WORK_MS", work_ms.to_string())
            .env(
                "CHAOS_WORK_S",
                format!("{}.{:03}", work_ms / 1000, work_ms % 1000),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let started = Instant::now();
        let started_ns = now_ns();
        let child = cmd.spawn().expect("lockctl starts");
        *self.running() = Some(Current { id, child });
        let outcome = self.wait_current(started);
        let ended_ns = now_ns();
        Run {
            id,
            started_ns,
            ended_ns,
            outcome,
            stderr: fs::read_to_string(&stderr_path)
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }
    }

    /// Waits for the current run's lockctl to exit (killing it after
    /// [`RUN_LIMIT`]) and reaps it.
    fn wait_current(&self, started: Instant) -> Outcome {
        loop {
            thread::sleep(POLL);
            let mut running = self.running();
            let current = running.as_mut().expect("this worker's run");
            if let Some(status) = current.child.try_wait().expect("try_wait") {
                *running = None;
                return Outcome::of(status);
            }
            if started.elapsed() > RUN_LIMIT {
                *running = None; // kills and reaps it
                return Outcome::Hung;
            }
        }
    }

    /// Calls `act` with the pid of run `id`'s lockctl if that still runs
    /// (or at least is not reaped yet, so the pid names no other process);
    /// returns whether it did.
    pub(crate) fn with_running(&self, id: RunId, act: impl FnOnce(Pid)) -> bool {
        let running = self.running();
        match running.as_ref() {
            Some(current) if current.id == id => {
                let pid = i32::try_from(current.child.id()).expect("pid fits");
                act(Pid::from_raw(pid));
                true
            }
            _ => false,
        }
    }

    /// Whether run `id`'s lockctl is the one running now.
    pub(crate) fn is_running(&self, id: RunId) -> bool {
        self.with_running(id, |_| ())
    }

    fn running(&self) -> MutexGuard<'_, Option<Current>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
