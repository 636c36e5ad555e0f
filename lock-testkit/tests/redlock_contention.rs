//! RedLock under contention, in paused time with round trips that differ by
//! master: ten contenders taking turns never overlap, and take turns
//! without waiting out rounds. (The stall of contenders splitting the
//! members between them shows on redis-server, where notices and replies
//! interleave as on a network: lock-redis's
//! `redlock_faults::contenders_take_turns_on_three_masters`.)

use std::sync::Arc;
use std::time::Duration;

use lock_redis::{ClientConfig, RedLock};
use lock_testkit::{ExclusionChecker, InMemoryServer};
use tokio::time::Instant;

const MASTERS: usize = 3;
const CONTENDERS: usize = 10;
const ROUNDS: usize = 5;
const HOLD: Duration = Duration::from_millis(50);

#[tokio::test(start_paused = true)]
async fn contenders_take_turns_without_waiting_out_rounds() {
    let stores: Vec<InMemoryServer> = (0..MASTERS).map(|_| InMemoryServer::new()).collect();
    // Round trips that differ by master, as on a network: the masters'
    // unlock notices reach the contenders in different orders.
    for (i, store) in stores.iter().enumerate() {
        store.set_latency(Duration::from_micros(300 + 200 * i as u64));
    }
    // Default watchdog (30 s): a split round used to last lease / 2N = 5 s.
    let checker = Arc::new(ExclusionChecker::new());
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONTENDERS)
        .map(|i| {
            let locks: Vec<_> = stores
                .iter()
                .map(|s| {
                    s.client_with(ClientConfig::default())
                        .unwrap()
                        .lock("contended")
                        .unwrap()
                })
                .collect();
            let red = RedLock::new(locks).unwrap();
            let checker = Arc::clone(&checker);
            tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let guard = red.lock().await.unwrap();
                    let held = checker.enter(format!("contender {i}"), None);
                    tokio::time::sleep(HOLD).await;
                    drop(held);
                    guard.unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let took = started.elapsed();
    assert_eq!(checker.violations(), Vec::<String>::new());
    // 50 holds of 50 ms; a stalled round would add seconds each.
    let busy = HOLD * u32::try_from(CONTENDERS * ROUNDS).unwrap();
    eprintln!("{CONTENDERS} contenders x {ROUNDS} rounds took {took:?} (holding: {busy:?})");
    assert!(took < busy * 2, "{took:?} for {busy:?} of holding");
}
