-- lease_time: how long a taken permit's lease still runs (Redisson's
-- getLeaseTime). Runs after common.lua, count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- ARGV[1]  permit id, 32 hex characters
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply (after reclaiming expired permits):
--   ms > 0  the lease ends in ms milliseconds
--   -1      taken without a lease
--   -2      not taken (never, released, or expired); Redisson answers 0
--           and throws
read_count(KEYS[1])
local now = server_now()
reclaim(KEYS[1], KEYS[2], KEYS[3], now, ARGV[2])
local score = redis.call('zscore', KEYS[2], raw_id(ARGV[1]))
if not score then
    return -2
end
if tonumber(score) == tonumber(NO_LEASE) then
    return -1
end
return math.max(1, tonumber(score) - now)
