//! [`Harness`]: what any store gives the suite; [`RedisLayout`]: what a
//! Redis store gives the checks of Redisson's keys; and the wrappers that
//! run the same store under another kind ([`OfKind`]) or wait strategy
//! (`polling.rs`).

use async_trait::async_trait;
use lock_redis::{ClientConfig, LockClient};
use lock_script::KeyLayout;

use super::Kind;

/// Access to one store under test, as any store offers it: clients on
/// their own connections, and what the checks must know of the deployment.
/// The behaviour checks (see the [module docs](super)) need no more, so a
/// store that is not Redis implements this trait alone.
#[async_trait]
pub trait Harness: Send + Sync {
    /// Which kind of lock the checks take ([`lock`](super::lock));
    /// reentrant unless a suite says otherwise ([`OfKind`]).
    fn kind(&self) -> Kind {
        Kind::Reentrant
    }
    /// A new client, on its own connection, to the shared store.
    async fn client(&self, config: ClientConfig) -> LockClient;
    /// How many nodes hold data on their own (a cluster's masters): the
    /// watchdog renews each node's locks in calls of its own (its lanes),
    /// so a tick of locks spread over every node makes at least this many
    /// calls.
    fn nodes(&self) -> u64 {
        1
    }
}

/// The Redis layout, for the checks that look at Redisson's keys (the wire
/// contract): raw access to the store as another Redis client (or
/// Redisson) would have it. A store that is not Redis implements
/// [`Harness`] alone and runs the behaviour checks only.
///
/// The store's clock is here too ([`now_ms`](Self::now_ms), Redis `TIME`):
/// the checks read it only to write scores and deadlines in Redisson's
/// keys; the behaviour checks measure time with `tokio::time::Instant`.
#[async_trait]
pub trait RedisLayout: Harness {
    /// The key layout the clients use.
    fn layout(&self) -> KeyLayout;
    /// `SET key value`.
    async fn set_string(&self, key: &str, value: &str);
    /// `GET key` (`None` when missing).
    async fn get_string(&self, key: &str) -> Option<String>;
    /// `HGETALL key` as (field, count), sorted by field.
    async fn hash(&self, key: &str) -> Vec<(String, i64)>;
    /// `HSET key field value` and `PEXPIRE key ms` when given.
    async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>);
    /// `PTTL key`.
    async fn pttl(&self, key: &str) -> i64;
    /// `DEL key` without publishing.
    async fn del(&self, key: &str) -> bool;
    /// Every key (`KEYS *`), sorted.
    async fn keys(&self) -> Vec<String>;
    /// `PUBLISH channel message`.
    async fn publish(&self, channel: &str, message: &str);
    /// How many connections subscribe `channel` (`PUBSUB NUMSUB`).
    async fn subscribers(&self, channel: &str) -> usize;
    /// `LRANGE key 0 -1`.
    async fn list(&self, key: &str) -> Vec<String>;
    /// `RPUSH key value` then `ZADD zkey score value`: a waiter queued by
    /// another client (or one whose process died).
    async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str);
    /// `ZSCORE key member`.
    async fn zscore(&self, key: &str, member: &str) -> Option<i64>;
    /// The store's clock (`TIME`), milliseconds since the Unix epoch.
    async fn now_ms(&self) -> i64;
}

/// A harness whose checks take locks of kind `.0` ([`Harness::kind`]):
/// the same store and clients as the inner harness `.1`. The suite runs
/// the shared checks of each lock kind of its table through one
/// ([`conformance_table!`](crate::conformance_table)).
pub struct OfKind<H>(pub Kind, pub H);

/// Implements [`Harness`] for a wrapper `$ty<H>` of an inner harness in
/// its field `$inner`: `kind` and `client` are given, `nodes` is the inner
/// harness's; and [`RedisLayout`] when the inner harness has it, every
/// method the inner harness's (a kind's suite and the polling variant are
/// such wrappers).
macro_rules! wrapping_harness {
    ($ty:ident . $inner:tt, |$s:ident| $kind:block, |$s2:ident, $config:ident| $client:block) => {
        #[async_trait::async_trait]
        impl<H: Harness> Harness for $ty<H> {
            fn kind(&$s) -> Kind $kind
            async fn client(&$s2, $config: ClientConfig) -> LockClient $client
            fn nodes(&self) -> u64 {
                self.$inner.nodes()
            }
        }

        #[async_trait::async_trait]
        impl<H: RedisLayout> RedisLayout for $ty<H> {
            fn layout(&self) -> KeyLayout {
                self.$inner.layout()
            }
            async fn set_string(&self, key: &str, value: &str) {
                self.$inner.set_string(key, value).await;
            }
            async fn get_string(&self, key: &str) -> Option<String> {
                self.$inner.get_string(key).await
            }
            async fn hash(&self, key: &str) -> Vec<(String, i64)> {
                self.$inner.hash(key).await
            }
            async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) {
                self.$inner.hset(key, field, value, pexpire_ms).await;
            }
            async fn pttl(&self, key: &str) -> i64 {
                self.$inner.pttl(key).await
            }
            async fn del(&self, key: &str) -> bool {
                self.$inner.del(key).await
            }
            async fn keys(&self) -> Vec<String> {
                self.$inner.keys().await
            }
            async fn publish(&self, channel: &str, message: &str) {
                self.$inner.publish(channel, message).await;
            }
            async fn subscribers(&self, channel: &str) -> usize {
                self.$inner.subscribers(channel).await
            }
            async fn list(&self, key: &str) -> Vec<String> {
                self.$inner.list(key).await
            }
            async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str) {
                self.$inner.enqueue(key, zkey, score, value).await;
            }
            async fn zscore(&self, key: &str, member: &str) -> Option<i64> {
                self.$inner.zscore(key, member).await
            }
            async fn now_ms(&self) -> i64 {
                self.$inner.now_ms().await
            }
        }
    };
}
pub(crate) use wrapping_harness;

wrapping_harness!(OfKind.1, |self| { self.0 }, |self, config| {
    self.1.client(config).await
});

/// Implements [`Harness`] (and [`RedisLayout`], when called with `layout`) for
/// a shared trait object `$ty`, forwarding to the object.
macro_rules! shared_harness {
    ($ty:ty) => {
        #[async_trait]
        impl Harness for $ty {
            fn kind(&self) -> Kind {
                (**self).kind()
            }
            async fn client(&self, config: ClientConfig) -> LockClient {
                (**self).client(config).await
            }
            fn nodes(&self) -> u64 {
                (**self).nodes()
            }
        }
    };
    ($ty:ty, layout) => {
        shared_harness!($ty);

        #[async_trait]
        impl RedisLayout for $ty {
            fn layout(&self) -> KeyLayout {
                (**self).layout()
            }
            async fn set_string(&self, key: &str, value: &str) {
                (**self).set_string(key, value).await;
            }
            async fn get_string(&self, key: &str) -> Option<String> {
                (**self).get_string(key).await
            }
            async fn hash(&self, key: &str) -> Vec<(String, i64)> {
                (**self).hash(key).await
            }
            async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) {
                (**self).hset(key, field, value, pexpire_ms).await;
            }
            async fn pttl(&self, key: &str) -> i64 {
                (**self).pttl(key).await
            }
            async fn del(&self, key: &str) -> bool {
                (**self).del(key).await
            }
            async fn keys(&self) -> Vec<String> {
                (**self).keys().await
            }
            async fn publish(&self, channel: &str, message: &str) {
                (**self).publish(channel, message).await;
            }
            async fn subscribers(&self, channel: &str) -> usize {
                (**self).subscribers(channel).await
            }
            async fn list(&self, key: &str) -> Vec<String> {
                (**self).list(key).await
            }
            async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str) {
                (**self).enqueue(key, zkey, score, value).await;
            }
            async fn zscore(&self, key: &str, member: &str) -> Option<i64> {
                (**self).zscore(key, member).await
            }
            async fn now_ms(&self) -> i64 {
                (**self).now_ms().await
            }
        }
    };
}

// A behaviour-only store is shared as `Arc<dyn Harness>`; a Redis one as
// `Arc<dyn RedisLayout>`, which runs every check.
shared_harness!(std::sync::Arc<dyn Harness>);
shared_harness!(std::sync::Arc<dyn RedisLayout>, layout);
