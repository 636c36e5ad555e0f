-- counts: the free and the taken permits after reclaiming expired ones
-- (Redisson's availablePermits, acquiredPermits and getPermits in one).
-- Runs after common.lua, count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- ARGV[1]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply: {exists, free, taken}: exists 1 when the count exists (0: free is
-- 0), taken the permits in the leases. Redisson's getPermits is
-- free + taken, or 0 when the count does not exist.
read_count(KEYS[1])
reclaim(KEYS[1], KEYS[2], KEYS[3], server_now(), ARGV[1])
local value = read_count(KEYS[1])
local taken = redis.call('zcard', KEYS[2])
if value == nil then
    return {0, 0, taken}
end
return {1, value, taken}
