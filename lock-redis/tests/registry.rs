//! The registry-completeness test: what a kind costs is what the README's
//! recipe says, and this holds it. Every kind in lock-redis's registry
//! ([`lock_redis::kinds::REGISTRY`]) must be checked by a row of the
//! conformance table that every deployment runs, and have a model in the
//! in-memory-vs-Redis property test (`tests/model.rs`); every conformance
//! row must check a registered kind. A kind added to the registry without
//! them fails here, naming what it lacks.

use std::collections::BTreeSet;

use lock_core::backend::ExclusiveKind;
use lock_redis::kinds::REGISTRY;
use lock_testkit::model::MODELLED_KINDS;

fn rows() -> Vec<&'static str> {
    lock_testkit::conformance::kinds()
        .iter()
        .map(|row| row.name)
        .collect()
}

#[test]
fn every_registered_kind_has_a_conformance_row_and_a_model() {
    let rows = rows();
    let mut missing = Vec::new();
    for entry in REGISTRY {
        if !rows.contains(&entry.conformance_row) {
            missing.push(format!(
                "{}: no conformance row `{}` (rows: {rows:?})",
                entry.name, entry.conformance_row
            ));
        }
        if !MODELLED_KINDS.contains(&entry.name) {
            missing.push(format!(
                "{}: no model (lock_testkit::model::MODELLED_KINDS)",
                entry.name
            ));
        }
        if (entry.scripts)().is_empty() {
            missing.push(format!("{}: no scripts to preload", entry.name));
        }
    }
    assert!(
        missing.is_empty(),
        "incomplete kinds:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_conformance_row_and_model_belongs_to_a_registered_kind() {
    let checked: BTreeSet<&str> = REGISTRY.iter().map(|e| e.conformance_row).collect();
    let registered: BTreeSet<&str> = REGISTRY.iter().map(|e| e.name).collect();
    for row in rows() {
        assert!(
            checked.contains(row),
            "conformance row `{row}` checks no registered kind"
        );
    }
    for model in MODELLED_KINDS {
        assert!(
            registered.contains(model),
            "model `{model}` is of no registered kind"
        );
    }
}

#[test]
fn registry_names_are_unique() {
    let mut seen = BTreeSet::new();
    for entry in REGISTRY {
        assert!(
            seen.insert(entry.name),
            "`{}` is registered twice",
            entry.name
        );
    }
}

/// Each lock kind's entry name is the name it labels its spans and
/// metrics with, so the registry, the models and the dashboards agree.
#[tokio::test]
async fn lock_kinds_are_registered_under_the_name_they_measure_under() {
    let client = lock_testkit::InMemoryServer::new()
        .client()
        .expect("a client");
    let kinds = client.kinds();
    let named: Vec<(&str, &str)> = vec![
        ("reentrant", kinds.reentrant().behaviour().name),
        ("non_reentrant", kinds.non_reentrant().behaviour().name),
        ("lean", kinds.lean().behaviour().name),
        ("fair", kinds.fair().behaviour().name),
        ("handoff", kinds.handoff().behaviour().name),
    ];
    for (entry, measured) in named {
        assert!(
            REGISTRY.iter().any(|e| e.name == entry),
            "{entry} is not registered"
        );
        assert_eq!(entry, measured);
    }
}
