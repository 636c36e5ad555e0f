-- release: give back the permit with a given id (Redisson's tryRelease),
-- and announce the new count. Runs after common.lua, count.lua and
-- leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- KEYS[4]  unlock latch              redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  permit id, 32 hex characters
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  latch ttl in milliseconds; "0" keeps no latch
--
-- Reply (after reclaiming expired permits, the released one included if
-- its lease ended):
--   1  given back: removed, the count up by 1, the new count published
--   0  not taken (never, released, or expired); nothing else written
-- Latched: sent again, it answers its first reply and gives back nothing
-- twice.
local latch_ttl = tonumber(ARGV[3])
local first = latched_count(KEYS[4], latch_ttl)
if first ~= nil then
    return first
end
-- Out of memory (see common.lua): the reclaim writes first and cannot be
-- refused; what follows grows memory only by creating a missing count.
if read_count(KEYS[1]) == nil then
    refuse_if_out_of_memory(KEYS[2])
end
reclaim(KEYS[1], KEYS[2], KEYS[3], server_now(), ARGV[2])
if redis.call('zrem', KEYS[2], raw_id(ARGV[1])) ~= 1 then
    latch(KEYS[4], 0, latch_ttl)
    return 0
end
local count = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[2], KEYS[3], count)
latch(KEYS[4], 1, latch_ttl)
return 1
