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
-- count reached exactly zero (counting down a latch that does not exist,
-- or one at zero or below, deletes it and announces nothing).
--
-- Reply: the count left, never below 0, as a decimal string: a Lua number
-- is a double, which past 2^53 is not the count (i64::MAX - 1 would come
-- back as 2^63, which Redis turns into i64::MIN), so the count left is
-- read back as Redis stores it. Recorded: a repeat writes nothing and
-- replies the first outcome, kept as that same string.
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an
--        integer (left untouched, nothing recorded)
--   error "OOM ..." when a server at maxmemory refuses DECR (nothing
--        written)
local first = recorded(KEYS[3], ARGV[3])
if first then
    return first
end
local found = check_counter(KEYS[1])
if type(found) == 'table' then
    return found
end
local left = '0'
local stored = found == 'count' and redis.call('get', KEYS[1])
if stored and stored ~= '0' and string.sub(stored, 1, 1) ~= '-' then
    -- Only DECR a count above zero: comparing the reply with 0 is exact
    -- (doubles are exact near 0), and the count left is read back as text.
    local v = redis.call('decr', KEYS[1])
    if v > 0 then
        left = redis.call('get', KEYS[1])
    else
        redis.call('del', KEYS[1])
        redis.call(ARGV[2], KEYS[2], ARGV[1])
    end
else
    -- Absent, zero or below (set by another client): DECR would take it
    -- lower and DEL it without a notice (Redisson's count-down does just
    -- that); deleting it straight away is the same, and cannot fail at
    -- the bottom of the 64-bit range.
    redis.call('del', KEYS[1])
end
record(KEYS[3], left)
return left
