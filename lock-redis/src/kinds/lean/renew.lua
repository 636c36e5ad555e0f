-- renew: extend the lease of many lean locks at once (the watchdog's batch).
-- Runs after common.lua.
--
-- KEYS[i]    lock key i (all in one slot on a cluster)
-- ARGV[1]    lease in milliseconds (>= 1): each renewed lock expires no
--            earlier than this from now, never sooner than it already would
--            (extend() in common.lua)
-- ARGV[i+1]  owner token of lock i
--
-- Reply: an array with one integer per key, in order:
--   1  renewed (the key is a string holding the token)
--   0  not held by that token (missing key, another token, or not a
--      string; a value of another type is left untouched)
local result = {}
for i = 1, #KEYS do
    if redis.call('type', KEYS[i])['ok'] == 'string'
        and redis.call('get', KEYS[i]) == ARGV[i + 1] then
        extend(KEYS[i], ARGV[1], redis.call('pttl', KEYS[i]))
        result[i] = 1
    else
        result[i] = 0
    end
end
return result
