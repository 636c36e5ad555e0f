-- force_unlock: delete a lock whoever holds it and announce the unlock.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
-- ARGV[1]  unlock message ("0": wake one waiter per client)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply:
--   1  the lock existed; it was deleted and the message published
--   0  there was no lock
--   error "WRONGTYPE ..." when KEYS[1] holds a value that is not a hash;
--   the value is left untouched
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
