//! Model-based property test: the in-memory model and real Redis give the
//! same observable results for random sequences on fair locks, queueing included (see
//! `lock_testkit::model`).

use lock_redis::{ClientConfig, RedisConfig};
use lock_testkit::fixtures::RedisServer;
use lock_testkit::model;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]

    #[test]
    fn in_memory_fair_model_matches_redis(ops in model::ops()) {
        thread_local! {
            static WORLD: (tokio::runtime::Runtime, RedisServer) = (
                tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap(),
                RedisServer::start(),
            );
        }
        let expected = model::in_memory(model::Kind::Fair, &ops);
        let real = WORLD.with(|(rt, server)| {
            server.cmd(&["FLUSHALL"]);
            rt.block_on(model::on_store(
                model::Kind::Fair,
                || async {
                    lock_redis::connect(RedisConfig::new(server.url()), ClientConfig::default())
                        .await
                        .unwrap()
                },
                &ops,
            ))
        });
        prop_assert_eq!(expected, real);
    }
}
