-- leases: helpers of the expirable-permit semaphore's scripts. Put after
-- common.lua and ../semaphore/count.lua in front of each script (mod.rs).
--
-- NO_LEASE
--     the score of a permit without a lease (Redisson's
--     nonExpirableTimeout), as a string: Lua 5.1 prints numbers with 14
--     significant digits, and this one has 15.
-- server_now()
--     the server's clock in epoch milliseconds (store_now() of common.lua:
--     one TIME per script). Lease ends are scored by it, so a client's
--     clock never matters to ours; Redisson scores with its caller's clock.
-- expiry(now, lease)
--     the score of a permit leased for `lease` ms from `now` ("0": none),
--     as an integer string.
-- raw_id(hex)
--     the 16 raw bytes of a permit id given as 32 hex characters: the
--     member as Redisson stores it.
-- reclaim(count, leases, channel, now, publish)
--     gives back every permit whose lease ended by `now`: removes them from
--     the sorted set `leases`, INCRBYs `count` by as many, and publishes the
--     new count on `channel` when it is above 0 (as Redisson does). In
--     chunks, so that no UNPACK outgrows Lua's stack.
local NO_LEASE = '922337203685477'

local function server_now()
    return store_now()
end

local function expiry(now, lease)
    if tonumber(lease) == 0 then
        return NO_LEASE
    end
    return string.format('%.0f', now + tonumber(lease))
end

local function raw_id(hex)
    return (string.gsub(hex, '..', function(pair)
        return string.char(tonumber(pair, 16))
    end))
end

local function reclaim(count, leases, channel, now, publish)
    local value = nil
    while true do
        local expired = redis.call('zrangebyscore', leases, 0, now, 'limit', 0, 1000)
        if #expired == 0 then
            break
        end
        redis.call('zrem', leases, unpack(expired))
        value = redis.call('incrby', count, #expired)
    end
    if value ~= nil and value > 0 then
        redis.call(publish, channel, value)
    end
end
