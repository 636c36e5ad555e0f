//! Interoperability with Redisson: what we write is what Redisson reads, and
//! what Redisson writes is what we read.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::{AcquireOutcome, ExclusiveKind, ReleaseOutcome, Wake};
use lock_testkit::fixtures::redis::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_lock_is_a_redisson_hash() {
    let env = env().await;
    let n = name("orders:42");
    let o = owner();
    must_acquire(&env.backend, &acquire(&n, o, 30_000)).await;
    let field = format!("{}:1", o.client_id().hyphenated());
    assert_eq!(field, o.field());
    assert_eq!(
        env.server.cmd(&["HGETALL", "orders:42"]),
        Value::Array(vec![bulk(&field), bulk("1")])
    );
    let pttl = int(env.server.cmd(&["PTTL", "orders:42"]));
    assert!((28_000..=30_000).contains(&pttl), "{pttl}");
    assert_eq!(
        env.server.cmd(&["TYPE", "orders:42"]),
        Value::SimpleString("hash".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_holder_blocks_us_and_we_see_its_ttl() {
    let env = env().await;
    let n = name("shared");
    // What Redisson's tryLockInnerAsync writes for thread 1 of another JVM.
    let java = "6d9f6e5c-2f4e-4b1e-9d39-2b8f4f1f7a10:1";
    env.server.cmd(&["HINCRBY", "shared", java, "1"]);
    env.server.cmd(&["PEXPIRE", "shared", "30000"]);
    match env
        .backend
        .try_acquire(&acquire(&n, owner(), 10_000))
        .await
        .unwrap()
    {
        AcquireOutcome::Held { ttl: Some(ttl) } => {
            assert!(
                ttl > Duration::from_secs(28) && ttl <= Duration::from_secs(30),
                "{ttl:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    // We cannot release it; Redisson's hold is intact.
    let req = release(&n, owner(), 10_000);
    assert_eq!(
        must_release(&env.backend, &req).await,
        ReleaseOutcome::NotHeld
    );
    assert_eq!(env.server.cmd(&["HGET", "shared", java]), bulk("1"));
    // inspect parses its field as an owner.
    let info = env.backend.inspect(&n).await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].field, java);
    assert!(info.holders[0].owner().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_unlock_message_wakes_us() {
    let mut env = env().await;
    let n = name("job");
    let topic = env.backend.channel(&n);
    env.backend.subscribe(&topic).await.unwrap();
    // Redisson's unlock publishes 0 on redisson_lock__channel:{name}.
    env.server
        .cmd(&["PUBLISH", "redisson_lock__channel:{job}", "0"]);
    env.notices
        .expect(&common::unlocked(&topic), Duration::from_secs(2))
        .await;
    // A read unlock wakes everyone; other messages are ignored (the kind
    // reads the payloads the connection passes on).
    env.server
        .cmd(&["PUBLISH", "redisson_lock__channel:{job}", "7"]);
    env.server
        .cmd(&["PUBLISH", "redisson_lock__channel:{job}", "1"]);
    for (payload, wake) in [("7", None), ("1", Some(Wake::All))] {
        let notice = env.notices.next(Duration::from_secs(2)).await;
        assert_eq!(notice, Some(common::message(&topic, payload)));
        assert_eq!(env.backend.wake(payload.as_bytes()), wake);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_unlock_is_published_where_redisson_listens() {
    let env = env().await;
    let n = name("job");
    let o = owner();
    must_acquire(&env.backend, &acquire(&n, o, 10_000)).await;
    // A raw subscriber on Redisson's channel, in a thread of its own.
    let client = env.server.client();
    let (tx, rx) = std::sync::mpsc::channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let listener = std::thread::spawn(move || {
        let mut conn = client.get_connection().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut pubsub = conn.as_pubsub();
        pubsub.subscribe("redisson_lock__channel:{job}").unwrap();
        ready_tx.send(()).unwrap();
        let msg = pubsub.get_message().unwrap();
        tx.send(msg.get_payload::<String>().unwrap()).unwrap();
    });
    ready_rx.recv().unwrap();
    assert_eq!(
        must_release(&env.backend, &release(&n, o, 10_000)).await,
        ReleaseOutcome::Released
    );
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "0");
    listener.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_prefix_applies_to_every_name() {
    let mut env = env_with(|c| c.key_prefix("app:")).await;
    let n = name("job");
    let o = owner();
    let topic = env.backend.channel(&n);
    env.backend.subscribe(&topic).await.unwrap();
    let mut req = acquire(&n, o, 10_000);
    req.fenced = true;
    must_acquire(&env.backend, &req).await;
    assert_eq!(env.server.cmd(&["HGET", "app:job", &o.field()]), bulk("1"));
    assert_eq!(env.server.cmd(&["EXISTS", "job"]), Value::Int(0));
    assert_eq!(
        env.server.cmd(&["GET", "redisson_lock_token:{app:job}"]),
        bulk("1")
    );
    let record = format!("redisson_lock_latch:{{app:job}}:{}", req.request_id);
    assert_eq!(env.server.cmd(&["EXISTS", &record]), Value::Int(1));
    env.server
        .cmd(&["PUBLISH", "redisson_lock__channel:{app:job}", "0"]);
    env.notices
        .expect(&common::unlocked(&topic), Duration::from_secs(2))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_braces_keep_their_hash_tag() {
    let env = env().await;
    let n = name("{user1}:job");
    let o = owner();
    let mut req = acquire(&n, o, 10_000);
    req.fenced = true;
    must_acquire(&env.backend, &req).await;
    assert_eq!(
        env.server.cmd(&["HGET", "{user1}:job", &o.field()]),
        bulk("1")
    );
    assert_eq!(
        env.server.cmd(&["GET", "redisson_lock_token:{user1}:job"]),
        bulk("1")
    );
}

/// A Redisson read-write lock held for writing is a hash with a `mode`
/// field (`write`) beside its counted fields. Inspection skips what is not a
/// count and reports the lock held by its counted fields, instead of failing
/// with a protocol error (issue 10, item 8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_read_write_lock_is_reported_held() {
    let env = env().await;
    let n = name("rw");
    let writer = "6d9f6e5c-2f4e-4b1e-9d39-2b8f4f1f7a10:1:write";
    env.server
        .cmd(&["HSET", "rw", "mode", "write", writer, "1"]);
    env.server.cmd(&["PEXPIRE", "rw", "30000"]);

    let info = env.backend.inspect(&n).await.unwrap();
    assert_eq!(
        info.holders,
        vec![lock_redis::Holder::new(writer.to_owned(), 1)]
    );
    assert!(info.ttl.is_some_and(|t| t > Duration::from_secs(25)));

    let client = lock_redis::connect(config(&env.server), lock_redis::ClientConfig::default())
        .await
        .unwrap();
    let lock = client.lock("rw").unwrap();
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(lock.info().await.unwrap().holders, info.holders);
    assert_eq!(lock.hold_count(client.new_owner()).await.unwrap(), 0);
    // And it excludes us, untouched.
    assert!(lock.try_lock().await.unwrap().is_none());
    assert_eq!(env.server.cmd(&["HGET", "rw", "mode"]), bulk("write"));
}

/// Redisson's `RFencedLock` takes its token with `INCR
/// redisson_lock_token:{<name>}` inside its acquire script, and `getToken`
/// is a `GET` of it: raw commands play the Java side. Our `last_fencing_token()` sees
/// Java's tokens, Java sees ours, and each side's next token is larger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_fenced_lock_shares_our_token_counter() {
    let env = env().await;
    let client = lock_redis::connect(config(&env.server), lock_redis::ClientConfig::default())
        .await
        .unwrap();
    let lock = client.fenced_lock("ledger").unwrap();
    let counter = "redisson_lock_token:{ledger}";
    assert_eq!(lock.last_fencing_token().await.unwrap(), None);

    // Java's lockAndGetToken(): INCR the counter, then take the hash.
    let java = "6d9f6e5c-2f4e-4b1e-9d39-2b8f4f1f7a10:1";
    assert_eq!(int(env.server.cmd(&["INCR", counter])), 1);
    env.server.cmd(&["HINCRBY", "ledger", java, "1"]);
    env.server.cmd(&["PEXPIRE", "ledger", "30000"]);
    assert_eq!(lock.last_fencing_token().await.unwrap(), Some(1));
    assert!(lock.try_lock().await.unwrap().is_none(), "Java holds it");
    assert_eq!(lock.last_fencing_token().await.unwrap(), Some(1));

    // Java unlocks; our next token follows Java's.
    env.server.cmd(&["DEL", "ledger"]);
    env.server
        .cmd(&["PUBLISH", "redisson_lock__channel:{ledger}", "0"]);
    let g = lock.lock().await.unwrap();
    assert_eq!(g.fencing_token(), 2);
    assert_eq!(
        env.server.cmd(&["GET", counter]),
        bulk("2"),
        "Java's getToken"
    );
    g.unlock().await.unwrap();

    // Java again, then us again.
    assert_eq!(int(env.server.cmd(&["INCR", counter])), 3);
    assert_eq!(lock.last_fencing_token().await.unwrap(), Some(3));
    let g = lock.try_lock().await.unwrap().unwrap();
    assert_eq!(g.fencing_token(), 4);
    g.unlock().await.unwrap();
    assert_eq!(env.server.cmd(&["TTL", counter]), Value::Int(-1));

    // A value INCR refuses is no counter for token() either.
    env.server.cmd(&["SET", counter, "007"]);
    assert!(env.server.try_cmd(&["INCR", counter]).is_err());
    let err = lock.last_fencing_token().await.unwrap_err();
    assert!(
        matches!(&err, lock_redis::LockError::WrongType { key } if key == counter),
        "{err:?}"
    );
    assert!(lock.try_lock().await.unwrap_err().is_wrong_type());
    assert_eq!(env.server.cmd(&["GET", counter]), bulk("007"));
    client.close().await;
}
