//! The shared log the workers' commands write their critical sections to,
//! and the clock they and the test read.
//!
//! The clock is `CLOCK_REALTIME` in nanoseconds: `date +%s%N` in the
//! commands, [`SystemTime`] in the test. It is the one clock that a shell
//! reads at nanosecond resolution and that every process on the machine
//! shares; `/proc/uptime` (monotonic) has only 10 ms resolution, too coarse
//! for a 100 ms bound. Wall-clock time can be stepped (NTP), but not by
//! anything running during a test of under a minute on one machine.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The command each run executes under the lock (with `sh -c`): appends
/// `enter <run> <token> <ns> <pid> <work ms>`, works (sleeps) for its
/// planned time checking nothing, then appends `exit <run> <token> <ns>`.
/// When lockctl stops it (SIGTERM to its group, which ends the `sleep`
/// too), it appends `stop <run> <token> <ns>` instead, so the section's
/// end is known even then, rather than guessed from when lockctl exited
/// (which can be seconds later). A SIGKILL leaves no line. Each line is
/// one `write` to a file opened with `O_APPEND`, so lines never interleave.
pub(crate) const COMMAND: &str = r#"trap 'echo "stop $CHAOS_RUN ${LOCK_TOKEN:-none} $(date +%s%N)" >> "$CHAOS_LOG"; exit 143' TERM
echo "enter $CHAOS_RUN ${LOCK_TOKEN:-none} $(date +%s%N) $$ $CHAOS_WORK_MS" >> "$CHAOS_LOG"
sleep "$CHAOS_WORK_S"
echo "exit $CHAOS_RUN ${LOCK_TOKEN:-none} $(date +%s%N)" >> "$CHAOS_LOG""#;

/// Now, on the clock the commands read.
pub(crate) fn now_ns() -> u64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    u64::try_from(since_epoch.as_nanos()).expect("fits until 2554")
}

/// One run of one worker: its `lockctl run`, and the critical section if
/// the command entered one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RunId {
    pub(crate) worker: usize,
    pub(crate) run: u32,
}

impl RunId {
    /// How the command is told its run: `CHAOS_RUN=<worker>.<run>`.
    pub(crate) fn env(self) -> String {
        format!("{}.{}", self.worker, self.run)
    }

    fn parse(text: &str) -> Option<Self> {
        let (worker, run) = text.split_once('.')?;
        Some(Self {
            worker: worker.parse().ok()?,
            run: run.parse().ok()?,
        })
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worker {} run {}", self.worker, self.run)
    }
}

/// A critical section as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub(crate) run: RunId,
    /// `None` when the command got no `LOCK_TOKEN`.
    pub(crate) token: Option<u64>,
    pub(crate) enter_ns: u64,
    /// The `sh` running the command (its process group is the command's).
    pub(crate) pid: i32,
    /// How long the command planned to work.
    pub(crate) work_ms: u64,
    /// When the command ended, by itself or stopped by SIGTERM; `None`
    /// when it left no line (killed by SIGKILL).
    pub(crate) exit_ns: Option<u64>,
    /// Whether it was stopped by SIGTERM rather than finishing its work.
    pub(crate) stopped: bool,
}

impl Section {
    /// When the command plans to finish its work.
    pub(crate) fn planned_end_ns(&self) -> u64 {
        self.enter_ns + self.work_ms * 1_000_000
    }
}

/// The sections in the log at `path`, by run. A last line still being
/// written (no newline yet) is left for the next read.
///
/// # Panics
/// On a line that is not one [`COMMAND`] writes.
pub(crate) fn read(path: &Path) -> BTreeMap<RunId, Section> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    parse(complete)
}

/// The sections `text` (whole lines) records, by run.
///
/// # Panics
/// On a line that is not one [`COMMAND`] writes.
pub(crate) fn parse(text: &str) -> BTreeMap<RunId, Section> {
    let mut sections = BTreeMap::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let (run, token, rest) = parse_line(line)
            .unwrap_or_else(|| panic!("not a line the chaos command writes: {line:?}"));
        match rest {
            Line::Enter {
                enter_ns,
                pid,
                work_ms,
            } => {
                let section = Section {
                    run,
                    token,
                    enter_ns,
                    pid,
                    work_ms,
                    exit_ns: None,
                    stopped: false,
                };
                assert!(
                    sections.insert(run, section).is_none(),
                    "{run} entered twice"
                );
            }
            Line::Exit { exit_ns, stopped } => {
                let Some(section) = sections.get_mut(&run) else {
                    // Stopped before it could enter: no section.
                    assert!(stopped, "{run} exited without entering");
                    continue;
                };
                assert_eq!(section.token, token, "{run} changed its token");
                // A SIGTERM while it wrote its exit line makes it write a
                // stop line after it: it ended at the later one.
                if section.exit_ns.is_none_or(|earlier| earlier < exit_ns) {
                    section.exit_ns = Some(exit_ns);
                    section.stopped = stopped;
                }
            }
        }
    }
    sections
}

/// What a line says besides its run and token.
enum Line {
    Enter {
        enter_ns: u64,
        pid: i32,
        work_ms: u64,
    },
    Exit {
        exit_ns: u64,
        stopped: bool,
    },
}

fn parse_line(line: &str) -> Option<(RunId, Option<u64>, Line)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let run = RunId::parse(fields.get(1)?)?;
    let token = match *fields.get(2)? {
        "none" => None,
        token => Some(token.parse().ok()?),
    };
    let rest = match (fields[0], fields.len()) {
        ("enter", 6) => Line::Enter {
            enter_ns: fields[3].parse().ok()?,
            pid: fields[4].parse().ok()?,
            work_ms: fields[5].parse().ok()?,
        },
        (kind @ ("exit" | "stop"), 4) => Line::Exit {
            exit_ns: fields[3].parse().ok()?,
            stopped: kind == "stop",
        },
        _ => return None,
    };
    Some((run, token, rest))
}

#[test]
fn the_log_parses_into_sections() {
    let sections = parse(
        "enter 1.2 17 1000 42 300\n\
         enter 0.5 none 2000 43 50\n\
         exit 1.2 17 1500\n\
         stop 3.1 18 1600\n\
         enter 2.2 19 1700 44 300\n\
         stop 2.2 19 1800\n",
    );
    let run = RunId { worker: 1, run: 2 };
    assert_eq!(
        sections[&run],
        Section {
            run,
            token: Some(17),
            enter_ns: 1000,
            pid: 42,
            work_ms: 300,
            exit_ns: Some(1500),
            stopped: false,
        }
    );
    let other = &sections[&RunId { worker: 0, run: 5 }];
    assert_eq!((other.token, other.exit_ns), (None, None));
    let stopped = &sections[&RunId { worker: 2, run: 2 }];
    assert_eq!((stopped.exit_ns, stopped.stopped), (Some(1800), true));
    // A stop line without an enter: no section.
    assert_eq!(sections.len(), 3);
}
