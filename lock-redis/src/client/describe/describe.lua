-- describe: read what is stored under a name, whatever lock kind put it
-- there (for lockctl status). Writes nothing; touches only its KEYS.
--
-- KEYS[1]  the name's key            <prefix><name>
-- KEYS[2]  permit leases             {<prefix><name>}:timeout  (a permit-expirable
--                                    semaphore's sorted set; <prefix><name>:timeout
--                                    when the name has its own '{')
-- ARGV[1]  '1' to read KEYS[2]; '0' when it may not share a call with
--          KEYS[1] (a cluster slot apart: a name with a '}' but no '{'),
--          KEYS[2] is then KEYS[1] again and is not read as leases
--
-- Reply: {type, value, pttl, leases, now}
--   type    TYPE of KEYS[1]: 'none', 'hash', 'string', or another type
--   value   HGETALL as a flat array for a hash, GET for a string, else nil
--   pttl    PTTL of KEYS[1]
--   leases  nil when KEYS[2] is not a sorted set; otherwise its live members
--           (score above now by the server's clock) as a flat array:
--           member1, score1, member2, score2, ... in expiry order
--   now     the server's clock (TIME) in epoch milliseconds, so the reader
--           turns lease ends into time left without its own clock
local kind = redis.call('type', KEYS[1])['ok']
local value = false
if kind == 'hash' then
    value = redis.call('hgetall', KEYS[1])
elseif kind == 'string' then
    value = redis.call('get', KEYS[1])
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local leases = false
if ARGV[1] == '1' and redis.call('type', KEYS[2])['ok'] == 'zset' then
    leases = redis.call('zrangebyscore', KEYS[2], '(' .. now, '+inf', 'withscores')
end
return {kind, value, redis.call('pttl', KEYS[1]), leases, now}
