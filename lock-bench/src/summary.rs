//! The end of a run: every goal of every report with ✅/❌ and its value,
//! as a Markdown table and as one JSON line, with the machine's load
//! average at the start and at the end (the machine may be shared, and the
//! figures say nothing without it). Also reads a run's JSON lines back
//! (`--markdown-from`), so a saved run prints the same tables.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::report::{self, Figure, Report};

/// The `workload` of the summary's JSON line.
const SUMMARY: &str = "goals";

/// What a run records besides its reports.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct RunInfo {
    /// The 1-minute load average when the run started.
    pub(crate) load_start: Option<f64>,
    /// The same when it ended.
    pub(crate) load_end: Option<f64>,
}

/// The 1-minute load average (`/proc/loadavg`, Linux only).
pub(crate) fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Every figure that has a goal, with its report.
fn goals(reports: &[Report]) -> impl Iterator<Item = (&Report, &Figure)> {
    reports
        .iter()
        .flat_map(|r| r.figures.iter().map(move |f| (r, f)))
        .filter(|(_, f)| f.goal.is_some())
}

/// How many goals were met, missed, and not evaluated.
fn tally(reports: &[Report]) -> (usize, usize, usize) {
    goals(reports).fold((0, 0, 0), |(met, missed, none), (_, f)| match f.met() {
        Some(true) => (met + 1, missed, none),
        Some(false) => (met, missed + 1, none),
        None => (met, missed, none + 1),
    })
}

fn load(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"))
}

/// The goals table that ends the Markdown output.
pub(crate) fn markdown(reports: &[Report], info: &RunInfo) -> String {
    let (met, missed, none) = tally(reports);
    let mut out = format!(
        "Goals: {met} met, {missed} missed, {none} not evaluated. \
         Load average (1 min): {} at the start, {} at the end.\n\n",
        load(info.load_start),
        load(info.load_end)
    );
    out.push_str("| workload | impl | figure | value | goal |\n");
    out.push_str("| --- | --- | --- | ---: | --- |\n");
    for (r, f) in goals(reports) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            r.workload,
            r.implementation,
            f.label,
            f.formatted(),
            f.verdict()
        );
    }
    out
}

/// The reports' table, their notes, then the goals: what a run prints.
pub(crate) fn full_markdown(reports: &[Report], info: &RunInfo) -> String {
    format!("{}\n{}", report::markdown(reports), markdown(reports, info))
}

/// The summary's JSON line: `{"workload": "goals", "met": 9, "missed": 6,
/// "not_evaluated": 0, "load_average_start": …, "load_average_end": …,
/// "goals": [{"workload", "impl", "key", "label", "value", "goal", "met"}]}`
/// (`met` is `null` for a goal not evaluated).
pub(crate) fn to_json(reports: &[Report], info: &RunInfo) -> Value {
    let (met, missed, none) = tally(reports);
    let rows: Vec<Value> = goals(reports)
        .map(|(r, f)| {
            json!({
                "workload": r.workload,
                "impl": r.implementation,
                "key": f.key,
                "label": f.label,
                "value": f.value,
                "goal": f.goal.map(|g| g.describe(f.unit)),
                "met": f.met(),
            })
        })
        .collect();
    json!({
        "workload": SUMMARY,
        "met": met,
        "missed": missed,
        "not_evaluated": none,
        "load_average_start": info.load_start,
        "load_average_end": info.load_end,
        "goals": rows,
    })
}

/// The reports and run information of a run's JSON lines (`--json`
/// output); the goals are evaluated again from the figures, so the
/// summary line is read only for the load averages. Blank lines are
/// skipped.
pub(crate) fn read_json_lines(text: &str) -> Result<(Vec<Report>, RunInfo)> {
    let mut reports = Vec::new();
    let mut info = RunInfo::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).with_context(|| format!("line {}: not JSON", i + 1))?;
        if value["workload"] == SUMMARY {
            info = RunInfo {
                load_start: value["load_average_start"].as_f64(),
                load_end: value["load_average_end"].as_f64(),
            };
            continue;
        }
        reports.push(Report::from_json(&value).with_context(|| format!("line {}", i + 1))?);
    }
    Ok((reports, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Goal, Unit};

    fn reports() -> Vec<Report> {
        let mut w1 = Report::new("W1", "uncontended", "lock-redis");
        w1.add("pairs", "pairs", 5000.0, Unit::Count)
            .add_goal("vs_raw", "p50 / raw", 1.2, Unit::Ratio, Goal::AtMost(1.05))
            .add_goal(
                "vs_peer",
                "p50 / rslock's",
                None,
                Unit::Ratio,
                Goal::AtMost(1.0),
            )
            .add_goal(
                "server_us",
                "server µs",
                30.5,
                Unit::Micros,
                Goal::AtMost(35.0),
            );
        let mut rs = Report::new("W1", "uncontended", "rslock");
        rs.add("pairs", "pairs", 5000.0, Unit::Count);
        vec![w1, rs]
    }

    const INFO: RunInfo = RunInfo {
        load_start: Some(1.5),
        load_end: Some(2.25),
    };

    #[test]
    fn every_goal_is_listed_with_its_verdict() {
        let md = markdown(&reports(), &INFO);
        assert!(md.starts_with(
            "Goals: 1 met, 1 missed, 1 not evaluated. \
             Load average (1 min): 1.50 at the start, 2.25 at the end."
        ));
        assert!(md.contains("| W1 | lock-redis | p50 / raw | 1.20× | ≤ 1.05× ❌ missed |"));
        assert!(md.contains("| W1 | lock-redis | p50 / rslock's | n/a | ≤ 1.00× — not evaluated |"));
        assert!(md.contains("| W1 | lock-redis | server µs | 30.5 µs | ≤ 35 µs ✅ |"));
        // Figures without a goal are not in the summary.
        assert!(!md.contains("| pairs |"));
        assert_eq!(md.lines().filter(|l| l.starts_with("| W1")).count(), 3);
    }

    #[test]
    fn the_json_line_counts_and_lists_every_goal() {
        let j = to_json(&reports(), &INFO);
        assert_eq!(j["workload"], "goals");
        assert_eq!(
            (j["met"].clone(), j["missed"].clone()),
            (json!(1), json!(1))
        );
        assert_eq!(j["not_evaluated"], 1);
        assert_eq!(j["load_average_end"], 2.25);
        let goals = j["goals"].as_array().unwrap();
        assert_eq!(goals.len(), 3);
        assert_eq!(goals[0]["key"], "vs_raw");
        assert_eq!(goals[0]["met"], false);
        assert_eq!(goals[0]["goal"], "≤ 1.05×");
        assert_eq!(goals[1]["met"], Value::Null);
        assert_eq!(goals[1]["value"], Value::Null);
        assert!(!serde_json::to_string(&j).unwrap().contains('\n'));
    }

    #[test]
    fn json_lines_print_the_same_markdown_again() {
        let reports = reports();
        let mut lines = String::new();
        for r in &reports {
            lines.push_str(&serde_json::to_string(&r.to_json()).unwrap());
            lines.push('\n');
        }
        lines.push('\n');
        lines.push_str(&serde_json::to_string(&to_json(&reports, &INFO)).unwrap());
        let (back, info) = read_json_lines(&lines).unwrap();
        assert_eq!(info, INFO);
        assert_eq!(full_markdown(&back, &info), full_markdown(&reports, &INFO));
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = read_json_lines("\n{oops\n").unwrap_err();
        assert!(format!("{err:#}").contains("line 2"), "{err:#}");
        let err = read_json_lines("{\"workload\": \"W1\"}\n").unwrap_err();
        assert!(format!("{err:#}").contains("line 1"), "{err:#}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn reads_the_load_average() {
        assert!(load_average().is_some_and(|l| l >= 0.0));
    }
}
