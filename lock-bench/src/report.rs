//! What a workload reports: named figures with units and goals, printed as
//! one JSON object per line or as one Markdown table for people.

use std::fmt::Write as _;

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

    fn describe(self, unit: Unit) -> String {
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
    /// Whether the goal is met: `None` without a goal or a value.
    pub(crate) fn met(&self) -> Option<bool> {
        Some(self.goal?.is_met(self.value?))
    }
}

/// The outcome of one workload with one implementation.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// `baseline`, `W1`, `W1-fair`, …
    pub(crate) workload: String,
    /// A few words: "uncontended", "handoff", …
    pub(crate) title: &'static str,
    /// `lock-redis`, `lock-redis fair_lock`, `lock-redis-cluster`, `rslock` or
    /// `raw redis`.
    pub(crate) implementation: &'static str,
    pub(crate) figures: Vec<Figure>,
    /// Anything a reader should know to interpret the figures.
    pub(crate) notes: Vec<String>,
}

impl Report {
    pub(crate) fn new(
        workload: impl Into<String>,
        title: &'static str,
        implementation: &'static str,
    ) -> Self {
        Self {
            workload: workload.into(),
            title,
            implementation,
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
    /// then `goals` (`{key: {"goal": "≤ 1.1×", "met": false}}`) and `notes`.
    pub(crate) fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("workload".into(), json!(self.workload));
        obj.insert("title".into(), json!(self.title));
        obj.insert("impl".into(), json!(self.implementation));
        let mut goals = Map::new();
        for f in &self.figures {
            let value = f.value.map_or(Value::Null, |v| json!(round_json(v)));
            obj.insert(f.key.clone(), value);
            if let Some(goal) = f.goal {
                goals.insert(
                    f.key.clone(),
                    json!({ "goal": goal.describe(f.unit), "met": f.met() }),
                );
            }
        }
        obj.insert("goals".into(), Value::Object(goals));
        obj.insert("notes".into(), json!(self.notes));
        Value::Object(obj)
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
            let value = f
                .value
                .map_or_else(|| "n/a".to_owned(), |v| format_value(v, f.unit));
            let goal = match (f.goal, f.met()) {
                (Some(goal), Some(true)) => format!("{} ✅", goal.describe(f.unit)),
                (Some(goal), Some(false)) => format!("{} ❌ missed", goal.describe(f.unit)),
                (Some(goal), None) => format!("{} (not measured)", goal.describe(f.unit)),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} {} | {} | {} | {value} | {goal} |",
                r.workload, r.title, r.implementation, f.label
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
        assert!(md.contains("(not measured)"));
        assert!(md.contains("- W1 (lock-redis): a note"));
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
