-- force_unlock: delete a read-write lock held in one mode, whoever holds
-- it, and announce it (Redisson's forceUnlock of RedissonReadLock and
-- RedissonWriteLock: each side deletes the lock only in its own mode).
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  channel                   redisson_rwlock:{<prefix><name>}
-- ARGV[1]  the side's mode           "read" or "write"
-- ARGV[2]  message                   "0" for read, "1" for write (Redisson's)
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply:
--   1  the lock was in that mode; it was deleted and the message published
--   0  it was not (free, or in the other mode): nothing written
--   error "WRONGTYPE ..." when KEYS[1] holds a value that is not a hash;
--   the value is left untouched
-- Hold keys of readers are left to expire on their own (as Redisson does);
-- nothing reads them once the hash is gone.
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
    redis.call('del', KEYS[1])
    redis.call(ARGV[3], KEYS[2], ARGV[2])
    return 1
end
return 0
