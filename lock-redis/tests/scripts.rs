//! Every script against a real server: outcomes, counts, request records, fencing,
//! batched renewals, wrong types, inspection, and script-cache loss.

use crate::common;

use std::time::Duration;

use common::*;
use lock_core::backend::{
    AcquireOutcome, AcquireRequest, ExclusiveKind, ReleaseOutcome, RenewTarget,
};
use lock_redis::{Holder, KeyLayout, LockError, LockInfo};
use lock_testkit::fixtures::redis::{self, Value};

fn ttl_near(ttl: Option<Duration>, lease_ms: u64) -> bool {
    ttl.is_some_and(|t| {
        t <= Duration::from_millis(lease_ms) && t > Duration::from_millis(lease_ms - 2_000)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_reenter_and_held_reply() {
    let env = env().await;
    let n = name("acq");
    let (a, b) = (owner(), owner());
    assert_eq!(
        must_acquire(&env.backend, &acquire(&n, a, 10_000)).await,
        None
    );
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    assert_eq!(env.server.cmd(&["HGET", "acq", &a.field()]), bulk("2"));

    match env
        .backend
        .try_acquire(&acquire(&n, b, 10_000))
        .await
        .unwrap()
    {
        AcquireOutcome::Held { ttl } => assert!(ttl_near(ttl, 10_000), "{ttl:?}"),
        other => panic!("{other:?}"),
    }
    // A failed attempt writes nothing.
    assert_eq!(env.server.cmd(&["HLEN", "acq"]), Value::Int(1));

    // A holder without expiry is reported with no ttl.
    env.server.cmd(&["HSET", "persistent", "someone:1", "1"]);
    let held = env
        .backend
        .try_acquire(&acquire(&name("persistent"), a, 1_000))
        .await
        .unwrap();
    assert_eq!(held, AcquireOutcome::Held { ttl: None });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_counts_down_then_frees_and_publishes() {
    let mut env = env().await;
    let n = name("rel");
    let a = owner();
    let topic = env.backend.channel(&n);
    env.backend.subscribe(&topic).await.unwrap();
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;

    env.server.cmd(&["PEXPIRE", "rel", "5000"]);
    assert_eq!(
        must_release(&env.backend, &release(&n, a, 10_000)).await,
        ReleaseOutcome::StillHeld
    );
    assert_eq!(env.server.cmd(&["HGET", "rel", &a.field()]), bulk("1"));
    // The lease was extended (never shortened).
    assert!(int(env.server.cmd(&["PTTL", "rel"])) > 5_000);
    env.notices.expect_none(Duration::from_millis(100)).await;

    assert_eq!(
        must_release(&env.backend, &release(&n, a, 10_000)).await,
        ReleaseOutcome::Released
    );
    assert_eq!(env.server.cmd(&["EXISTS", "rel"]), Value::Int(0));
    env.notices
        .expect(&common::unlocked(&topic), Duration::from_secs(2))
        .await;

    assert_eq!(
        must_release(&env.backend, &release(&n, a, 10_000)).await,
        ReleaseOutcome::NotHeld
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_by_non_owner_is_not_held_and_changes_nothing() {
    let env = env().await;
    let n = name("other");
    let (a, b) = (owner(), owner());
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    let req = release(&n, b, 10_000);
    assert_eq!(
        must_release(&env.backend, &req).await,
        ReleaseOutcome::NotHeld
    );
    assert_eq!(env.server.cmd(&["HGET", "other", &a.field()]), bulk("1"));
    // Nothing written but the request's record, which answers a repeat.
    let record = KeyLayout::default().unlock_record(&n, &req.request_id.to_string());
    assert_eq!(env.server.cmd(&["GET", &record]), bulk("not held"));
    assert_eq!(env.server.cmd(&["HLEN", "other"]), Value::Int(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_requests_return_the_first_outcome() {
    let env = env().await;
    let n = name("recorded");
    let (a, b) = (owner(), owner());
    let layout = KeyLayout::default();

    let mut first = acquire(&n, a, 10_000);
    first.fenced = true;
    let token = must_acquire(&env.backend, &first).await.unwrap();
    // The same request again (a retry after an unknown outcome): same token,
    // no second hold.
    assert_eq!(must_acquire(&env.backend, &first).await, Some(token));
    assert_eq!(env.server.cmd(&["HGET", "recorded", &a.field()]), bulk("1"));
    let record = layout.acquire_record(&n, &first.request_id.to_string());
    // The record outlives the request's deadline by a second's grace.
    let record_ttl = int(env.server.cmd(&["PTTL", &record]));
    assert!(
        record_ttl > 0 && record_ttl <= RECORD_MS as i64 + 1_000,
        "{record_ttl}"
    );

    // A second, distinct acquisition does count.
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    assert_eq!(env.server.cmd(&["HGET", "recorded", &a.field()]), bulk("2"));

    let rel1 = release(&n, a, 10_000);
    assert_eq!(
        must_release(&env.backend, &rel1).await,
        ReleaseOutcome::StillHeld
    );
    assert_eq!(
        must_release(&env.backend, &rel1).await,
        ReleaseOutcome::StillHeld
    );
    assert_eq!(env.server.cmd(&["HGET", "recorded", &a.field()]), bulk("1"));

    let rel2 = release(&n, a, 10_000);
    assert_eq!(
        must_release(&env.backend, &rel2).await,
        ReleaseOutcome::Released
    );
    // Someone else takes it; the retried release still reports its first
    // outcome and does not touch the new holder.
    must_acquire(&env.backend, &acquire(&n, b, 10_000)).await;
    assert_eq!(
        must_release(&env.backend, &rel2).await,
        ReleaseOutcome::Released
    );
    assert_eq!(env.server.cmd(&["HGET", "recorded", &b.field()]), bulk("1"));

    // A request past its deadline is refused as stale: nothing written, no
    // record, and the store's time in the error.
    let mut stale = acquire(&n, b, 10_000);
    stale.deadline_ms = 1;
    let err = env.backend.try_acquire(&stale).await.unwrap_err();
    assert!(
        matches!(err, lock_core::LockError::StaleRequest { store_time_ms } if store_time_ms > 1),
        "{err:?}"
    );
    let key = layout.acquire_record(&n, &stale.request_id.to_string());
    assert_eq!(env.server.cmd(&["EXISTS", &key]), Value::Int(0));
    assert_eq!(env.server.cmd(&["HGET", "recorded", &b.field()]), bulk("1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_outcomes_are_recorded() {
    let env = env().await;
    let n = name("held-recorded");
    let (a, b) = (owner(), owner());
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    let attempt = acquire(&n, b, 10_000);
    assert!(matches!(
        env.backend.try_acquire(&attempt).await.unwrap(),
        AcquireOutcome::Held { .. }
    ));
    let record = KeyLayout::default().acquire_record(&n, &attempt.request_id.to_string());
    assert_eq!(env.server.cmd(&["GET", &record]), bulk("held"));
    must_release(&env.backend, &release(&n, a, 10_000)).await;
    // The same request id again (a late duplicate) takes nothing: the lock
    // is gone, so it is told to look again at once.
    assert_eq!(
        env.backend.try_acquire(&attempt).await.unwrap(),
        AcquireOutcome::Held {
            ttl: Some(Duration::ZERO)
        }
    );
    assert_eq!(env.server.cmd(&["EXISTS", "held-recorded"]), Value::Int(0));
    // A lock without expiry is reported as such.
    env.server.cmd(&["HSET", "held-recorded", "someone:1", "1"]);
    assert_eq!(
        env.backend.try_acquire(&attempt).await.unwrap(),
        AcquireOutcome::Held { ttl: None }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_strictly_increase() {
    let env = env().await;
    let n = name("fenced");
    let fenced = |o| {
        let mut r: AcquireRequest = acquire(&n, o, 10_000);
        r.fenced = true;
        r
    };
    let (a, b) = (owner(), owner());
    let t1 = must_acquire(&env.backend, &fenced(a)).await.unwrap();
    // A re-entry also gets a fresh, larger token.
    let t2 = must_acquire(&env.backend, &fenced(a)).await.unwrap();
    must_release(&env.backend, &release(&n, a, 10_000)).await;
    must_release(&env.backend, &release(&n, a, 10_000)).await;
    let t3 = must_acquire(&env.backend, &fenced(b)).await.unwrap();
    assert!(env.backend.force_unlock(&n).await.unwrap());
    // Unfenced acquisitions do not consume tokens.
    assert_eq!(
        must_acquire(&env.backend, &acquire(&n, a, 10_000)).await,
        None
    );
    assert!(env.backend.force_unlock(&n).await.unwrap());
    let t4 = must_acquire(&env.backend, &fenced(a)).await.unwrap();
    assert!(
        t1 >= 1 && t1 < t2 && t2 < t3 && t3 < t4,
        "{t1} {t2} {t3} {t4}"
    );
    // The counter never expires.
    let token_key = KeyLayout::default().token_key(&n);
    assert_eq!(env.server.cmd(&["PTTL", &token_key]), Value::Int(-1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renew_a_big_mixed_batch() {
    let env = env().await;
    let me = owner();
    let other = owner();
    let mut conn = env.server.conn().await;
    let mut pipe = redis::pipe();
    let mut targets = Vec::new();
    let mut expected = Vec::new();
    for i in 0..2_500 {
        let key = format!("renew-{i}");
        match i % 4 {
            // Held by me.
            0 | 1 => {
                pipe.hset(&key, me.field(), 1).ignore();
                pipe.pexpire(&key, 5_000).ignore();
                expected.push(true);
            }
            // Held by someone else.
            2 => {
                pipe.hset(&key, other.field(), 1).ignore();
                pipe.pexpire(&key, 5_000).ignore();
                expected.push(false);
            }
            // Not held at all (and one wrong-type value).
            _ => {
                if i == 3 {
                    pipe.set(&key, "not a lock").ignore();
                }
                expected.push(false);
            }
        }
        targets.push(RenewTarget {
            name: name(&key),
            owner: me,
        });
    }
    pipe.query_async::<()>(&mut conn).await.unwrap();

    let results = env.backend.renew(&targets, 60_000).await.unwrap();
    assert_eq!(results.len(), targets.len());
    for (i, (got, want)) in results.iter().zip(&expected).enumerate() {
        assert_eq!(got.as_ref().ok(), Some(want), "target {i}");
    }
    assert!(int(env.server.cmd(&["PTTL", "renew-0"])) > 50_000);
    assert!(int(env.server.cmd(&["PTTL", "renew-2"])) <= 5_000);
    assert_eq!(env.server.cmd(&["GET", "renew-3"]), bulk("not a lock"));
    assert_eq!(env.server.cmd(&["EXISTS", "renew-7"]), Value::Int(0));

    assert!(env.backend.renew(&[], 1_000).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_type_is_reported_and_left_untouched() {
    let env = env().await;
    let n = name("a-string");
    env.server.cmd(&["SET", "a-string", "precious"]);
    let a = owner();
    let is_wrong_type = |r: Result<(), LockError>| match r {
        Err(LockError::WrongType { key }) => assert_eq!(key, "a-string"),
        other => panic!("expected WrongType, got {other:?}"),
    };
    let mut fenced = acquire(&n, a, 1_000);
    fenced.fenced = true;
    is_wrong_type(env.backend.try_acquire(&fenced).await.map(drop));
    is_wrong_type(env.backend.release(&release(&n, a, 1_000)).await.map(drop));
    is_wrong_type(env.backend.force_unlock(&n).await.map(drop));
    is_wrong_type(env.backend.inspect(&n).await.map(drop));
    assert_eq!(env.server.cmd(&["GET", "a-string"]), bulk("precious"));
    assert_eq!(env.server.cmd(&["PTTL", "a-string"]), Value::Int(-1));
    // Nothing else was written either: no token, no record.
    let layout = KeyLayout::default();
    assert_eq!(
        env.server.cmd(&["EXISTS", &layout.token_key(&n)]),
        Value::Int(0)
    );
    let record = layout.acquire_record(&n, &fenced.request_id.to_string());
    assert_eq!(env.server.cmd(&["EXISTS", &record]), Value::Int(0));
    assert_eq!(env.server.cmd(&["DBSIZE"]), Value::Int(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reports_holders_and_ttl() {
    let env = env().await;
    let n = name("inspected");
    assert_eq!(env.backend.inspect(&n).await.unwrap(), LockInfo::default());
    let a = owner();
    must_acquire(&env.backend, &acquire(&n, a, 20_000)).await;
    must_acquire(&env.backend, &acquire(&n, a, 20_000)).await;
    let info = env.backend.inspect(&n).await.unwrap();
    assert_eq!(info.holders, vec![Holder::new(a.field(), 2)]);
    assert_eq!(info.holders[0].owner(), Some(a));
    assert!(info.is_locked());
    assert_eq!(info.hold_count(&a), 2);
    assert!(ttl_near(info.ttl, 20_000), "{:?}", info.ttl);

    env.server.cmd(&["PERSIST", "inspected"]);
    assert_eq!(env.backend.inspect(&n).await.unwrap().ttl, None);

    assert!(env.backend.force_unlock(&n).await.unwrap());
    assert!(!env.backend.force_unlock(&n).await.unwrap());
    assert_eq!(env.backend.inspect(&n).await.unwrap(), LockInfo::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_unlock_publishes() {
    let mut env = env().await;
    let n = name("forced");
    let topic = env.backend.channel(&n);
    env.backend.subscribe(&topic).await.unwrap();
    must_acquire(&env.backend, &acquire(&n, owner(), 10_000)).await;
    assert!(env.backend.force_unlock(&n).await.unwrap());
    env.notices
        .expect(&common::unlocked(&topic), Duration::from_secs(2))
        .await;
    // Nothing to delete: nothing published.
    assert!(!env.backend.force_unlock(&n).await.unwrap());
    env.notices.expect_none(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_cache_loss_is_transparent() {
    let mut env = env().await;
    let n = name("noscript");
    let a = owner();
    env.server.flush_scripts();
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    env.server.flush_scripts();
    let renewed = env
        .backend
        .renew(
            &[RenewTarget {
                name: n.clone(),
                owner: a,
            }],
            10_000,
        )
        .await
        .unwrap();
    assert_eq!(renewed[0].as_ref().ok(), Some(&true));
    env.server.flush_scripts();
    assert_eq!(env.backend.inspect(&n).await.unwrap().hold_count(&a), 1);
    env.server.flush_scripts();
    assert_eq!(
        must_release(&env.backend, &release(&n, a, 10_000)).await,
        ReleaseOutcome::Released
    );

    // A restarted server has neither data nor scripts. Nothing checks a
    // connection before use, so the first call may find its connection
    // dead: a retryable error (the engine retries), after which every
    // connection made before the restart is replaced and the script is
    // loaded again on the next call.
    env.server.restart();
    let req = acquire(&n, a, 10_000);
    if let Err(e) = env.backend.try_acquire(&req).await {
        assert!(e.is_retryable(), "{e:?}");
    }
    must_acquire(&env.backend, &req).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_lease_is_rejected_before_io() {
    let env = env().await;
    let n = name("zero");
    let err = env
        .backend
        .try_acquire(&acquire(&n, owner(), 0))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    let err = env
        .backend
        .release(&release(&n, owner(), 0))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    assert_eq!(env.server.cmd(&["DBSIZE"]), Value::Int(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquirers_exclude_each_other() {
    let env = env().await;
    let backend = std::sync::Arc::new(env.backend);
    let n = name("contended");
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let backend = backend.clone();
        let n = n.clone();
        tasks.push(tokio::spawn(async move {
            backend
                .try_acquire(&acquire(&n, owner(), 10_000))
                .await
                .unwrap()
        }));
    }
    let mut acquired = 0;
    for t in tasks {
        if matches!(t.await.unwrap(), AcquireOutcome::Acquired { .. }) {
            acquired += 1;
        }
    }
    assert_eq!(acquired, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewing_many_locks_takes_one_pipeline() {
    // 20 000 keeps the test quick; 100 000 behaves the same (one EVALSHA per
    // 500 locks, one pipeline; ~0.4 s in a release build).
    let env = env_with(|c| c.command_timeout(Duration::from_secs(20))).await;
    let me = owner();
    let mut conn = env.server.conn().await;
    let total = 20_000;
    let mut targets = Vec::with_capacity(total);
    for start in (0..total).step_by(5_000) {
        let mut pipe = redis::pipe();
        for i in start..start + 5_000 {
            let key = format!("many-{i}");
            pipe.hset(&key, me.field(), 1).ignore();
            pipe.pexpire(&key, 5_000).ignore();
            targets.push(RenewTarget {
                name: name(&key),
                owner: me,
            });
        }
        pipe.query_async::<()>(&mut conn).await.unwrap();
    }
    env.server.cmd(&["CONFIG", "RESETSTAT"]);
    let started = std::time::Instant::now();
    let results = env.backend.renew(&targets, 60_000).await.unwrap();
    let took = started.elapsed();
    assert!(results.iter().all(|r| matches!(r, Ok(true))));
    assert!(int(env.server.cmd(&["PTTL", "many-19999"])) > 50_000);
    // One EVALSHA per chunk of 500, pipelined in windows.
    let stats = match env.server.cmd(&["INFO", "commandstats"]) {
        Value::VerbatimString { text, .. } => text,
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let chunks = total.div_ceil(lock_redis::lock_script::RENEW_CHUNK);
    assert!(
        stats.contains(&format!("cmdstat_evalsha:calls={chunks},")),
        "{stats}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// How many times the server ran `command` since the last `CONFIG
/// RESETSTAT`, scripts' inner commands included (0 when never).
fn calls(env: &Env, command: &str) -> u64 {
    let stats = match env.server.cmd(&["INFO", "commandstats"]) {
        Value::VerbatimString { text, .. } => text,
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

/// The commands one uncontended acquire + release of a free lock costs
/// the server (issue 15): each `redis.call` is a command of its own, so a
/// command added to the hot scripts shows here. The acquire reads its
/// record, finds the lock free by its PTTL (-2: no EXISTS), writes the hold,
/// its expiry and the record; the release reads its record and the hold,
/// deletes, publishes and records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_pair_runs_ten_commands() {
    let env = env().await;
    let n = name("pair-cost");
    let a = owner();
    // The scripts are loaded by a first pair.
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    must_release(&env.backend, &release(&n, a, 10_000)).await;

    env.server.cmd(&["CONFIG", "RESETSTAT"]);
    must_acquire(&env.backend, &acquire(&n, a, 10_000)).await;
    assert_eq!(
        must_release(&env.backend, &release(&n, a, 10_000)).await,
        ReleaseOutcome::Released
    );
    let ran: Vec<(&str, u64)> = [
        "evalsha", "get", "pttl", "hincrby", "pexpire", "set", "hget", "del", "publish", "exists",
        "hexists",
    ]
    .into_iter()
    .map(|c| (c, calls(&env, c)))
    .collect();
    assert_eq!(
        ran,
        [
            ("evalsha", 2),
            ("get", 2),
            ("pttl", 1),
            ("hincrby", 1),
            ("pexpire", 1),
            ("set", 2),
            ("hget", 1),
            ("del", 1),
            ("publish", 1),
            ("exists", 0),
            ("hexists", 0),
        ]
    );
}

/// A re-entry whose lease is shorter than the lock's time to live leaves
/// that time as it is without a PEXPIRE (extend() in common.lua), and one
/// with a longer lease extends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shorter_lease_keeps_the_expiry_without_a_pexpire() {
    let env = env().await;
    let n = name("keep-expiry");
    let a = owner();
    must_acquire(&env.backend, &acquire(&n, a, 50_000)).await;
    env.server.cmd(&["CONFIG", "RESETSTAT"]);
    must_acquire(&env.backend, &acquire(&n, a, 5_000)).await;
    assert_eq!(calls(&env, "pexpire"), 0);
    assert!(int(env.server.cmd(&["PTTL", "keep-expiry"])) > 45_000);
    assert_eq!(
        must_release(&env.backend, &release(&n, a, 5_000)).await,
        ReleaseOutcome::StillHeld
    );
    assert_eq!(calls(&env, "pexpire"), 0);
    assert!(int(env.server.cmd(&["PTTL", "keep-expiry"])) > 45_000);

    must_acquire(&env.backend, &acquire(&n, a, 90_000)).await;
    assert_eq!(calls(&env, "pexpire"), 1);
    assert!(int(env.server.cmd(&["PTTL", "keep-expiry"])) > 85_000);
}

/// Every script reads the store's clock once at most (`store_now()` in
/// common.lua): the request record's deadline check and the kind's own
/// times share one `TIME`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_read_the_clock_once() {
    let env = env().await;
    let client = lock_redis::connect(config(&env.server), lock_redis::ClientConfig::default())
        .await
        .unwrap();
    let fair = client.fair_lock("clock-fair").unwrap();
    let rw = client.read_write_lock("clock-rw").unwrap();
    let sem = client.permit_expirable_semaphore("clock-sem").unwrap();
    assert!(sem.try_set_permits(1).await.unwrap());
    env.server.cmd(&["CONFIG", "RESETSTAT"]);
    let scripts_before = calls(&env, "evalsha");
    fair.lock().await.unwrap().unlock().await.unwrap();
    rw.write().lock().await.unwrap().unlock().await.unwrap();
    rw.read().lock().await.unwrap().unlock().await.unwrap();
    sem.acquire().await.unwrap().release().await.unwrap();
    sem.add_permits(1).await.unwrap();
    let scripts = calls(&env, "evalsha") - scripts_before;
    let times = calls(&env, "time");
    assert!(scripts >= 9, "{scripts} scripts ran");
    assert!(times <= scripts, "{times} TIME calls in {scripts} scripts");
}
