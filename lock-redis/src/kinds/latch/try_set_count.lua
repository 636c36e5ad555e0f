-- try_set_count: set a count-down latch's count if the latch does not
-- exist (Redisson's RCountDownLatch.trySetCount), at most once per request
-- id. Runs after counter.lua.
--
-- KEYS[1]  latch key                 <prefix><name>
-- KEYS[2]  latch channel             redisson_countdownlatch__channel__{<prefix><name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<prefix><name>}:<request-id>
-- ARGV[1]  new-count message ("1": waiters read the count again)
-- ARGV[2]  the count (a positive integer)
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Reply (recorded: a repeat writes nothing and replies the first outcome,
-- so it never sets the count again after the latch was counted down):
--   1    set (no expiry), and the message published
--   0    the latch exists; nothing written
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an
--        integer (left untouched)
local first = recorded(KEYS[3], ARGV[4])
if first then
    return tonumber(first)
end
local found = check_counter(KEYS[1])
if type(found) == 'table' then
    return found
end
if found == 'count' then
    record(KEYS[3], 0)
    return 0
end
redis.call('set', KEYS[1], ARGV[2])
redis.call(ARGV[3], KEYS[2], ARGV[1])
record(KEYS[3], 1)
return 1
