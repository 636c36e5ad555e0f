//! The real side of a model run (features `model` and `fixtures`): a
//! `redis-server` of this thread, emptied before every case, reached by
//! `lock_redis::connect` clients, and [`against_redis`], the whole
//! comparison a property test makes.

use async_trait::async_trait;
use lock_redis::RedisConfig;
use lock_redis::{ClientConfig, LockClient};
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use redis::aio::MultiplexedConnection;

use super::{compare, in_memory, run, steps, Model, Step, Store};
use crate::fixtures::{script_reply, RedisServer};
use crate::memory::ScriptReply;

/// A real Redis as a [`Store`]: clients from `lock_redis::connect` with the
/// default configuration, snapshots over one more connection.
pub struct RedisStore {
    url: String,
    conn: MultiplexedConnection,
}

impl RedisStore {
    /// A store on the Redis at `url`.
    ///
    /// # Panics
    /// When it cannot be reached.
    pub async fn connect(url: String) -> Self {
        let conn = redis::Client::open(url.as_str())
            .expect("a Redis URL")
            .get_multiplexed_async_connection()
            .await
            .expect("a connection for snapshots");
        Self { url, conn }
    }
}

#[async_trait(?Send)]
impl Store for RedisStore {
    async fn client(&self) -> LockClient {
        lock_redis::connect(RedisConfig::new(self.url.clone()), ClientConfig::default())
            .await
            .expect("a client")
    }

    async fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut self.conn.clone())
            .await
            .expect("KEYS *");
        keys.sort();
        keys
    }

    async fn eval(&self, script: &str, keys: &[&str], args: &[&str]) -> ScriptReply {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(keys.len()).arg(keys).arg(args);
        match cmd.query_async(&mut self.conn.clone()).await {
            Ok(value) => script_reply(value),
            Err(e) => panic!("EVAL on Redis: {e}"),
        }
    }
}

/// Plays `steps` of `model` in memory (paused time) and on this thread's
/// `redis-server` (started on first use, emptied first), and fails the
/// case where the two part ([`compare`]).
///
/// # Errors
/// The failure, saying at which step and how the worlds differ.
pub fn against_redis<M: Model>(model: M, steps: &[Step<M::Op>]) -> Result<(), TestCaseError> {
    thread_local! {
        static WORLD: (tokio::runtime::Runtime, RedisServer) = (
            // One thread: an operation's reply wakes the run directly,
            // with no hop between threads to add to its lag.
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            RedisServer::start(),
        );
    }
    // One in-memory run at a time (they are CPU-bound; the real runs mostly
    // sleep), so the models' threads do not starve each other's real runs
    // into lagging past the time grid's margin.
    static MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let memory = {
        let _turn = MEMORY
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        in_memory(model, steps)
    };
    let store = WORLD.with(|(rt, server)| {
        server.cmd(&["FLUSHALL"]);
        rt.block_on(async {
            let store = RedisStore::connect(server.url()).await;
            run(model, &store, steps).await
        })
    });
    match compare(steps, &memory, &store) {
        None => Ok(()),
        Some(why) => Err(TestCaseError::fail(format!("{model:?}: {why}"))),
    }
}

/// Runs `config.cases` random sequences of `model` through
/// [`against_redis`] on a thread of its own (with its own `redis-server`):
/// most of a case is spent sleeping through the real run's time steps, so
/// the models' checks overlap instead of queueing behind each other.
/// Joins to how many cases were compared only in part (the real run fell
/// behind, see [`super::compare`]), or to the failure (the minimal
/// sequence, why, and the seed).
///
/// # Panics
/// When the thread cannot be spawned.
pub fn check_on_thread<M: Model + Send>(
    model: M,
    config: Config,
) -> std::thread::JoinHandle<Result<u32, String>> {
    std::thread::Builder::new()
        .name(format!("model {model:?}"))
        .spawn(move || {
            let seed = config.rng_seed;
            TestRunner::new(config)
                .run(&steps(model), |steps| against_redis(model, &steps))
                .map(|()| super::cut_short())
                .map_err(|e| format!("{model:?} (seed {seed}): {e}"))
        })
        .expect("a thread")
}
