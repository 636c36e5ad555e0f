//! The conformance suite: behaviour checks every backend must pass.
//!
//! Each check is a `pub async fn(&dyn Harness)`. A deployment crate runs
//! them all with [`conformance_tests!`](crate::conformance_tests) (the
//! reentrant lock) and [`fair_conformance_tests!`](crate::fair_conformance_tests)
//! (the fair lock) and [`rwlock_conformance_tests!`](crate::rwlock_conformance_tests)
//! (the read-write lock), giving a [`Harness`]: a way to connect new clients to one
//! shared store, plus raw access to the store as another Redis client (or
//! Redisson) would have.
//!
//! One file per kind holds that kind's own behaviours (`fair.rs`,
//! `fenced.rs` — the fenced lock is the reentrant lock with every
//! acquisition fenced, so its checks run in the reentrant suite; the
//! reentrant lock's are the shared engine behaviours below plus its own in
//! `waiting.rs` and `layout.rs`); the shared checks take their locks with
//! [`lock`], which gives a handle of the suite's [`Kind`], so every engine
//! behaviour is checked for every kind. As tests, a kind's shared checks
//! sit in a module `shared` beside its own, so a run can keep to one
//! kind's own checks with `--skip ::shared::` (the Valkey lane of
//! `scripts/test.sh` runs the shared checks for the reentrant lock only).
//!
//! `multi.rs` and `redlock.rs` check the locks composed over several
//! stores ([`lock_core::MultiLock`], [`lock_core::RedLock`]); they take a
//! set of independent stores instead of one harness, and run with
//! [`multi_conformance_tests!`](crate::multi_conformance_tests).
//!
//! Checks use short durations (watchdog timeouts under a second) so they run
//! in seconds on real Redis and instantly under paused time in memory.
//! Checks assert on time measured with `tokio::time::Instant`, so they hold
//! for both.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use lock_core::{ClientConfig, Lock, LockClient, LockName};
use lock_script::KeyLayout;

pub mod basics;
pub mod cancellation;
pub mod describe;
pub mod errors;
pub mod fair;
pub mod fenced;
pub mod handoff;
pub mod holds;
pub mod latch;
pub mod layout;
pub mod lean;
pub mod leases;
pub mod multi;
pub mod non_reentrant;
pub mod permit_many;
pub mod permit_semaphore;
pub mod polling;
pub mod records;
pub mod redlock;
pub mod rwlock;
pub mod semaphore;
pub mod waiting;

/// Which kind of lock a suite checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// [`LockClient::lock`].
    Reentrant,
    /// [`LockClient::fair_lock`].
    Fair,
    /// [`LockClient::handoff_lock`].
    Handoff,
}

impl Kind {
    /// Every kind a client hands out. The property test
    /// (`lock_testkit::model`, run by lock-redis's `tests/model.rs`) checks
    /// each of them: a new kind added here is compared between the
    /// in-memory store and Redis without further code.
    pub const ALL: &'static [Kind] = &[Kind::Reentrant, Kind::Fair];
}

/// A handle of `h`'s kind on lock `name` of client `c`.
///
/// # Panics
/// When the name is invalid or the client lacks the kind.
pub fn lock(h: &dyn Harness, c: &LockClient, name: impl AsRef<str>) -> Lock {
    kind_lock(h.kind(), c, name)
}

/// A handle of `kind` on lock `name` of client `c` (for code that cannot
/// borrow the harness, such as spawned tasks).
///
/// # Panics
/// When the name is invalid or the client lacks the kind.
pub fn kind_lock(kind: Kind, c: &LockClient, name: impl AsRef<str>) -> Lock {
    match kind {
        Kind::Reentrant => c.lock(name).expect("a reentrant lock"),
        Kind::Fair => c.fair_lock(name).expect("a fair lock").as_lock().clone(),
        Kind::Handoff => c
            .handoff_lock(name)
            .expect("a handoff lock")
            .as_lock()
            .clone(),
    }
}

/// Access to one store under test.
#[async_trait]
pub trait Harness: Send + Sync {
    /// Which kind of lock the checks take ([`lock`]); reentrant unless a
    /// suite says otherwise ([`FairSuite`]).
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
    /// The key layout those clients use.
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

/// A harness whose checks take fair locks ([`Harness::kind`] is
/// [`Kind::Fair`]): the same store, the same clients.
pub struct FairSuite<H>(pub H);

/// A harness whose checks take direct-handoff locks ([`Harness::kind`] is
/// [`Kind::Handoff`]): the same store, the same clients.
pub struct HandoffSuite<H>(pub H);

/// Implements [`Harness`] for a wrapper `$ty<H>` of an inner harness in
/// its field `0`: `kind` and `client` are given, every store method is the
/// inner harness's (the fair suite and the polling variant are such
/// wrappers).
macro_rules! wrapping_harness {
    ($ty:ident, |$s:ident| $kind:block, |$s2:ident, $config:ident| $client:block) => {
        #[async_trait::async_trait]
        impl<H: Harness> Harness for $ty<H> {
            fn kind(&$s) -> Kind $kind
            async fn client(&$s2, $config: ClientConfig) -> LockClient $client
            fn nodes(&self) -> u64 {
                self.0.nodes()
            }
            fn layout(&self) -> KeyLayout {
                self.0.layout()
            }
            async fn set_string(&self, key: &str, value: &str) {
                self.0.set_string(key, value).await;
            }
            async fn get_string(&self, key: &str) -> Option<String> {
                self.0.get_string(key).await
            }
            async fn hash(&self, key: &str) -> Vec<(String, i64)> {
                self.0.hash(key).await
            }
            async fn hset(&self, key: &str, field: &str, value: i64, pexpire_ms: Option<u64>) {
                self.0.hset(key, field, value, pexpire_ms).await;
            }
            async fn pttl(&self, key: &str) -> i64 {
                self.0.pttl(key).await
            }
            async fn del(&self, key: &str) -> bool {
                self.0.del(key).await
            }
            async fn keys(&self) -> Vec<String> {
                self.0.keys().await
            }
            async fn publish(&self, channel: &str, message: &str) {
                self.0.publish(channel, message).await;
            }
            async fn subscribers(&self, channel: &str) -> usize {
                self.0.subscribers(channel).await
            }
            async fn list(&self, key: &str) -> Vec<String> {
                self.0.list(key).await
            }
            async fn enqueue(&self, key: &str, zkey: &str, score: i64, value: &str) {
                self.0.enqueue(key, zkey, score, value).await;
            }
            async fn zscore(&self, key: &str, member: &str) -> Option<i64> {
                self.0.zscore(key, member).await
            }
            async fn now_ms(&self) -> i64 {
                self.0.now_ms().await
            }
        }
    };
}
pub(crate) use wrapping_harness;

wrapping_harness!(FairSuite, |self| { Kind::Fair }, |self, config| {
    self.0.client(config).await
});

wrapping_harness!(HandoffSuite, |self| { Kind::Handoff }, |self, config| {
    self.0.client(config).await
});

#[async_trait]
impl Harness for std::sync::Arc<dyn Harness> {
    fn kind(&self) -> Kind {
        (**self).kind()
    }
    async fn client(&self, config: ClientConfig) -> LockClient {
        (**self).client(config).await
    }
    fn nodes(&self) -> u64 {
        (**self).nodes()
    }
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

/// The watchdog timeout the checks use: short, so holding "past several
/// timeouts" takes a few seconds on a real server.
pub const WATCHDOG: Duration = Duration::from_millis(900);

/// The client configuration the checks use.
pub fn config() -> ClientConfig {
    ClientConfig::default().watchdog_timeout(WATCHDOG)
}

/// Whether `c`'s waiters subscribe to unlock notices (the default), rather
/// than poll ([`lock_core::WaitStrategy::Poll`]): checks of how a waiter
/// learns of an unlock assert the mechanism of the client's strategy.
pub fn subscribes(c: &LockClient) -> bool {
    c.config().wait_strategy.subscribes()
}

/// A new client with [`config`].
pub async fn client(h: &dyn Harness) -> LockClient {
    h.client(config()).await
}

/// A lock name unique to one check run, so checks may share a store.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// The key of lock `name` under the harness's layout.
pub fn key(h: &dyn Harness, name: &str) -> String {
    h.layout().lock_key(&lock_name(name))
}

/// The fencing-token counter of lock `name`.
pub fn token_key(h: &dyn Harness, name: &str) -> String {
    h.layout().token_key(&lock_name(name))
}

/// The unlock channel of lock `name`.
pub fn channel(h: &dyn Harness, name: &str) -> String {
    h.layout().channel(&lock_name(name))
}

fn lock_name(name: &str) -> LockName {
    LockName::new(name).expect("check names are valid")
}

/// Polls `cond` every 10 ms until it holds or `within` passes; panics with
/// `what` then. For conditions that become true asynchronously (a
/// background release, an unsubscribe).
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if cond().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not within {within:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Keys this check's lock left behind, other than request records (which
/// expire on their own) and the fencing counter (which must never expire).
pub async fn leftover_keys(h: &dyn Harness, name: &str) -> Vec<String> {
    h.keys()
        .await
        .into_iter()
        .filter(|k| k.contains(name))
        .filter(|k| !k.contains("_latch:") && !k.starts_with("redisson_lock_token:"))
        .collect()
}

/// Runs every check of the suite for reentrant locks as its own test. Pass
/// the test attribute (e.g. `#[tokio::test(start_paused = true)]`) and an
/// async function that returns the harness:
///
/// ```text
/// lock_testkit::conformance_tests!(#[tokio::test(start_paused = true)] harness = memory_harness);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($(#[$attr:meta])* harness = $make:path) => {
        $crate::__reentrant_checks! { __conformance_each; [$(#[$attr])*] $make }
    };
}

/// Runs every check of the suite for fair locks: the checks every lock
/// kind passes, and the fair ones (`fair.rs`), on the same harness as
/// [`conformance_tests!`](crate::conformance_tests): its clients hand out
/// both kinds.
#[macro_export]
macro_rules! fair_conformance_tests {
    ($(#[$attr:meta])* harness = $make:path) => {
        async fn __fair_suite() -> $crate::conformance::FairSuite<impl $crate::conformance::Harness> {
            $crate::conformance::FairSuite($make().await)
        }
        $crate::__fair_checks! { __conformance_each; [$(#[$attr])*] __fair_suite }
    };
}

/// Runs every check of the suite for direct-handoff locks: the checks
/// every lock kind passes, and the handoff ones (`handoff.rs`), on the same
/// harness as [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! handoff_conformance_tests {
    ($(#[$attr:meta])* harness = $make:path) => {
        async fn __handoff_suite() -> $crate::conformance::HandoffSuite<impl $crate::conformance::Harness> {
            $crate::conformance::HandoffSuite($make().await)
        }
        $crate::__handoff_checks! { __conformance_each; [$(#[$attr])*] __handoff_suite }
    };
}

/// The direct-handoff lock's checks as `(name, check)` pairs; see
/// [`conformance_checks!`](crate::conformance_checks).
#[macro_export]
macro_rules! handoff_conformance_checks {
    () => {
        $crate::__handoff_checks! { __conformance_list; [] unused }
    };
}

/// Implementation detail: the direct-handoff lock's checks, handed to
/// `$each`.
#[doc(hidden)]
#[macro_export]
macro_rules! __handoff_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path) => {
        $crate::__with_shared_checks! {
            $each;
            [$(#[$attr])*] $make;
            handoff::a_release_hands_the_lock_to_the_waiter,
            handoff::grants_follow_the_queue_and_exclude,
            handoff::a_missed_grant_is_taken_by_the_next_look,
            handoff::another_call_of_the_owner_enters_again,
            handoff::a_wait_that_gives_up_gives_its_grant_back,
            handoff::a_dropped_waiter_leaves_the_lock_free_or_handed_on,
            handoff::a_redisson_waiter_at_the_head_is_told_not_granted,
            handoff::a_fenced_wait_is_never_granted,
            handoff::a_plain_fair_release_grants_too,
            handoff::a_handoff_cycle_leaves_no_keys,
        }
    };
}

/// Runs every check of the count-down latch (`latch.rs`), and of
/// [`LockClient::describe`] (`describe.rs`), as its own test, on the same
/// harness as [`conformance_tests!`](crate::conformance_tests).
#[macro_export]
macro_rules! latch_conformance_tests {
    ($(#[$attr:meta])* harness = $make:path) => {
        $crate::__latch_checks! { __conformance_each; [$(#[$attr])*] $make }
    };
}

/// The count-down latch's checks as `(name, check)` pairs; see
/// [`conformance_checks!`](crate::conformance_checks).
#[macro_export]
macro_rules! latch_conformance_checks {
    () => {
        $crate::__latch_checks! { __conformance_list; [] unused }
    };
}

/// Implementation detail: the count-down latch's checks, handed to `$each`.
#[doc(hidden)]
#[macro_export]
macro_rules! __latch_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path) => {
        $crate::$each! {
            [$(#[$attr])*] $make;
            latch::await_timeout,
            latch::await_timeout_fail,
            latch::multi_await,
            latch::count_down,
            latch::delete,
            latch::delete_failed,
            latch::try_set_count,
            latch::count,
            latch::single_count_down_await_single_instance,
            latch::zero_notice_wakes_every_waiter,
            latch::redisson_count_down_wakes_us,
            latch::new_count_message_makes_waiters_look_again,
            latch::layout_is_redissons,
            latch::repeated_writes_count_once,
            latch::invalid_counts_fail_before_io,
            latch::counts_down_exactly_from_the_maximum,
            latch::wrong_type_is_reported_and_left_untouched,
            latch::dropped_wait_leaves_no_subscription,
            latch::name_with_its_own_hash_tag_works_or_is_refused,
            latch::closed_client_rejects_latch_operations,
            describe::describe_tells_the_layouts_apart,
        }
    };
}

/// Runs every check of the two semaphore kinds (`semaphore.rs`,
/// `permit_semaphore.rs`, `permit_many.rs`) on the same harness as
/// [`conformance_tests!`](crate::conformance_tests). Semaphores are no
/// [`Lock`], so they are not a [`Kind`] of the lock suites: they have
/// checks of their own.
#[macro_export]
macro_rules! semaphore_conformance_tests {
    ($(#[$attr:meta])* harness = $make:path) => {
        $crate::__semaphore_checks! { __conformance_each; [$(#[$attr])*] $make }
    };
}

/// The semaphore kinds' checks as `(name, check)` pairs; see
/// [`conformance_checks!`](crate::conformance_checks).
#[macro_export]
macro_rules! semaphore_conformance_checks {
    () => {
        $crate::__semaphore_checks! { __conformance_list; [] unused }
    };
}

/// Implementation detail: the semaphore kinds' checks, handed to `$each`.
#[doc(hidden)]
#[macro_export]
macro_rules! __semaphore_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path) => {
        $crate::$each! {
            [$(#[$attr])*] $make;
            semaphore::try_set_permits_sets_once,
            semaphore::acquire_and_release_count_permits,
            semaphore::dropped_guard_gives_permits_back,
            semaphore::forgotten_permits_are_released_by_another_client,
            semaphore::release_wakes_a_waiter,
            semaphore::release_of_n_wakes_n_waiters,
            semaphore::waiter_for_many_waits_until_enough_are_free,
            semaphore::try_acquire_for_honours_its_deadline,
            semaphore::at_most_n_hold_at_once,
            semaphore::add_and_drain_permits,
            semaphore::ttl_is_kept_by_acquire_and_release_dropped_by_add,
            semaphore::repeated_changes_count_once,
            semaphore::dropped_acquire_leaves_no_permit,
            semaphore::redisson_style_release_wakes_us,
            semaphore::bad_permit_counts_are_refused,
            semaphore::wrong_type_is_reported_and_left_untouched,
            semaphore::closed_client_rejects_semaphores,
            semaphore::release_if_exists_gives_back_only_to_an_existing_semaphore,
            semaphore::repeated_try_set_answers_its_first_reply,
            permit_semaphore::acquire_gives_an_id_and_release_takes_it,
            permit_semaphore::expired_permit_comes_back_by_itself,
            permit_semaphore::waiter_takes_a_permit_when_its_lease_ends,
            permit_semaphore::release_by_id_wakes_a_waiter,
            permit_semaphore::update_lease_time_moves_the_lease_end,
            permit_semaphore::unleased_permit_stays_taken,
            permit_semaphore::add_permits_wakes_waiters,
            permit_semaphore::repeated_requests_count_once,
            permit_semaphore::dropped_permit_acquire_leaves_no_permit,
            permit_semaphore::bad_input_is_refused,
            permit_many::set_permits_moves_the_free_count_by_the_difference,
            permit_many::many_permits_are_taken_and_given_back_all_or_none,
            permit_many::lease_time_tells_what_is_left,
            permit_many::repeated_totals_and_many_requests_count_once,
            permit_many::bad_input_to_totals_and_many_is_refused,
            permit_semaphore::watchdog_renews_a_held_permit,
            permit_semaphore::lost_signal_when_permit_taken_away,
            permit_semaphore::release_by_id_on_the_same_client_tells_the_guard,
            permit_semaphore::dropped_permit_guard_gives_it_back,
            permit_semaphore::leased_permit_expires_and_signals,
            permit_semaphore::update_lease_time_moves_the_guard_deadline,
            permit_semaphore::close_tells_watchdog_permit_guards,
            permit_semaphore::broken_semaphore_does_not_stop_other_renewals,
        }
    };
}

/// Runs every check of the read-write lock (`rwlock.rs`) as its own test,
/// on the same harness as [`conformance_tests!`](crate::conformance_tests):
/// its clients hand out every kind.
#[macro_export]
macro_rules! rwlock_conformance_tests {
    ($(#[$attr:meta])* harness = $make:path) => {
        $crate::__rwlock_checks! { __conformance_each; [$(#[$attr])*] $make }
    };
}

/// The read-write lock's checks as `(name, check)` pairs; see
/// [`conformance_checks!`](crate::conformance_checks).
#[macro_export]
macro_rules! rwlock_conformance_checks {
    () => {
        $crate::__rwlock_checks! { __conformance_list; [] unused }
    };
}

/// Implementation detail: the read-write lock's checks, handed to `$each`.
#[doc(hidden)]
#[macro_export]
macro_rules! __rwlock_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path) => {
        $crate::$each! {
            [$(#[$attr])*] $make;
            rwlock::readers_share_and_exclude_a_writer,
            rwlock::writer_excludes_readers_and_writers,
            rwlock::writers_never_overlap_anyone,
            rwlock::read_holds_have_their_own_timeout_keys,
            rwlock::lock_ttl_follows_the_longest_live_read_hold,
            rwlock::write_unlock_wakes_every_waiting_reader,
            rwlock::read_unlock_wakes_a_waiting_writer,
            rwlock::writer_downgrades_by_reading_then_releasing_write,
            rwlock::reader_cannot_upgrade,
            rwlock::read_holds_reenter_by_owner,
            rwlock::watchdog_keeps_read_holds_alive,
            rwlock::deleted_lock_fires_the_readers_lost_signal,
            rwlock::force_unlock_per_side,
            rwlock::wrong_type_is_reported_and_left_untouched,
            rwlock::plain_lock_of_the_name_is_not_written_into,
            rwlock::dropped_acquires_leave_nothing_held,
            rwlock::a_waiting_writer_holds_new_readers_off,
            rwlock::a_writer_that_gives_up_lets_readers_in,
        }
    };
}

/// Implementation detail: the reentrant lock's checks, handed to `$each`.
#[doc(hidden)]
#[macro_export]
macro_rules! __reentrant_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path) => {
        $crate::__with_shared_checks! {
            $each;
            [$(#[$attr])*] $make;
            waiting::one_unlock_wakes_one_waiter,
            waiting::waiter_joining_a_live_subscription_tries_once,
            waiting::many_waiters_share_one_subscription,
            layout::redisson_style_unlock_notice_wakes_us,
            fenced::five_rounds_hand_out_tokens_one_to_five,
            fenced::every_acquisition_advances_the_token,
            fenced::token_reads_the_counter_which_is_never_reset,
            fenced::fenced_and_plain_locks_of_a_name_exclude_each_other,
            fenced::wrong_type_at_the_token_key_is_reported_and_left_untouched,
            non_reentrant::the_holder_is_refused_and_keeps_its_one_hold,
            non_reentrant::other_owners_wait_for_the_unlock,
            non_reentrant::reentrant_and_non_reentrant_locks_of_a_name_are_one_lock,
            lean::the_key_holds_the_token_and_the_holder_is_refused,
            lean::a_foreign_holder_excludes_us_and_its_release_is_seen,
            lean::an_unlock_after_expiry_leaves_the_next_holders_token,
            lean::the_watchdog_keeps_it_and_the_unlock_wakes_a_waiter,
            lean::fenced_acquisitions_advance_the_token,
            lean::a_reentrant_lock_of_the_name_is_the_wrong_type,
        }
    };
}

/// Implementation detail: the fair lock's checks, handed to `$each`.
#[doc(hidden)]
#[macro_export]
macro_rules! __fair_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path) => {
        $crate::__with_shared_checks! {
            $each;
            [$(#[$attr])*] $make;
            fair::waiters_acquire_in_arrival_order,
            fair::try_lock_never_queues_nor_jumps_the_queue,
            fair::timed_out_waiter_leaves_the_queue,
            fair::cancelled_waiter_leaves_the_queue,
            fair::release_wakes_only_the_queue_head,
            fair::dead_waiter_is_skipped_within_the_waiter_timeout,
            fair::live_waiter_keeps_its_place_past_the_waiter_timeout,
            fair::a_late_duplicate_does_not_queue_a_waiter_that_left,
            fair::next_waiter_holds_when_the_new_holders_lease_runs_out,
            fair::behind_the_head_of_a_free_lock_a_waiter_looks_again_soon,
            fair::a_take_over_tells_the_next_waiter,
            fair::one_client_serves_plain_and_fair_locks,
        }
    };
}

/// Implementation detail: the checks every lock kind passes, followed by
/// the kind's own. As tests, the shared ones sit in a module `shared`, so
/// a run can keep to a kind's own checks (`--skip ::shared::`) where the
/// shared ones already ran for another kind (a second server's lane).
#[doc(hidden)]
#[macro_export]
macro_rules! __with_shared_checks {
    ($each:ident; [$(#[$attr:meta])*] $make:path; $($own:tt)*) => {
        $crate::$each! {
            @shared_then_own [$(#[$attr])*] $make;
            basics::lock_then_unlock_frees_it,
            basics::reentrant_holds_count_depth,
            basics::reentrant_release_keeps_the_lock,
            basics::scope_reenters_nested_locks,
            basics::joined_plain_locks_exclude_each_other,
            basics::try_lock_on_held_lock_returns_none,
            basics::other_clients_are_excluded,
            basics::mutual_exclusion_under_contention,
            basics::inspection_reports_holders_and_ttl,
            basics::force_unlock_frees_and_reports,
            basics::fencing_tokens_strictly_increase,
            basics::unfenced_acquisition_has_no_token,
            basics::concurrent_reentry_counts_exactly,
            waiting::try_lock_for_honours_its_deadline,
            waiting::unlock_wakes_a_waiter_before_the_ttl,
            waiting::waiter_acquires_when_holder_lease_expires,
            waiting::deleted_lock_without_notice_is_taken_within_ttl,
            waiting::force_unlock_wakes_a_waiter,
            waiting::waiters_acquire_in_turn,
            leases::lease_expiry_frees_the_lock,
            leases::watchdog_keeps_lock_past_several_timeouts,
            leases::renewal_stops_at_unlock,
            leases::watchdog_renews_many_locks_in_one_call_per_tick,
            leases::watchdog_renews_more_locks_than_a_slice_in_several_calls,
            leases::deleted_lock_fires_lost_signal,
            leases::force_unlock_fires_holders_lost_signal,
            leases::leased_guard_is_lost_when_lease_ends,
            leases::dropped_guard_releases_in_background,
            leases::close_tells_watchdog_guards,
            holds::loss_is_told_to_every_guard_of_the_owner,
            holds::not_held_release_tells_the_other_guards,
            holds::unlock_as_of_the_last_hold_tells_the_guards,
            holds::old_guard_dropped_after_reacquire_leaves_the_new_hold,
            holds::expired_guard_dropped_after_reacquire_leaves_the_new_hold,
            leases::short_reentry_does_not_shorten_the_hold,
            leases::releasing_a_short_reentry_keeps_the_watchdog_lease,
            leases::watchdog_reentry_does_not_shorten_a_longer_lease,
            errors::unlock_by_non_owner_is_not_held,
            errors::unlock_after_lease_ran_out_is_not_held,
            errors::invalid_arguments_fail_before_io,
            errors::foreign_owner_is_rejected,
            errors::wrong_type_is_reported_and_left_untouched,
            errors::bad_token_counter_fails_before_any_write,
            records::a_repeated_held_attempt_takes_nothing,
            records::a_repeated_not_held_release_frees_nothing,
            records::repeated_requests_return_their_first_outcome,
            errors::closed_client_rejects_operations,
            cancellation::dropped_waiter_leaves_nothing_behind,
            cancellation::dropped_acquire_leaves_no_lock,
            cancellation::dropped_unlock_still_releases,
            cancellation::woken_waiter_dropped_passes_wakeup_on,
            layout::hash_field_is_owner_and_count,
            layout::redisson_written_lock_blocks_us,
            layout::helper_keys_follow_the_layout;
            $($own)*
        }
    };
}

/// One conformance check, as [`conformance_checks!`](crate::conformance_checks) lists it.
pub type Check = for<'a> fn(&'a dyn Harness) -> futures::future::BoxFuture<'a, ()>;

/// The reentrant lock's checks as `(name, check)` pairs, for running them
/// all against one expensive store (such as a cluster) in a single test
/// rather than one store per test, as [`conformance_tests!`](crate::conformance_tests) does.
///
/// ```
/// let checks: Vec<(&str, lock_testkit::conformance::Check)> =
///     lock_testkit::conformance_checks!();
/// assert!(checks.len() >= 40);
/// ```
#[macro_export]
macro_rules! conformance_checks {
    () => {
        $crate::__reentrant_checks! { __conformance_list; [] unused }
    };
}

/// The fair lock's checks as `(name, check)` pairs; see
/// [`conformance_checks!`](crate::conformance_checks).
#[macro_export]
macro_rules! fair_conformance_checks {
    () => {
        $crate::__fair_checks! { __conformance_list; [] unused }
    };
}

/// Runs `checks` one after another against `harness`, each in its own task
/// (so a failing check does not stop the others) and bounded by `limit`.
/// Prints one line per check, like the test harness does, and returns the
/// names of the checks that failed.
pub async fn run_checks(
    harness: std::sync::Arc<dyn Harness>,
    checks: Vec<(&'static str, Check)>,
    limit: Duration,
) -> Vec<&'static str> {
    let mut failed = Vec::new();
    for (name, check) in checks {
        let h = harness.clone();
        let mut run = tokio::spawn(async move { check(&*h).await });
        let outcome = match tokio::time::timeout(limit, &mut run).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(match e.try_into_panic() {
                Ok(payload) => payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "panicked".to_owned()),
                Err(e) => e.to_string(),
            }),
            Err(_) => {
                run.abort();
                Err(format!("did not finish within {limit:?}"))
            }
        };
        match outcome {
            Ok(()) => eprintln!("check {name} ... ok"),
            Err(why) => {
                eprintln!("check {name} ... FAILED: {why}");
                failed.push(name);
            }
        }
    }
    failed
}

/// Implementation detail of [`conformance_checks!`](crate::conformance_checks).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_list {
    (@shared_then_own [$(#[$attr:meta])*] $make:path; $($shared:ident :: $s:ident),* ; $($own:tt)*) => {{
        let mut checks = $crate::__conformance_list! { [] unused; $($shared :: $s),* };
        checks.extend($crate::__conformance_list! { [] unused; $($own)* });
        checks
    }};
    ([$(#[$attr:meta])*] $make:path; $($group:ident :: $check:ident),* $(,)?) => {{
        let checks: ::std::vec::Vec<(&'static str, $crate::conformance::Check)> = ::std::vec![
            $((
                ::std::stringify!($check),
                (|h| ::std::boxed::Box::pin($crate::conformance::$group::$check(h)))
                    as $crate::conformance::Check,
            )),*
        ];
        checks
    }};
}

/// Implementation detail of [`conformance_tests!`](crate::conformance_tests).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_each {
    (@shared_then_own [$(#[$attr:meta])*] $make:path; $($shared:ident :: $s:ident),* ; $($own:tt)*) => {
        /// The checks every lock kind passes.
        mod shared {
            // The harness function (and the suite wrapper the kind's macro
            // defined) live in the invoking module.
            #[allow(unused_imports)]
            use super::*;

            $crate::__conformance_each! { [$(#[$attr])*] $make; $($shared :: $s),* }
        }
        $crate::__conformance_each! { [$(#[$attr])*] $make; $($own)* }
    };
    ([$(#[$attr:meta])*] $make:path;) => {};
    ([$(#[$attr:meta])*] $make:path; $group:ident :: $check:ident $(, $($rest:tt)*)?) => {
        $(#[$attr])*
        async fn $check() {
            let harness = $make().await;
            $crate::conformance::$group::$check(&harness).await;
        }
        $crate::__conformance_each! { [$(#[$attr])*] $make; $($($rest)*)? }
    };
}

/// Two clients of one store, and a lock `name` that `a` holds (`held`) with a
/// 20 s lease: long enough that anything quicker was a wake-up, not an
/// expiry.
pub struct Contended {
    /// The holder's client.
    pub a: LockClient,
    /// A second client, to contend from.
    pub b: LockClient,
    /// The lock's (unique) name.
    pub name: String,
    /// `a`'s guard.
    pub held: lock_core::Guard,
}

/// Sets up [`Contended`] for a lock named after `prefix`.
pub async fn contended(h: &dyn Harness, prefix: &str) -> Contended {
    let a = client(h).await;
    let b = client(h).await;
    let name = unique(prefix);
    let held = lock(h, &a, &name)
        .lock_with_lease(Duration::from_secs(20))
        .await
        .unwrap();
    Contended { a, b, name, held }
}

/// Waits until `waiters` waiters of `c` are parked: subscribed, done with
/// their attempts, asleep until a notice. A notice sent now wakes them.
pub async fn waiting(c: &LockClient, waiters: u64) {
    eventually(Duration::from_secs(3), "waiters parked", || async {
        c.stats().waiting >= waiters
    })
    .await;
}

/// The deadline of a request a check sends through a kind's store
/// operations itself: an hour from now by the wall clock, past any
/// paused-time advance of a check, so only the checks about deadlines meet
/// one.
pub fn request_deadline() -> u64 {
    lock_core::backend::deadline_in(std::time::Duration::from_secs(3600))
}
