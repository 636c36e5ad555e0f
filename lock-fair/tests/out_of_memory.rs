//! A fair lock on a server at `maxmemory` with the `noeviction` policy
//! (issue 10, item 11): releasing the last hold succeeds and tells the queue
//! head; a partial release, an acquisition and joining the queue fail with
//! the typed [`LockError::OutOfMemory`], having written nothing.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::{ExclusiveKind, ReleaseOutcome};
use lock_core::LockError;
use lock_testkit::fixtures::redis::Value;

fn is_oom(result: Result<impl std::fmt::Debug, LockError>) {
    match result {
        Err(e) => assert!(e.is_out_of_memory() && !e.is_retryable(), "{e:?}"),
        Ok(v) => panic!("expected OutOfMemory, got {v:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_unlock_succeeds_and_tells_the_head_other_writes_fail_typed() {
    let env = env().await;
    let n = name("job");
    let (a, head, late) = (owner(), owner(), owner());
    must_acquire(&env.backend, &wait_req(&n, a, 10_000)).await;
    must_acquire(&env.backend, &wait_req(&n, a, 10_000)).await;
    must_wait(&env.backend, &wait_req(&n, head, 10_000)).await;
    let channel = format!("redisson_lock__channel:{{job}}:{}", head.field());
    let mut sub = RawSub::new(&env.server, std::slice::from_ref(&channel)).await;
    let keys_before = env.server.cmd(&["DBSIZE"]);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);

    is_oom(env.backend.release(&release(&n, a, 10_000)).await);
    assert_eq!(env.server.cmd(&["HGET", "job", &a.field()]), bulk("2"));
    is_oom(env.backend.try_acquire(&wait_req(&n, a, 10_000)).await);
    is_oom(env.backend.try_acquire(&wait_req(&n, late, 10_000)).await);
    assert_eq!(queue(&env.server, &n), vec![head.field()]);
    assert_eq!(deadlines(&env.server, &n).len(), 1);
    assert_eq!(env.server.cmd(&["DBSIZE"]), keys_before);

    // With maxmemory lifted for one step, drop to one hold.
    env.server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    must_release(&env.backend, &release(&n, a, 10_000)).await;
    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);

    assert_eq!(
        env.backend.release(&release(&n, a, 10_000)).await.unwrap(),
        ReleaseOutcome::Released
    );
    assert_eq!(env.server.cmd(&["EXISTS", "job"]), Value::Int(0));
    assert_eq!(
        sub.next(Duration::from_secs(2)).await,
        Some((channel, "0".to_owned()))
    );
    // Leaving the queue only removes: it works too.
    env.backend.leave_queue(&n, &head, None).await.unwrap();
    assert!(queue(&env.server, &n).is_empty());
    env.server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
}

/// Redis checks memory only until a script's first write, and the stale
/// heads' eviction is a write it never refuses: an acquisition that evicts
/// must be refused before it, or the hold it writes afterwards grows memory
/// past maxmemory. Refused whole: the stale head is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquisition_that_would_evict_a_stale_head_is_refused_first() {
    let env = env().await;
    let n = name("stale");
    let (a, dead) = (owner(), owner());
    let past = (server_now_ms(&env.server) - 60_000).to_string();
    env.server
        .cmd(&["RPUSH", "redisson_lock_queue:{stale}", &dead.field()]);
    env.server.cmd(&[
        "ZADD",
        "redisson_lock_timeout:{stale}",
        &past,
        &dead.field(),
    ]);
    let keys_before = env.server.cmd(&["DBSIZE"]);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    is_oom(env.backend.try_acquire(&try_req(&n, a, 10_000)).await);
    is_oom(env.backend.try_acquire(&wait_req(&n, a, 10_000)).await);
    assert_eq!(env.server.cmd(&["EXISTS", "stale"]), Value::Int(0));
    assert_eq!(
        queue(&env.server, &n),
        vec![dead.field()],
        "nothing evicted"
    );
    assert_eq!(env.server.cmd(&["DBSIZE"]), keys_before);

    env.server.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    must_acquire(&env.backend, &try_req(&n, a, 10_000)).await;
    assert!(queue(&env.server, &n).is_empty(), "evicted now");
}
