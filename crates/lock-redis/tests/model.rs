//! Model-based property test: random sequences of acquire / release /
//! force-unlock / inspect / advance-time by several clients and owners give
//! the same observable results on the in-memory model and on real Redis.
//!
//! Time: the model runs under paused tokio time, Redis in real time. Leases
//! and time steps sit on a 100 ms grid offset by 50 ms (leases 150/350/950
//! ms, steps of 0–300 ms in 100 ms units), so no operation happens within
//! 50 ms of an expiry in either world, and both agree on what has expired.

use std::sync::Arc;
use std::time::Duration;

use lock_redis::{
    AcquireOutcome, AcquireRequest, LockBackend, LockInfo, LockName, Owner, RedisBackend,
    RedisConfig, ReleaseOutcome, ReleaseRequest,
};
use lock_testkit::fixtures::RedisServer;
use lock_testkit::InMemoryServer;
use proptest::prelude::*;

const CLIENTS: usize = 2;
const LEASES_MS: [u64; 3] = [150, 350, 950];

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        client: usize,
        owner: u64,
        lock: usize,
        lease: usize,
        fenced: bool,
    },
    Release {
        client: usize,
        owner: u64,
        lock: usize,
    },
    ForceUnlock {
        lock: usize,
    },
    Inspect {
        lock: usize,
    },
    Advance {
        steps: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..CLIENTS, 0..3u64, 0..2usize, 0..3usize, any::<bool>()).prop_map(
            |(client, owner, lock, lease, fenced)| Op::Acquire { client, owner, lock, lease, fenced }
        ),
        3 => (0..CLIENTS, 0..3u64, 0..2usize)
            .prop_map(|(client, owner, lock)| Op::Release { client, owner, lock }),
        1 => (0..2usize).prop_map(|lock| Op::ForceUnlock { lock }),
        2 => (0..2usize).prop_map(|lock| Op::Inspect { lock }),
        2 => (0..4u64).prop_map(|steps| Op::Advance { steps }),
    ]
}

/// What one operation showed. TTLs are compared by presence only: their
/// values differ by the real time the Redis run takes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Acquired(Option<u64>),
    Held {
        has_ttl: bool,
    },
    Release(ReleaseOutcome),
    Forced(bool),
    Info {
        holders: Vec<(String, u64)>,
        has_ttl: bool,
    },
    Advanced,
}

fn owner(client: usize, id: u64) -> Owner {
    // Fixed client ids, so both worlds write the same hash fields.
    Owner::new(uuid::Uuid::from_u128(0x1000 + client as u128), id)
}

fn name(lock: usize) -> LockName {
    LockName::new(format!("model-{lock}")).unwrap()
}

fn info(i: LockInfo) -> Seen {
    let mut holders: Vec<_> = i.holders.into_iter().map(|h| (h.field, h.count)).collect();
    holders.sort();
    Seen::Info {
        holders,
        has_ttl: i.ttl.is_some(),
    }
}

/// Runs `ops` with one backend per client, advancing time with `advance`.
async fn run<F, Fut>(backends: &[Arc<dyn LockBackend>], ops: &[Op], advance: F) -> Vec<Seen>
where
    F: Fn(Duration) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut seen = Vec::new();
    for op in ops {
        let s = match *op {
            Op::Acquire {
                client,
                owner: id,
                lock,
                lease,
                fenced,
            } => {
                let req = AcquireRequest::new(
                    name(lock),
                    owner(client, id),
                    LEASES_MS[lease],
                    fenced,
                    30_000,
                );
                match backends[client].try_acquire(&req).await.unwrap() {
                    AcquireOutcome::Acquired { fencing_token } => Seen::Acquired(fencing_token),
                    AcquireOutcome::Held { ttl } => Seen::Held {
                        has_ttl: ttl.is_some(),
                    },
                }
            }
            Op::Release {
                client,
                owner: id,
                lock,
            } => {
                let req = ReleaseRequest::new(name(lock), owner(client, id), LEASES_MS[2], 30_000);
                Seen::Release(backends[client].release(&req).await.unwrap())
            }
            Op::ForceUnlock { lock } => {
                Seen::Forced(backends[0].force_unlock(&name(lock)).await.unwrap())
            }
            Op::Inspect { lock } => info(backends[1].inspect(&name(lock)).await.unwrap()),
            Op::Advance { steps } => {
                advance(Duration::from_millis(100 * steps)).await;
                Seen::Advanced
            }
        };
        seen.push(s);
    }
    seen
}

fn in_memory(ops: &[Op]) -> Vec<Seen> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let server = InMemoryServer::new();
        let backends: Vec<Arc<dyn LockBackend>> = (0..CLIENTS)
            .map(|_| server.connect() as Arc<dyn LockBackend>)
            .collect();
        run(&backends, ops, tokio::time::advance).await
    })
}

fn on_redis(rt: &tokio::runtime::Runtime, server: &RedisServer, ops: &[Op]) -> Vec<Seen> {
    server.cmd(&["FLUSHALL"]);
    rt.block_on(async {
        let mut backends: Vec<Arc<dyn LockBackend>> = Vec::new();
        for _ in 0..CLIENTS {
            let backend = RedisBackend::connect(RedisConfig::new(server.url()))
                .await
                .unwrap();
            backends.push(Arc::new(backend));
        }
        let seen = run(&backends, ops, tokio::time::sleep).await;
        for b in &backends {
            b.close().await;
        }
        seen
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]

    #[test]
    fn in_memory_model_matches_redis(ops in proptest::collection::vec(op(), 1..25)) {
        thread_local! {
            static WORLD: (tokio::runtime::Runtime, RedisServer) = (
                tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap(),
                RedisServer::start(),
            );
        }
        let model = in_memory(&ops);
        let real = WORLD.with(|(rt, server)| on_redis(rt, server, &ops));
        prop_assert_eq!(model, real);
    }
}
