//! [`Taken`]: what a counting kind's take got, not yet its caller's.

use std::sync::Arc;

use crate::engine::state::ClientInner;
use crate::engine::stats::InFlight;

use super::give_back::give_back;
use super::CountingStore;

/// What one take got ([`super::Counter::acquire`]), until the caller
/// [accepts](Taken::accept) it. Dropped unaccepted — its caller went away
/// while the take was on the wire, or gave up on it — it is given back
/// from a task of the client's runtime ([`CountingStore::undo`]), which
/// keeps trying through transient faults. It counts as in flight
/// ([`crate::backend::Engine::settle`]) until accepted or given back, so
/// a settle cannot slip between an abandoned take and its undoing.
#[must_use = "dropped, what was taken is given back"]
pub struct Taken<S: CountingStore> {
    req: S::Take,
    got: S::Got,
    undo: Undo<S>,
}

impl<S: CountingStore> std::fmt::Debug for Taken<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taken").finish_non_exhaustive()
    }
}

impl<S: CountingStore> Taken<S> {
    pub(super) fn new(inner: Arc<ClientInner>, store: Arc<S>, req: S::Take, got: S::Got) -> Self {
        let give_back = store.undo(&req, &got, inner.request_deadline());
        let in_flight = InFlight::start(&inner.stats);
        Self {
            req,
            got,
            undo: Undo {
                inner,
                store,
                give_back,
                in_flight: Some(in_flight),
            },
        }
    }

    /// The take request that got it.
    pub fn request(&self) -> &S::Take {
        &self.req
    }

    /// The caller has it: the take's request and what it got, no longer
    /// given back on drop (nor counted in flight).
    pub fn accept(self) -> (S::Take, S::Got) {
        let Self { req, got, mut undo } = self;
        undo.give_back = None;
        (req, got)
    }
}

/// The drop guard of a [`Taken`]: gives back unless disarmed.
struct Undo<S: CountingStore> {
    inner: Arc<ClientInner>,
    store: Arc<S>,
    /// `None`: nothing to give back (disarmed, or the take takes nothing).
    give_back: Option<S::GiveBack>,
    in_flight: Option<InFlight>,
}

impl<S: CountingStore> Drop for Undo<S> {
    fn drop(&mut self) {
        let in_flight = self.in_flight.take();
        let Some(req) = self.give_back.take() else {
            return;
        };
        let kind = self.store.kind_name();
        tracing::debug!(kind, "a take abandoned by its caller; giving it back");
        let (inner, store) = (Arc::clone(&self.inner), Arc::clone(&self.store));
        self.inner.runtime.spawn(async move {
            // Counted until the give-back's own task counts itself.
            let _in_flight = in_flight;
            let what = "give back an abandoned take";
            let given = give_back(&inner, what, kind, req, move |req| {
                let store = Arc::clone(&store);
                async move { store.give_back(&req).await }
            })
            .await;
            if let Err(e) = given {
                tracing::warn!(%e, kind, "giving back an abandoned take failed; what it took comes back when its lease ends, if it has one");
            }
        });
    }
}
