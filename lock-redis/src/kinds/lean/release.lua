-- release: delete a lean lock if it holds this owner's token (the
-- compare-and-delete every library of the pattern uses), and tell our
-- waiters. Runs after common.lua.
--
-- KEYS[1]  lock key                  <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  unlock message ("0": wake one waiter per client)
-- ARGV[2]  owner token               "<client-uuid>:<owner-id>"
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   1    released: the key deleted, the message published
--   nil  the key does not hold this token (nothing written but the record)
-- Every outcome is recorded: a repeated request writes nothing and returns
-- its first reply. A value of another type at KEYS[1] makes GET fail with
-- WRONGTYPE before anything is written. Out of memory, DEL and PUBLISH are
-- not refused and the record is written with pcall: the release succeeds.
local first = recorded_release(KEYS[3], ARGV[4])
if first ~= 'none' then
    return first or nil
end
if redis.call('get', KEYS[1]) ~= ARGV[2] then
    record(KEYS[3], RECORD_NOT_HELD)
    return nil
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
record(KEYS[3], 1)
return 1
