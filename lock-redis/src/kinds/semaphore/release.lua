-- release: give back n permits, whoever took them (Redisson's release), and
-- announce the new count. Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  channel                   redisson_sc:{<name>}
-- KEYS[3]  unlock latch              redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  n (1..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  latch ttl in milliseconds; "0" keeps no latch
--
-- Reply:
--   {1, count}  given back: INCRBY n (the time to live kept; a missing
--               count is created), the new count published (a Java waiter
--               wakes up to that many of its waiters)
--   {0, count}  refused: the count would pass MAX_PERMITS; nothing written
-- Latched: sent again, it answers {1, count as it was then} and gives
-- nothing back twice.
local latch_ttl = tonumber(ARGV[3])
local first = latched_count(KEYS[3], latch_ttl)
if first ~= nil then
    return {1, first}
end
local value = read_count(KEYS[1]) or 0
if value + tonumber(ARGV[1]) > MAX_PERMITS then
    return {0, value}
end
local count = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], count)
latch(KEYS[3], count, latch_ttl)
return {1, count}
