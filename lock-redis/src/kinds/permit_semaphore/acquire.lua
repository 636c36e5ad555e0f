-- acquire: take one permit under a given id, with a lease (Redisson's
-- tryAcquire of an RPermitExpirableSemaphore). Runs after common.lua,
-- count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout (member: raw id, score: lease end)
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- ARGV[1]  permit id, 32 hex characters
-- ARGV[2]  lease in milliseconds; "0" for none
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply (after reclaiming expired permits):
--   {1, 0}     taken: the count down by 1, the id scored with its lease end
--              (the leases get the count's time to live, as in Redisson)
--   {0, wait}  none free: `wait` ms until the earliest lease ends, or -1
--              when no taken permit expires
-- Safe to send again: a repeat finds its id taken and answers {1, 0}
-- without taking another permit. (A duplicate arriving after the permit
-- was released would take it again, under an id its caller no longer
-- uses; it comes back when its lease ends.)
read_count(KEYS[1])
local now = server_now()
reclaim(KEYS[1], KEYS[2], KEYS[3], now, ARGV[3])
local id = raw_id(ARGV[1])
if redis.call('zscore', KEYS[2], id) then
    return {1, 0}
end
local value = read_count(KEYS[1])
if value ~= nil and value >= 1 then
    redis.call('decrby', KEYS[1], 1)
    redis.call('zadd', KEYS[2], expiry(now, ARGV[2]), id)
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return {1, 0}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[1] ~= nil and first[2] ~= NO_LEASE then
    return {0, math.max(1, tonumber(first[2]) - now)}
end
return {0, -1}
