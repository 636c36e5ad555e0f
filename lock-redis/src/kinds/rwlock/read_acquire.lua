-- read_acquire: take a read hold of a read-write lock, or one more
-- (Redisson's RedissonReadLock layout). Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  this owner's hold-key prefix
--                                    {<prefix><name>}:<owner>:rwlock_timeout
--          (hold n is the string KEYS[2] .. ':' .. n)
-- KEYS[3]  request record            redisson_lock_latch:{<name>}:<request-id>
-- KEYS[4]  waiting writers (ours)    redisson_rwlock_writers:{<name>} (see
--          write_acquire.lua)
-- ARGV[1]  lease in milliseconds (>= 1): the new hold's key lives this
--          long; the hash expires no earlier than this from now (never
--          sooner than it already would; see extend() in common.lua)
-- ARGV[2]  reader field              "<client-uuid>:<owner-id>"
-- ARGV[3]  this owner's writer field "<client-uuid>:<owner-id>:write"
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Taken when the lock is free, in read mode, or in write mode held by this
-- owner's writer (a writer may read: that is how it downgrades). A hash
-- without a `mode` field is not a read-write lock (a plain lock of the same
-- name): it is reported held rather than written into.
-- Writers first: an owner that does not read the lock yet waits while one
-- of our writers waits (KEYS[4] has a member whose deadline has not
-- passed), so a stream of readers cannot starve a
-- writer. Re-entry by a reader and reads by the writer's owner never wait
-- (they would deadlock). Redisson's readers do not know KEYS[4].
--
-- Reply:
--   {1, 0}      acquired (hold n = the new count, its key set with PX lease)
--   {0, pttl}   held by a writer (or not a read-write lock), or a writer
--               waits; pttl is the hash's PTTL (-1: no expiry), or with no
--               hash, the time until the first waiting writer's deadline
-- Every outcome is recorded (see record() in common.lua); a repeat writes
-- nothing and returns {1, 0}, or {0, pttl} with the current PTTL.
-- A non-hash value at KEYS[1] makes HGET fail with WRONGTYPE before any
-- write. Out of memory: the hold key's SET is the script's first write
-- (Redis refuses a script's writes only up to its first one, even a write
-- that frees memory, so nothing writes before it);
-- should the hash's write after it be refused, the key is deleted again
-- and the script fails with the OOM error, so nothing stays written.
local first = recorded(KEYS[3], ARGV[4])
if first == RECORD_HELD then
    return held_reply(KEYS[1])
end
if first then
    return {1, 0}
end
-- The first deadline of a waiting writer still counting, in ms from now
-- (passed ones are ignored here and removed by the writers' scripts). Only
-- reads: Redis refuses a script's writes for memory only up to its first
-- write command, so nothing may write before the hold key's SET.
local function writer_waits()
    local now = store_now()
    local first = redis.call('zrangebyscore', KEYS[4], '(' .. now, '+inf', 'withscores', 'limit', 0, 1)
    if first[2] then
        return math.max(tonumber(first[2]) - now, 1)
    end
    return nil
end
local mode = redis.call('hget', KEYS[1], 'mode')
local free = mode == false and redis.call('exists', KEYS[1]) == 0
local mine = tonumber(redis.call('hget', KEYS[1], ARGV[2])) or 0
local own_writer = mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1
if (free or mode == 'read') and mine == 0 and not own_writer then
    local wait = writer_waits()
    if wait then
        record(KEYS[3], RECORD_HELD)
        if free then
            return {0, wait}
        end
        return {0, redis.call('pttl', KEYS[1])}
    end
end
if free or mode == 'read' or own_writer then
    local pttl = redis.call('pttl', KEYS[1])
    local n = mine + 1
    local hold = KEYS[2] .. ':' .. n
    redis.call('set', hold, 1, 'px', ARGV[1])
    local written
    if free then
        written = redis.pcall('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
    else
        written = redis.pcall('hincrby', KEYS[1], ARGV[2], 1)
    end
    if type(written) == 'table' and written.err then
        redis.call('del', hold)
        error(written)
    end
    extend(KEYS[1], ARGV[1], pttl)
    record(KEYS[3], 0)
    return {1, 0}
end
record(KEYS[3], RECORD_HELD)
return {0, redis.call('pttl', KEYS[1])}
