-- release: give back n permits, whoever took them, and announce the new
-- count: Redisson's release, or with ARGV[4] = "1" its releaseIfExists.
-- Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  channel                   redisson_sc:{<name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  n (1..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the request's deadline (see recorded() in common.lua)
-- ARGV[4]  "1": only when the semaphore exists; "0": a missing count is
--          created
--
-- Reply:
--   {1, count}  given back: INCRBY n (the time to live kept), the new count
--               published (a Java waiter wakes up to that many of its
--               waiters)
--   {2, 0}      (ARGV[4] = "1") no semaphore: nothing written but the
--               record, nothing published (Redisson replies false)
--   {0, count}  refused: the count would pass MAX_PERMITS; nothing written
-- Recorded: sent again, it answers its first reply ({1, count as it was
-- then}, or {2, 0}) and gives nothing back twice, nor creates the count.
-- Out of memory: INCRBY is the first write, refused before anything else.
local first = recorded(KEYS[3], ARGV[3])
if first == RECORD_NOT_HELD then
    return {2, 0}
end
if first then
    return {1, tonumber(first)}
end
local value = read_count(KEYS[1])
if value == nil and ARGV[4] == '1' then
    record(KEYS[3], RECORD_NOT_HELD)
    return {2, 0}
end
value = value or 0
if value + tonumber(ARGV[1]) > MAX_PERMITS then
    return {0, value}
end
local count = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], count)
record(KEYS[3], count)
return {1, count}
