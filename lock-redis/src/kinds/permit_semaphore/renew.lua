-- renew: extend the leases of many taken permits at once (the watchdog's
-- batch for leased permits). Runs after common.lua, count.lua and
-- leases.lua.
--
-- KEYS[3i-2] permit count of target i  <prefix><name> (all in one slot on a cluster)
-- KEYS[3i-1] its leases                {<name>}:timeout
-- KEYS[3i]   its channel               redisson_sc:{<name>}
-- ARGV[1]    lease in milliseconds (>= 1)
-- ARGV[2i]   permit id of target i, 32 hex characters
-- ARGV[2i+1] publish command           "PUBLISH" or "SPUBLISH"
--
-- Expired permits are reclaimed first, so a permit whose lease ended is
-- not revived. A taken permit's lease end becomes the later of its
-- current one and the lease from now: never shortened, and a permit
-- without a lease keeps none (update_lease.lua sets the lease as asked,
-- which is Redisson's updateLeaseTime; a renewal must not undo a longer
-- lease set that way).
--
-- Reply: an array with one integer per target, in order:
--   1  renewed (the permit is taken)
--   0  not taken: released, expired, or its semaphore deleted; also when
--      the count or the leases key holds a value of another type (left
--      untouched), so one broken semaphore does not fail the renewal of
--      the others in the batch
-- Safe to send again: it only ever moves lease ends later.
local function semaphore_intact(count, leases)
    local count_type = redis.call('type', count)['ok']
    if count_type == 'string' then
        if string.find(redis.call('get', count), '^-?%d+$') == nil then
            return false
        end
    elseif count_type ~= 'none' then
        return false
    end
    local leases_type = redis.call('type', leases)['ok']
    return leases_type == 'zset' or leases_type == 'none'
end

local now = server_now()
local result = {}
for i = 1, #KEYS / 3 do
    local count, leases, channel = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
    local publish = ARGV[2 * i + 1]
    local score = nil
    local id = raw_id(ARGV[2 * i])
    if semaphore_intact(count, leases) then
        reclaim(count, leases, channel, now, publish)
        score = redis.call('zscore', leases, id)
    end
    if score then
        local wanted = now + tonumber(ARGV[1])
        if tonumber(score) < wanted then
            redis.call('zadd', leases, string.format('%.0f', wanted), id)
        end
        result[i] = 1
    else
        result[i] = 0
    end
end
return result
