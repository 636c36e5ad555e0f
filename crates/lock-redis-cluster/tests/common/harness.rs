//! [`ClusterHarness`]: the conformance harness over a Redis Cluster. Raw
//! access goes through `redis`'s own cluster client, acting as another
//! client (or Redisson) would.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use lock_redis_cluster::{ClientConfig, KeyLayout, LockClient};
use lock_testkit::conformance::Harness;
use redis::cluster_async::ClusterConnection;
use redis::AsyncCommands;

type Connect = Arc<
    dyn Fn(Vec<String>, ClientConfig) -> Pin<Box<dyn Future<Output = LockClient> + Send>>
        + Send
        + Sync,
>;

pub(crate) struct ClusterHarness {
    seeds: Vec<String>,
    raw: ClusterConnection,
    /// One plain connection per master, for per-node commands.
    masters: Vec<redis::aio::MultiplexedConnection>,
    sharded: bool,
    layout: KeyLayout,
    connect: Connect,
}

impl ClusterHarness {
    pub(crate) async fn new<F, Fut>(
        seeds: Vec<String>,
        masters: Vec<String>,
        sharded: bool,
        layout: KeyLayout,
        connect: F,
    ) -> Self
    where
        F: Fn(Vec<String>, ClientConfig) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = LockClient> + Send + 'static,
    {
        let raw = redis::cluster::ClusterClient::new(seeds.clone())
            .expect("cluster client")
            .get_async_connection()
            .await
            .expect("raw cluster connection");
        let mut conns = Vec::new();
        for url in masters {
            let client = redis::Client::open(url).expect("master url");
            conns.push(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .expect("master connection"),
            );
        }
        Self {
            seeds,
            raw,
            masters: conns,
            sharded,
            layout,
            connect: Arc::new(move |seeds, config| Box::pin(connect(seeds, config))),
        }
    }

    fn raw(&self) -> ClusterConnection {
        self.raw.clone()
    }
}

#[async_trait]
impl Harness for ClusterHarness {
    async fn client(&self, config: ClientConfig) -> LockClient {
        (self.connect)(self.seeds.clone(), config).await
    }

    fn layout(&self) -> KeyLayout {
        self.layout.clone()
    }

    async fn set_string(&self, key: &str, value: &str) {
        let () = self.raw().set(key, value).await.expect("SET");
    }

    async fn get_string(&self, key: &str) -> Option<String> {
        self.raw().get(key).await.expect("GET")
    }

    async fn hash(&self, key: &str) -> Vec<(String, i64)> {
        let mut fields: Vec<(String, i64)> = self.raw().hgetall(key).await.expect("HGETALL");
        fields.sort();
        fields
    }

    async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) {
        let mut raw = self.raw();
        let () = raw.hset(key, field, value).await.expect("HSET");
        if let Some(ms) = pexpire_ms {
            let _: bool = raw.pexpire(key, ms as i64).await.expect("PEXPIRE");
        }
    }

    async fn pttl(&self, key: &str) -> i64 {
        self.raw().pttl(key).await.expect("PTTL")
    }

    async fn del(&self, key: &str) -> bool {
        let n: u64 = self.raw().del(key).await.expect("DEL");
        n > 0
    }

    async fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        for conn in &self.masters {
            let mut conn = conn.clone();
            let mut some: Vec<String> = conn.keys("*").await.expect("KEYS");
            keys.append(&mut some);
        }
        keys.sort();
        keys
    }

    async fn publish(&self, channel: &str, message: &str) {
        let command = if self.sharded { "SPUBLISH" } else { "PUBLISH" };
        let _: u64 = redis::cmd(command)
            .arg(channel)
            .arg(message)
            .query_async(&mut self.raw())
            .await
            .expect("PUBLISH");
    }

    async fn subscribers(&self, channel: &str) -> usize {
        // Sharded subscriptions live on the slot's master; classic ones on
        // whichever node the client chose: count them everywhere.
        let command = if self.sharded {
            "SHARDNUMSUB"
        } else {
            "NUMSUB"
        };
        let mut total = 0;
        for conn in &self.masters {
            let reply: Vec<(String, usize)> = redis::cmd("PUBSUB")
                .arg(command)
                .arg(channel)
                .query_async(&mut conn.clone())
                .await
                .expect("PUBSUB NUMSUB");
            total += reply.first().map_or(0, |(_, n)| *n);
        }
        total
    }

    async fn list(&self, key: &str) -> Vec<String> {
        self.raw().lrange(key, 0, -1).await.expect("LRANGE")
    }

    async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str) {
        let mut raw = self.raw();
        let _: u64 = raw.rpush(key, value).await.expect("RPUSH");
        let _: u64 = raw.zadd(zkey, value, score).await.expect("ZADD");
    }

    async fn zscore(&self, key: &str, member: &str) -> Option<i64> {
        let score: Option<f64> = self.raw().zscore(key, member).await.expect("ZSCORE");
        score.map(|s| s as i64)
    }

    async fn now_ms(&self) -> i64 {
        let (secs, micros): (i64, i64) = redis::cmd("TIME")
            .query_async(&mut self.masters[0].clone())
            .await
            .expect("TIME");
        secs * 1000 + micros / 1000
    }
}
