//! A server at `maxmemory` with the `noeviction` policy (issue 10, item 11):
//! releasing the last hold only frees memory, so it must succeed; anything
//! that needs a write Redis refuses fails with the typed
//! [`LockError::OutOfMemory`], having written nothing.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::{ExclusiveKind, ReleaseOutcome, RenewTarget};
use lock_redis::{ClientConfig, KeyLayout, LockError};
use lock_testkit::eventually;
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
    // The client writes its own record in the background: counted in
    // before the server fills up, or it would land after `keys_before`.
    let record = lock_redis::lock_script::clients::record_key(&layout, client.id());
    eventually(
        Duration::from_secs(10),
        "the client's record is written",
        || async { env.server.cmd(&["EXISTS", &record]) == Value::Int(1) },
    )
    .await;
    let keys_before = env.server.cmd(&["DBSIZE"]);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);

    // A partial release needs HINCRBY: refused before anything is written.
    let partial = release(&twice, a, 10_000);
    is_oom(env.backend.release(&partial).await);
    assert_eq!(env.server.cmd(&["HGET", "twice", &a.field()]), bulk("2"));
    let record = layout.unlock_record(&twice, &partial.request_id.to_string());
    assert_eq!(env.server.cmd(&["EXISTS", &record]), Value::Int(0));

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

/// Redis checks memory only until a script's first write, and reclaiming an
/// expired permit is a write it never refuses: an acquisition that
/// reclaims must be refused before it, or the lease it adds afterwards
/// grows memory past maxmemory. Refused whole (the expired permit is still
/// in the leases); what only frees memory (a release, a read that
/// reclaims) still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_acquisition_that_would_reclaim_is_refused_first() {
    let env = env().await;
    let client = lock_redis::connect(config(&env.server), ClientConfig::default())
        .await
        .unwrap();
    let s = client.permit_expirable_semaphore("slots").unwrap();
    s.try_set_permits(2).await.unwrap();
    // A fixed lease: no watchdog renewal runs into the memory limit.
    let live = s
        .acquire_with_lease(Duration::from_secs(30))
        .await
        .unwrap()
        .into_id();
    // A permit whose lease ended a minute ago, as a Java client stamps it.
    let past = {
        let Value::Array(t) = env.server.cmd(&["TIME"]) else {
            panic!("TIME")
        };
        let secs: i64 = match &t[0] {
            Value::BulkString(b) => String::from_utf8_lossy(b).parse().unwrap(),
            other => panic!("{other:?}"),
        };
        (secs - 60) * 1000
    };
    env.server.cmd(&["DECRBY", "slots", "1"]);
    env.server.cmd(&[
        "ZADD",
        "{slots}:timeout",
        &past.to_string(),
        "expired-16-bytes",
    ]);
    let keys_before = env.server.cmd(&["DBSIZE"]);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    is_oom(s.try_acquire().await);
    is_oom(s.try_acquire_many(1).await);
    assert_eq!(env.server.cmd(&["GET", "slots"]), bulk("0"));
    assert_eq!(env.server.cmd(&["ZCARD", "{slots}:timeout"]), Value::Int(2));
    assert_eq!(env.server.cmd(&["DBSIZE"]), keys_before);
    // Giving back only frees: the live permit, then the expired one by the
    // reclaim of a read.
    s.release(live).await.unwrap();
    assert_eq!(s.available_permits().await.unwrap(), 2);
    assert_eq!(env.server.cmd(&["ZCARD", "{slots}:timeout"]), Value::Int(0));

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(s.acquire_many(2).await.unwrap().len(), 2);
}

/// Without its count (deleted, or expired apart from the leases), an
/// expirable semaphore's add and releases would create the count after
/// their reclaim, a write that turns Redis's memory check off: they are
/// refused first, with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_changes_that_would_create_the_count_after_a_reclaim_are_refused_first() {
    let env = env().await;
    let client = lock_redis::connect(config(&env.server), ClientConfig::default())
        .await
        .unwrap();
    let s = client.permit_expirable_semaphore("orphan").unwrap();
    s.try_set_permits(1).await.unwrap();
    // A fixed lease: no watchdog renewal runs into the memory limit.
    let live = s
        .acquire_with_lease(Duration::from_secs(30))
        .await
        .unwrap()
        .into_id();
    env.server.cmd(&["DEL", "orphan"]);
    env.server
        .cmd(&["ZADD", "{orphan}:timeout", "1", "expired-16-bytes"]);
    let keys_before = env.server.cmd(&["DBSIZE"]);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    is_oom(s.add_permits(1).await);
    is_oom(s.try_release(live).await);
    is_oom(s.try_release_many(&[live]).await);
    assert_eq!(env.server.cmd(&["EXISTS", "orphan"]), Value::Int(0));
    assert_eq!(
        env.server.cmd(&["ZCARD", "{orphan}:timeout"]),
        Value::Int(2)
    );
    assert_eq!(env.server.cmd(&["DBSIZE"]), keys_before);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    s.release(live).await.unwrap();
    assert_eq!(env.server.cmd(&["GET", "orphan"]), bulk("2"));
}
