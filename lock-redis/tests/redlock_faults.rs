//! RedLock over five independent redis-servers whose masters die during a
//! hold: two dead keep it held, three dead lose it (and the guard says
//! so), and a master restarted empty lets no second holder in.

use std::time::Duration;

use lock_redis::{ClientConfig, LockClient, RedLock, RedisConfig};
use lock_testkit::conformance::redlock::hold_every_member;
use lock_testkit::conformance::{multi::STORES, unique, WATCHDOG};
use lock_testkit::fixtures::RedisServer;

async fn connect(server: &RedisServer) -> LockClient {
    let redis = RedisConfig::new(server.url())
        .command_timeout(Duration::from_millis(500))
        .connect_timeout(Duration::from_millis(500));
    lock_redis::connect(redis, ClientConfig::default().watchdog_timeout(WATCHDOG))
        .await
        .expect("connect to the fixture")
}

/// Five servers, and a RedLock over them for each of `processes`
/// processes (each with a client per server).
async fn setup(processes: usize, name: &str) -> (Vec<RedisServer>, Vec<RedLock>) {
    let servers: Vec<RedisServer> = (0..STORES).map(|_| RedisServer::start()).collect();
    let mut reds = Vec::new();
    for _ in 0..processes {
        let mut locks = Vec::new();
        for server in &servers {
            locks.push(connect(server).await.lock(name).unwrap());
        }
        reds.push(RedLock::new(locks).unwrap());
    }
    (servers, reds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_dead_masters_keep_the_lock_held() {
    let name = unique("red-kill-two");
    let (mut servers, reds) = setup(2, &name).await;
    let guard = hold_every_member(&reds[0]).await;
    servers[0].kill();
    servers[1].kill();
    tokio::time::sleep(WATCHDOG * 3).await;
    assert_eq!(guard.held(), 3, "the dead masters' members are lost");
    assert!(!guard.is_lost());
    let theirs = reds[1].try_lock_for(WATCHDOG).await.unwrap();
    assert!(theirs.is_none(), "no second holder");
    guard.unlock().await.unwrap();
    let theirs = reds[1].try_lock_for(Duration::from_secs(2)).await.unwrap();
    assert!(theirs.expect("free once released").held() >= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_dead_masters_lose_the_lock_and_say_so() {
    let name = unique("red-kill-three");
    let (mut servers, reds) = setup(1, &name).await;
    let guard = reds[0].lock().await.unwrap();
    for server in &mut servers[..3] {
        server.kill();
    }
    tokio::time::timeout(WATCHDOG * 2, guard.lost())
        .await
        .expect("the loss is reported within a lease");
    assert!(guard.check().unwrap_err().is_lock_lost());
    assert!(guard.unlock().await.is_err());
    // Nor can anyone take it now: no majority is reachable.
    let again = reds[0].try_lock_for(Duration::from_millis(300)).await;
    assert!(!matches!(again, Ok(Some(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masters_restarted_empty_let_no_second_holder_in() {
    let name = unique("red-restart");
    let (mut servers, reds) = setup(2, &name).await;
    let guard = hold_every_member(&reds[0]).await;
    servers[0].restart();
    servers[1].restart();
    let start = tokio::time::Instant::now();
    // Within the lease (and past it: the watchdog keeps the other three).
    let theirs = reds[1].try_lock_for(WATCHDOG * 2).await.unwrap();
    assert!(
        theirs.is_none(),
        "no second holder after {:?}",
        start.elapsed()
    );
    assert!(!guard.is_lost());
    assert_eq!(guard.held(), 3, "the restarted masters' members are lost");
    guard.unlock().await.unwrap();
    let theirs = reds[1].try_lock_for(Duration::from_secs(2)).await.unwrap();
    // The restarted masters' connections may still be reconnecting: a
    // majority is what counts.
    assert!(theirs.expect("free once released").held() >= 3);
}

/// The sequence: two masters die during a hold, and one of them
/// comes back empty. The holder keeps its majority (the three it never
/// lost), so nobody else can take one: no second holder within the lease,
/// nor past it while the watchdog renews.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_restarted_empty_lets_no_second_holder_in() {
    let name = unique("red-kill-restart");
    let (mut servers, reds) = setup(2, &name).await;
    let guard = hold_every_member(&reds[0]).await;
    servers[0].kill();
    servers[1].kill();
    tokio::time::sleep(WATCHDOG).await;
    servers[0].restart();
    let theirs = reds[1].try_lock_for(WATCHDOG * 2).await.unwrap();
    assert!(theirs.is_none(), "no second holder");
    assert!(!guard.is_lost());
    assert_eq!(guard.held(), 3, "the killed masters' members are lost");
    guard.unlock().await.unwrap();
    let theirs = reds[1].try_lock_for(Duration::from_secs(2)).await.unwrap();
    assert!(theirs.expect("free once released").held() >= 3);
}

/// Contenders on three masters take turns without waiting out split rounds
/// (each holding some members, none a quorum). The wall-clock bound is
/// loose on purpose: a split round under the default watchdog lasts 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contenders_take_turns_on_three_masters() {
    const CONTENDERS: usize = 10;
    const ROUNDS: usize = 5;
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let name = unique("red-contended");
    let mut reds = Vec::new();
    for _ in 0..CONTENDERS {
        let mut locks = Vec::new();
        for server in &servers {
            let redis = RedisConfig::new(server.url());
            let client = lock_redis::connect(redis, ClientConfig::default())
                .await
                .unwrap();
            locks.push(client.lock(&name).unwrap());
        }
        reds.push(RedLock::new(locks).unwrap());
    }
    let started = std::time::Instant::now();
    let tasks: Vec<_> = reds
        .into_iter()
        .map(|red| {
            tokio::spawn(async move {
                let mut waits = Vec::new();
                for _ in 0..ROUNDS {
                    let asked = std::time::Instant::now();
                    let guard = red.lock().await.unwrap();
                    waits.push(asked.elapsed());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    guard.unlock().await.unwrap();
                }
                waits
            })
        })
        .collect();
    let mut longest = Duration::ZERO;
    for task in tasks {
        longest = longest.max(task.await.unwrap().into_iter().max().unwrap());
    }
    let took = started.elapsed();
    eprintln!("{CONTENDERS} contenders x {ROUNDS} rounds: {took:?}, longest wait {longest:?}");
    // 50 holds of 50 ms: 2.5 s of holding. Splitting the members took 48 s
    // in a measured run; the bound is loose for a loaded machine.
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// A master that drops packets (issue 37, item 6): three redis-servers,
/// the contender reaching the first through a proxy that is then
/// partitioned (nothing flows, nothing is closed). A holder keeps the lock
/// on all three; the contender's ordered rounds try the silent master
/// first. At Redis's default 3 s command timeout its whole retry policy is
/// over 12 s; the wait must end near its 2 s bound instead (checked with a
/// generous bound: it did not wait that policy out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_master_costs_a_wait_no_more_than_its_bound() {
    use lock_testkit::fixtures::FaultProxy;
    let name = unique("red-silent");
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start()).collect();
    let proxy = FaultProxy::in_front_of(&servers[0]);
    let mut holders = Vec::new();
    for server in &servers {
        holders.push(connect(server).await.lock(&name).unwrap());
    }
    let holder = RedLock::new(holders).unwrap();
    let mut contenders = Vec::new();
    let urls = [proxy.url(), servers[1].url(), servers[2].url()];
    for url in urls {
        let redis = RedisConfig::new(url).command_timeout(Duration::from_secs(3));
        let client = lock_redis::connect(redis, ClientConfig::default())
            .await
            .expect("connect to the fixture");
        contenders.push(client.lock(&name).unwrap());
    }
    let contender = RedLock::new(contenders).unwrap();
    let held = hold_every_member(&holder).await;
    proxy.partition();
    let started = std::time::Instant::now();
    let theirs = contender
        .try_lock_for(Duration::from_secs(2))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(theirs.is_none(), "no second holder");
    assert!(took < Duration::from_secs(9), "waited {took:?}");
    proxy.heal();
    held.unlock().await.unwrap();
}
