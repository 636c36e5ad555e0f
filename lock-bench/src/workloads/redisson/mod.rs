//! The Redisson-protocol raw pair: a lock/unlock pair sent as two bare
//! `EVALSHA`s of scripts that do what Redisson 4.x's `RedissonLock` asks
//! the server to do (`acquire.lua`, `release.lua`, written from its
//! protocol: the same commands in the same order, with its unlock request
//! record), with the KEYS and ARGV a Java client sends for `lock()` with
//! the watchdog and `unlock()`. It runs in every W1 run, right after the
//! reentrant lock, so the reentrant lock's pair and its server time can be
//! compared with what Redisson's own protocol costs on the same server.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use lock_redis::lock_script::layout::UNLOCK_MESSAGE;
use lock_redis::transport::scripts;
use lock_redis::{Owner, ScriptCall};
use redis::aio::MultiplexedConnection;
use redis::Script;

use super::uncontended::pair;
use crate::latency::Latencies;
use crate::locker::Locker;
use crate::report::{Report, Unit};
use crate::server::Server;
use crate::target::Target;

/// The name the raw Redisson pair has in reports.
pub(crate) const IMPLEMENTATION: &str = "raw Redisson protocol";

/// Redisson's default watchdog lease, sent with every acquire and
/// re-entrant release.
const LEASE_MS: &str = "30000";
/// How long Redisson keeps an unlock's request record: its default
/// response timeout (3 s) plus its longest retry delay (2 s), times its 4
/// attempts. Java computes it from the client's configuration; the value
/// does not change what the server does per pair.
const RECORD_MS: &str = "20000";
const WARM_UP: usize = 100;

static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("acquire.lua")));
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("release.lua")));

/// One lock taken and given back with the Redisson-protocol scripts on a
/// connection of its own.
struct RedissonRaw {
    conn: MultiplexedConnection,
    key: String,
    channel: String,
    record_prefix: String,
    field: String,
}

impl RedissonRaw {
    /// Connects to `server` and loads both scripts; the keys are Redisson's
    /// for the lock `name` (whose name has no hash tag of its own).
    async fn new(server: &Server, name: &str) -> Result<Self> {
        let mut conn = server.connect().await?;
        for script in [&*ACQUIRE, &*RELEASE] {
            scripts::load(&mut conn, script)
                .await
                .context("SCRIPT LOAD of a Redisson-protocol script failed")?;
        }
        Ok(Self {
            conn,
            key: name.to_owned(),
            channel: format!("redisson_lock__channel:{{{name}}}"),
            record_prefix: format!("redisson_unlock_latch:{{{name}}}"),
            field: Owner::new(uuid::Uuid::new_v4(), 1).field(),
        })
    }

    /// Acquire then release; fails unless the first took the lock and the
    /// second freed it.
    async fn pair(&mut self) -> Result<()> {
        if let Some(ttl) = self.acquire().await? {
            bail!(
                "Redisson-protocol acquire found {} held by someone else ({ttl} ms left)",
                self.key
            );
        }
        // Redisson's request ids are 16 random bytes in hex.
        let request = uuid::Uuid::new_v4().simple().to_string();
        let released = self.release(&request).await?;
        if released != Some(1) {
            bail!(
                "Redisson-protocol release of {} answered {released:?}, not 1",
                self.key
            );
        }
        Ok(())
    }

    /// `acquire.lua`: `None` when it took (or re-entered) the lock, else
    /// the holder's time left in ms.
    async fn acquire(&mut self) -> Result<Option<i64>> {
        ScriptCall::new(
            &ACQUIRE,
            vec![self.key.clone()],
            vec![LEASE_MS.to_owned(), self.field.clone()],
        )
        .to_cmd()
        .query_async(&mut self.conn)
        .await
        .context("Redisson-protocol acquire EVALSHA failed")
    }

    /// `release.lua` as unlock request `request`: `Some(1)` when it freed
    /// the lock, `Some(0)` when a hold count is left, `None` when this
    /// owner did not hold it.
    async fn release(&mut self, request: &str) -> Result<Option<i64>> {
        ScriptCall::new(
            &RELEASE,
            vec![
                self.key.clone(),
                self.channel.clone(),
                format!("{}:{request}", self.record_prefix),
            ],
            vec![
                UNLOCK_MESSAGE.to_owned(),
                LEASE_MS.to_owned(),
                self.field.clone(),
                "PUBLISH".to_owned(),
                RECORD_MS.to_owned(),
            ],
        )
        .to_cmd()
        .query_async(&mut self.conn)
        .await
        .context("Redisson-protocol release EVALSHA failed")
    }
}

/// W1's Redisson-protocol raw pair on `t`'s server: latency, server time
/// and commands per pair, measured as W1 measures a lock.
pub(crate) async fn run(t: &Target<'_>) -> Result<Report> {
    let bench = t.bench;
    let workload = t.workload("W1");
    let pairs = bench.pick(5_000, 1_000);
    bench.progress(&format!(
        "{workload} ({IMPLEMENTATION}): {pairs} raw EVALSHA pairs"
    ));
    let mut raw = RedissonRaw::new(&bench.server, &t.name("w1:redisson-raw")).await?;
    for _ in 0..WARM_UP {
        raw.pair().await?;
    }
    let mut lat = Latencies::with_capacity(pairs);
    let mut busy = Duration::ZERO;
    t.reset_stats().await?;
    for _ in 0..pairs {
        let started = Instant::now();
        raw.pair().await?;
        let took = started.elapsed();
        busy += took;
        lat.push(took);
    }
    let commands = t.command_stats().await?;
    let per_pair = |n: u64| n as f64 / pairs as f64;
    let s = lat.summary().context("no samples")?;
    let base = t.baseline()?;

    let mut r = Report::new(&workload, "uncontended", IMPLEMENTATION);
    r.add("pairs", "EVALSHA pairs", pairs as f64, Unit::Count)
        .add("p50_us", "pair p50", s.p50_us, Unit::Micros)
        .add("p99_us", "pair p99", s.p99_us, Unit::Micros)
        .add(
            "pairs_per_s",
            "pairs/s",
            pairs as f64 / busy.as_secs_f64(),
            Unit::PerSec,
        )
        .add(
            "p50_vs_raw_pair",
            "pair p50 / raw EVALSHA pair (our scripts) p50",
            s.p50_us / base.pair_p50_us,
            Unit::Ratio,
        )
        .add(
            "p50_vs_ping",
            "pair p50 / PING p50",
            s.p50_us / base.ping_p50_us,
            Unit::Ratio,
        )
        .add(
            "requests_per_pair",
            "client requests per pair",
            per_pair(commands.calls("evalsha")),
            Unit::Count,
        )
        .add(
            "commands_per_pair",
            "Redis commands per pair (incl. inside scripts)",
            per_pair(commands.total()),
            Unit::Count,
        )
        .add(
            "server_us_per_pair",
            "server time in scripts per pair (EVALSHA µs)",
            per_pair(commands.usec("evalsha")),
            Unit::Micros,
        )
        .note(
            "RedissonLock's acquire (lease 30 s) and unlock (with its request record) as a Java client sends them, one connection, no library",
        );
    bench.progress(&format!(
        "{workload} ({IMPLEMENTATION}): p50 {:.0} µs, {:.1} µs of server time per pair",
        s.p50_us,
        per_pair(commands.usec("evalsha"))
    ));
    Ok(r)
}

/// Server time per pair, in µs, of `locker`'s lock and of the
/// Redisson-protocol raw pair, measured in turn in blocks: the server's
/// cost per command drifts over the seconds between two separate phases
/// by more than the difference the goal judges (the same build measured
/// 0.62–2.30× in separate phases on 2026-11-27). Each block resets the
/// counters, runs [`SERVER_TIME_BLOCK`] pairs of one side, and reads them.
pub(crate) async fn server_time_in_turn<L: Locker>(
    t: &Target<'_>,
    locker: &L,
    pairs: usize,
) -> Result<(f64, f64)> {
    let bench = t.bench;
    let name = t.name(&format!("w1:server-time:{}", locker.name()));
    let mut raw = RedissonRaw::new(&bench.server, &t.name("w1:server-time:redisson-raw")).await?;
    let (mut ours, mut theirs) = (0u64, 0u64);
    let blocks = pairs.div_ceil(SERVER_TIME_BLOCK);
    for _ in 0..blocks {
        t.reset_stats().await?;
        for _ in 0..SERVER_TIME_BLOCK {
            pair(locker, &name).await?;
        }
        ours += t.command_stats().await?.usec("evalsha");
        t.reset_stats().await?;
        for _ in 0..SERVER_TIME_BLOCK {
            raw.pair().await?;
        }
        theirs += t.command_stats().await?.usec("evalsha");
    }
    let per_pair = |usec: u64| usec as f64 / (blocks * SERVER_TIME_BLOCK) as f64;
    Ok((per_pair(ours), per_pair(theirs)))
}

/// Pairs per block of [`server_time_in_turn`].
const SERVER_TIME_BLOCK: usize = 250;

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use lock_testkit::fixtures::RedisServer;

    use super::*;

    /// The scripts keep Redisson's protocol: re-entry counts, a stranger
    /// is told the time left, a repeated unlock request answers as the
    /// first did, and the last release deletes the hash and publishes 0.
    #[tokio::test]
    async fn the_scripts_speak_redissons_lock_protocol() {
        let redis = RedisServer::start();
        let server = Server::new(&redis.url()).unwrap();
        let mut me = RedissonRaw::new(&server, "proto").await.unwrap();
        let mut other = RedissonRaw::new(&server, "proto").await.unwrap();
        let mut pubsub = server.pubsub().await.unwrap();
        pubsub.subscribe(&me.channel).await.unwrap();
        let mut conn = server.connect().await.unwrap();

        assert_eq!(me.acquire().await.unwrap(), None);
        assert_eq!(me.acquire().await.unwrap(), None);
        let count: i64 = redis::cmd("HGET")
            .arg(&me.key)
            .arg(&me.field)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(count, 2);
        let left = other.acquire().await.unwrap().expect("held by me");
        assert!(left > 0 && left <= 30_000, "{left}");
        assert_eq!(other.release("r0").await.unwrap(), None);

        assert_eq!(me.release("r1").await.unwrap(), Some(0));
        assert_eq!(me.release("r1").await.unwrap(), Some(0), "recorded");
        let record_ttl: i64 = redis::cmd("PTTL")
            .arg("redisson_unlock_latch:{proto}:r1")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(record_ttl > 0 && record_ttl <= 20_000, "{record_ttl}");
        assert_eq!(me.release("r2").await.unwrap(), Some(1));
        let exists: i64 = redis::cmd("EXISTS")
            .arg(&me.key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(exists, 0);
        let msg = pubsub.on_message().next().await.unwrap();
        assert_eq!(msg.get_channel_name(), "redisson_lock__channel:{proto}");
        assert_eq!(msg.get_payload::<String>().unwrap(), UNLOCK_MESSAGE);

        other.pair().await.unwrap();
        assert_eq!(me.acquire().await.unwrap(), None);
        let err = other.pair().await.unwrap_err().to_string();
        assert!(err.contains("held by someone else"), "{err}");
        // Re-entered: the pair's release leaves a hold count.
        let err = me.pair().await.unwrap_err().to_string();
        assert!(err.contains("answered Some(0), not 1"), "{err}");
    }
}
