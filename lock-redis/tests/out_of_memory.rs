//! A server at `maxmemory` with the `noeviction` policy (issue 10, item 11):
//! releasing the last hold only frees memory, so it must succeed; anything
//! that needs a write Redis refuses fails with the typed
//! [`LockError::OutOfMemory`], having written nothing.

use crate::common;

use std::time::Duration;

use common::*;
use lock_redis::{ClientConfig, ExclusiveKind, KeyLayout, LockError, ReleaseOutcome, RenewTarget};
use lock_testkit::fixtures::redis::Value;

fn is_oom(result: Result<impl std::fmt::Debug, LockError>) {
    match result {
        Err(e) => {
            assert!(e.is_out_of_memory(), "{e:?}");
            assert!(!e.is_retryable(), "{e:?}");
        }
        Ok(v) => panic!("expected OutOfMemory, got {v:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_unlock_succeeds_and_other_writes_fail_typed_with_nothing_written() {
    let mut env = env().await;
    let layout = KeyLayout::default();
    let (twice, once, fresh) = (name("twice"), name("once"), name("fresh"));
    let a = owner();
    must_acquire(&env.backend, &acquire(&twice, a, 10_000)).await;
    must_acquire(&env.backend, &acquire(&twice, a, 10_000)).await;
    must_acquire(&env.backend, &acquire(&once, a, 10_000)).await;
    let topic = env.backend.channel(&once);
    env.backend.subscribe(&topic).await.unwrap();
    let client = lock_redis::connect(config(&env.server), ClientConfig::default())
        .await
        .unwrap();
    let guard = client
        .lock("guarded")
        .unwrap()
        .lock_with_lease(Duration::from_secs(10))
        .await
        .unwrap();
    let keys_before = env.server.cmd(&["DBSIZE"]);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);

    // A partial release needs HINCRBY: refused before anything is written.
    let partial = release(&twice, a, 10_000);
    is_oom(env.backend.release(&partial).await);
    assert_eq!(env.server.cmd(&["HGET", "twice", &a.field()]), bulk("2"));
    let latch = layout.unlock_latch(&twice, &partial.request_id.to_string());
    assert_eq!(env.server.cmd(&["EXISTS", &latch]), Value::Int(0));

    // Acquisitions need HINCRBY (and INCR when fenced): refused likewise.
    is_oom(env.backend.try_acquire(&acquire(&fresh, a, 10_000)).await);
    let mut fenced = acquire(&fresh, a, 10_000);
    fenced.fenced = true;
    is_oom(env.backend.try_acquire(&fenced).await);
    is_oom(env.backend.try_acquire(&acquire(&once, a, 10_000)).await);
    assert_eq!(env.server.cmd(&["EXISTS", "fresh"]), Value::Int(0));
    assert_eq!(env.server.cmd(&["HGET", "once", &a.field()]), bulk("1"));
    assert_eq!(env.server.cmd(&["DBSIZE"]), keys_before);

    // Renewal only sets expiries: it works.
    let renewed = env
        .backend
        .renew(
            &[RenewTarget {
                name: once.clone(),
                owner: a,
            }],
            20_000,
        )
        .await
        .unwrap();
    assert_eq!(renewed[0].as_ref().ok(), Some(&true));

    // The last hold goes: DEL and PUBLISH are not refused.
    assert_eq!(
        env.backend
            .release(&release(&once, a, 10_000))
            .await
            .unwrap(),
        ReleaseOutcome::Released
    );
    assert_eq!(env.server.cmd(&["EXISTS", "once"]), Value::Int(0));
    env.notices
        .expect(&common::unlocked(&topic), Duration::from_secs(2))
        .await;
    // So does a guard's unlock, and a release that finds nothing.
    guard.unlock().await.unwrap();
    assert_eq!(env.server.cmd(&["EXISTS", "guarded"]), Value::Int(0));
    assert_eq!(
        env.backend
            .release(&release(&fresh, a, 10_000))
            .await
            .unwrap(),
        ReleaseOutcome::NotHeld
    );

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(
        env.backend.release(&partial).await.unwrap(),
        ReleaseOutcome::StillHeld
    );
}
