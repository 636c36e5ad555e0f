//! A holder process killed with SIGKILL frees its lock within one watchdog
//! timeout: nobody renews it any more.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lock_core::ClientConfig;
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
