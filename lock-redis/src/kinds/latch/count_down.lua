-- count_down: take one off a count-down latch (Redisson's
-- RCountDownLatch.countDown), at most once per request id. Runs after
-- counter.lua.
--
-- KEYS[1]  latch key                 <prefix><name>
-- KEYS[2]  latch channel             redisson_countdownlatch__channel__{<prefix><name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<prefix><name>}:<request-id>
-- ARGV[1]  zero message ("0": the latch is open)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the request's deadline (see recorded() in common.lua)
--
-- As Redisson: DECR; at or below zero DEL the key; publish only when the
-- count reached exactly zero (counting down a latch that does not exist
-- makes -1, deleted at once, and announces nothing).
--
-- Reply: the count left, never below 0. Latched: a repeat writes nothing
-- and replies the first outcome.
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an
--        integer (left untouched, nothing recorded)
--   error "OOM ..." when a server at maxmemory refuses DECR (nothing
--        written)
local first = recorded(KEYS[3], ARGV[3])
if first then
    return tonumber(first)
end
local found = check_counter(KEYS[1])
if type(found) == 'table' then
    return found
end
local v = redis.call('decr', KEYS[1])
if v <= 0 then
    redis.call('del', KEYS[1])
end
if v == 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
end
local left = math.max(v, 0)
record(KEYS[3], left)
return left
