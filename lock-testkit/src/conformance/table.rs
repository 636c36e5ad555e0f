//! The suite as data: the checks every lock kind shares, with the smoke
//! subset marked, and one row per kind with the kind's own checks.
//! Deployments expand it with [`conformance_table!`](crate::conformance_table)
//! (a test per check) or [`kinds`](super::kinds) (lists, for a cluster's one
//! test); neither names a kind, so a kind added here runs wherever a
//! deployment's table says `all`.
//!
//! The smoke subset proves a deployment's wiring: a lock taken, excluded
//! and released over its connections; a waiter woken by its notices (or
//! its polls); the watchdog renewing in batches, sliced per node (its
//! lanes: a cluster's masters); the lost-lock signal; a dropped waiter
//! leaving nothing; a repeated request answered from its record (a retry
//! after a fault); every helper key under the deployment's layout. The
//! rest of the shared checks exercise the engine (`lock-core`) and the
//! kind's scripts, which are the same on every deployment: they run in
//! full for every kind in memory (both wait strategies) and on one
//! redis-server, and a deployment that only moves bytes differently runs
//! the smoke subset.

/// Implementation detail: the checks every lock kind shares, handed to
/// `$cb` as `smoke [..] rest [..]` after `$args`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_shared {
    ($cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)*
            smoke [
                basics::lock_then_unlock_frees_it,
                basics::other_clients_are_excluded,
                waiting::unlock_wakes_a_waiter_before_the_ttl,
                leases::watchdog_renews_more_locks_than_a_slice_in_several_calls,
                leases::deleted_lock_fires_lost_signal,
                cancellation::dropped_waiter_leaves_nothing_behind,
                records::repeated_requests_return_their_first_outcome,
                layout::helper_keys_follow_the_layout,
            ]
            rest [
                basics::reentrant_holds_count_depth,
                basics::reentrant_release_keeps_the_lock,
                basics::scope_reenters_nested_locks,
                basics::joined_plain_locks_exclude_each_other,
                basics::try_lock_on_held_lock_returns_none,
                basics::mutual_exclusion_under_contention,
                basics::inspection_reports_holders_and_ttl,
                basics::force_unlock_frees_and_reports,
                basics::fencing_tokens_strictly_increase,
                basics::unfenced_acquisition_has_no_token,
                basics::concurrent_reentry_counts_exactly,
                waiting::try_lock_for_honours_its_deadline,
                waiting::waiter_acquires_when_holder_lease_expires,
                waiting::deleted_lock_without_notice_is_taken_within_ttl,
                waiting::force_unlock_wakes_a_waiter,
                waiting::waiters_acquire_in_turn,
                leases::lease_expiry_frees_the_lock,
                leases::watchdog_keeps_lock_past_several_timeouts,
                leases::renewal_stops_at_unlock,
                leases::watchdog_renews_many_locks_in_one_call_per_tick,
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
                records::a_late_copy_of_a_released_acquisition_takes_nothing,
                records::a_late_copy_of_an_acquisition_adds_no_hold_to_a_newer_one,
                errors::closed_client_rejects_operations,
                cancellation::dropped_acquire_leaves_no_lock,
                cancellation::dropped_unlock_still_releases,
                cancellation::woken_waiter_dropped_passes_wakeup_on,
                layout::hash_field_is_owner_and_count,
                layout::redisson_written_lock_blocks_us,
            ]
        }
    };
}

/// Implementation detail: the kinds, one arm each, handed to `$cb` as
/// `name, lock(Kind) [own checks]` (a lock kind: the shared checks run on
/// its handles too) or `name, own [own checks]` (a kind that is no lock:
/// its own checks only). `all` lists every kind; a new kind is its name
/// there and an arm here.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_kinds {
    (all => $cb:ident $args:tt) => {
        $crate::__conformance_kinds! {
            [reentrant, lean, fair, handoff, read_write, latch, semaphores] => $cb $args
        }
    };
    ([$($kind:ident),* $(,)?] => $cb:ident $args:tt) => {
        $( $crate::__conformance_kinds! { $kind => $cb $args } )*
    };
    // The fenced lock is the reentrant lock with every acquisition fenced,
    // and the non-reentrant lock the reentrant lock refusing its holder:
    // their checks are the reentrant kind's.
    (reentrant => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* reentrant, lock(Reentrant) [
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
            ]
        }
    };
    // The lean lock is not re-entrant, which most shared checks rely on:
    // its own checks cover the engine paths it uses on its own layout.
    (lean => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* lean, own [
                lean::the_key_holds_the_token_and_the_holder_is_refused,
                lean::a_foreign_holder_excludes_us_and_its_release_is_seen,
                lean::an_unlock_after_expiry_leaves_the_next_holders_token,
                lean::the_watchdog_keeps_it_and_the_unlock_wakes_a_waiter,
                lean::fenced_acquisitions_advance_the_token,
                lean::a_reentrant_lock_of_the_name_is_the_wrong_type,
            ]
        }
    };
    (fair => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* fair, lock(Fair) [
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
            ]
        }
    };
    (handoff => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* handoff, lock(Handoff) [
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
            ]
        }
    };
    (read_write => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* read_write, own [
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
            ]
        }
    };
    // The count-down latch, and `LockClient::describe`.
    (latch => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* latch, own [
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
                describe::describe_names_each_holders_client,
            ]
        }
    };
    // The two semaphore kinds: counted permits and permits with ids.
    (semaphores => $cb:ident ($($args:tt)*)) => {
        $crate::$cb! {
            $($args)* semaphores, own [
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
            ]
        }
    };
}
