-- Writes one client's record (replacing the last one) and keeps the
-- registry of live clients, pruning those whose records ran out.
-- KEYS[1] the registry: sorted set, member = client id, score = when its
--         record expires (server ms)
-- KEYS[2] the client's record: hash
-- ARGV[1] client id; ARGV[2] the record's time to live (ms);
-- ARGV[3..] the record's field, value pairs
-- Reply: the server's clock (TIME) in ms since the Unix epoch, as read
--        here: the client's estimate of the store's clock follows it
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
-- The registry outlives its longest-lived member, and no more.
if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
end
return now
