//! The lock scripts of `lock-redis` (reentrant) and `lock-fair` (fair), run
//! on the in-memory keyspace. Each function is the twin of one Lua script
//! and must stay observably identical to it: same keys, same replies, same
//! effect on hold counts, expiry, latches, queues and the fencing counter.

use std::time::Duration;

use lock_core::{
    AcquireOutcome, AcquireRequest, FairLockInfo, Holder, LockError, LockInfo, LockName,
    QueuedWaiter, ReleaseOutcome, ReleaseRequest, RenewTarget, Result,
};
use lock_script::KeyLayout;

use super::keyspace::{Keyspace, WrongType};

/// A channel a script publishes the unlock message on, once the store's
/// lock is released.
pub(crate) type Publish = Option<String>;

/// What every script sees: the keys, the layout and the store's clock.
pub(crate) struct Ctx<'a> {
    pub(crate) keys: &'a mut Keyspace,
    pub(crate) layout: &'a KeyLayout,
    /// The store's clock, milliseconds since the Unix epoch (Redis `TIME`).
    pub(crate) now_ms: i64,
}

fn wrong_type(key: &str) -> impl FnOnce(WrongType) -> LockError + '_ {
    move |WrongType| LockError::WrongType {
        key: key.to_owned(),
    }
}

fn ttl_of(pttl: i64) -> Option<Duration> {
    u64::try_from(pttl).ok().map(Duration::from_millis)
}

fn acquired(token: u64) -> AcquireOutcome {
    AcquireOutcome::Acquired {
        fencing_token: (token > 0).then_some(token),
    }
}

// ---- steps shared by both kinds ----

/// The latch value of an acquisition that found the lock held
/// (`LATCH_HELD` of `common.lua`).
const LATCH_HELD: &str = "held";
/// The latch value of a release by an owner that did not hold the lock
/// (`LATCH_NOT_HELD` of `common.lua`).
const LATCH_NOT_HELD: &str = "not held";

/// What a latch says an acquire request did the first time.
enum LatchedAcquire {
    Acquired(u64),
    Held,
}

/// The first outcome of a repeated acquire request, if latched.
fn latched_acquire(cx: &mut Ctx<'_>, req: &AcquireRequest) -> Result<Option<LatchedAcquire>> {
    if req.latch_ttl_ms == 0 {
        return Ok(None);
    }
    let latch = cx
        .layout
        .acquire_latch(&req.name, &req.request_id.to_string());
    let lock = cx.layout.lock_key(&req.name);
    let value = cx.keys.get(&latch).map_err(wrong_type(&lock))?;
    Ok(value.map(|v| {
        if v == LATCH_HELD {
            LatchedAcquire::Held
        } else {
            LatchedAcquire::Acquired(v.parse().unwrap_or(0))
        }
    }))
}

/// `latch()` of `common.lua`: keeps a request's outcome for its repeats.
fn latch(cx: &mut Ctx<'_>, key: &str, value: &str, ttl_ms: u64) {
    if ttl_ms > 0 {
        cx.keys.set(key, value.to_owned(), Some(ttl_ms));
    }
}

/// Latches "held" for an acquire request that did not take the lock.
fn latch_held(cx: &mut Ctx<'_>, req: &AcquireRequest) {
    let key = cx
        .layout
        .acquire_latch(&req.name, &req.request_id.to_string());
    latch(cx, &key, LATCH_HELD, req.latch_ttl_ms);
}

/// The next fencing token, or 0 when none was asked for (`next_token` of
/// `common.lua`). Taken before anything else is written: a counter that is
/// not an integer fails the script with nothing written.
fn next_token(cx: &mut Ctx<'_>, req: &AcquireRequest) -> Result<u64> {
    if !req.fenced {
        return Ok(0);
    }
    let counter = cx.layout.token_key(&req.name);
    Ok(cx.keys.incr(&counter).map_err(wrong_type(&counter))? as u64)
}

/// `extend()` of `common.lua`: after a write to the hold of `lock`, whose
/// PTTL was `pttl` before it, the lock expires `lease_ms` from now unless it
/// would expire later anyway; a lock without expiry keeps none.
fn extend(cx: &mut Ctx<'_>, lock: &str, lease_ms: u64, pttl: i64) {
    if pttl != -1 {
        let lease = i64::try_from(lease_ms).unwrap_or(i64::MAX);
        cx.keys.pexpire(lock, pttl.max(lease) as u64);
    }
}

/// One more hold, with `token` already taken: count, lease, latch.
fn take_hold(cx: &mut Ctx<'_>, req: &AcquireRequest, token: u64) -> Result<AcquireOutcome> {
    let lock = cx.layout.lock_key(&req.name);
    let pttl = cx.keys.pttl(&lock);
    cx.keys
        .hincrby(&lock, &req.owner.field(), 1)
        .map_err(wrong_type(&lock))?;
    extend(cx, &lock, req.lease_ms, pttl);
    let key = cx
        .layout
        .acquire_latch(&req.name, &req.request_id.to_string());
    latch(cx, &key, &token.to_string(), req.latch_ttl_ms);
    Ok(acquired(token))
}

/// A repeated release request returns its first outcome.
fn latched_release(cx: &mut Ctx<'_>, req: &ReleaseRequest) -> Result<Option<ReleaseOutcome>> {
    if req.latch_ttl_ms == 0 {
        return Ok(None);
    }
    let latch = cx
        .layout
        .unlock_latch(&req.name, &req.request_id.to_string());
    let lock = cx.layout.lock_key(&req.name);
    Ok(cx
        .keys
        .get(&latch)
        .map_err(wrong_type(&lock))?
        .map(|v| match v.as_str() {
            "1" => ReleaseOutcome::Released,
            LATCH_NOT_HELD => ReleaseOutcome::NotHeld,
            _ => ReleaseOutcome::StillHeld,
        }))
}

/// Releases one hold; on the last one deletes the lock (without a write
/// Redis refuses when out of memory). Latches the outcome.
fn drop_hold(cx: &mut Ctx<'_>, req: &ReleaseRequest) -> Result<ReleaseOutcome> {
    let lock = cx.layout.lock_key(&req.name);
    let field = req.owner.field();
    let outcome = match cx.keys.hget(&lock, &field).map_err(wrong_type(&lock))? {
        None => ReleaseOutcome::NotHeld,
        Some(count) if count > 1 => {
            let pttl = cx.keys.pttl(&lock);
            cx.keys
                .hincrby(&lock, &field, -1)
                .map_err(wrong_type(&lock))?;
            extend(cx, &lock, req.lease_ms, pttl);
            ReleaseOutcome::StillHeld
        }
        Some(_) => {
            cx.keys.del(&lock);
            ReleaseOutcome::Released
        }
    };
    let key = cx
        .layout
        .unlock_latch(&req.name, &req.request_id.to_string());
    let value = match outcome {
        ReleaseOutcome::Released => "1",
        ReleaseOutcome::StillHeld => "0",
        ReleaseOutcome::NotHeld => LATCH_NOT_HELD,
    };
    latch(cx, &key, value, req.latch_ttl_ms);
    Ok(outcome)
}

/// A non-hash value at the lock key is reported, never touched.
fn check_hash_or_none(cx: &mut Ctx<'_>, name: &LockName) -> Result<String> {
    let lock = cx.layout.lock_key(name);
    match cx.keys.type_of(&lock) {
        "none" | "hash" => Ok(lock),
        _ => Err(LockError::WrongType { key: lock }),
    }
}

fn holders(cx: &mut Ctx<'_>, lock: &str) -> Result<(Vec<Holder>, Option<Duration>)> {
    let holders = cx
        .keys
        .hgetall(lock)
        .map_err(wrong_type(lock))?
        .into_iter()
        .map(|(field, count)| Holder {
            field,
            count: count.max(0) as u64,
        })
        .collect();
    Ok((holders, ttl_of(cx.keys.pttl(lock))))
}

// ---- reentrant (lock-redis/src/scripts/*.lua) ----

pub(crate) fn acquire(cx: &mut Ctx<'_>, req: &AcquireRequest) -> Result<(AcquireOutcome, Publish)> {
    let lock = cx.layout.lock_key(&req.name);
    match latched_acquire(cx, req)? {
        Some(LatchedAcquire::Acquired(token)) => return Ok((acquired(token), None)),
        Some(LatchedAcquire::Held) => {
            // The lock's current ttl; 0 (look again) when it is gone.
            let pttl = match cx.keys.pttl(&lock) {
                -2 => 0,
                pttl => pttl,
            };
            return Ok((AcquireOutcome::Held { ttl: ttl_of(pttl) }, None));
        }
        None => {}
    }
    let free = !cx.keys.exists(&lock);
    if free
        || cx
            .keys
            .hexists(&lock, &req.owner.field())
            .map_err(wrong_type(&lock))?
    {
        let token = next_token(cx, req)?;
        return Ok((take_hold(cx, req, token)?, None));
    }
    latch_held(cx, req);
    let ttl = ttl_of(cx.keys.pttl(&lock));
    Ok((AcquireOutcome::Held { ttl }, None))
}

pub(crate) fn release(cx: &mut Ctx<'_>, req: &ReleaseRequest) -> Result<(ReleaseOutcome, Publish)> {
    if let Some(first) = latched_release(cx, req)? {
        return Ok((first, None));
    }
    let outcome = drop_hold(cx, req)?;
    let publish = (outcome == ReleaseOutcome::Released).then(|| cx.layout.channel(&req.name));
    Ok((outcome, publish))
}

pub(crate) fn renew(cx: &mut Ctx<'_>, targets: &[RenewTarget], lease_ms: u64) -> Vec<Result<bool>> {
    targets
        .iter()
        .map(|t| {
            let lock = cx.layout.lock_key(&t.name);
            let held = cx.keys.type_of(&lock) == "hash"
                && cx.keys.hexists(&lock, &t.owner.field()).unwrap_or(false);
            if held {
                let pttl = cx.keys.pttl(&lock);
                extend(cx, &lock, lease_ms, pttl);
            }
            Ok(held)
        })
        .collect()
}

pub(crate) fn force_unlock(cx: &mut Ctx<'_>, name: &LockName) -> Result<(bool, Publish)> {
    let lock = check_hash_or_none(cx, name)?;
    let existed = cx.keys.del(&lock);
    Ok((existed, existed.then(|| cx.layout.channel(name))))
}

pub(crate) fn inspect(cx: &mut Ctx<'_>, name: &LockName) -> Result<(LockInfo, Publish)> {
    let lock = check_hash_or_none(cx, name)?;
    let (holders, ttl) = holders(cx, &lock)?;
    Ok((LockInfo::new(holders, ttl), None))
}

pub(crate) fn token(cx: &mut Ctx<'_>, name: &LockName) -> Result<(Option<u64>, Publish)> {
    let counter = cx.layout.token_key(name);
    let value = cx.keys.get(&counter).map_err(wrong_type(&counter))?;
    let token = match value {
        Some(value) => lock_script::replies::token_value(&value, &counter)?,
        None => None,
    };
    Ok((token, None))
}

// ---- fair (lock-fair/src/scripts/*.lua) ----

/// Removes queue heads whose deadline has passed.
fn evict(cx: &mut Ctx<'_>, name: &LockName) -> Result<()> {
    let (queue, timeouts) = (cx.layout.queue_key(name), cx.layout.timeout_key(name));
    let lock = cx.layout.lock_key(name);
    while let Some(head) = cx.keys.list_head(&queue).map_err(wrong_type(&lock))? {
        let deadline = cx
            .keys
            .zscore(&timeouts, &head)
            .map_err(wrong_type(&lock))?;
        if deadline.is_some_and(|d| d > cx.now_ms) {
            break;
        }
        cx.keys.lpop(&queue).map_err(wrong_type(&lock))?;
        cx.keys.zrem(&timeouts, &head).map_err(wrong_type(&lock))?;
    }
    Ok(())
}

/// The waiter channel of the queue head, if anyone waits.
fn head_channel(cx: &mut Ctx<'_>, name: &LockName) -> Result<Publish> {
    let lock = cx.layout.lock_key(name);
    let head = cx
        .keys
        .list_head(&cx.layout.queue_key(name))
        .map_err(wrong_type(&lock))?;
    Ok(head.map(|field| format!("{}:{field}", cx.layout.channel(name))))
}

/// How soon a fair waiter that finds the lock free, with another waiter at
/// the head, looks again (`RECHECK_MS` of the fair `acquire.lua`, which says
/// why).
const FAIR_RECHECK_MS: i64 = 50;

/// How long a fair waiter that did not take the lock should wait: the
/// lock's PTTL when held, else [`FAIR_RECHECK_MS`], or the time until the
/// queue head's deadline when that is sooner.
fn fair_wait_hint(cx: &mut Ctx<'_>, name: &LockName) -> Result<i64> {
    let lock = cx.layout.lock_key(name);
    if cx.keys.exists(&lock) {
        return Ok(cx.keys.pttl(&lock));
    }
    let (queue, timeouts) = (cx.layout.queue_key(name), cx.layout.timeout_key(name));
    let head = cx.keys.list_head(&queue).map_err(wrong_type(&lock))?;
    let deadline = match head {
        Some(h) => cx.keys.zscore(&timeouts, &h).map_err(wrong_type(&lock))?,
        None => None,
    };
    Ok(deadline.map_or(0, |d| (d - cx.now_ms).clamp(0, FAIR_RECHECK_MS)))
}

/// The deadline of the waiter just ahead of `field`: its predecessor when
/// queued, else the tail it would join behind (`deadline_ahead` of the fair
/// `acquire.lua`).
fn deadline_ahead(cx: &mut Ctx<'_>, name: &LockName, field: &str) -> Result<Option<i64>> {
    let lock = cx.layout.lock_key(name);
    let queue = cx
        .keys
        .list_all(&cx.layout.queue_key(name))
        .map_err(wrong_type(&lock))?;
    let ahead = match queue.iter().position(|f| f == field) {
        Some(at) => at.checked_sub(1).map(|i| &queue[i]),
        None => queue.last(),
    };
    match ahead {
        Some(ahead) => cx
            .keys
            .zscore(&cx.layout.timeout_key(name), ahead)
            .map_err(wrong_type(&lock)),
        None => Ok(None),
    }
}

pub(crate) fn fair_acquire(
    cx: &mut Ctx<'_>,
    req: &AcquireRequest,
) -> Result<(AcquireOutcome, Publish)> {
    match latched_acquire(cx, req)? {
        Some(LatchedAcquire::Acquired(token)) => return Ok((acquired(token), None)),
        Some(LatchedAcquire::Held) => {
            let ttl = ttl_of(fair_wait_hint(cx, &req.name)?);
            return Ok((AcquireOutcome::Held { ttl }, None));
        }
        None => {}
    }
    evict(cx, &req.name)?;
    let lock = cx.layout.lock_key(&req.name);
    let (queue, timeouts) = (
        cx.layout.queue_key(&req.name),
        cx.layout.timeout_key(&req.name),
    );
    let field = req.owner.field();
    let head = cx.keys.list_head(&queue).map_err(wrong_type(&lock))?;
    if !cx.keys.exists(&lock) && head.as_ref().is_none_or(|h| *h == field) {
        let token = next_token(cx, req)?;
        if head.is_some() {
            cx.keys.lpop(&queue).map_err(wrong_type(&lock))?;
        }
        cx.keys.zrem(&timeouts, &field).map_err(wrong_type(&lock))?;
        return Ok((take_hold(cx, req, token)?, None));
    }
    if cx.keys.hexists(&lock, &field).map_err(wrong_type(&lock))? {
        let token = next_token(cx, req)?;
        return Ok((take_hold(cx, req, token)?, None));
    }
    if let Some(wait) = req.queue_ms.filter(|&ms| ms > 0) {
        // Behind a waiter whose deadline lies beyond ours (a Redisson
        // waiter's), stay that far ahead plus the waiter timeout: see
        // acquire.lua.
        let wait = i64::try_from(wait).unwrap_or(i64::MAX);
        let mut deadline = cx.now_ms + wait;
        if let Some(ahead) = deadline_ahead(cx, &req.name, &field)?.filter(|&d| d > deadline) {
            deadline = ahead + wait;
        }
        let queued = cx
            .keys
            .zscore(&timeouts, &field)
            .map_err(wrong_type(&lock))?;
        if queued.is_none() {
            cx.keys.rpush(&queue, &field).map_err(wrong_type(&lock))?;
        }
        cx.keys
            .zadd(&timeouts, deadline, &field)
            .map_err(wrong_type(&lock))?;
    }
    latch_held(cx, req);
    let ttl = ttl_of(fair_wait_hint(cx, &req.name)?);
    Ok((AcquireOutcome::Held { ttl }, None))
}

pub(crate) fn fair_release(
    cx: &mut Ctx<'_>,
    req: &ReleaseRequest,
) -> Result<(ReleaseOutcome, Publish)> {
    if let Some(first) = latched_release(cx, req)? {
        return Ok((first, None));
    }
    evict(cx, &req.name)?;
    let outcome = drop_hold(cx, req)?;
    let publish = if outcome == ReleaseOutcome::Released {
        head_channel(cx, &req.name)?
    } else {
        None
    };
    Ok((outcome, publish))
}

pub(crate) fn leave_queue(cx: &mut Ctx<'_>, name: &LockName, field: &str) -> Result<((), Publish)> {
    let lock = cx.layout.lock_key(name);
    let (queue, timeouts) = (cx.layout.queue_key(name), cx.layout.timeout_key(name));
    cx.keys.lrem(&queue, field).map_err(wrong_type(&lock))?;
    cx.keys.zrem(&timeouts, field).map_err(wrong_type(&lock))?;
    evict(cx, name)?;
    let publish = if cx.keys.exists(&lock) {
        None
    } else {
        head_channel(cx, name)?
    };
    Ok(((), publish))
}

pub(crate) fn fair_force_unlock(cx: &mut Ctx<'_>, name: &LockName) -> Result<(bool, Publish)> {
    let lock = check_hash_or_none(cx, name)?;
    let existed = cx.keys.del(&lock);
    evict(cx, name)?;
    Ok((existed, head_channel(cx, name)?))
}

pub(crate) fn fair_inspect(cx: &mut Ctx<'_>, name: &LockName) -> Result<(FairLockInfo, Publish)> {
    let lock = check_hash_or_none(cx, name)?;
    let (holders, ttl) = holders(cx, &lock)?;
    let timeouts = cx.layout.timeout_key(name);
    let mut queue = Vec::new();
    for field in cx
        .keys
        .list_all(&cx.layout.queue_key(name))
        .map_err(wrong_type(&lock))?
    {
        let deadline_ms = cx
            .keys
            .zscore(&timeouts, &field)
            .map_err(wrong_type(&lock))?
            .unwrap_or(0);
        queue.push(QueuedWaiter::new(field, deadline_ms));
    }
    Ok((FairLockInfo::new(LockInfo::new(holders, ttl), queue), None))
}
