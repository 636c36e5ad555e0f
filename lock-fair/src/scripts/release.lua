-- release: give back one hold of a fair lock; when the last hold goes, tell
-- only the queue head, on its own channel. Runs after lock-redis's
-- common.lua and prelude.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
--          (the head is told on KEYS[2] .. ':' .. <head's owner field>)
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- KEYS[4]  waiter queue (list)       redisson_lock_queue:{<name>}
-- KEYS[5]  waiter deadlines (zset)   redisson_lock_timeout:{<name>}
-- KEYS[6]  handoff entries (hash)    redisson_lock_handoff:{<name>}
--          (see prelude.lua)
-- ARGV[1]  unlock message ("0": wake one waiter)
-- ARGV[2]  lease in milliseconds: when holds remain, the lock expires no
--          earlier than this from now (never sooner than it already would;
--          see extend() in common.lua)
-- ARGV[3]  owner field               "<client-uuid>:<owner-id>"
-- ARGV[4]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[5]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   1    released: the last hold is gone, the key deleted, and the queue head
--        (after evicting stale heads), if any, granted the lock or told
--        (see hand_over() in prelude.lua); nobody else is
--   0    still held: one hold fewer, lease extended
--   nil  not held by this owner (nothing written but the eviction and the
--        record)
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- (same record key) writes nothing and returns its first reply, nil
-- included.
-- Out of memory (see common.lua): releasing the last hold writes nothing
-- Redis refuses and succeeds; a partial release fails at HINCRBY with
-- nothing written.
-- A non-hash value at KEYS[1] makes HGET fail with WRONGTYPE: the script
-- aborts before writing anything but the eviction of stale heads.
local first = recorded_release(KEYS[3], ARGV[5])
if first ~= 'none' then
    return first or nil
end
evict(KEYS[4], KEYS[5], KEYS[6], store_now())
local given = give_back(KEYS[1], ARGV[3], ARGV[2], KEYS[3])
if given ~= 'last' then
    return given
end
-- The last hold: nothing below is refused when the server is out of memory.
redis.call('del', KEYS[1])
-- A grant this owner held is over with it (another wait of the owner that
-- was granted the lock and gives up finds nothing left to give back).
local entry = redis.call('hget', KEYS[6], ARGV[3])
if entry and string.sub(entry, 1, 2) == 'g:' then
    redis.call('hdel', KEYS[6], ARGV[3])
end
hand_over(KEYS[1], KEYS[4], KEYS[5], KEYS[6], KEYS[2], ARGV[4])
record(KEYS[3], 1)
return 1
