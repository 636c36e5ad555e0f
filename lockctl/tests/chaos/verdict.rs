//! The verdict on a chaos run, from the log, the runs and the strikes:
//! the counts to report, the overlaps that were allowed, and the
//! violations.
//!
//! The rules, for a hold of capacity N (1 for the lock, N for `--permits
//! N`):
//! 1. Fencing tokens strictly increase: every section's token is larger
//!    than that of every section that entered before it (the lock only:
//!    a semaphore has no tokens).
//! 2. At no instant are more than N sections inside, unless the excess
//!    are earlier sections whose hold was gone: their lockctl exited 76
//!    (it told its caller the hold was lost; after a SIGSTOP that is the
//!    only way out), or it was SIGKILLed and its command was gone within
//!    [`KILL_BOUND`] of the kill. So whenever a section enters, the others
//!    still inside that are not so explained must be fewer than N.
//! 3. A SIGKILLed lockctl's command is gone within [`KILL_BOUND`].
//! 4. Every run ends by itself within [`RUN_LIMIT`] (a generous bound on
//!    waiting, working, the driver's pauses and lockctl's own timeouts).
//! 5. A lockctl SIGSTOPped for longer than the watchdog timeout while its
//!    command ran exits 76 once continued: nothing renewed its hold
//!    meanwhile, so the hold lapsed, whether or not anyone else entered
//!    (had the command ended while it was stopped, its release finds the
//!    hold gone, which is a loss too).
//!
//! A section starts at its `enter` line and ends at its `exit` or `stop`
//! line; a command killed before it wrote one ends when it was seen gone:
//! by the driver after a SIGKILL, otherwise when its lockctl had exited
//! (lockctl exits only after its command's group is gone).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::Duration;

use crate::driver::{Fault, Strike};
use crate::log::{RunId, Section};
use crate::worker::{Hold, Outcome, Run, RUN_LIMIT};
use crate::WATCHDOG_TIMEOUT;

/// How soon after its lockctl's SIGKILL a command must be gone. The
/// supervisor gets the parent-death signal at once and kills the group, so
/// this is milliseconds in practice; the bound leaves room for a loaded
/// machine and for the driver's polling of /proc.
pub(crate) const KILL_BOUND: Duration = Duration::from_millis(100);

/// An overlap that the rules allow: `later` entered while the hold had no
/// room left but for `earlier`'s, which was gone.
#[derive(Debug, Clone)]
pub(crate) struct Overlap {
    pub(crate) earlier: RunId,
    pub(crate) later: RunId,
    pub(crate) ms: f64,
    /// The last fault that hit the earlier run, if any.
    pub(crate) cause: Option<Fault>,
    /// Why it is allowed.
    pub(crate) why: String,
}

#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) runs: usize,
    pub(crate) entered: usize,
    /// The most sections inside at once, explained ones included.
    pub(crate) most_inside: usize,
    /// How many runs ended each way.
    pub(crate) outcomes: BTreeMap<Outcome, usize>,
    pub(crate) strikes: BTreeMap<Fault, usize>,
    /// The longest a SIGKILLed lockctl's command took to be gone, in ms.
    pub(crate) slowest_gone_ms: f64,
    pub(crate) allowed: Vec<Overlap>,
    pub(crate) violations: Vec<String>,
    /// Each strike and what became of the run it hit.
    pub(crate) aftermath: Vec<String>,
}

impl Verdict {
    /// The counts, one line, then each strike's aftermath and each
    /// allowed overlap.
    pub(crate) fn report(&self) -> String {
        let count = |code| self.outcomes.get(&Outcome::Code(code)).copied();
        let others: Vec<String> = self
            .outcomes
            .iter()
            .filter(|(outcome, _)| !matches!(outcome, Outcome::Code(0 | 75 | 76)))
            .map(|(outcome, n)| format!("{outcome}: {n}"))
            .collect();
        let struck = |fault| self.strikes.get(&fault).copied().unwrap_or(0);
        let after = |cause| self.allowed.iter().filter(|o| o.cause == cause).count();
        let mut report = format!(
            "runs {}, entered {} (at most {} at once), exit 0: {}, exit 75: {}, exit 76: {}, \
             others: [{}]; kills {} (command gone within {:.1} ms at worst), stops {}, client kills {}, \
             partitions {}; overlaps allowed {} (after SIGSTOP {}, after partition {}, \
             after CLIENT KILL {}, after SIGKILL {}, after no fault {}), violations {}",
            self.runs,
            self.entered,
            self.most_inside,
            count(0).unwrap_or(0),
            count(75).unwrap_or(0),
            count(76).unwrap_or(0),
            others.join(", "),
            struck(Fault::Kill),
            self.slowest_gone_ms,
            struck(Fault::Stop),
            struck(Fault::ClientKill),
            struck(Fault::Partition),
            self.allowed.len(),
            after(Some(Fault::Stop)),
            after(Some(Fault::Partition)),
            after(Some(Fault::ClientKill)),
            after(Some(Fault::Kill)),
            after(None),
            self.violations.len(),
        );
        for line in &self.aftermath {
            let _ = write!(report, "\n  {line}");
        }
        for overlap in &self.allowed {
            let _ = write!(
                report,
                "\n  allowed overlap of {:.0} ms: {} (entered first) and {}: {}",
                overlap.ms, overlap.earlier, overlap.later, overlap.why
            );
        }
        report
    }
}

/// Judges a chaos run of `hold`; times in messages are ms since
/// `origin_ns`.
pub(crate) fn judge(
    sections: &BTreeMap<RunId, Section>,
    runs: &[Run],
    strikes: &[Strike],
    origin_ns: u64,
    hold: Hold,
) -> Verdict {
    let ms = |ns: u64| ns.saturating_sub(origin_ns) as f64 / 1e6;
    let runs_by_id: HashMap<RunId, &Run> = runs.iter().map(|run| (run.id, run)).collect();
    let mut strikes_on: HashMap<RunId, Vec<&Strike>> = HashMap::new();
    for strike in strikes {
        strikes_on.entry(strike.run).or_default().push(strike);
    }
    let mut verdict = Verdict {
        runs: runs.len(),
        entered: sections.len(),
        ..Verdict::default()
    };
    for run in runs {
        *verdict.outcomes.entry(run.outcome).or_default() += 1;
    }
    for strike in strikes {
        *verdict.strikes.entry(strike.fault).or_default() += 1;
    }

    let describe = |section: &Section| -> String {
        let exit = section.exit_ns.map_or("no exit line".to_owned(), |ns| {
            format!("exit at {:.1}", ms(ns))
        });
        let run = runs_by_id.get(&section.run).map_or_else(
            || "no such run".to_owned(),
            |run| {
                format!(
                    "lockctl ran {:.1} to {:.1}, {}, stderr {:?}",
                    ms(run.started_ns),
                    ms(run.ended_ns),
                    run.outcome,
                    run.stderr
                )
            },
        );
        let hits: Vec<String> = strikes_on
            .get(&section.run)
            .into_iter()
            .flatten()
            .map(|s| format!("{} at {:.1}", s.fault, ms(s.at_ns)))
            .collect();
        format!(
            "{} (token {:?}, enter at {:.1}, {exit}; {run}; faults [{}])",
            section.run,
            section.token,
            ms(section.enter_ns),
            hits.join(", ")
        )
    };
    let kill_of = |run: RunId| {
        strikes_on
            .get(&run)
            .into_iter()
            .flatten()
            .find(|s| s.fault == Fault::Kill)
            .copied()
    };
    let bound = u64::try_from(KILL_BOUND.as_nanos()).expect("short");

    let end_of = |section: &Section| -> u64 {
        if let Some(exit) = section.exit_ns {
            return exit;
        }
        if let Some(kill) = kill_of(section.run) {
            // Never seen gone: it overlaps everything after it.
            return kill.end_ns.unwrap_or(u64::MAX);
        }
        runs_by_id
            .get(&section.run)
            .map_or(u64::MAX, |run| run.ended_ns)
    };
    for strike in strikes {
        let section = sections.get(&strike.run);
        let run = runs_by_id.get(&strike.run);
        let after_ms = |ns: u64| (ns as f64 - strike.at_ns as f64) / 1e6;
        let ended = match section.map(|s| (s.exit_ns, end_of(s))) {
            Some((Some(exit), _)) if section.is_some_and(|s| s.stopped) => {
                format!("command stopped (SIGTERM) at +{:.0} ms", after_ms(exit))
            }
            Some((Some(exit), _)) => format!("command exited at +{:.0} ms", after_ms(exit)),
            Some((None, u64::MAX)) => "command never seen gone".to_owned(),
            Some((None, end)) => format!("command killed, gone by +{:.0} ms", after_ms(end)),
            None => "no section".to_owned(),
        };
        let lockctl = run.map_or("no such run".to_owned(), |run| {
            format!(
                "lockctl {} at +{:.0} ms, stderr {:?}",
                run.outcome,
                after_ms(run.ended_ns),
                run.stderr
            )
        });
        verdict.aftermath.push(format!(
            "{} on {} at {:.1} ms ({}): {ended}; {lockctl}",
            strike.fault,
            strike.run,
            ms(strike.at_ns),
            strike.note
        ));
    }

    for run in runs.iter().filter(|run| run.outcome == Outcome::Hung) {
        verdict.violations.push(format!(
            "{} did not end within {RUN_LIMIT:?} (started at {:.1}), stderr {:?}",
            run.id,
            ms(run.started_ns),
            run.stderr
        ));
    }

    // Rule 5.
    let watchdog = u64::try_from(WATCHDOG_TIMEOUT.as_nanos()).expect("short");
    for strike in strikes.iter().filter(|s| s.fault == Fault::Stop) {
        let Some(continued) = strike.end_ns else {
            continue;
        };
        let run = runs_by_id.get(&strike.run);
        let outcome = run.map(|run| run.outcome);
        if continued - strike.at_ns > watchdog && outcome != Some(Outcome::Code(76)) {
            verdict.violations.push(format!(
                "{} was SIGSTOPped from {:.1} to {:.1}, past the watchdog timeout, yet its \
                 lockctl ended {} (not exit 76), stderr {:?}",
                strike.run,
                ms(strike.at_ns),
                ms(continued),
                outcome.map_or("unseen".to_owned(), |o| o.to_string()),
                run.map_or("", |run| run.stderr.as_str())
            ));
        }
    }

    // Rule 3.
    for strike in strikes.iter().filter(|s| s.fault == Fault::Kill) {
        match strike.end_ns {
            Some(gone) => {
                let took = gone.saturating_sub(strike.at_ns);
                verdict.slowest_gone_ms = verdict.slowest_gone_ms.max(took as f64 / 1e6);
                if took > bound {
                    verdict.violations.push(format!(
                        "the command of {} was gone only {:.1} ms after its lockctl was \
                         SIGKILLed at {:.1} (bound {KILL_BOUND:?})",
                        strike.run,
                        took as f64 / 1e6,
                        ms(strike.at_ns)
                    ));
                }
            }
            None => verdict.violations.push(format!(
                "the command of {} still ran 2 s after its lockctl was SIGKILLed at {:.1}",
                strike.run,
                ms(strike.at_ns)
            )),
        }
    }

    let mut order: Vec<&Section> = sections.values().collect();
    order.sort_by_key(|s| (s.enter_ns, s.run));

    // Rule 1.
    let mut highest: Option<&Section> = None;
    for &section in order.iter().filter(|_| hold.fenced()) {
        let Some(token) = section.token else {
            verdict
                .violations
                .push(format!("no fencing token: {}", describe(section)));
            continue;
        };
        match highest {
            Some(top) if top.token >= Some(token) => verdict.violations.push(format!(
                "token {token} is not above the {:?} of a section that entered before it: \
                 {} entered after {}",
                top.token,
                describe(section),
                describe(top)
            )),
            _ => highest = Some(section),
        }
    }

    // Rule 2. The number inside rises only when a section enters, so
    // looking at each entry finds every excess.
    let capacity = hold.capacity();
    let gone = |section: &Section| -> Option<String> {
        let outcome = runs_by_id.get(&section.run).map(|run| run.outcome);
        if outcome == Some(Outcome::Code(76)) {
            return Some("its lockctl exited 76 (hold lost)".to_owned());
        }
        kill_of(section.run)
            .filter(|kill| end_of(section) <= kill.at_ns.saturating_add(bound))
            .map(|_| format!("its lockctl was SIGKILLed, command gone within {KILL_BOUND:?}"))
    };
    for (i, &later) in order.iter().enumerate() {
        let inside: Vec<&Section> = order[..i]
            .iter()
            .copied()
            .filter(|earlier| end_of(earlier) > later.enter_ns)
            .collect();
        verdict.most_inside = verdict.most_inside.max(inside.len() + 1);
        if inside.len() < capacity {
            continue;
        }
        let (explained, holding): (Vec<_>, Vec<_>) = inside
            .into_iter()
            .map(|earlier| (earlier, gone(earlier)))
            .partition(|(_, why)| why.is_some());
        if holding.len() < capacity {
            for (earlier, why) in explained {
                verdict.allowed.push(Overlap {
                    earlier: earlier.run,
                    later: later.run,
                    ms: (end_of(earlier).min(end_of(later)) - later.enter_ns) as f64 / 1e6,
                    cause: strikes_on
                        .get(&earlier.run)
                        .and_then(|hits| hits.last())
                        .map(|s| s.fault),
                    why: why.expect("explained"),
                });
            }
            continue;
        }
        // How long all of them were inside together.
        let excess_end = holding
            .iter()
            .map(|(earlier, _)| end_of(earlier))
            .fold(end_of(later), u64::min);
        let others: Vec<String> = holding
            .iter()
            .map(|(earlier, _)| describe(earlier))
            .collect();
        verdict.violations.push(format!(
            "overlap of {:.1} ms: {} entered while {} other(s) still ran ({capacity} allowed), \
             none of them told it lost its hold: {}",
            (excess_end - later.enter_ns) as f64 / 1e6,
            describe(later),
            holding.len(),
            others.join("; ")
        ));
    }
    verdict
}

#[cfg(test)]
mod tests {
    //! The rules fire on made-up histories: the chaos test cannot pass
    //! just because they never do.

    use super::*;

    const MS: u64 = 1_000_000;

    fn section(worker: usize, token: u64, enter: u64, exit: Option<u64>) -> Section {
        Section {
            run: RunId { worker, run: 1 },
            token: Some(token),
            enter_ns: enter * MS,
            pid: 1,
            work_ms: 100,
            exit_ns: exit.map(|ms| ms * MS),
            stopped: false,
        }
    }

    fn run(worker: usize, outcome: Outcome, ended: u64) -> Run {
        Run {
            id: RunId { worker, run: 1 },
            started_ns: 0,
            ended_ns: ended * MS,
            outcome,
            stderr: String::new(),
        }
    }

    fn sections(list: Vec<Section>) -> BTreeMap<RunId, Section> {
        list.into_iter().map(|s| (s.run, s)).collect()
    }

    #[test]
    fn one_after_the_other_is_fine() {
        let verdict = judge(
            &sections(vec![
                section(0, 1, 10, Some(20)),
                section(1, 2, 21, Some(30)),
            ]),
            &[run(0, Outcome::Code(0), 25), run(1, Outcome::Code(0), 35)],
            &[],
            0,
            Hold::Lock,
        );
        assert!(verdict.violations.is_empty(), "{:?}", verdict.violations);
        assert!(verdict.allowed.is_empty());
    }

    #[test]
    fn an_overlap_is_a_violation_unless_the_first_was_told_it_lost() {
        let log = sections(vec![
            section(0, 1, 10, Some(30)),
            section(1, 2, 20, Some(40)),
        ]);
        let quiet = judge(
            &log,
            &[run(0, Outcome::Code(0), 35), run(1, Outcome::Code(0), 45)],
            &[],
            0,
            Hold::Lock,
        );
        assert_eq!(quiet.violations.len(), 1, "{:?}", quiet.violations);
        assert!(quiet.violations[0].contains("overlap of 10.0 ms"));
        let told = judge(
            &log,
            &[run(0, Outcome::Code(76), 35), run(1, Outcome::Code(0), 45)],
            &[],
            0,
            Hold::Lock,
        );
        assert!(told.violations.is_empty(), "{:?}", told.violations);
        assert_eq!(told.allowed.len(), 1);
    }

    #[test]
    fn a_stopped_command_ends_when_its_lockctl_exits() {
        // No exit line: the section lasts until lockctl is gone at 50.
        let verdict = judge(
            &sections(vec![section(0, 1, 10, None), section(1, 2, 40, Some(60))]),
            &[run(0, Outcome::Code(0), 50), run(1, Outcome::Code(0), 65)],
            &[],
            0,
            Hold::Lock,
        );
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
    }

    #[test]
    fn a_hung_run_is_a_violation() {
        let verdict = judge(
            &sections(vec![]),
            &[run(0, Outcome::Hung, 20_000)],
            &[],
            0,
            Hold::Lock,
        );
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
    }

    #[test]
    fn tokens_must_rise_in_the_order_sections_enter() {
        let verdict = judge(
            &sections(vec![
                section(0, 5, 10, Some(20)),
                section(1, 4, 30, Some(40)),
            ]),
            &[run(0, Outcome::Code(0), 25), run(1, Outcome::Code(0), 45)],
            &[],
            0,
            Hold::Lock,
        );
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(verdict.violations[0].contains("token 4"));
    }

    #[test]
    fn a_command_outliving_its_killed_lockctl_is_a_violation() {
        let strike = |gone: Option<u64>| Strike {
            fault: Fault::Kill,
            run: RunId { worker: 0, run: 1 },
            at_ns: 15 * MS,
            end_ns: gone.map(|ms| ms * MS),
            note: String::new(),
        };
        let log = sections(vec![
            section(0, 1, 10, None),
            section(1, 2, 1000, Some(1010)),
        ]);
        let runs = [
            run(0, Outcome::Signal(9), 16),
            run(1, Outcome::Code(0), 1020),
        ];
        let prompt = judge(&log, &runs, &[strike(Some(20))], 0, Hold::Lock);
        assert!(prompt.violations.is_empty(), "{:?}", prompt.violations);
        let slow = judge(&log, &runs, &[strike(Some(500))], 0, Hold::Lock);
        assert_eq!(slow.violations.len(), 1, "{:?}", slow.violations);
        let never = judge(&log, &runs, &[strike(None)], 0, Hold::Lock);
        // Gone never, so it also overlaps the next section.
        assert_eq!(never.violations.len(), 2, "{:?}", never.violations);
    }

    #[test]
    fn a_lockctl_stopped_past_the_watchdog_must_say_it_lost() {
        let stop = |continued: u64| Strike {
            fault: Fault::Stop,
            run: RunId { worker: 0, run: 1 },
            at_ns: 15 * MS,
            end_ns: Some(continued * MS),
            note: String::new(),
        };
        let log = sections(vec![section(0, 1, 10, Some(3000))]);
        let quiet = [run(0, Outcome::Code(0), 3010)];
        let long = judge(&log, &quiet, &[stop(2515)], 0, Hold::Lock);
        assert_eq!(long.violations.len(), 1, "{:?}", long.violations);
        assert!(long.violations[0].contains("exit 0"));
        let told = [run(0, Outcome::Code(76), 3010)];
        let long_told = judge(&log, &told, &[stop(2515)], 0, Hold::Permits(2));
        assert!(
            long_told.violations.is_empty(),
            "{:?}",
            long_told.violations
        );
        // Within the watchdog timeout the hold may well survive.
        let short = judge(&log, &quiet, &[stop(515)], 0, Hold::Lock);
        assert!(short.violations.is_empty(), "{:?}", short.violations);
    }

    const TWO: Hold = Hold::Permits(2);

    #[test]
    fn two_permits_let_two_in_but_not_three() {
        let two = sections(vec![
            section(0, 0, 10, Some(50)),
            section(1, 0, 20, Some(60)),
        ]);
        let runs = [
            run(0, Outcome::Code(0), 55),
            run(1, Outcome::Code(0), 65),
            run(2, Outcome::Code(0), 45),
        ];
        let fine = judge(&two, &runs, &[], 0, TWO);
        assert!(fine.violations.is_empty(), "{:?}", fine.violations);
        assert_eq!((fine.most_inside, fine.allowed.len()), (2, 0));
        let mut three = two.clone();
        let third = section(2, 0, 30, Some(40));
        three.insert(third.run, third);
        let verdict = judge(&three, &runs, &[], 0, TWO);
        // One: the equal tokens are no violation, rising tokens being the
        // lock's rule.
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(
            verdict.violations[0].contains("overlap of 10.0 ms"),
            "{:?}",
            verdict.violations
        );
        assert_eq!(verdict.most_inside, 3);
    }

    #[test]
    fn a_third_may_enter_beside_two_only_when_an_earlier_one_was_told() {
        let log = sections(vec![
            section(0, 0, 10, Some(50)),
            section(1, 0, 20, Some(60)),
            section(2, 0, 30, Some(40)),
        ]);
        let told = judge(
            &log,
            &[
                run(0, Outcome::Code(76), 55),
                run(1, Outcome::Code(0), 65),
                run(2, Outcome::Code(0), 45),
            ],
            &[],
            0,
            TWO,
        );
        assert!(told.violations.is_empty(), "{:?}", told.violations);
        assert_eq!(told.allowed.len(), 1);
        assert_eq!(told.allowed[0].earlier, RunId { worker: 0, run: 1 });
        assert_eq!(told.allowed[0].later, RunId { worker: 2, run: 1 });
        // Telling the newcomer it lost does not excuse its entering.
        let late = judge(
            &log,
            &[
                run(0, Outcome::Code(0), 55),
                run(1, Outcome::Code(0), 65),
                run(2, Outcome::Code(76), 45),
            ],
            &[],
            0,
            TWO,
        );
        assert_eq!(late.violations.len(), 1, "{:?}", late.violations);
    }

    #[test]
    fn one_lost_permit_makes_room_for_one_more_only() {
        let log = sections(vec![
            section(0, 0, 10, Some(100)),
            section(1, 0, 20, Some(100)),
            section(2, 0, 30, Some(100)),
            section(3, 0, 40, Some(50)),
        ]);
        let verdict = judge(
            &log,
            &[
                run(0, Outcome::Code(76), 105),
                run(1, Outcome::Code(0), 105),
                run(2, Outcome::Code(0), 105),
                run(3, Outcome::Code(0), 55),
            ],
            &[],
            0,
            TWO,
        );
        // Worker 2 entered beside the lost permit of 0; 3 beside 1 and 2.
        assert_eq!(verdict.allowed.len(), 1, "{:?}", verdict.allowed);
        assert_eq!(verdict.violations.len(), 1, "{:?}", verdict.violations);
        assert!(verdict.violations[0].contains("worker 3 run 1 (token"));
    }
}
