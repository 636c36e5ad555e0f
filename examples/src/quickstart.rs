//! Quickstart: two clients share one lock store and take turns.
//!
//! Runs on the in-memory backend (no server needed), or on Redis when
//! `REDIS_URL` is set (e.g. `REDIS_URL=redis://127.0.0.1:6379/`).
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use lock_redis::{AcquireOptions, LockClient};
use lock_testkit::InMemoryServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (a, b, backend) = clients().await?;
    println!("backend: {backend}");
    println!("client A id {}, client B id {}", a.id(), b.id());

    // 1. Take a lock; the watchdog keeps it alive while the guard lives.
    let lock_a = a.lock("quickstart:report")?;
    let guard = lock_a
        .acquire(AcquireOptions::new().fenced())
        .await?
        .ok_or("the lock should be free at start")?;
    println!(
        "A holds {:?} as {} with fencing token {:?}, ttl {:?}",
        guard.name().as_str(),
        guard.owner(),
        guard.fencing_token(),
        lock_a.remaining_ttl().await?
    );

    // 2. B cannot take it now, and gives up after a short wait.
    let lock_b = b.lock("quickstart:report")?;
    let started = Instant::now();
    let none = lock_b.try_lock_for(Duration::from_millis(200)).await?;
    println!(
        "B tried for 200 ms: {} after {:?}",
        if none.is_some() {
            "acquired"
        } else {
            "still held by A"
        },
        started.elapsed()
    );

    // 3. B waits; A releases after 100 ms; B is woken by the unlock notice.
    let waiter = tokio::spawn(async move {
        let g = lock_b.lock().await?;
        Ok::<_, lock_redis::LockError>((g, Instant::now()))
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let released = Instant::now();
    guard.unlock().await?;
    let (guard_b, acquired) = waiter.await??;
    println!(
        "A released; B acquired {:?} later (woken by the notice, not by polling)",
        acquired - released
    );

    // 4. Re-entrancy is explicit: acquire again as the guard's owner.
    let again = b
        .lock("quickstart:report")?
        .lock_as(guard_b.owner())
        .await?;
    println!(
        "B re-entered: hold count {}",
        b.lock("quickstart:report")?
            .hold_count(guard_b.owner())
            .await?
    );
    again.unlock().await?;
    guard_b.unlock().await?;
    println!(
        "B released both holds; locked now: {}",
        lock_a.is_locked().await?
    );
    println!("A stats: {:?}", a.stats());
    println!("B stats: {:?}", b.stats());
    Ok(())
}

/// Two clients on one store: Redis at `REDIS_URL`, else in memory.
async fn clients() -> Result<(LockClient, LockClient, String), Box<dyn std::error::Error>> {
    match std::env::var("REDIS_URL") {
        Ok(url) => {
            let connect = || {
                lock_redis::connect(
                    lock_redis::RedisConfig::new(url.clone()),
                    lock_redis::ClientConfig::default(),
                )
            };
            Ok((
                connect().await?,
                connect().await?,
                format!("redis at {url}"),
            ))
        }
        Err(_) => {
            let server = InMemoryServer::new();
            Ok((server.client()?, server.client()?, "in-memory".to_owned()))
        }
    }
}
