-- count_down: take one off a count-down latch (Redisson's
-- RCountDownLatch.countDown), at most once per request id. Runs after
-- counter.lua.
--
-- KEYS[1]  latch key                 <prefix><name>
-- KEYS[2]  latch channel             redisson_countdownlatch__channel__{<prefix><name>}
-- KEYS[3]  request latch             redisson_unlock_latch:{<prefix><name>}:<request-id>
-- ARGV[1]  zero message ("0": the latch is open)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  request latch ttl in milliseconds; "0" keeps none
--
-- As Redisson: DECR; at or below zero DEL the key; publish only when the
-- count reached exactly zero (counting down a latch that does not exist
-- makes -1, deleted at once, and announces nothing).
--
-- Reply: the count left, never below 0. Latched: a repeat writes nothing
-- and replies the first outcome.
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an
--        integer (left untouched, nothing latched)
--   error "OOM ..." when a server at maxmemory refuses DECR (nothing
--        written)
local ttl = tonumber(ARGV[3])
local first = latched(KEYS[3], ttl)
if first then
    return first
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
keep(KEYS[3], left, ttl)
return left
