-- read_renew: extend the read holds of many owners at once (the watchdog's
-- batch for read-write locks). Runs after common.lua.
--
-- KEYS[2i-1] lock hash of target i   <prefix><name> (all in one slot on a cluster)
-- KEYS[2i]   that owner's hold-key prefix
--                                    {<prefix><name>}:<owner>:rwlock_timeout
-- ARGV[1]    lease in milliseconds (>= 1)
-- ARGV[i+1]  reader field of target i "<client-uuid>:<owner-id>"
--
-- Each of the owner's hold keys (1..count) and the hash expire no earlier
-- than the lease from now, never sooner than they already would (extend()
-- in common.lua; Redisson sets the lease on each, which can shorten a
-- longer fixed-lease hold of the same owner or a writer's lease).
--
-- Reply: an array with one integer per target, in order:
--   1  renewed (the owner reads the lock)
--   0  not held by that owner (missing key, no reader field, or not a
--      hash; a value of another type is left untouched)
local result = {}
for i = 1, #KEYS / 2 do
    local lock, prefix = KEYS[2 * i - 1], KEYS[2 * i]
    local count = nil
    if redis.call('type', lock)['ok'] == 'hash' then
        count = tonumber(redis.call('hget', lock, ARGV[i + 1]))
    end
    if count ~= nil then
        for n = count, 1, -1 do
            local hold = prefix .. ':' .. n
            extend(hold, ARGV[1], redis.call('pttl', hold))
        end
        extend(lock, ARGV[1], redis.call('pttl', lock))
        result[i] = 1
    else
        result[i] = 0
    end
end
return result
