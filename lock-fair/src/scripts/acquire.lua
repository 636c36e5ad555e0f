-- acquire: take a fair lock in arrival order, re-enter it as its owner, or
-- wait in its queue (Redisson's fair-lock layout). Runs after lock-redis's
-- common.lua and prelude.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- KEYS[3]  fencing-token counter     redisson_lock_token:{<name>}
-- KEYS[4]  waiter queue (list)       redisson_lock_queue:{<name>}
-- KEYS[5]  waiter deadlines (zset)   redisson_lock_timeout:{<name>}
-- KEYS[6]  unlock channel            redisson_lock__channel:{<name>}
--          (the new queue head is told on KEYS[6] .. ':' .. <its owner>)
-- KEYS[7]  handoff entries (hash)    redisson_lock_handoff:{<name>}
--          (see prelude.lua)
-- ARGV[1]  lease in milliseconds (>= 1): the lock expires no earlier than
--          this from now (never sooner than it already would; see extend()
--          in common.lua)
-- ARGV[2]  owner field               "<client-uuid>:<owner-id>"
-- ARGV[3]  "1" to hand out a fencing token, "0" not to
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
-- ARGV[5]  waiter timeout in milliseconds: when the lock cannot be taken,
--          join the queue's tail (or, when already queued, keep the place)
--          with the deadline server now + this, or, behind a waiter whose
--          deadline lies beyond that (a Redisson waiter), that deadline +
--          this; "0" never queues
-- ARGV[6]  message telling the new queue head to look again ("0")
-- ARGV[7]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[8]  wait ticket: a queued wait with a ticket other than "0" accepts
--          a handoff (its entry in KEYS[7] is written with ARGV[1]); an
--          attempt of the wait a lock was granted to takes that grant
--
-- Order: record check, evict stale heads, then
--   the lock is free and (nobody queued, or we are the head): take it, leave
--     the queue;
--   we hold it: one more hold;
--   else: queue (ARGV[5] > 0) and report how long to wait.
-- Unlike Redisson, taking the lock does not move the other waiters'
-- deadlines: our waiters refresh their own deadline while they wait.
-- When the queue head takes the lock, the waiter now first in the queue is
-- told (one message on its own channel): it learns this holder's lease
-- instead of sleeping on what it read while the previous holder held the
-- lock, so it follows a short lease that runs out (issue 16). A Redisson
-- waiter told so just tries again.
--
-- Reply:
--   {1, token}  acquired (first hold or one more hold); token is the new
--               fencing token, or 0 when none was asked for.
--   {2, 0}      claimed: the lock a release granted to this wait's ticket
--               (ARGV[8]), taken as it was granted, with no hold added (the
--               engine tells it from a hold of its own; see lock-core's
--               AcquireOutcome::Claimed)
--   {0, wait}   not taken. wait is the lock's PTTL when it is held (-1: no
--               expiry); else (the lock is free but another waiter is
--               first) RECHECK_MS, or the milliseconds until the queue
--               head's deadline when that is sooner (never negative).
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- (same record key) writes nothing — it neither takes the lock nor joins or
-- refreshes the queue, so a late duplicate cannot queue a waiter that left —
-- and returns {1, token} with its first token, or {0, wait} as of now.
-- A non-hash value at KEYS[1] makes HEXISTS fail with WRONGTYPE, and a
-- counter at KEYS[3] that is not an integer fails a fenced acquisition with
-- BADTOKEN (see common.lua): either way the script aborts before writing
-- anything but the eviction of stale heads (the waiter keeps its place).
-- How soon a waiter that finds the lock free, with another waiter at the
-- head, looks again. A live head was woken when the lock came free (by the
-- unlock notice, or by its own timer at the lease end, as this waiter was)
-- and takes it within a round trip: the next look then finds the new
-- holder and its PTTL, and the waiter sleeps until that lease ends, rather
-- than towards the head's deadline while the lock changes hands (issue 16).
-- A few round trips on any network a lock is shared over, short next to a
-- lease; while the head is dead or slow it costs each waiter behind it one
-- attempt per RECHECK_MS, until the head takes the lock or is evicted at
-- its deadline.
local RECHECK_MS = 50

-- How long a waiter that did not take the lock should wait (reply {0, wait}).
local function wait_hint(now)
    if redis.call('exists', KEYS[1]) == 1 then
        return redis.call('pttl', KEYS[1])
    end
    -- Free, but another waiter is first: look again soon, or at its deadline
    -- (the next script then evicts it) when that comes sooner.
    local first = redis.call('lindex', KEYS[4], 0)
    local deadline = first and redis.call('zscore', KEYS[5], first)
    if deadline then
        return math.min(math.max(tonumber(deadline) - now, 0), RECHECK_MS)
    end
    return 0
end

local first = recorded(KEYS[2], ARGV[4])
if first == RECORD_HELD then
    return {0, wait_hint(store_now())}
end
if first == RECORD_CLAIMED then
    return {2, 0}
end
if first then
    return {1, tonumber(first)}
end
local now = store_now()
-- Out of memory (see common.lua): the eviction below is a write Redis does
-- not refuse, and it turns the server's memory check off for the rest of
-- the script, so a hold or a queue entry written after it would grow
-- memory past maxmemory. Refuse first on every path that may grow: the
-- lock free or ours (a hold), or a wait that queues. Only a try of a lock
-- held by another goes on (it writes nothing but evictions).
if tonumber(ARGV[5]) > 0 or redis.call('exists', KEYS[1]) == 0
    or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    refuse_if_out_of_memory(KEYS[5])
end
evict(KEYS[4], KEYS[5], KEYS[7], now)

-- The lock's PTTL before anything of ours is written: -2 when it is free.
local pttl = redis.call('pttl', KEYS[1])
local ticket = ARGV[8]
local entry = redis.call('hget', KEYS[7], ARGV[2])

-- The lock was handed to this wait (a release granted it; see prelude.lua)
-- and the wait asks again instead: it missed or has not read the grant.
-- It is ours once, as it was granted: not a second hold.
if entry and ticket ~= '0' and entry == 'g:' .. ticket then
    redis.call('hdel', KEYS[7], ARGV[2])
    if pttl ~= -2 and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
        extend(KEYS[1], ARGV[1], pttl)
        record(KEYS[2], RECORD_CLAIMED)
        return {2, 0}
    end
    entry = nil
end

-- One more hold, with `token` taken before anything of ours was written.
-- A wait that takes the lock leaves the queue, and with it its handoff
-- entry (a 'g:' entry of another wait of this owner stays: that wait
-- gives its grant back when it leaves).
local function take(token)
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    extend(KEYS[1], ARGV[1], pttl)
    if entry and string.sub(entry, 1, 2) == 'w:' then
        redis.call('hdel', KEYS[7], ARGV[2])
    end
    record(KEYS[2], token)
    return {1, token}
end

if pttl == -2 then
    local head = redis.call('lindex', KEYS[4], 0)
    if (not head) or head == ARGV[2] then
        local token = next_token(KEYS[3], ARGV[3])
        if head == ARGV[2] then
            redis.call('lpop', KEYS[4])
            local next_head = redis.call('lindex', KEYS[4], 0)
            if next_head then
                redis.call(ARGV[7], KEYS[6] .. ':' .. next_head, ARGV[6])
            end
        end
        redis.call('zrem', KEYS[5], ARGV[2])
        return take(token)
    end
end
if pttl ~= -2 and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    return take(next_token(KEYS[3], ARGV[3]))
end

-- The deadline of the waiter just ahead of us: our predecessor when we are
-- queued, else the tail we are about to join behind. nil when there is none.
local function deadline_ahead()
    local ahead
    local at = redis.call('lpos', KEYS[4], ARGV[2])
    if at then
        ahead = at > 0 and redis.call('lindex', KEYS[4], at - 1)
    else
        ahead = redis.call('lindex', KEYS[4], -1)
    end
    local score = ahead and redis.call('zscore', KEYS[5], ahead)
    return score and tonumber(score)
end

local queue_ms = tonumber(ARGV[5])
if queue_ms > 0 then
    -- Our deadline is now + the waiter timeout, unless the waiter ahead of
    -- us has one beyond that (a Redisson waiter's: its join time + the
    -- lock's PTTL + its wait time, 5 minutes by default; or one of ours
    -- behind such a waiter): then that deadline + the waiter timeout. A
    -- Redisson waiter that takes the lock or gives up moves every deadline
    -- behind it up by its wait time (ZINCRBY -wait); ours then still lies
    -- beyond the new head's, so it stays live and keeps its place, while a
    -- dead waiter of ours is evicted soon after the one ahead is gone.
    local deadline = now + queue_ms
    local ahead = deadline_ahead()
    if ahead and ahead > deadline then
        deadline = ahead + queue_ms
    end
    if not redis.call('zscore', KEYS[5], ARGV[2]) then
        redis.call('rpush', KEYS[4], ARGV[2])
    end
    redis.call('zadd', KEYS[5], deadline, ARGV[2])
    if ticket ~= '0' then
        redis.call('hset', KEYS[7], ARGV[2], 'w:' .. ARGV[1] .. ':' .. ticket)
        -- The hash lives as long as its longest-lived entry: only extended,
        -- never shortened. Read after the HSET, a hash this call created
        -- has no expiry yet (-1), and must get one like any other: its
        -- entries are waiters that may die without leaving.
        local kept = redis.call('pttl', KEYS[7])
        if kept < deadline - now then
            redis.call('pexpire', KEYS[7], deadline - now)
        end
    elseif entry and string.sub(entry, 1, 2) == 'w:' then
        -- Queued now by a wait that takes no handoff (a fenced one): an
        -- older wait's entry must not have this one granted.
        redis.call('hdel', KEYS[7], ARGV[2])
    end
end
record(KEYS[2], RECORD_HELD)
return {0, wait_hint(now)}
