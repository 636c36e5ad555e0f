//! Processes killed with SIGKILL: a holder frees its lock within one
//! watchdog timeout (nobody renews it); a queued fair waiter delays the next
//! waiter by no more than the waiter timeout (nobody refreshes its place).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lock_redis::ClientConfig;
use lock_redis::RedisConfig;
use lock_testkit::fixtures::RedisServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_holder_frees_the_lock_within_one_watchdog_timeout() {
    let server = RedisServer::start();
    let watchdog = Duration::from_millis(1000);
    let mut holder = Command::new(env!("CARGO_BIN_EXE_hold-lock"))
        .args([server.url().as_str(), "cron:report", "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start hold-lock");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("held "), "holder said {line:?}");

    let client = lock_redis::connect(
        RedisConfig::new(server.url()),
        ClientConfig::default().watchdog_timeout(watchdog),
    )
    .await
    .unwrap();
    let lock = client.lock("cron:report").unwrap();
    // The holder's watchdog keeps it past its timeout while it lives.
    assert!(lock.try_lock_for(watchdog * 2).await.unwrap().is_none());

    holder.kill().unwrap();
    holder.wait().unwrap();
    let killed = Instant::now();
    let g = lock
        .try_lock_for(watchdog * 3)
        .await
        .unwrap()
        .expect("free after the holder died");
    let freed = killed.elapsed();
    assert!(
        freed <= watchdog + Duration::from_millis(200),
        "freed after {freed:?}"
    );
    g.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_queued_waiter_delays_the_next_by_at_most_the_waiter_timeout() {
    let server = RedisServer::start();
    let waiter_timeout = Duration::from_millis(1000);
    let config = ClientConfig::default()
        .watchdog_timeout(Duration::from_millis(1000))
        .waiter_timeout(waiter_timeout);
    let connect = || lock_redis::connect(RedisConfig::new(server.url()), config.clone());
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    let queue_len = || match server.cmd(&["LLEN", "redisson_lock_queue:{fair:report}"]) {
        lock_testkit::fixtures::redis::Value::Int(n) => n,
        other => panic!("LLEN replied {other:?}"),
    };
    let held = a.fair_lock("fair:report").unwrap().lock().await.unwrap();

    let mut doomed = Command::new(env!("CARGO_BIN_EXE_hold-lock"))
        .args([server.url().as_str(), "fair:report", "1000", "fair", "1000"])
        .stdout(Stdio::null())
        .spawn()
        .expect("start hold-lock");
    let deadline = Instant::now() + Duration::from_secs(10);
    while queue_len() < 1 {
        assert!(Instant::now() < deadline, "the waiter process never queued");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let lock_b = b.fair_lock("fair:report").unwrap();
    let next = tokio::spawn(async move {
        let g = lock_b.try_lock_for(Duration::from_secs(20)).await.unwrap();
        (g.expect("the next waiter gets the lock"), Instant::now())
    });
    while queue_len() < 2 {
        assert!(Instant::now() < deadline, "the next waiter never queued");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let killed = Instant::now();
    // The unlock tells the dead head, who never answers; the next waiter
    // gets the lock once the dead one's place has expired.
    held.unlock().await.unwrap();
    let (g, acquired) = next.await.unwrap();
    let delay = acquired - killed;
    assert!(
        delay <= waiter_timeout + waiter_timeout / 3 + Duration::from_millis(300),
        "the dead waiter delayed the next by {delay:?}"
    );
    g.unlock().await.unwrap();
}
