-- inspect: read a lock's holders and remaining time to live.
--
-- KEYS[1]  lock hash                 <prefix><name>
--
-- Reply: {fields, pttl}
--   fields  HGETALL of the lock as a flat array: field1, count1, field2, ...
--           (empty when free). A value may be other than a count: a
--           Redisson read-write lock keeps `mode` = `read`/`write` beside
--           its counted fields; the reply decoder skips such fields.
--   pttl    PTTL of the lock: -2 missing, -1 no expiry, else milliseconds
--   error "WRONGTYPE ..." when KEYS[1] holds a value that is not a hash
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
return {redis.call('hgetall', KEYS[1]), redis.call('pttl', KEYS[1])}
