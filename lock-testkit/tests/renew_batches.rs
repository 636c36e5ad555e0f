//! The Redis side's one renewal layer (`ScriptEnv::renew`, through the
//! in-memory transport): a batch is split by key group, chunked
//! (`RENEW_CHUNK` locks a call) and sent window after window
//! (`RENEW_WINDOW` calls a round trip); lanes are the watchdog's. These pin
//! its failure rules: a window that reaches nothing ends the batch with
//! its error unsent, and a batch of which nothing was sent fails whole.

use std::time::Duration;

use lock_redis::lock_core::backend::RenewTarget;
use lock_redis::lock_core::{LockName, Owner};
use lock_script::{RENEW_CHUNK, RENEW_WINDOW};
use lock_testkit::InMemoryServer;

/// The lease the locks are made with, and the one a renewal gives.
const MADE_MS: u64 = 10_000;
const RENEWED_MS: u64 = 60_000;

/// `n` locks held by one owner on `server`, as renewal targets.
fn held(server: &InMemoryServer, n: usize) -> Vec<RenewTarget> {
    let owner = Owner::new(uuid::Uuid::new_v4(), 1);
    (0..n)
        .map(|i| {
            let name = LockName::new(format!("batch-{i}")).unwrap();
            let key = server.layout().lock_key(&name);
            server.hset(&key, &owner.field(), 1, Some(MADE_MS)).unwrap();
            RenewTarget { name, owner }
        })
        .collect()
}

fn pttl(server: &InMemoryServer, target: &RenewTarget) -> i64 {
    server.pttl(&server.layout().lock_key(&target.name))
}

/// Three windows; the second reaches nothing (the store is down while it
/// is on its way): the first is renewed, the second fails, and the third
/// is not sent at all (its locks keep their old lease, and get the
/// second's error), though the store is back when it would have been.
#[tokio::test(start_paused = true)]
async fn a_window_that_reaches_nothing_ends_the_batch_unsent() {
    let server = InMemoryServer::new();
    let window = RENEW_CHUNK * RENEW_WINDOW;
    let targets = held(&server, 2 * window + 1);
    let latency = Duration::from_millis(10);
    server.set_latency(latency);
    let env = server.env();
    let renewing = tokio::spawn({
        let targets = targets.clone();
        async move { env.renew(&targets, RENEWED_MS).await }
    });
    // The first window arrives at 10 ms, the second at 20 ms, a third
    // would at 30 ms: the store is down from 15 ms to 25 ms.
    tokio::time::sleep(latency + latency / 2).await;
    server.set_down(true);
    tokio::time::sleep(latency).await;
    server.set_down(false);
    let results = renewing.await.unwrap().unwrap();

    assert!(results[..window].iter().all(|r| matches!(r, Ok(true))));
    assert!(results[window..]
        .iter()
        .all(|r| r.as_ref().is_err_and(|e| e.is_retryable())));
    assert!(pttl(&server, &targets[0]) > MADE_MS as i64);
    let last = &targets[2 * window];
    assert!(
        pttl(&server, last) <= MADE_MS as i64,
        "the third window was sent"
    );
}

/// A batch whose first window could not be sent fails as a whole, and
/// renews nothing.
#[tokio::test(start_paused = true)]
async fn a_batch_of_which_nothing_was_sent_fails_whole() {
    let server = InMemoryServer::new();
    let targets = held(&server, RENEW_CHUNK * RENEW_WINDOW + 1);
    server.set_down(true);
    let err = server.env().renew(&targets, RENEWED_MS).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    server.set_down(false);
    assert!(targets.iter().all(|t| pttl(&server, t) <= MADE_MS as i64));
}

/// Every chunk of every window is renewed when the store answers.
#[tokio::test(start_paused = true)]
async fn every_window_is_renewed() {
    let server = InMemoryServer::new();
    let targets = held(&server, RENEW_CHUNK * RENEW_WINDOW + 1);
    let results = server.env().renew(&targets, RENEWED_MS).await.unwrap();
    assert_eq!(results.len(), targets.len());
    assert!(results.iter().all(|r| matches!(r, Ok(true))));
    assert!(targets.iter().all(|t| pttl(&server, t) > MADE_MS as i64));
}
