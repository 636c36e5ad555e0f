-- available: the free permits after reclaiming expired ones (Redisson's
-- availablePermits). Runs after common.lua, count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- ARGV[1]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply: the count, 0 when missing.
read_count(KEYS[1])
reclaim(KEYS[1], KEYS[2], KEYS[3], server_now(), ARGV[1])
return read_count(KEYS[1]) or 0
