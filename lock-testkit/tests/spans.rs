//! Observability: the engine's tracing spans around acquire, wait, release
//! and renew, seen by a test layer on the in-memory store.
//!
//! One test in its own binary: tracing caches per call site whether anyone
//! listens, so a call site first reached on another test's thread, with no
//! subscriber there, could stay silent for this one.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lock_redis::{ClientConfig, WaitStrategy};
use lock_testkit::InMemoryServer;
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

const WATCHDOG: Duration = Duration::from_millis(900);

/// A span as a test layer saw it: its name and fields, last values.
#[derive(Debug, Clone)]
struct SeenSpan {
    name: &'static str,
    fields: BTreeMap<String, String>,
}

/// Records every span (with the values recorded on it later).
#[derive(Clone, Default)]
struct SpanLog(Arc<Mutex<HashMap<u64, SeenSpan>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber> Layer<S> for SpanLog {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let span = SeenSpan {
            name: attrs.metadata().name(),
            fields,
        };
        self.0.lock().unwrap().insert(id.into_u64(), span);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(span) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
}

impl SpanLog {
    /// The spans called `name`, as field maps.
    fn named(&self, name: &str) -> Vec<BTreeMap<String, String>> {
        let mut spans: Vec<_> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| s.name == name)
            .map(|(id, s)| (*id, s.fields.clone()))
            .collect();
        spans.sort_by_key(|(id, _)| *id);
        spans.into_iter().map(|(_, f)| f).collect()
    }
}

fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Acquire, wait, release and renew each emit their span with the lock
/// name, kind and outcome.
#[tokio::test(start_paused = true)]
async fn spans_carry_lock_kind_and_outcome() {
    let log = SpanLog::default();
    let subscriber = tracing_subscriber::registry().with(log.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let server = InMemoryServer::new();
    let config = ClientConfig::default().watchdog_timeout(WATCHDOG);
    let a = server.client_with(config.clone()).unwrap();
    let b = server
        .client_with(config.wait_strategy(WaitStrategy::poll()))
        .unwrap();

    let held = a.lock("traced").unwrap().lock().await.unwrap();
    let lb = b.fair_lock("traced-fair").unwrap();
    let fair = lb.lock().await.unwrap();
    let none = b
        .lock("traced")
        .unwrap()
        .try_lock_for(Duration::from_millis(400))
        .await
        .unwrap();
    assert!(none.is_none());
    held.unlock().await.unwrap();
    fair.unlock().await.unwrap();
    a.settle().await;
    b.settle().await;

    assert_eq!(
        log.named("lock.acquire"),
        vec![
            fields(&[
                ("lock", "traced"),
                ("kind", "reentrant"),
                ("outcome", "acquired")
            ]),
            fields(&[
                ("lock", "traced-fair"),
                ("kind", "fair"),
                ("outcome", "acquired")
            ]),
            fields(&[
                ("lock", "traced"),
                ("kind", "reentrant"),
                ("outcome", "timed_out")
            ]),
        ]
    );
    assert_eq!(
        log.named("lock.wait"),
        vec![fields(&[
            ("lock", "traced"),
            ("kind", "reentrant"),
            ("strategy", "poll"),
            ("outcome", "timed_out"),
        ])]
    );
    assert_eq!(
        log.named("lock.release"),
        vec![
            fields(&[
                ("lock", "traced"),
                ("kind", "reentrant"),
                ("outcome", "released")
            ]),
            fields(&[
                ("lock", "traced-fair"),
                ("kind", "fair"),
                ("outcome", "released")
            ]),
        ]
    );
    // Held 400 ms under a 900 ms watchdog: one renewal tick (at 300 ms),
    // renewing both locks, one call per kind.
    let mut renews = log.named("lock.renew");
    renews.sort();
    assert_eq!(
        renews,
        vec![
            fields(&[
                ("failed", "0"),
                ("kind", "fair"),
                ("locks", "1"),
                ("not_held", "0"),
                ("outcome", "renewed"),
                ("renewed", "1")
            ]),
            fields(&[
                ("failed", "0"),
                ("kind", "reentrant"),
                ("locks", "1"),
                ("not_held", "0"),
                ("outcome", "renewed"),
                ("renewed", "1")
            ]),
        ]
    );

    // A lock deleted under its holder: the renewal that finds it gone says
    // so, rather than "renewed".
    let doomed = a.lock("gone").unwrap().lock().await.unwrap();
    assert!(server.del("gone"));
    doomed.lost().await;
    let renews = log.named("lock.renew");
    let gone = fields(&[
        ("failed", "0"),
        ("kind", "reentrant"),
        ("locks", "1"),
        ("not_held", "1"),
        ("outcome", "not_held"),
        ("renewed", "0"),
    ]);
    assert!(renews.contains(&gone), "{renews:?}");
}
