//! What a workload reports: named figures with units and goals, printed as
//! one JSON object per line or as one Markdown table for people. A report
//! read back from its JSON line prints the same table
//! (`lock-bench --markdown-from FILE`).

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

/// The unit of a figure; decides how it is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Microseconds.
    Micros,
    /// Events per second.
    PerSec,
    /// A plain count (or a count per something).
    Count,
    /// A dimensionless ratio, printed as `1.23×`.
    Ratio,
    /// A share or other number between 0 and 1, printed as `0.25`.
    Fraction,
    /// Bytes.
    Bytes,
    /// Seconds.
    Seconds,
}

impl Unit {
    const ALL: [Unit; 7] = [
        Self::Micros,
        Self::PerSec,
        Self::Count,
        Self::Ratio,
        Self::Fraction,
        Self::Bytes,
        Self::Seconds,
    ];

    /// Its name in the JSON line's `units`.
    fn name(self) -> &'static str {
        match self {
            Self::Micros => "us",
            Self::PerSec => "per_s",
            Self::Count => "count",
            Self::Ratio => "ratio",
            Self::Fraction => "fraction",
            Self::Bytes => "bytes",
            Self::Seconds => "s",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|u| u.name() == name)
    }
}

/// A goal a figure should meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Goal {
    /// The figure should be at most this.
    AtMost(f64),
    /// The figure should be at least this.
    AtLeast(f64),
    /// The figure should be exactly this.
    Exactly(f64),
}

impl Goal {
    pub(crate) fn is_met(self, value: f64) -> bool {
        match self {
            Self::AtMost(limit) => value <= limit,
            Self::AtLeast(limit) => value >= limit,
            Self::Exactly(target) => (value - target).abs() < 1e-9,
        }
    }

    /// `{"at_most": 1.05}`: the goal as the JSON line keeps it.
    fn to_json(self) -> (&'static str, f64) {
        match self {
            Self::AtMost(limit) => ("at_most", limit),
            Self::AtLeast(limit) => ("at_least", limit),
            Self::Exactly(target) => ("exactly", target),
        }
    }

    /// The goal in a JSON line's `goals` entry (see [`Goal::to_json`]).
    fn from_json(entry: &Map<String, Value>) -> Option<Self> {
        let number = |k: &str| entry.get(k).and_then(Value::as_f64);
        number("at_most")
            .map(Self::AtMost)
            .or_else(|| number("at_least").map(Self::AtLeast))
            .or_else(|| number("exactly").map(Self::Exactly))
    }

    pub(crate) fn describe(self, unit: Unit) -> String {
        match self {
            Self::AtMost(limit) => format!("≤ {}", format_value(limit, unit)),
            Self::AtLeast(limit) => format!("≥ {}", format_value(limit, unit)),
            Self::Exactly(target) => format!("= {}", format_value(target, unit)),
        }
    }
}

/// One measured (or derived) number.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    /// The JSON key: `snake_case`, unique within its report.
    pub(crate) key: String,
    /// What a person reads in the table.
    pub(crate) label: String,
    /// `None` when it could not be computed (e.g. its baseline was not run).
    pub(crate) value: Option<f64>,
    pub(crate) unit: Unit,
    pub(crate) goal: Option<Goal>,
}

impl Figure {
    /// Whether the goal is met: `None` without a goal or a value (a goal
    /// whose figure has no value was not evaluated, e.g. because what it
    /// compares with did not run).
    pub(crate) fn met(&self) -> Option<bool> {
        Some(self.goal?.is_met(self.value?))
    }

    /// Its value for people: `1.05×`, or `n/a` without one.
    pub(crate) fn formatted(&self) -> String {
        self.value
            .map_or_else(|| "n/a".to_owned(), |v| format_value(v, self.unit))
    }

    /// The goal and whether it is met, for people: `≤ 1.05× ✅`,
    /// `≤ 1.05× ❌ missed`, `≤ 1.05× — not evaluated`; empty without a
    /// goal.
    pub(crate) fn verdict(&self) -> String {
        let Some(goal) = self.goal else {
            return String::new();
        };
        let goal = goal.describe(self.unit);
        match self.met() {
            Some(true) => format!("{goal} ✅"),
            Some(false) => format!("{goal} ❌ missed"),
            None => format!("{goal} — not evaluated"),
        }
    }
}

/// The outcome of one workload with one implementation.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// `baseline`, `W1`, `W1-fair`, …
    pub(crate) workload: String,
    /// A few words: "uncontended", "handoff", …
    pub(crate) title: String,
    /// `lock-redis`, `lock-redis fair_lock`, `lock-redis-cluster`, `rslock` or
    /// `raw redis`.
    pub(crate) implementation: String,
    pub(crate) figures: Vec<Figure>,
    /// Anything a reader should know to interpret the figures.
    pub(crate) notes: Vec<String>,
}

impl Report {
    pub(crate) fn new(
        workload: impl Into<String>,
        title: impl Into<String>,
        implementation: impl Into<String>,
    ) -> Self {
        Self {
            workload: workload.into(),
            title: title.into(),
            implementation: implementation.into(),
            figures: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a figure without a goal.
    pub(crate) fn add(
        &mut self,
        key: impl Into<String>,
        label: impl Into<String>,
        value: impl Into<Option<f64>>,
        unit: Unit,
    ) -> &mut Self {
        self.figures.push(Figure {
            key: key.into(),
            label: label.into(),
            value: value.into(),
            unit,
            goal: None,
        });
        self
    }

    /// Adds a figure with a goal (or with none, when `goal` is `None`: a
    /// figure that has a goal for one lock only).
    pub(crate) fn add_goal(
        &mut self,
        key: impl Into<String>,
        label: impl Into<String>,
        value: impl Into<Option<f64>>,
        unit: Unit,
        goal: impl Into<Option<Goal>>,
    ) -> &mut Self {
        self.add(key, label, value, unit);
        if let Some(figure) = self.figures.last_mut() {
            figure.goal = goal.into();
        }
        self
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) -> &mut Self {
        self.notes.push(note.into());
        self
    }

    /// The value of the figure called `key`, if any.
    pub(crate) fn value(&self, key: &str) -> Option<f64> {
        self.figures.iter().find(|f| f.key == key)?.value
    }

    /// One JSON object: `workload`, `title`, `impl`, each figure by its key,
    /// then `goals` (`{key: {"goal": "≤ 1.1×", "met": false, "at_most":
    /// 1.1}}`; `met` is `null` when not evaluated), `notes`, and what
    /// [`Report::from_json`] needs to print the figures again: `labels`
    /// and `units` by key.
    pub(crate) fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("workload".into(), json!(self.workload));
        obj.insert("title".into(), json!(self.title));
        obj.insert("impl".into(), json!(self.implementation));
        let (mut goals, mut labels, mut units) = (Map::new(), Map::new(), Map::new());
        for f in &self.figures {
            let value = f.value.map_or(Value::Null, |v| json!(round_json(v)));
            obj.insert(f.key.clone(), value);
            if let Some(goal) = f.goal {
                let (kind, limit) = goal.to_json();
                goals.insert(
                    f.key.clone(),
                    json!({ "goal": goal.describe(f.unit), "met": f.met(), kind: limit }),
                );
            }
            labels.insert(f.key.clone(), json!(f.label));
            units.insert(f.key.clone(), json!(f.unit.name()));
        }
        obj.insert("goals".into(), Value::Object(goals));
        obj.insert("notes".into(), json!(self.notes));
        obj.insert("labels".into(), Value::Object(labels));
        obj.insert("units".into(), Value::Object(units));
        Value::Object(obj)
    }

    /// The report [`Report::to_json`] wrote (values as rounded there).
    pub(crate) fn from_json(line: &Value) -> Result<Self> {
        let obj = line.as_object().context("not a JSON object")?;
        let text = |k: &str| {
            obj.get(k)
                .and_then(Value::as_str)
                .with_context(|| format!("no {k:?}"))
        };
        let map = |k: &str| {
            obj.get(k)
                .and_then(Value::as_object)
                .with_context(|| format!("no {k:?} (written by an older lock-bench?)"))
        };
        let mut r = Report::new(text("workload")?, text("title")?, text("impl")?);
        let (goals, units) = (map("goals")?, map("units")?);
        for (key, label) in map("labels")? {
            let unit = units
                .get(key)
                .and_then(Value::as_str)
                .and_then(Unit::from_name)
                .with_context(|| format!("figure {key:?} has no known unit"))?;
            let goal = match goals.get(key) {
                None => None,
                Some(entry) => Some(
                    entry
                        .as_object()
                        .and_then(Goal::from_json)
                        .with_context(|| format!("figure {key:?} has an unreadable goal"))?,
                ),
            };
            let Some(label) = label.as_str() else {
                bail!("figure {key:?} has no label");
            };
            let value = obj.get(key).and_then(Value::as_f64);
            r.add_goal(key.as_str(), label, value, unit, goal);
        }
        for note in obj
            .get("notes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            r.note(note.as_str().context("a note is not a string")?);
        }
        Ok(r)
    }
}

/// Keeps JSON readable: a few significant decimals are plenty for
/// benchmark figures.
fn round_json(v: f64) -> f64 {
    if v.abs() >= 100.0 {
        (v * 10.0).round() / 10.0
    } else {
        (v * 1000.0).round() / 1000.0
    }
}

/// `1 234 567` style grouping, so big counts are readable.
fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

pub(crate) fn format_value(v: f64, unit: Unit) -> String {
    let number = |v: f64| {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            group_thousands(v.abs() as u64)
        } else if v.abs() >= 100.0 {
            group_thousands(v.abs().round() as u64)
        } else if v.abs() >= 10.0 {
            format!("{:.1}", v.abs())
        } else {
            format!("{:.2}", v.abs())
        }
    };
    let sign = if v < 0.0 { "-" } else { "" };
    match unit {
        Unit::Micros => format!("{sign}{} µs", number(v)),
        Unit::PerSec => format!("{sign}{}/s", number(v)),
        Unit::Count => format!("{sign}{}", number(v)),
        Unit::Ratio => format!("{sign}{:.2}×", v.abs()),
        Unit::Fraction => format!("{sign}{:.2}", v.abs()),
        Unit::Bytes => format!("{sign}{} B", number(v)),
        Unit::Seconds => format!("{sign}{} s", number(v)),
    }
}

/// One Markdown table of every figure of every report, then the notes.
pub(crate) fn markdown(reports: &[Report]) -> String {
    let mut out = String::new();
    out.push_str("| workload | impl | figure | value | goal |\n");
    out.push_str("| --- | --- | --- | ---: | --- |\n");
    for r in reports {
        for f in &r.figures {
            let _ = writeln!(
                out,
                "| {} {} | {} | {} | {} | {} |",
                r.workload,
                r.title,
                r.implementation,
                f.label,
                f.formatted(),
                f.verdict()
            );
        }
    }
    let notes: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.notes
                .iter()
                .map(move |n| format!("- {} ({}): {n}", r.workload, r.implementation))
        })
        .collect();
    if !notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for n in notes {
            out.push_str(&n);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut r = Report::new("W1", "uncontended", "lock-redis");
        r.add("pairs", "pairs", 5000.0, Unit::Count)
            .add_goal(
                "p50_vs_raw",
                "p50 / raw pair p50",
                1.25,
                Unit::Ratio,
                Goal::AtMost(1.1),
            )
            .add_goal("missing", "missing", None, Unit::Ratio, Goal::AtLeast(1.0))
            .note("a note");
        r
    }

    #[test]
    fn goals_compare_both_ways() {
        assert!(Goal::AtMost(1.1).is_met(1.1));
        assert!(!Goal::AtMost(1.1).is_met(1.2));
        assert!(Goal::AtLeast(0.25).is_met(0.3));
        assert!(!Goal::AtLeast(0.25).is_met(0.2));
        assert!(Goal::Exactly(1.0).is_met(1.0));
        assert!(!Goal::Exactly(1.0).is_met(1.001));
        assert!(!Goal::Exactly(1.0).is_met(0.5));
    }

    #[test]
    fn json_has_every_figure_and_goal() {
        let j = sample().to_json();
        assert_eq!(j["workload"], "W1");
        assert_eq!(j["impl"], "lock-redis");
        assert_eq!(j["pairs"], 5000.0);
        assert_eq!(j["p50_vs_raw"], 1.25);
        assert_eq!(j["missing"], Value::Null);
        assert_eq!(j["goals"]["p50_vs_raw"]["met"], false);
        assert_eq!(j["goals"]["missing"]["met"], Value::Null);
        assert_eq!(j["notes"][0], "a note");
        // One line per workload.
        assert!(!serde_json::to_string(&j).unwrap().contains('\n'));
    }

    #[test]
    fn markdown_marks_missed_goals() {
        let md = markdown(&[sample()]);
        assert!(md.contains(
            "| W1 uncontended | lock-redis | p50 / raw pair p50 | 1.25× | ≤ 1.10× ❌ missed |"
        ));
        assert!(md.contains("| 5 000 |"));
        assert!(md.contains("| missing | n/a | ≥ 1.00× — not evaluated |"));
        assert!(md.contains("- W1 (lock-redis): a note"));
    }

    #[test]
    fn a_report_read_back_from_json_prints_the_same() {
        let mut r = sample();
        r.add_goal("bytes", "bytes", 212.0, Unit::Bytes, Goal::Exactly(212.0))
            .add("rate", "rate", 1234.5, Unit::PerSec)
            .add("us", "us", 12.25, Unit::Micros)
            .add("share", "share", 0.5, Unit::Fraction)
            .add("window", "window", 5.0, Unit::Seconds);
        let line = serde_json::to_string(&r.to_json()).unwrap();
        let back = Report::from_json(&serde_json::from_str(&line).unwrap()).unwrap();
        assert_eq!(markdown(std::slice::from_ref(&back)), markdown(&[r]));
        assert_eq!(back.title, "uncontended");
        assert_eq!(back.figures[1].goal, Some(Goal::AtMost(1.1)));
        assert_eq!(back.figures[3].goal, Some(Goal::Exactly(212.0)));
        assert_eq!(back.figures[2].met(), None);
    }

    #[test]
    fn a_line_without_labels_or_with_a_bad_unit_is_refused() {
        let mut j = sample().to_json();
        j["units"]["pairs"] = json!("furlongs");
        let err = Report::from_json(&j).unwrap_err().to_string();
        assert!(err.contains("\"pairs\" has no known unit"), "{err}");
        let mut j = sample().to_json();
        j.as_object_mut().unwrap().remove("labels");
        assert!(Report::from_json(&j).is_err());
        assert!(Report::from_json(&json!([1, 2])).is_err());
    }

    #[test]
    fn values_are_formatted_by_unit() {
        assert_eq!(format_value(12.345, Unit::Micros), "12.3 µs");
        assert_eq!(format_value(1234.6, Unit::PerSec), "1 235/s");
        assert_eq!(format_value(0.5, Unit::Ratio), "0.50×");
        assert_eq!(format_value(0.5, Unit::Fraction), "0.50");
        assert_eq!(format_value(212.0, Unit::Bytes), "212 B");
        assert_eq!(format_value(3.0, Unit::Count), "3");
        assert_eq!(format_value(0.25, Unit::Count), "0.25");
    }
}
