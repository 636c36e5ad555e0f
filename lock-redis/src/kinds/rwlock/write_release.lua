-- write_release: give back one write hold of a read-write lock (Redisson's
-- RedissonWriteLock unlock). Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  channel                   redisson_rwlock:{<prefix><name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  unlock message ("1": wake every waiter)
-- ARGV[2]  lease in milliseconds: when write holds remain, the lock
--          expires no earlier than this from now (see extend() in common.lua)
-- ARGV[3]  writer field              "<client-uuid>:<owner-id>:write"
-- ARGV[4]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[5]  the request's deadline (see recorded() in common.lua)
--
-- The last write hold: when only `mode` is left the hash is deleted and
-- ARGV[1] published; when this owner's read holds remain, mode becomes
-- `read` (a downgrade) and nothing is published (waiting readers find out
-- at their next look, bounded by the lock's TTL, as in Redisson).
--
-- Reply:
--   1    the owner's last write hold is gone
--   0    one write hold fewer, lease extended
--   nil  not held by this owner's writer (no lock at all: ARGV[1] is
--        published, as Redisson does)
-- Every outcome is recorded (see record() in common.lua).
-- Out of memory: a partial release fails at HINCRBY and a downgrade at
-- HSET, with nothing written; releasing the last hold of a lock nobody
-- else holds only deletes, and succeeds.
-- A non-hash value at KEYS[1] makes HGET fail with WRONGTYPE before any
-- write.
local first = recorded_release(KEYS[3], ARGV[5])
if first ~= 'none' then
    return first or nil
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 0 then
    redis.call(ARGV[4], KEYS[2], ARGV[1])
end
if mode ~= 'write' then
    record(KEYS[3], RECORD_NOT_HELD)
    return nil
end
local given = give_back(KEYS[1], ARGV[3], ARGV[2], KEYS[3])
if given ~= 'last' then
    return given
end
if redis.call('hlen', KEYS[1]) > 2 then
    -- This owner still reads: downgrade. HSET first, so that out of memory
    -- nothing is written.
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hdel', KEYS[1], ARGV[3])
else
    redis.call('del', KEYS[1])
    redis.call(ARGV[4], KEYS[2], ARGV[1])
end
record(KEYS[3], 1)
return 1
