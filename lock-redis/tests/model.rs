//! Model-based property test: for every kind a client hands out
//! ([`model::Kind::ALL`]), the in-memory store and real Redis give the same
//! observable results for random operation sequences (see
//! `lock_testkit::model`). Both run the kind's own Lua scripts, so this
//! checks that the in-memory store (its embedded Lua, commands, expiry and
//! clock) answers the scripts as Redis does: what makes the in-memory
//! conformance runs under paused time stand for Redis.

use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use lock_testkit::model;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]

    #[test]
    fn in_memory_matches_redis_for_every_kind(ops in model::ops()) {
        thread_local! {
            static WORLD: (tokio::runtime::Runtime, RedisServer) = (
                tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap(),
                RedisServer::start(),
            );
        }
        for &kind in model::Kind::ALL {
            let expected = model::in_memory(kind, &ops);
            let real = WORLD.with(|(rt, server)| {
                server.cmd(&["FLUSHALL"]);
                rt.block_on(model::on_store(
                    kind,
                    || async {
                        lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
                            .await
                            .unwrap()
                    },
                    &ops,
                ))
            });
            prop_assert_eq!(expected, real, "kind {:?}", kind);
        }
    }
}
