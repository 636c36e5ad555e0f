-- drain: take every free permit (Redisson's drainPermits). Announces
-- nothing. Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- ARGV[1]  the request's deadline (see recorded() in common.lua)
--
-- Reply: the count before (0 when missing, nothing written then). As
-- Redisson does, the count is SET to 0 (dropping its time to live) even
-- when it was negative, and that negative count is the reply.
-- Recorded: sent again, it answers its first reply and drains nothing more.
local first = recorded_count(KEYS[2], ARGV[1])
if first ~= nil and first ~= RECORD_HELD then
    return first
end
local value = read_count(KEYS[1])
if value == nil then
    record(KEYS[2], 0)
    return 0
end
redis.call('set', KEYS[1], 0)
record(KEYS[2], value)
return value
