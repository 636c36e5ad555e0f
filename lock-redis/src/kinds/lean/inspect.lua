-- inspect: a lean lock's holder and time to live, in the shape of the
-- reentrant lock's inspect (a flat field/count array, then the PTTL), so
-- one decoder reads both. Writes nothing.
--
-- KEYS[1]  lock key                  <prefix><name>
--
-- Reply: {{token, '1'}, pttl} when held, {{}, -2} when free.
-- A value of another type: WRONGTYPE.
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'string' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local holder = redis.call('get', KEYS[1])
if not holder then
    return {{}, -2}
end
return {{holder, '1'}, redis.call('pttl', KEYS[1])}
