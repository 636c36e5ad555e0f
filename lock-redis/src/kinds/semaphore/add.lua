-- add: add (or, negative, remove) permits (Redisson's addPermits), and
-- announce the new count. Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  channel                   redisson_sc:{<name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  delta (-MAX_PERMITS..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   {1, count}  SET to the new count (a missing count counts as 0; the time
--               to live dropped, as Redisson's SET does), published as is
--               (a payload <= 0 wakes no Java waiter)
--   {0, count}  refused: the count would leave +-MAX_PERMITS; nothing written
-- Recorded like release.lua: a retry never adds twice.
local first = recorded_count(KEYS[3], ARGV[3])
if first ~= nil then
    return {1, first}
end
local value = read_count(KEYS[1]) or 0
local count = value + tonumber(ARGV[1])
if count > MAX_PERMITS or count < -MAX_PERMITS then
    return {0, value}
end
redis.call('set', KEYS[1], count)
redis.call(ARGV[2], KEYS[2], count)
record(KEYS[3], count)
return {1, count}
