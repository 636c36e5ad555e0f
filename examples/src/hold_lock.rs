//! Takes a lock on Redis and holds it until killed: a stand-in for a
//! service that crashes while holding a lock.
//!
//! Usage: `hold-lock REDIS_URL LOCK_NAME WATCHDOG_MS`. Prints `held` once the
//! lock is taken, then sleeps; the watchdog renews the lock until the process
//! dies.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use lock_core::ClientConfig;
use lock_redis::RedisConfig;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, name, watchdog_ms] = args.as_slice() else {
        return Err("usage: hold-lock REDIS_URL LOCK_NAME WATCHDOG_MS".into());
    };
    let watchdog = Duration::from_millis(watchdog_ms.parse()?);
    let client = lock_redis::connect(
        RedisConfig::new(url.as_str()),
        ClientConfig::default().watchdog_timeout(watchdog),
    )
    .await?;
    let guard = client.lock(name)?.lock().await?;
    println!("held {}", guard.owner());
    std::future::pending::<()>().await;
    Ok(())
}
