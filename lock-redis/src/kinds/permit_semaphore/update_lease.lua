-- update_lease: set the lease of a taken permit (Redisson's
-- updateLeaseTime). Runs after common.lua, count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- ARGV[1]  permit id, 32 hex characters
-- ARGV[2]  lease in milliseconds from now; "0" for none
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply (after reclaiming expired permits): 1 updated, 0 not taken.
-- Idempotent: sent again it sets the same lease end again.
read_count(KEYS[1])
local now = server_now()
reclaim(KEYS[1], KEYS[2], KEYS[3], now, ARGV[3])
local id = raw_id(ARGV[1])
if redis.call('zscore', KEYS[2], id) then
    redis.call('zadd', KEYS[2], expiry(now, ARGV[2]), id)
    return 1
end
return 0
