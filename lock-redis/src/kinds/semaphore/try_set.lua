-- try_set: create a semaphore with a number of free permits, unless it
-- exists (Redisson's trySetPermits; shared by both semaphore kinds).
-- Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  channel                   redisson_sc:{<name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  permits (0..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  time to live in milliseconds; "0" for none
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   1  created with ARGV[1] permits, announced (payload ARGV[1])
--   0  it exists; nothing written but the record
-- Recorded: sent again (a retry after a lost reply), it answers its first
-- reply, so a retry of the call that created the semaphore says 1, not 0.
-- Out of memory: SET is the first write, refused before anything else.
local first = recorded_count(KEYS[3], ARGV[4])
if first ~= nil then
    return first
end
if read_count(KEYS[1]) ~= nil then
    record(KEYS[3], 0)
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
record(KEYS[3], 1)
return 1
