-- acquire: take n permits at once, each under a given id, with one lease
-- (Redisson's tryAcquire(permits, …) of an RPermitExpirableSemaphore).
-- Runs after common.lua, count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout (member: raw id, score: lease end)
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- ARGV[1]  lease in milliseconds; "0" for none
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3…] the n permit ids, 32 hex characters each (n >= 1)
--
-- Reply (after reclaiming expired permits):
--   {1, 0}     taken: the count down by n, every id scored with its lease
--              end (the leases get the count's time to live, as in
--              Redisson)
--   {0, wait}  fewer than n free: `wait` ms until the earliest lease ends,
--              or -1 when no taken permit expires
-- Safe to send again: a repeat finds one of its ids taken and answers
-- {1, 0} without taking more permits. (A duplicate arriving after the
-- permits were released would take them again, under ids its caller no
-- longer uses; they come back when their lease ends.)
-- Out of memory (see common.lua): reclaiming expired permits writes first
-- and cannot be refused, so when this request will take permits (enough
-- are free counting the expired ones) it is refused before that, with
-- nothing written.
read_count(KEYS[1])
local now = server_now()
local n = #ARGV - 2
local ids = {}
for i = 3, #ARGV do
    ids[#ids + 1] = raw_id(ARGV[i])
end
local function taken_already()
    for _, id in ipairs(ids) do
        local score = redis.call('zscore', KEYS[2], id)
        if score and tonumber(score) > now then
            return true
        end
    end
    return false
end
local again = taken_already()
if not again then
    local value = read_count(KEYS[1])
    if value ~= nil and value + redis.call('zcount', KEYS[2], 0, now) >= n then
        refuse_if_out_of_memory(KEYS[2])
    end
end
reclaim(KEYS[1], KEYS[2], KEYS[3], now, ARGV[2])
if again then
    return {1, 0}
end
local value = read_count(KEYS[1])
if value ~= nil and value >= n then
    redis.call('decrby', KEYS[1], n)
    local score = expiry(now, ARGV[1])
    for _, id in ipairs(ids) do
        redis.call('zadd', KEYS[2], score, id)
    end
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
