-- drain: take every free permit (Redisson's drainPermits). Announces
-- nothing. Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  acquire latch             redisson_lock_latch:{<name>}:<request-id>
-- ARGV[1]  latch ttl in milliseconds; "0" keeps no latch
--
-- Reply: the count before (0 when missing, nothing written then). As
-- Redisson does, the count is SET to 0 (dropping its time to live) even
-- when it was negative, and that negative count is the reply.
-- Latched: sent again, it answers its first reply and drains nothing more.
local latch_ttl = tonumber(ARGV[1])
local first = latched_count(KEYS[2], latch_ttl)
if first ~= nil and first ~= LATCH_HELD then
    return first
end
local value = read_count(KEYS[1])
if value == nil then
    latch(KEYS[2], 0, latch_ttl)
    return 0
end
redis.call('set', KEYS[1], 0)
latch(KEYS[2], value, latch_ttl)
return value
