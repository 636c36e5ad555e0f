//! # lock-fair: the fair (FIFO) lock's script set
//!
//! [`Fair`] is the kind (its store operations over any
//! [`lock_script::Transport`]) and [`FairLock`] / [`HandoffLock`] its
//! handles: every client made by `lock_redis::connect` or
//! `lock_redis_cluster::connect` hands them out (`client.fair_lock(name)`,
//! `client.handoff_lock(name)`) in arrival order. It uses
//! the key layout of Redisson 4.x's `RedissonFairLock`, so Java services
//! using Redisson's fair lock and Rust services using this crate can share
//! a queue. It depends on the engine ([`lock_core`]) and the kind/transport
//! seam ([`lock_script`]) only; services depend on `lock-redis` (or
//! `lock-redis-cluster`), not on this crate.
//!
//! ```no_run
//! # async fn demo(orders: lock_fair::FairLock) -> lock_core::Result<()> {
//! // `orders`: `client.fair_lock("orders:42")?` of a `lock_redis::LockClient`
//! let guard = orders.lock().await?; // first come, first served
//! guard.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! ## On the server
//!
//! | item | key |
//! | --- | --- |
//! | lock | hash `<prefix><name>`, exactly the reentrant lock's (field `<client-uuid>:<owner-id>` → hold count) |
//! | queue | list `redisson_lock_queue:{<prefix><name>}`: waiting owner fields, head first |
//! | deadlines | zset `redisson_lock_timeout:{<prefix><name>}`: owner field → eviction deadline, epoch ms by the server's clock |
//! | a waiter's channel | `redisson_lock__channel:{<prefix><name>}:<client-uuid>:<owner-id>`, message `0` |
//! | request records, fencing counter | as the reentrant lock (`lock-redis`) |
//! | handoff entries (ours) | hash `redisson_lock_handoff:{<prefix><name>}`: owner field → `w:<lease ms>:<ticket>` (a queued wait that accepts a handoff) or `g:<ticket>` (the lock was granted to that wait); a grant is told with `g<ticket>` on the waiter's channel |
//!
//! (See [`lock_script::KeyLayout`] for names that contain `{`.)
//!
//! ## The algorithm
//!
//! Every script that writes (acquire, release, leave queue, force unlock)
//! first *evicts stale heads*: while the queue's head has no deadline, or
//! one at or before "now", it is removed from the list and the zset. "Now"
//! is the Redis server's clock (`TIME` inside the script), so client clock
//! skew can neither reorder nor evict waiters.
//!
//! - **Acquire.** If the lock is free and nobody is queued, or the caller is
//!   the queue's head, the caller takes it (and leaves the queue). If the
//!   caller holds it, it re-enters. Otherwise a waiting caller joins the
//!   queue's tail with deadline now + waiter timeout, or — already queued —
//!   keeps its place and moves its deadline to now + waiter timeout (behind
//!   a waiter whose deadline lies beyond that, such as a Redisson waiter:
//!   that deadline + waiter timeout; see *Mixed queues* below); it is
//!   told how long to wait: the holder's remaining time; or, when the lock
//!   is free but another waiter is first, 50 ms (or the time until that
//!   waiter's deadline, when sooner). A non-blocking try never joins the
//!   queue.
//! - **Waiting.** The engine queues a fair waiter from its first attempt,
//!   listens on the waiter's own channel, and attempts again (refreshing its
//!   deadline) on a notice, when the wait hint runs out, and at least every
//!   third of [`ClientConfig::waiter_timeout`]. See *Wake-ups* below for
//!   what that bounds.
//! - **Release** and **force unlock** tell only the queue head, on its own
//!   channel: one unlock wakes one waiter, no thundering herd. When the head
//!   takes the lock, the next waiter is told to look again (see *Wake-ups*). Force unlock
//!   keeps the queue.
//! - **Giving up.** A waiter that times out, or whose future is dropped,
//!   leaves the queue ([`ExclusiveKind::leave_queue`]); if the lock is free,
//!   the new head is told it is next.
//!
//! **Promise.** While every waiter is alive, the lock goes to waiters in the
//! order they joined the queue; a holder's re-entry never waits. A waiter
//! that dies (process killed, network gone) stops refreshing and holds up
//! those behind it for at most [`ClientConfig::waiter_timeout`] (default
//! 5 s) after its last refresh, then is evicted — or, when at that refresh
//! the waiter ahead of it had a later deadline (a Redisson waiter, or one
//! with a longer waiter timeout), for at most the waiter timeout past that
//! deadline (earlier when a Redisson waiter moves it, see below).
//!
//! ## Direct handoff
//! [`Fair::with_handoff`] is the kind of
//! [`HandoffLock`]: its waits carry a ticket and
//! register in the handoff hash when they queue, and every release that
//! frees the lock (through either kind) grants it to the queue head when
//! the head is so registered: one hold with the lease it asked for, out of
//! the queue, told on its channel. The rules (a grant taken once, given
//! back by a wait that gives up, never to Redisson or fenced waits) are in
//! `src/scripts/prelude.lua`, beside `hand_over()`.
//!
//! ## Wake-ups
//!
//! A lock that comes free goes to the queue head, and the waiters behind it
//! learn the new holder's lease, without anyone else being disturbed:
//!
//! - **Unlock** (and force unlock): the head is told on its own channel and
//!   takes the lock within a round trip.
//! - **A lease that runs out** (nobody publishes): every waiter that last
//!   looked while that holder held the lock wakes when its lease ends, as
//!   last seen (a renewed lease wakes it early, to look again). The head
//!   takes the lock within a round trip. A waiter behind it that looks
//!   before that finds the lock free with another waiter first and looks
//!   again 50 ms later: by then the head holds it, and the waiter sleeps
//!   until the new holder's lease ends. So the next waiter in line wakes no
//!   later than *max(the new holder's lease end, its take-over + 50 ms)*
//!   plus one round trip — one round trip after the lease end for any lease
//!   over 50 ms — never up to a third of the waiter timeout later (issue
//!   16), and takes the lock then if that holder let its lease run out too.
//! - **A dead or slow head**: a free lock waits for its head until the
//!   head's deadline (see *Promise*); the waiters behind look again every
//!   50 ms meanwhile, so the next one in line evicts it and takes the lock
//!   within 50 ms plus a round trip of that deadline. That recheck is the
//!   price: while the head is dead, each waiter behind it makes one attempt
//!   per 50 ms until the head's deadline — at most *waiter timeout / 50 ms*
//!   attempts behind one of our waiters (100 with the default 5 s), more
//!   behind a dead Redisson waiter, whose deadline lies minutes ahead —
//!   where it used to make one per third of the waiter timeout.
//! - **A take-over**: when the head takes the lock (after an unlock, or
//!   after the lease before it ran out), the waiter now first in line is
//!   told once, on its own channel, and looks again: it learns the new
//!   holder's lease and sleeps until it ends, instead of keeping the wait it
//!   was given while the old holder held the lock. So the next waiter in
//!   line follows even a short lease that runs out within one round trip.
//!   This costs at most one more message per hand-off (a waiter that gets
//!   the take-over and the next unlock before it looks again wakes once);
//!   nobody else is disturbed.
//!
//! ## Compatibility with Redisson, and where we differ
//!
//! Keys, value types, channels, messages and the acquire/release replies are
//! Redisson's. A Redisson waiter queued on a lock (list entry plus deadline)
//! is respected by our acquire — we never take a free lock past it — and is
//! told on its own channel when it becomes the head. Deliberate
//! differences:
//!
//! - **Deadlines.** Redisson gives a new waiter the deadline *(deadline of
//!   the waiter before it, or the lock's TTL) + wait time (5 minutes by
//!   default) + now*, and when a waiter takes the lock or gives up, moves
//!   the remaining deadlines earlier by that wait time. We give each waiter
//!   *now + waiter timeout*, let live waiters refresh their own deadline
//!   while they wait, and never change anybody else's deadline. So a
//!   Redisson waiter sharing our queue is evicted later than Redisson alone
//!   would evict it, never earlier: safe, at worst slower to clear a dead
//!   Redisson waiter.
//! - **Mixed queues.** The other way round, a Redisson waiter that takes the
//!   lock or gives up moves the deadline of every waiter behind it earlier
//!   by its wait time (`ZINCRBY -wait`, 5 minutes by default). A deadline of
//!   ours, only seconds ahead, would then lie in the past: evicted by the
//!   next script, our waiter would join again at the tail. So a waiter of
//!   ours behind a waiter whose deadline lies beyond its own (a Redisson
//!   waiter, or one of ours queued behind one) takes that deadline + its
//!   waiter timeout instead, whenever it joins or refreshes. After the
//!   decrement its deadline still lies a waiter timeout past what is left
//!   of the one ahead: it stays live and keeps its place, and refreshes as
//!   usual; a waiter of ours that died is evicted soon after the one ahead
//!   is gone (its deadline is frozen at its last refresh). What remains: a
//!   Redisson waiter whose deadline is *(join time + the lock's TTL then +
//!   wait time)*, and that takes the lock more than *(the lock's TTL then +
//!   our waiter timeout)* after it joined (because the holder's watchdog
//!   kept renewing), still moves our waiter behind it into the past: that
//!   waiter is evicted and joins again at the tail on its next attempt.
//!   Mutual exclusion is never
//!   affected (it rests on the lock hash alone), but arrival order across
//!   Redisson and our clients stays best effort in those cases.
//! - **Wait hint.** A queued caller is told the lock's remaining time when
//!   it is held, and otherwise (free, but another waiter is first) 50 ms, or
//!   the time until the head's deadline when sooner (see *Wake-ups*).
//!   Redisson estimates the wait from the deadline of the waiter before the
//!   caller.
//! - **Force unlock** tells the queue head even when no lock existed (after
//!   evicting stale heads), so a waiter that missed a notice is not left
//!   waiting for its recheck.
//! - **Retries.** Acquire and release keep every outcome in a request
//!   record for the retry window, like our reentrant lock (Redisson records
//!   unlocks only). A queued ("held") outcome is recorded too: a repeat writes
//!   nothing — it neither takes the lock nor queues or refreshes the waiter —
//!   so a late duplicate cannot queue a waiter that already left.
//!
//! ## Errors
//!
//! As every kind's (see [`lock_script::error`]): a
//! non-hash value at the lock key is [`LockError::WrongType`] and is never
//! overwritten; an unreachable server is a retryable
//! [`LockError::Unavailable`].
#![deny(missing_docs)]

mod handle;
mod handoff;
mod kind;
mod replies;
// The scripts, for the test suites and lock-bench; not an API.
#[doc(hidden)]
pub mod scripts;

pub use handle::{FairLock, FairLockInfo, QueuedWaiter};
pub use handoff::HandoffLock;
pub use kind::Fair;

#[cfg(doc)]
use lock_core::backend::ExclusiveKind;
#[cfg(doc)]
use lock_core::{ClientConfig, LockError};
