//! [`capture_warnings`]: the warnings the library logs, for a test to read.
//!
//! Some promises are about what the library says: an outage warns once,
//! not once per reconnect; a close that left holds behind says how many.
//! A test checks them by installing this capture as the thread's
//! `tracing` subscriber for as long as it holds the returned
//! [`CapturedWarnings`], then reading the `WARN` events seen.
//!
//! The subscriber is the thread's default (`tracing::subscriber::set_default`),
//! not a global one, so tests running side by side in one binary do not see
//! each other's warnings. It follows: only events emitted on the test's own
//! thread are seen, which is every event of a `#[tokio::test]` on the
//! current-thread runtime (the default); a multi-thread runtime's workers
//! are other threads.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::subscriber::DefaultGuard;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One `WARN` event: its fields in the order they were recorded, each value
/// as its `Debug` text (a string field quoted, the `message` as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    fields: Vec<(String, String)>,
}

impl Warning {
    /// The value of field `name` (`"message"` for the event's message), if
    /// the event has one.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every field, as `(name, value)` in the order recorded.
    pub fn fields(&self) -> &[(String, String)] {
        &self.fields
    }

    /// Whether `text` appears in any field's name or value (the event as
    /// [`Display`](fmt::Display) shows it).
    pub fn contains(&self, text: &str) -> bool {
        self.to_string().contains(text)
    }
}

/// `name=value` for each field, separated by spaces.
impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

/// The warnings seen since [`capture_warnings`]; capturing stops when this
/// is dropped (the thread's previous subscriber is back).
#[must_use = "capturing stops when the guard is dropped"]
pub struct CapturedWarnings {
    seen: Seen,
    _default: DefaultGuard,
}

impl fmt::Debug for CapturedWarnings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CapturedWarnings")
            .field("seen", &self.all())
            .finish()
    }
}

impl CapturedWarnings {
    /// Every warning so far, oldest first.
    pub fn all(&self) -> Vec<Warning> {
        self.seen.lock().clone()
    }

    /// The warnings so far that [contain](Warning::contains) `text`.
    pub fn containing(&self, text: &str) -> Vec<Warning> {
        self.seen
            .lock()
            .iter()
            .filter(|warning| warning.contains(text))
            .cloned()
            .collect()
    }

    /// How many warnings so far contain `text`.
    pub fn count(&self, text: &str) -> usize {
        self.containing(text).len()
    }
}

/// Starts capturing the `WARN` events of this thread (see the module docs)
/// until the returned guard is dropped.
///
/// # Examples
/// ```
/// let warnings = lock_testkit::logs::capture_warnings();
/// tracing::warn!(left = 2, "close_timeout passed");
/// tracing::info!("not a warning");
/// let seen = warnings.containing("close_timeout");
/// assert_eq!(seen.len(), 1);
/// assert_eq!(seen[0].field("left"), Some("2"));
/// assert_eq!(warnings.all().len(), 1);
/// ```
pub fn capture_warnings() -> CapturedWarnings {
    let seen = Seen::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone());
    CapturedWarnings {
        _default: tracing::subscriber::set_default(subscriber),
        seen,
    }
}

/// The layer: keeps each `WARN` event's fields.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Warning>>>);

impl Seen {
    /// The list; a test that panicked while holding it left nothing half
    /// written (one push), so a poisoned lock is read as is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Warning>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S: Subscriber> Layer<S> for Seen {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() == Level::WARN {
            let mut fields = Fields(Vec::new());
            event.record(&mut fields);
            self.lock().push(Warning { fields: fields.0 });
        }
    }
}

/// Records every field by its `Debug` text.
struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}
