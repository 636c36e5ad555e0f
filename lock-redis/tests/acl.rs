//! A Redis ACL user restricted to the lock keys and channels (the rule
//! docs/acl.md documents) can use every lock feature, and what the ACL refuses
//! surfaces as `LockError::Unauthorized`, apart from a bad URL
//! (`LockError::InvalidArgument`).

use std::time::{Duration, Instant};

use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::RedisServer;

/// Generous for a loaded 2-core machine; every wait here ends well before.
const TIMEOUT: Duration = Duration::from_secs(2);

/// The key prefix the lock user is confined to.
const PREFIX: &str = "locks:";

/// docs/acl.md's minimal ACL rule for a lock user of prefix `locks:` (single
/// node), after `ACL SETUSER locker on >secret`.
const LOCK_USER_RULE: &[&str] = &[
    "resetkeys",
    "resetchannels",
    "-@all",
    // What the client sends itself.
    "+evalsha",
    "+script|load",
    "+subscribe",
    "+unsubscribe",
    "+ping",
    // What the lock scripts call.
    "+publish",
    "+hexists",
    "+hget",
    "+hgetall",
    "+hincrby",
    // Direct handoff: a waiter's entry, and the grant.
    "+hset",
    "+hdel",
    "+pexpire",
    "+pttl",
    "+del",
    "+exists",
    "+get",
    "+set",
    "+incr",
    "+type",
    "+time",
    "+lindex",
    "+lpop",
    "+lpos",
    "+lrange",
    "+lrem",
    "+rpush",
    "+zadd",
    "+zrem",
    "+zscore",
    // The lock keys, and the request records, fencing counters and fair queues
    // that carry the lock name (prefix included) in a hash tag.
    "~locks:*",
    "~redisson_*:{locks:*",
    // The unlock channels (a fair lock's per-waiter ones too).
    "&redisson_lock__channel:{locks:*",
];

/// What the other kinds add to [`LOCK_USER_RULE`] (docs/acl.md's list):
/// the commands their scripts call, the per-hold and lease keys under
/// `{<name>}`, and their channels.
const OTHER_KINDS_RULE: &[&str] = &[
    "+hkeys",
    "+hlen",
    "+zcard",
    "+zcount",
    "+zrange",
    "+zrangebyscore",
    "+zremrangebyscore",
    "+incrby",
    "+decrby",
    "+decr",
    "~{locks:*",
    "&redisson_rwlock:{locks:*",
    "&redisson_sc:{locks:*",
    "&redisson_countdownlatch__channel__{locks:*",
    // The latch's script gets its channel among its keys, and the name
    // has no ':' before its brace, unlike every other helper key.
    "~redisson_countdownlatch__channel__{locks:*",
];

fn set_user(server: &RedisServer, name: &str, password: &str, rule: &[&str]) {
    let mut args = vec!["ACL", "SETUSER", name, "reset", "on"];
    let password = format!(">{password}");
    args.push(&password);
    args.extend_from_slice(rule);
    server.cmd(&args);
}

fn user_config(server: &RedisServer, user: &str, password: &str) -> RedisConfig {
    RedisConfig::new(format!(
        "redis://{user}:{password}@127.0.0.1:{}/",
        server.port()
    ))
    .key_prefix(PREFIX)
    .command_timeout(TIMEOUT)
    .connect_timeout(TIMEOUT)
}

async fn connect(config: RedisConfig) -> lock_redis::Result<LockClient> {
    lock_redis::connect(
        config,
        ClientConfig::default().watchdog_timeout(Duration::from_millis(600)),
    )
    .await
}

/// `holder` takes `name` with `take`, `waiter` waits for it; the unlock
/// notice must wake the waiter well before the lease would run out.
macro_rules! hand_over {
    ($holder:expr, $waiter:expr) => {{
        let guard = $holder.lock().await.unwrap();
        let waiter = $waiter;
        let waiting = tokio::spawn(async move {
            let started = Instant::now();
            let got = waiter.try_lock_for(Duration::from_secs(3)).await.unwrap();
            let waited = started.elapsed();
            (got.map(|g| g.unlock()), waited)
        });
        // Hold across a few watchdog renewals (every 200 ms).
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(!guard.is_lost(), "the watchdog could not renew");
        guard.unlock().await.unwrap();
        let (got, waited) = waiting.await.unwrap();
        got.expect("the waiter got the lock").await.unwrap();
        assert!(waited < Duration::from_secs(2), "woken after {waited:?}");
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_restricted_to_the_lock_keys_and_channels_can_use_every_feature() {
    let server = RedisServer::start();
    set_user(&server, "locker", "s3cret", LOCK_USER_RULE);
    let a = connect(user_config(&server, "locker", "s3cret"))
        .await
        .unwrap();
    let b = connect(user_config(&server, "locker", "s3cret"))
        .await
        .unwrap();

    hand_over!(a.lock("job").unwrap(), b.lock("job").unwrap());
    hand_over!(a.fair_lock("queue").unwrap(), b.fair_lock("queue").unwrap());
    hand_over!(
        a.handoff_lock("granted").unwrap(),
        b.handoff_lock("granted").unwrap()
    );

    let fenced = a.fenced_lock("ledger").unwrap();
    let first = fenced.lock().await.unwrap();
    assert_eq!(first.fencing_token(), 1);
    first.unlock().await.unwrap();
    let second = b.fenced_lock("ledger").unwrap().lock().await.unwrap();
    assert_eq!(second.fencing_token(), 2);
    assert_eq!(fenced.last_fencing_token().await.unwrap(), Some(2));
    let lock = a.lock("ledger").unwrap();
    assert!(lock.is_locked().await.unwrap());
    assert_eq!(lock.info().await.unwrap().holders.len(), 1);
    assert!(lock.force_unlock().await.unwrap());
    assert!(!lock.is_locked().await.unwrap());
    drop(second);

    // The keys really are where the rule allows, and nowhere else.
    let keys = server.cmd(&["KEYS", "*"]);
    let lock_redis::redis::Value::Array(keys) = keys else {
        panic!("KEYS answered {keys:?}");
    };
    assert!(!keys.is_empty());
    for key in keys {
        let lock_redis::redis::Value::BulkString(key) = key else {
            panic!("{key:?}");
        };
        let key = String::from_utf8(key).unwrap();
        assert!(
            key.starts_with(PREFIX) || key.contains(&format!(":{{{PREFIX}")),
            "{key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_are_unauthorized_and_a_bad_url_is_an_invalid_argument() {
    let server = RedisServer::start();
    set_user(&server, "locker", "s3cret", LOCK_USER_RULE);
    for config in [
        user_config(&server, "locker", "wrong"),
        user_config(&server, "nobody", "s3cret"),
    ] {
        let started = Instant::now();
        let err = connect(config).await.unwrap_err();
        assert!(err.is_unauthorized(), "{err:?}");
        assert!(!err.is_retryable() && !err.is_invalid_argument(), "{err:?}");
        assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
    }
    let protected = RedisServer::builder().password("pw").start();
    let anonymous = RedisConfig::new(format!("redis://127.0.0.1:{}/", protected.port()))
        .command_timeout(TIMEOUT);
    let err = connect(anonymous).await.unwrap_err();
    assert!(err.is_unauthorized(), "NOAUTH: {err:?}");
    let err = connect(RedisConfig::new("redis://127.0.0.1:notaport/"))
        .await
        .unwrap_err();
    assert!(err.is_invalid_argument(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_the_user_lacks_is_unauthorized_not_a_generic_error() {
    let server = RedisServer::start();
    let without = |dropped: &str| -> Vec<&str> {
        LOCK_USER_RULE
            .iter()
            .copied()
            .filter(|r| *r != dropped)
            .collect()
    };
    // No EVALSHA at all: refused at the top level (NOPERM).
    set_user(&server, "noeval", "pw", &without("+evalsha"));
    let client = connect(user_config(&server, "noeval", "pw")).await.unwrap();
    let err = client.lock("job").unwrap().try_lock().await.unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    assert!(err.to_string().contains("evalsha"), "{err}");

    // A key outside the allowed patterns: refused inside the script.
    set_user(&server, "narrow", "pw", &without("~locks:*"));
    let client = connect(user_config(&server, "narrow", "pw")).await.unwrap();
    let err = client.lock("job").unwrap().try_lock().await.unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    assert!(!err.is_retryable());

    // No permission to publish on the unlock channel: taking the lock
    // publishes nothing, but the unlock script is refused.
    set_user(
        &server,
        "mute",
        "pw",
        &without("&redisson_lock__channel:{locks:*"),
    );
    let client = connect(user_config(&server, "mute", "pw")).await.unwrap();
    let guard = client.lock("job").unwrap().lock().await.unwrap();
    let err = guard.unlock().await.unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    assert!(err.to_string().contains("channel"), "{err}");

    // Nor to subscribe to it: a waiter is told at once, rather than
    // waiting without ever hearing an unlock.
    set_user(&server, "locker", "s3cret", LOCK_USER_RULE);
    let holder = connect(user_config(&server, "locker", "s3cret"))
        .await
        .unwrap();
    let held = holder.lock("other").unwrap().lock().await.unwrap();
    let started = Instant::now();
    let err = client
        .lock("other")
        .unwrap()
        .try_lock_for(Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    held.unlock().await.unwrap();

    // A fair waiter told so leaves the queue it had joined.
    let held = holder.fair_lock("fair").unwrap().lock().await.unwrap();
    let err = client
        .fair_lock("fair")
        .unwrap()
        .try_lock_for(Duration::from_secs(3))
        .await
        .unwrap_err();
    assert!(err.is_unauthorized(), "{err:?}");
    let queue = format!("redisson_lock_queue:{{{PREFIX}fair}}");
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.cmd(&["LLEN", &queue]) != lock_redis::redis::Value::Int(0) {
        assert!(
            Instant::now() < deadline,
            "the refused waiter stayed queued"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    held.unlock().await.unwrap();
}

/// `held` (a permit) is released while `wait` waits for one: the waiter
/// is woken by the release's notice and gets it.
macro_rules! released_to_waiter {
    ($held:expr, $wait:expr) => {{
        let held = $held;
        let waiting = tokio::spawn($wait);
        tokio::time::sleep(Duration::from_millis(200)).await;
        held.release().await.unwrap();
        let got = waiting
            .await
            .unwrap()
            .unwrap()
            .expect("woken by the release");
        got.release().await.unwrap();
    }};
}

/// docs/acl.md's rule for the other kinds is enough: a user with it takes
/// and hands over read-write locks, semaphore permits,
/// expirable permits and latches, waiters woken by their notices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rule_for_the_other_kinds_serves_every_kind() {
    let server = RedisServer::start();
    let rule: Vec<&str> = LOCK_USER_RULE
        .iter()
        .chain(OTHER_KINDS_RULE)
        .copied()
        .collect();
    set_user(&server, "locker", "s3cret", &rule);
    let a = connect(user_config(&server, "locker", "s3cret"))
        .await
        .unwrap();
    let b = connect(user_config(&server, "locker", "s3cret"))
        .await
        .unwrap();

    let (rw_a, rw_b) = (
        a.read_write_lock("rw").unwrap(),
        b.read_write_lock("rw").unwrap(),
    );
    hand_over!(rw_a.write(), rw_b.read().clone());
    hand_over!(rw_a.read(), rw_b.write().clone());

    let wait = Duration::from_secs(3);
    let semaphore = a.semaphore("permits").unwrap();
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let other = b.semaphore("permits").unwrap();
    released_to_waiter!(semaphore.acquire().await.unwrap(), async move {
        other.try_acquire_for(wait).await
    });

    let leases = a.permit_expirable_semaphore("leases").unwrap();
    assert!(leases.try_set_permits(1).await.unwrap());
    let other = b.permit_expirable_semaphore("leases").unwrap();
    released_to_waiter!(leases.acquire().await.unwrap(), async move {
        other.try_acquire_for(wait).await
    });

    let latch = a.count_down_latch("gate").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    let other = b.count_down_latch("gate").unwrap();
    let waiting = tokio::spawn(async move { other.wait_for(wait).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    latch.count_down().await.unwrap();
    assert!(waiting.await.unwrap().unwrap(), "woken by the count-down");
}
