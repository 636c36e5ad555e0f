-- try_set: create a semaphore with a number of free permits, unless it
-- exists (Redisson's trySetPermits; shared by both semaphore kinds).
-- Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  channel                   redisson_sc:{<name>}
-- ARGV[1]  permits (0..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  time to live in milliseconds; "0" for none
--
-- Reply:
--   1  created with ARGV[1] permits, announced (payload ARGV[1])
--   0  it exists; nothing written
-- Sent again after a lost reply it answers 0 (the first run created it):
-- harmless to the count, so the call is idempotent.
if read_count(KEYS[1]) ~= nil then
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
