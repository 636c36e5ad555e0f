-- The ids of clients whose records have not run out. Writes nothing.
-- KEYS[1] the registry
-- Reply: array of client ids
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now + 1, '+inf')
