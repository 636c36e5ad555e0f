//! Playing a sequence on a [`Store`] (the in-memory one under paused time,
//! or a real one) into a [`Trace`], and comparing two traces.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use lock_redis::LockClient;

use super::{Ids, Keyspace, Model, Step, CLIENTS, CLOBBERS, GRID_MARGIN_MS, TOLERANCE_MS};
use crate::memory::ScriptReply;
use crate::InMemoryServer;

/// Replaces `KEYS[1]` with a value of type `ARGV[1]` holding `ARGV[2]`
/// (a hash: that field with count 1; a sorted set: that member scored 1)
/// for 350 ms (on the time grid), so a sequence gets over it.
const CLOBBER: &str = "
redis.call('del', KEYS[1])
if ARGV[1] == 'string' then redis.call('set', KEYS[1], ARGV[2])
elseif ARGV[1] == 'list' then redis.call('rpush', KEYS[1], ARGV[2])
elseif ARGV[1] == 'hash' then redis.call('hset', KEYS[1], ARGV[2], '1')
elseif ARGV[1] == 'zset' then redis.call('zadd', KEYS[1], '1', ARGV[2])
end
redis.call('pexpire', KEYS[1], 350)";

/// Where a run happens: the in-memory store or a real one.
#[async_trait(?Send)]
pub trait Store {
    /// A new client with every kind.
    async fn client(&self) -> LockClient;
    /// Every live key, sorted.
    async fn keys(&self) -> Vec<String>;
    /// Runs a script (the keyspace snapshot, [`DUMP`](super::DUMP); a clobber) as
    /// another client would.
    async fn eval(&self, script: &str, keys: &[&str], args: &[&str]) -> ScriptReply;
}

#[async_trait(?Send)]
impl Store for InMemoryServer {
    async fn client(&self) -> LockClient {
        InMemoryServer::client(self).expect("an in-memory client")
    }

    async fn keys(&self) -> Vec<String> {
        InMemoryServer::keys(self)
    }

    async fn eval(&self, script: &str, keys: &[&str], args: &[&str]) -> ScriptReply {
        InMemoryServer::eval(self, script, keys, args)
    }
}

/// What a run showed: one [`Snapshot`] per step, in order.
#[derive(Debug, Clone)]
pub struct Trace<S> {
    /// One entry per step, in order.
    pub steps: Vec<Snapshot<S>>,
}

/// What one step showed.
#[derive(Debug, Clone)]
pub struct Snapshot<S> {
    /// The operation's answer; `None` for time passing and clobbers.
    pub seen: Option<S>,
    /// The keyspace after it, when it ends an instant (time passes next,
    /// or the run ends).
    pub keys: Option<Keyspace>,
    /// How far the run's clock was behind the model's time when the
    /// snapshot was read (0 under paused time; in real time, what the
    /// operations since the last time step took).
    pub lag_ms: i64,
}

/// Plays `steps` of `model` on `store`, with [`CLIENTS`] clients (closed
/// afterwards), snapshotting the keyspace at the end of every instant
/// (before time passes, and at the end): a snapshot costs the real run
/// time, which adds to its lag behind the model.
///
/// # Panics
/// When the store cannot be read (a model run has no faults).
pub async fn run<M: Model>(model: M, store: &dyn Store, steps: &[Step<M::Op>]) -> Trace<M::Seen> {
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(store.client().await);
    }
    let mut state = model.start(&clients);
    let mut ids = Ids::default();
    let began = tokio::time::Instant::now();
    let mut at = Duration::ZERO;
    let mut trace = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let seen = match step {
            Step::Op(op) => Some(model.apply(&mut state, op, &mut ids).await),
            Step::Advance { steps } => {
                at += Duration::from_millis(100 * steps);
                // The whole step, not until `began + at`: catching up
                // would reorder times that tie in the model (module docs).
                tokio::time::sleep(Duration::from_millis(100 * steps)).await;
                None
            }
            Step::Clobber { key, value } => {
                let (kind, text) = CLOBBERS[*value];
                let reply = store
                    .eval(CLOBBER, &[model.keys()[*key]], &[kind, text])
                    .await;
                assert!(!reply.is_error(), "a clobber: {reply:?}");
                None
            }
        };
        let instant_ends = matches!(steps.get(i + 1), None | Some(Step::Advance { .. }));
        let keys = match instant_ends {
            true => Some(Keyspace::read(store, &ids).await),
            false => None,
        };
        let lag = tokio::time::Instant::now().saturating_duration_since(began + at);
        trace.push(Snapshot {
            seen,
            keys,
            lag_ms: i64::try_from(lag.as_millis()).unwrap_or(i64::MAX),
        });
    }
    drop(state);
    for c in &clients {
        c.close().await;
    }
    Trace { steps: trace }
}

/// Plays `steps` of `model` on a fresh in-memory store, under paused time.
///
/// # Panics
/// When the runtime cannot be built.
pub fn in_memory<M: Model>(model: M, steps: &[Step<M::Op>]) -> Trace<M::Seen> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = InMemoryServer::new();
        run(model, &server, steps).await
    })
}

/// `None` when the traces agree step by step; otherwise where and how they
/// part first: the steps up to there, both answers and both keyspaces.
///
/// Times in snapshots may differ by the lag of the real run (the most
/// either run lagged so far, plus [`TOLERANCE_MS`] for reading the clocks
/// at different points of a script). A run that lagged by
/// [`GRID_MARGIN_MS`] or more (a loaded machine) may see an expiry the
/// model does not: the comparison stops before that step.
pub fn compare<O: Debug, S: Debug + PartialEq>(
    steps: &[Step<O>],
    memory: &Trace<S>,
    store: &Trace<S>,
) -> Option<String> {
    let mut lag = 0;
    for (at, (m, s)) in memory.steps.iter().zip(&store.steps).enumerate() {
        lag = lag.max(m.lag_ms).max(s.lag_ms);
        if lag >= GRID_MARGIN_MS {
            CUT_SHORT.with(|n| n.set(n.get() + 1));
            return None;
        }
        let keys_agree = match (&m.keys, &s.keys) {
            (Some(a), Some(b)) => a.agrees(b, lag + TOLERANCE_MS),
            (a, b) => a.is_none() && b.is_none(),
        };
        if m.seen != s.seen || !keys_agree {
            return Some(format!(
                "the worlds part at step {at} of {steps:#?}\n\
                 in memory: {seen_m:?}\n{keys_m:#?}\n\
                 on the store (lagging {lag_s} ms): {seen_s:?}\n{keys_s:#?}",
                steps = &steps[..=at],
                seen_m = m.seen,
                keys_m = m.keys,
                lag_s = s.lag_ms,
                seen_s = s.seen,
                keys_s = s.keys,
            ));
        }
    }
    None
}

thread_local! {
    /// How many comparisons of this thread [`compare`] cut short.
    static CUT_SHORT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// How many comparisons on this thread so far stopped early because the
/// real run lagged [`GRID_MARGIN_MS`] behind the model.
pub fn cut_short() -> u32 {
    CUT_SHORT.with(std::cell::Cell::get)
}
