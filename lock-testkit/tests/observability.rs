//! Observability: the engine's metrics (through the `metrics` facade),
//! checked after known sequences on the in-memory store in paused time, so
//! durations are exact. (Spans: `tests/spans.rs`.)
//!
//! Each test installs its recorder thread-locally: a paused test runtime
//! runs every task (watchdog, background releases) on the test's thread.

use std::collections::HashMap;
use std::time::Duration;

use lock_redis::telemetry::{
    ACQUIRE_SECONDS, HOLDS, LOST, RENEWALS, RETRIES, WAITERS, WAIT_SECONDS,
};
use lock_redis::ClientConfig;
use lock_testkit::InMemoryServer;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;

const WATCHDOG: Duration = Duration::from_millis(900);

/// One metric's value by name and sorted labels.
type Figures = HashMap<(String, Vec<(String, String)>), DebugValue>;

fn figures(recorder: &DebuggingRecorder) -> Figures {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (kind, key) = key.into_parts();
            assert!(matches!(
                kind,
                MetricKind::Counter | MetricKind::Gauge | MetricKind::Histogram
            ));
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            ((key.name().to_owned(), labels), value)
        })
        .collect()
}

fn get<'a>(figures: &'a Figures, name: &str, labels: &[(&str, &str)]) -> Option<&'a DebugValue> {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    figures.get(&(name.to_owned(), labels))
}

fn counter(figures: &Figures, name: &str, labels: &[(&str, &str)]) -> u64 {
    match get(figures, name, labels) {
        Some(DebugValue::Counter(n)) => *n,
        None => 0,
        Some(other) => panic!("{name} is not a counter: {other:?}"),
    }
}

fn gauge(figures: &Figures, name: &str, labels: &[(&str, &str)]) -> f64 {
    match get(figures, name, labels) {
        Some(DebugValue::Gauge(v)) => v.into_inner(),
        other => panic!("{name} {labels:?} is not a recorded gauge: {other:?}"),
    }
}

fn histogram(figures: &Figures, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    match get(figures, name, labels) {
        Some(DebugValue::Histogram(v)) => v.iter().map(|x| x.into_inner()).collect(),
        None => Vec::new(),
        Some(other) => panic!("{name} is not a histogram: {other:?}"),
    }
}

/// A known sequence — an uncontended lock, a wait that runs out, a wait
/// ended by an unlock, renewals, a lock deleted under its holder, a
/// retried acquisition — gives exactly these figures.
#[tokio::test(start_paused = true)]
async fn metrics_after_a_known_sequence() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = InMemoryServer::new();
    let config = ClientConfig::default().watchdog_timeout(WATCHDOG);
    let a = server.client_with(config.clone()).unwrap();
    let b = server.client_with(config).unwrap();
    let reentrant = [("kind", "reentrant")];

    // 1. Taken at once, then held through three renewals (every 300 ms).
    let held = a.lock("m").unwrap().lock().await.unwrap();
    // 2. A wait that runs out after 300 ms.
    let none = b
        .lock("m")
        .unwrap()
        .try_lock_for(Duration::from_millis(300))
        .await
        .unwrap();
    assert!(none.is_none());
    // 3. A wait ended by the unlock 700 ms later (1 s after the lock).
    let lb = b.lock("m").unwrap();
    let waiter = tokio::spawn(async move { lb.try_lock_for(Duration::from_secs(5)).await });
    tokio::time::sleep(Duration::from_millis(700)).await;
    held.unlock().await.unwrap();
    let taken = waiter
        .await
        .unwrap()
        .unwrap()
        .expect("taken after the unlock");
    taken.unlock().await.unwrap();
    // 4. A lock deleted under its holder: the next renewal finds it gone.
    let doomed = a.lock("gone").unwrap().lock().await.unwrap();
    assert!(server.del("gone"));
    doomed.lost().await;
    drop(doomed);
    // 5. An acquisition whose first call fails is retried once.
    server.fail_next(1);
    let retried = a.lock("retried").unwrap().lock().await.unwrap();
    retried.unlock().await.unwrap();
    a.settle().await;
    b.settle().await;

    let f = figures(&recorder);
    let acquired = [("kind", "reentrant"), ("outcome", "acquired")];
    let timed_out = [("kind", "reentrant"), ("outcome", "timed_out")];
    // Three uncontended acquisitions took no (paused) time; the waiter
    // took 700 ms from its first attempt.
    let mut took = histogram(&f, ACQUIRE_SECONDS, &acquired);
    took.sort_by(f64::total_cmp);
    assert_eq!(took.len(), 4, "{took:?}");
    assert_eq!(&took[..2], &[0.0, 0.0]);
    assert!(took[2] < 0.2, "the retry's backoff only: {took:?}");
    assert!((took[3] - 0.7).abs() < 0.01, "{took:?}");
    assert_eq!(histogram(&f, ACQUIRE_SECONDS, &timed_out), vec![0.3]);
    // Only the two contended acquisitions waited.
    assert_eq!(histogram(&f, WAIT_SECONDS, &timed_out), vec![0.3]);
    let waited = histogram(&f, WAIT_SECONDS, &acquired);
    assert_eq!(waited.len(), 1);
    assert!((waited[0] - 0.7).abs() < 0.01, "{waited:?}");
    // Every guard and every waiter is gone again.
    assert_eq!(gauge(&f, HOLDS, &reentrant), 0.0);
    assert_eq!(gauge(&f, WAITERS, &reentrant), 0.0);
    // "m" was renewed at 300, 600 and 900 ms; "gone" found not held at its
    // first renewal, which reported it lost.
    let renewed = [("kind", "reentrant"), ("outcome", "renewed")];
    let not_held = [("kind", "reentrant"), ("outcome", "not_held")];
    assert_eq!(counter(&f, RENEWALS, &renewed), 3);
    assert_eq!(counter(&f, RENEWALS, &not_held), 1);
    assert_eq!(
        counter(&f, LOST, &[("kind", "reentrant"), ("reason", "not_held")]),
        1
    );
    let lost: u64 = f
        .iter()
        .filter(|((name, _), _)| name == LOST)
        .map(|(_, v)| match v {
            DebugValue::Counter(n) => *n,
            _ => 0,
        })
        .sum();
    assert_eq!(lost, 1, "no other loss: {f:?}");
    assert_eq!(
        counter(&f, RETRIES, &[("kind", "reentrant"), ("op", "acquire")]),
        1
    );
}

/// While a waiter waits it counts in the waiters gauge, and a guard in the
/// holds gauge, per kind; a cancelled wait is timed as `cancelled`.
#[tokio::test(start_paused = true)]
async fn gauges_follow_guards_and_waiters() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = InMemoryServer::new();
    let a = server.client().unwrap();
    let plain = a.lock("g").unwrap().lock().await.unwrap();
    let fair = a.fair_lock("f").unwrap().lock().await.unwrap();
    let waiter = {
        let lock = a.fair_lock("f").unwrap();
        tokio::spawn(async move { lock.lock().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let f = figures(&recorder);
    assert_eq!(gauge(&f, HOLDS, &[("kind", "reentrant")]), 1.0);
    assert_eq!(gauge(&f, HOLDS, &[("kind", "fair")]), 1.0);
    assert_eq!(gauge(&f, WAITERS, &[("kind", "fair")]), 1.0);
    // A snapshot resets what it read; what follows counts from zero.
    waiter.abort();
    let _ = waiter.await;
    plain.unlock().await.unwrap();
    fair.unlock().await.unwrap();
    a.settle().await;
    let f = figures(&recorder);
    assert_eq!(gauge(&f, HOLDS, &[("kind", "reentrant")]), -1.0);
    assert_eq!(gauge(&f, HOLDS, &[("kind", "fair")]), -1.0);
    assert_eq!(gauge(&f, WAITERS, &[("kind", "fair")]), -1.0);
    let cancelled = [("kind", "fair"), ("outcome", "cancelled")];
    assert_eq!(histogram(&f, WAIT_SECONDS, &cancelled), vec![0.05]);
    assert_eq!(histogram(&f, ACQUIRE_SECONDS, &cancelled), vec![0.05]);
}

/// Each way a hold can be lost is counted once, under its reason; an
/// ordinary unlock is no loss.
#[tokio::test(start_paused = true)]
async fn lost_holds_are_counted_by_reason() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = InMemoryServer::new();
    let a = server
        .client_with(ClientConfig::default().watchdog_timeout(WATCHDOG))
        .unwrap();
    // Unlocked in time: not lost.
    a.lock("fine")
        .unwrap()
        .lock()
        .await
        .unwrap()
        .unlock()
        .await
        .unwrap();
    // A fixed lease that runs out under its guard.
    let leased = a
        .lock("leased")
        .unwrap()
        .lock_with_lease(Duration::from_millis(200))
        .await
        .unwrap();
    leased.lost().await;
    assert!(leased.is_lost());
    drop(leased);
    // Freed by another release of the same owner under the guard.
    let lock = a.lock("released").unwrap();
    let guard = lock.lock().await.unwrap();
    assert!(lock.unlock_as(guard.owner()).await.unwrap());
    guard.lost().await;
    drop(guard);
    // Kept by the watchdog when the client closes.
    let kept = a.lock("kept").unwrap().lock().await.unwrap();
    a.close().await;
    kept.lost().await;
    drop(kept);

    let f = figures(&recorder);
    let reason = |r| counter(&f, LOST, &[("kind", "reentrant"), ("reason", r)]);
    assert_eq!(
        [
            reason("expired"),
            reason("released"),
            reason("closed"),
            reason("not_held")
        ],
        [1, 1, 1, 0]
    );
}

/// Every kind is measured under its own label, once per acquisition: a
/// fenced lock as `fenced`, a RedLock as one `redlock` acquisition (its
/// members are not counted), a semaphore's permits and a latch's wait.
#[tokio::test(start_paused = true)]
async fn every_kind_is_measured_once_under_its_own_label() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let server = InMemoryServer::new();
    let a = server.client().unwrap();

    let fenced = a.fenced_lock("fenced").unwrap().lock().await.unwrap();
    fenced.unlock().await.unwrap();

    let stores: Vec<_> = (0..3).map(|_| InMemoryServer::new()).collect();
    let members = stores
        .iter()
        .map(|s| s.client().unwrap().lock("red").unwrap());
    let red = lock_redis::RedLock::new(members).unwrap();
    red.lock().await.unwrap().unlock().await.unwrap();

    let semaphore = a.semaphore("sem").unwrap();
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let permit = semaphore.acquire().await.unwrap();
    let waiting = {
        let semaphore = semaphore.clone();
        tokio::spawn(async move { semaphore.acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    permit.release().await.unwrap();
    waiting.await.unwrap().unwrap().release().await.unwrap();

    let latch = a.count_down_latch("latch").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = {
        let latch = latch.clone();
        tokio::spawn(async move { latch.wait().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    latch.count_down().await.unwrap();
    waiter.await.unwrap().unwrap();
    a.settle().await;

    let f = figures(&recorder);
    let acquired = |kind| [("kind", kind), ("outcome", "acquired")];
    assert_eq!(histogram(&f, ACQUIRE_SECONDS, &acquired("fenced")).len(), 1);
    // Its guard came and went under the same label.
    assert_eq!(gauge(&f, HOLDS, &[("kind", "fenced")]), 0.0);
    assert_eq!(
        histogram(&f, ACQUIRE_SECONDS, &acquired("redlock")).len(),
        1
    );
    assert!(
        histogram(&f, ACQUIRE_SECONDS, &acquired("reentrant")).is_empty(),
        "a RedLock's members are not counted: {f:?}"
    );
    let took = histogram(&f, ACQUIRE_SECONDS, &acquired("semaphore"));
    assert_eq!(took.len(), 2, "{took:?}");
    let waited = histogram(&f, WAIT_SECONDS, &acquired("semaphore"));
    assert_eq!(waited.len(), 1);
    assert!((waited[0] - 0.2).abs() < 0.01, "{waited:?}");
    let opened = histogram(&f, WAIT_SECONDS, &acquired("latch"));
    assert_eq!(opened.len(), 1);
    assert!((opened[0] - 0.1).abs() < 0.01, "{opened:?}");
}
