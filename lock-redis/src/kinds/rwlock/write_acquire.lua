-- write_acquire: take the write side of a read-write lock, or re-enter it
-- (Redisson's RedissonWriteLock layout). Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- KEYS[3]  waiting writers (ours)    redisson_rwlock_writers:{<name>}: a sorted
--          set of writer fields, scored by the epoch ms (server clock) until
--          which each counts as waiting
-- ARGV[1]  lease in milliseconds (>= 1)
-- ARGV[2]  writer field              "<client-uuid>:<owner-id>:write"
-- ARGV[3]  this owner's reader field "<client-uuid>:<owner-id>"
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
-- ARGV[5]  waiter timeout in milliseconds: when the lock is busy, count as
--          waiting until this long from now (our readers that do not hold
--          the lock yet wait behind a waiting writer; see read_acquire.lua);
--          "0" for a try that does not wait
--
-- Free: mode=write, writer field 1, PX lease. Held by this owner's writer:
-- count + 1 and the hash's TTL becomes its PTTL + lease, as Redisson does
-- (longer than either: a re-entry never shortens the lock). A hash without
-- a `mode` field is not a read-write lock (a plain lock of the same name):
-- it is reported held, never written into.
--
-- Reply:
--   {1, 0}      acquired
--   {0, pttl}   held by others (readers, or another writer)
--   error "UPGRADE ..." when the lock is in read mode and this owner holds
--   read: a reader cannot upgrade (it would wait for itself forever);
--   nothing is written but the record
-- Every outcome is recorded (see record() in common.lua): a repeat writes
-- nothing and returns its first outcome ({0, pttl} with the current PTTL).
-- A non-hash value at KEYS[1] makes HGET fail with WRONGTYPE before any
-- write; out of memory, the first write (HSET or HINCRBY) is refused with
-- nothing written.
local RECORD_UPGRADE = 'upgrade'
local function refuse_upgrade()
    return redis.error_reply('UPGRADE this owner holds the read lock of ' .. KEYS[1] ..
        ' and cannot take its write lock')
end
local first = recorded(KEYS[2], ARGV[4])
if first == RECORD_HELD then
    return held_reply(KEYS[1])
end
if first == RECORD_UPGRADE then
    return refuse_upgrade()
end
if first then
    return {1, 0}
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 0 then
    redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('zrem', KEYS[3], ARGV[2])
    record(KEYS[2], 0)
    return {1, 0}
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local pttl = redis.call('pttl', KEYS[1])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    if pttl >= 0 then
        redis.call('pexpire', KEYS[1], pttl + tonumber(ARGV[1]))
    end
    record(KEYS[2], 0)
    return {1, 0}
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
    record(KEYS[2], RECORD_UPGRADE)
    return refuse_upgrade()
end
local queue_ms = tonumber(ARGV[5])
if queue_ms > 0 then
    -- Out of memory ZADD is refused: the writer then waits without holding
    -- readers off, as Redisson's writers do.
    local now = store_now()
    redis.pcall('zadd', KEYS[3], now + queue_ms, ARGV[2])
    -- Writers whose deadline passed (their process died) leave the set.
    redis.call('zremrangebyscore', KEYS[3], '-inf', now)
    local pttl = redis.call('pttl', KEYS[3])
    if pttl < queue_ms then
        redis.call('pexpire', KEYS[3], queue_ms)
    end
end
record(KEYS[2], RECORD_HELD)
return {0, redis.call('pttl', KEYS[1])}
