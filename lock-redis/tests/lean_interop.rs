//! The lean lock against a real redis-server, shared with the libraries
//! of the single-instance pattern: rslock itself plays its side, and raw
//! commands play redis-py's `Lock` and go-redsync's (`SET NX PX` to take,
//! compare-and-delete to release, compare-and-`PEXPIRE` to extend; none of
//! them publishes a notice).

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedisConfig};
use lock_testkit::fixtures::redis::Value;
use lock_testkit::fixtures::RedisServer;

/// redis-py's `Lock` release (`LUA_RELEASE_SCRIPT`, in our words).
const REDIS_PY_RELEASE: &str = "\
    local token = redis.call('get', KEYS[1]) \
    if not token or token ~= ARGV[1] then return 0 end \
    redis.call('del', KEYS[1]) \
    return 1";

/// go-redsync's extension (`touchScript`, in our words).
const REDSYNC_TOUCH: &str = "\
    if redis.call('get', KEYS[1]) == ARGV[1] then \
        return redis.call('pexpire', KEYS[1], ARGV[2]) \
    end \
    return 0";

async fn client(server: &RedisServer) -> LockClient {
    lock_redis::connect(
        RedisConfig::new(server.url())
            .command_timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_secs(2)),
        ClientConfig::default().watchdog_timeout(Duration::from_secs(2)),
    )
    .await
    .expect("connect to the fixture")
}

/// redis-py's `Lock.acquire` (and go-redsync's, rslock's): `SET NX PX`.
fn redis_py_acquire(server: &RedisServer, name: &str, token: &str) -> Value {
    raw(
        server,
        redis::cmd("SET")
            .arg(name)
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(10_000),
    )
}

fn raw(server: &RedisServer, cmd: &mut redis::Cmd) -> Value {
    let mut conn = server.client().get_connection().unwrap();
    cmd.query(&mut conn).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rslock_holder_excludes_us_and_its_release_lets_our_waiter_in() {
    let server = RedisServer::start();
    let c = client(&server).await;
    let rslock = rslock::LockManager::new(vec![server.url()]);
    let theirs = rslock
        .lock("nightly", Duration::from_secs(60))
        .await
        .expect("rslock takes the free name");
    let ours = c.lean_lock("nightly").unwrap();
    assert!(ours.try_lock().await.unwrap().is_none());
    let waiter = {
        let ours = ours.clone();
        tokio::spawn(async move { ours.try_lock_for(Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    // rslock's release publishes nothing: our waiter's re-check sees it,
    // long before the 60 s lease would end.
    rslock.unlock(&theirs).await;
    let guard = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the waiter sees rslock's release")
        .unwrap()
        .unwrap()
        .expect("taken within the wait");

    // Now we hold it: rslock cannot take it (it retries, then gives up).
    let mut rslock = rslock;
    rslock.set_retry(2, Duration::from_millis(20));
    assert!(rslock
        .lock("nightly", Duration::from_secs(5))
        .await
        .is_err());
    guard.unlock().await.unwrap();
    let again = rslock
        .lock("nightly", Duration::from_secs(5))
        .await
        .expect("free again after our unlock");
    rslock.unlock(&again).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_and_redsync_commands_see_our_token_and_keep_to_it() {
    let server = RedisServer::start();
    let c = client(&server).await;
    let guard = c.lean_lock("report").unwrap().lock().await.unwrap();
    let token = guard.owner().field();
    // The key is a plain string holding our token, with our lease.
    assert_eq!(
        raw(&server, redis::cmd("GET").arg("report")),
        Value::BulkString(token.clone().into_bytes())
    );
    assert!(matches!(raw(&server, redis::cmd("PTTL").arg("report")), Value::Int(ms) if ms > 0));
    // redis-py's acquire (`SET NX PX`) finds it taken.
    assert_eq!(redis_py_acquire(&server, "report", "py-token"), Value::Nil);
    // Their release and extension with their own token change nothing …
    let eval = |script: &str, args: &[&str]| {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(1).arg("report");
        for arg in args {
            cmd.arg(*arg);
        }
        raw(&server, &mut cmd)
    };
    assert_eq!(eval(REDIS_PY_RELEASE, &["py-token"]), Value::Int(0));
    assert_eq!(
        eval(REDSYNC_TOUCH, &["redsync-token", "60000"]),
        Value::Int(0)
    );
    assert_eq!(
        raw(&server, redis::cmd("GET").arg("report")),
        Value::BulkString(token.clone().into_bytes())
    );
    // … while our unlock deletes the key, so their `SET NX PX` succeeds.
    guard.unlock().await.unwrap();
    assert_eq!(redis_py_acquire(&server, "report", "py-token"), Value::Okay);
    assert!(c
        .lean_lock("report")
        .unwrap()
        .try_lock()
        .await
        .unwrap()
        .is_none());
}
