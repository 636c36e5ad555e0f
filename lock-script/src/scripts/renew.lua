-- renew: extend the lease of many locks at once (the watchdog's batch).
-- Runs after common.lua.
--
-- KEYS[i]    lock hash i (all in one slot on a cluster)
-- ARGV[1]    lease in milliseconds (>= 1): each renewed lock expires no
--            earlier than this from now, never sooner than it already would
--            (extend() in common.lua: a longer fixed-lease hold of the same
--            owner keeps its time; a lock without expiry keeps none)
-- ARGV[i+1]  owner field of lock i    "<client-uuid>:<owner-id>"
--
-- Reply: an array with one integer per key, in order:
--   1  renewed (the key is a hash and the owner holds it)
--   0  not held by that owner (missing key, other owner, or not a hash;
--      a value of another type is left untouched)
local result = {}
for i = 1, #KEYS do
    local kind = redis.call('type', KEYS[i])['ok']
    if kind == 'hash' and redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        extend(KEYS[i], ARGV[1], redis.call('pttl', KEYS[i]))
        result[i] = 1
    else
        result[i] = 0
    end
end
return result
