//! [`Detached`]: a store call that runs to completion even if its caller
//! goes away, counted in flight until its output is out of its hands.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::engine::stats::InFlight;

/// A store call that runs to completion even if its caller goes away.
///
/// The caller polls it in place: on the usual path nothing is spawned, and
/// the call costs no wake-up of another task (on a multi-threaded runtime,
/// often of another thread). Dropped before it finished — its caller was
/// cancelled, or a guard's release is left to the background — the call is
/// moved, mid-way as it is, into a task of the client's runtime, which
/// finishes it and drops its output there (an acquisition nobody received
/// then releases its hold, a place in a queue nobody keeps is left). So the
/// request is never abandoned on the wire with its outcome unknown, as
/// dropping a plain future would.
///
/// The call counts as in flight ([`Engine::settle`](crate::backend::Engine::settle)) until its
/// output is handed to the caller or, detached, until that output was
/// dropped. Dropping an output starts its undo, which counts itself; had
/// the call's count ended with the call, `settle` could resolve between
/// the two, while the undo was still to be sent.
pub(crate) struct Detached<T: Send + 'static> {
    call: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    in_flight: Option<InFlight>,
    runtime: tokio::runtime::Handle,
}

impl<T: Send + 'static> Detached<T> {
    /// `call`, counted by `in_flight` (see the type's docs).
    pub(crate) fn new(
        runtime: &tokio::runtime::Handle,
        in_flight: InFlight,
        call: impl Future<Output = T> + Send + 'static,
    ) -> Self {
        Self {
            call: Some(Box::pin(call)),
            in_flight: Some(in_flight),
            runtime: runtime.clone(),
        }
    }
}

impl<T: Send + 'static> Future for Detached<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(call) = self.call.as_mut() else {
            panic!("a Detached call polled after it finished");
        };
        let output = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        // The caller owns the output from here: what it does with it is
        // its own work, counted (or not) by its own marks.
        self.in_flight = None;
        Poll::Ready(output)
    }
}

impl<T: Send + 'static> Drop for Detached<T> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            let in_flight = self.in_flight.take();
            // A runtime shutting down refuses the task and drops the call,
            // as it would cancel a task spawned earlier.
            drop(self.runtime.spawn(async move {
                drop(call.await);
                drop(in_flight);
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::engine::stats::Stats;

    /// Reads the in-flight count when dropped.
    struct Undo {
        stats: Arc<Stats>,
        seen: Arc<Mutex<Option<u64>>>,
    }

    impl Drop for Undo {
        fn drop(&mut self) {
            *self.seen.lock().unwrap() = Some(self.stats.snapshot(0, 0).in_flight);
        }
    }

    /// An output dropped in the background is dropped while its call still
    /// counts: nothing in between lets `settle` resolve.
    #[tokio::test]
    async fn a_detached_output_is_dropped_while_its_call_counts_in_flight() {
        let stats = Arc::new(Stats::default());
        let seen = Arc::new(Mutex::new(None));
        let (answer, answered) = tokio::sync::oneshot::channel::<()>();
        let undo = Undo {
            stats: Arc::clone(&stats),
            seen: Arc::clone(&seen),
        };
        let call = Detached::new(
            &tokio::runtime::Handle::current(),
            InFlight::start(&stats),
            async move {
                let _ = answered.await;
                undo
            },
        );
        drop(call);
        answer.send(()).unwrap();
        stats.idle().await;
        assert_eq!(*seen.lock().unwrap(), Some(1));
    }

    /// An output handed to its caller no longer counts: the caller's own
    /// work is not the call's.
    #[tokio::test]
    async fn an_output_handed_over_no_longer_counts() {
        let stats = Arc::new(Stats::default());
        let call = Detached::new(
            &tokio::runtime::Handle::current(),
            InFlight::start(&stats),
            async { 7 },
        );
        assert_eq!(call.await, 7);
        assert_eq!(stats.snapshot(0, 0).in_flight, 0);
    }
}
