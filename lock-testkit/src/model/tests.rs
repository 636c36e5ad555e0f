//! The model machinery itself, in memory only: runs are deterministic
//! (nothing random reaches a snapshot), and [`compare`] finds the first
//! difference, tolerates the real run's lag and stops where it fell too far
//! behind.

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::keyspace::Entry;
use super::*;

/// `n` sequences of `model` from the fixed seed.
fn sequences<M: Model>(model: M, n: usize) -> Vec<Vec<Step<M::Op>>> {
    let mut runner = TestRunner::new(config(1));
    (0..n)
        .map(|_| {
            steps(model)
                .new_tree(&mut runner)
                .expect("a sequence")
                .current()
        })
        .collect()
}

/// Two in-memory runs of the same sequence agree exactly: request ids are
/// labelled, permit ids counted, owners fixed, so a difference against
/// Redis can only come from the store.
fn deterministic<M: Model>(model: M) {
    for steps in sequences(model, 4) {
        let (a, b) = (in_memory(model, &steps), in_memory(model, &steps));
        assert_eq!(compare(&steps, &a, &b), None, "{model:?}");
        for (x, y) in a.steps.iter().zip(&b.steps) {
            assert_eq!(x.keys, y.keys, "{model:?}: exactly, not within a tolerance");
        }
    }
}

#[test]
fn every_model_runs_alike_twice_in_memory() {
    for &kind in Kind::ALL {
        deterministic(kind);
    }
    deterministic(ReadWrite);
    deterministic(Semaphore);
    deterministic(PermitSemaphore);
    deterministic(Latch);
}

/// A latch sequence whose keyspace is not empty at its end, and its trace.
fn latch_run() -> (Vec<Step<LatchOp>>, Trace<Option<Answer>>) {
    let steps = vec![
        Step::Op(LatchOp::TrySet {
            client: 0,
            latch: 0,
            count: 2,
            keep: 2,
        }),
        Step::Op(LatchOp::CountDown {
            client: 1,
            latch: 0,
            keep: 1,
        }),
        Step::Advance { steps: 1 },
        Step::Op(LatchOp::Count {
            client: 0,
            latch: 0,
        }),
    ];
    let trace = in_memory(Latch, &steps);
    (steps, trace)
}

#[test]
fn compare_names_the_first_step_where_the_answers_part() {
    let (steps, memory) = latch_run();
    let mut store = memory.clone();
    store.steps[3].seen = Some(Some(Ok("5".into())));
    let why = compare(&steps, &memory, &store).expect("a difference");
    assert!(why.contains("part at step 3"), "{why}");
    assert_eq!(
        memory.steps[3].seen,
        Some(Some(Ok("1".into()))),
        "the model's own answer"
    );
}

#[test]
fn compare_finds_a_key_of_another_value_or_missing() {
    let (steps, memory) = latch_run();
    let keys = memory.steps[1]
        .keys
        .clone()
        .expect("a snapshot before time passes");
    assert!(keys.0.iter().any(|e| e.key == "latch-0"), "{keys:?}");

    let mut store = memory.clone();
    let snapshot = store.steps[1].keys.as_mut().expect("a snapshot");
    let count = snapshot
        .0
        .iter_mut()
        .find(|e| e.key == "latch-0")
        .expect("the count");
    count.value = vec![Item::Text("2".into())];
    assert!(compare(&steps, &memory, &store).is_some());

    let mut store = memory.clone();
    let snapshot = store.steps[1].keys.as_mut().expect("a snapshot");
    snapshot.0.retain(|e| e.key != "latch-0");
    assert!(compare(&steps, &memory, &store).is_some());
}

#[test]
fn times_agree_within_the_real_runs_lag() {
    let entry = |ttl, score| Entry {
        key: "k".into(),
        kind: "zset".into(),
        value: vec![Item::Text("m".into()), Item::Time(score)],
        ttl: Some(ttl),
    };
    let model = Keyspace(vec![entry(950, 350)]);
    let lagging = Keyspace(vec![entry(920, 320)]);
    assert!(model.agrees(&lagging, 30 + TOLERANCE_MS));
    assert!(!model.agrees(&lagging, 20 + TOLERANCE_MS));
    let no_ttl = Keyspace(vec![Entry {
        ttl: None,
        ..entry(950, 350)
    }]);
    assert!(!model.agrees(&no_ttl, 1000), "a time to live against none");

    // In a trace: the lag the real run measured widens the tolerance.
    let (steps, memory) = latch_run();
    let mut store = memory.clone();
    let shift = |trace: &mut Trace<Option<Answer>>, by: i64| {
        for snapshot in &mut trace.steps {
            for entry in snapshot.keys.iter_mut().flat_map(|k| k.0.iter_mut()) {
                entry.ttl = entry.ttl.map(|t| t - by);
            }
        }
    };
    shift(&mut store, 30);
    assert!(
        compare(&steps, &memory, &store).is_some(),
        "30 ms off, no lag"
    );
    for snapshot in &mut store.steps {
        snapshot.lag_ms = 30;
    }
    assert_eq!(
        compare(&steps, &memory, &store),
        None,
        "30 ms off, 30 ms lag"
    );
}

#[test]
fn compare_stops_where_the_real_run_fell_behind_the_grid() {
    let (steps, memory) = latch_run();
    let mut store = memory.clone();
    store.steps[2].lag_ms = GRID_MARGIN_MS;
    store.steps[3].seen = Some(Some(Ok("5".into())));
    let before = cut_short();
    assert_eq!(compare(&steps, &memory, &store), None);
    assert_eq!(cut_short(), before + 1);
    // One millisecond less, and the difference counts.
    store.steps[2].lag_ms = GRID_MARGIN_MS - 1;
    assert!(compare(&steps, &memory, &store).is_some());
}

#[test]
fn request_ids_are_named_by_their_order() {
    let mut ids = Ids::default();
    let (a, b) = (RequestId::new(), RequestId::new());
    ids.note(&a);
    ids.note(&b);
    assert_eq!(
        ids.label(&format!("redisson_unlock_latch:{{x}}:{b}")),
        "redisson_unlock_latch:{x}:#1"
    );
    assert_eq!(ids.label(&format!("{a}/{b}")), "#0/#1");
    assert_ne!(ids.permit(), ids.permit());
}

/// [`MODELLED_KINDS`] names each lock model's kinds as they name
/// themselves ([`lock_core::backend::KindBehaviour::name`]).
#[tokio::test]
async fn modelled_kinds_are_the_models_kind_names() {
    let client = crate::InMemoryServer::new().client().expect("a client");
    let mut names: Vec<&str> = Kind::ALL
        .iter()
        .map(|&kind| {
            super::locks::Handle::of(&client, kind)
                .ops()
                .behaviour()
                .name
        })
        .collect();
    // The other models, by their registry names.
    names.extend(["read_write", "semaphore", "permit_semaphore", "latch"]);
    assert_eq!(names, MODELLED_KINDS);
}

/// What `model`'s first `n` sequences from [`SEED`] (whatever
/// `PROPTEST_RNG_SEED` says) showed, in memory, `Debug`-printed.
fn seen_in_memory<M: Model>(model: M, n: usize) -> Vec<String> {
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(SEED),
        ..config(1)
    });
    let sequences: Vec<_> = (0..n)
        .map(|_| {
            steps(model)
                .new_tree(&mut runner)
                .expect("a sequence")
                .current()
        })
        .collect();
    sequences
        .iter()
        .flat_map(|steps| in_memory(model, steps).steps)
        .filter_map(|snapshot| snapshot.seen.map(|seen| format!("{seen:?}")))
        .collect()
}

/// The new kinds' sequences reach what sets each kind apart (with the
/// property test's 24 cases from the fixed seed): the non-reentrant and the
/// lean lock refuse a second hold; the direct handoff grants a freed lock
/// to a queued wait, which claims it.
#[test]
fn each_lock_kinds_sequences_reach_what_sets_it_apart() {
    let refused = |kind| {
        seen_in_memory(kind, 24)
            .iter()
            .filter(|s| s.contains("is not reentrant"))
            .count()
    };
    assert!(refused(Kind::NonReentrant) > 0, "no re-entry refused");
    assert!(refused(Kind::Lean) > 0, "no re-entry refused");
    assert_eq!(refused(Kind::Reentrant), 0, "a reentrant lock refused");
    let claimed = seen_in_memory(Kind::Handoff, 24)
        .iter()
        .filter(|s| *s == "Claimed")
        .count();
    assert!(claimed > 0, "no grant claimed");
}

/// [`handoff_steps`] shows, in memory, what its steps say.
#[test]
fn the_handoff_sequence_grants_claims_and_gives_back() {
    let (kind, steps) = handoff_steps();
    let seen: Vec<String> = in_memory(kind, &steps)
        .steps
        .into_iter()
        .filter_map(|s| s.seen.map(|seen| format!("{seen:?}")))
        .collect();
    assert_eq!(
        seen,
        [
            "Acquired(None)",
            "Held { has_ttl: true }",
            "Held { has_ttl: true }",
            "Release(Released)",
            "Claimed",
            "Release(Released)",
            "Acquired(Some(1))",
            "Held { has_ttl: true }",
            "Release(Released)",
            "Left",
            "Info { holders: [], has_ttl: false, queue: [] }",
            "Release(Released)",
        ]
    );
}
