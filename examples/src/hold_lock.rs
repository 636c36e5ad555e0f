//! Takes a lock on Redis and holds it until killed: a stand-in for a
//! service that crashes while holding a lock.
//!
//! Usage: `hold-lock REDIS_URL LOCK_NAME WATCHDOG_MS [fair WAITER_TIMEOUT_MS]`.
//! Waits for the lock (in the fair queue with `fair`), prints `held` once it
//! is taken, then sleeps; the watchdog renews the lock until the process
//! dies.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use lock_redis::ClientConfig;
use lock_redis::RedisConfig;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: hold-lock REDIS_URL LOCK_NAME WATCHDOG_MS [fair WAITER_TIMEOUT_MS]";
    let (url, name, watchdog_ms, fair) = match args.as_slice() {
        [url, name, watchdog_ms] => (url, name, watchdog_ms, None),
        [url, name, watchdog_ms, kind, waiter_ms] if kind == "fair" => {
            (url, name, watchdog_ms, Some(waiter_ms.parse::<u64>()?))
        }
        _ => return Err(usage.into()),
    };
    let mut config =
        ClientConfig::default().watchdog_timeout(Duration::from_millis(watchdog_ms.parse()?));
    let redis = RedisConfig::new(url.as_str());
    if let Some(waiter_ms) = fair {
        config = config.waiter_timeout(Duration::from_millis(waiter_ms));
    }
    let client = lock_redis::connect(redis, config).await?;
    let guard = match fair {
        Some(_) => client.fair_lock(name)?.lock().await?,
        None => client.lock(name)?.lock().await?,
    };
    println!("held {}", guard.owner());
    std::future::pending::<()>().await;
    Ok(())
}
