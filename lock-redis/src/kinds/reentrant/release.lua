-- release: give back one hold of a reentrant lock (Redisson's unlock script).
-- Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  unlock message ("0": wake one waiter per client)
-- ARGV[2]  lease in milliseconds: when holds remain, the lock expires no
--          earlier than this from now (never sooner than it already would;
--          see extend() in common.lua)
-- ARGV[3]  owner field               "<client-uuid>:<owner-id>"
-- ARGV[4]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[5]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   1    released: the last hold is gone, the key deleted, the message published
--   0    still held: one hold fewer, lease extended
--   nil  not held by this owner (nothing written but the record)
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- (same record key) writes nothing and returns its first reply, nil
-- included.
-- Out of memory (see common.lua): releasing the last hold writes nothing
-- Redis refuses and succeeds; a partial release fails at HINCRBY with
-- nothing written.
-- A non-hash value at KEYS[1] makes HGET fail with WRONGTYPE: the script
-- aborts before writing anything.
local first = recorded_release(KEYS[3], ARGV[5])
if first ~= 'none' then
    return first or nil
end
local given = give_back(KEYS[1], ARGV[3], ARGV[2], KEYS[3])
if given ~= 'last' then
    return given
end
-- The last hold: nothing below is refused when the server is out of memory.
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
record(KEYS[3], 1)
return 1
