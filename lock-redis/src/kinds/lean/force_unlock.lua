-- force_unlock: delete a lean lock whoever holds it, and tell our waiters.
--
-- KEYS[1]  lock key                  <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
-- ARGV[1]  unlock message
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply: 1 when the key existed (deleted, message published), else 0.
-- A value of another type is left untouched: WRONGTYPE.
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'string' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
