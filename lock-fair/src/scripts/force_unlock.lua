-- force_unlock: delete a fair lock whoever holds it and tell the queue head.
-- Runs after prelude.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
--          (the head is told on KEYS[2] .. ':' .. <head's owner field>)
-- KEYS[3]  waiter queue (list)       redisson_lock_queue:{<name>}
-- KEYS[4]  waiter deadlines (zset)   redisson_lock_timeout:{<name>}
-- KEYS[5]  handoff entries (hash)    redisson_lock_handoff:{<name>}
--          (see prelude.lua; only evicted heads' entries are removed)
-- ARGV[1]  unlock message ("0": wake one waiter)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
--
-- The queue is kept (its waiters still get the lock in order); stale heads
-- are evicted, and the head, if any, is told whether or not a lock existed.
--
-- Reply:
--   1  the lock existed and was deleted
--   0  there was no lock
--   error "WRONGTYPE ..." when KEYS[1] holds a value that is not a hash;
--   nothing is written
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local existed = redis.call('del', KEYS[1])
evict(KEYS[3], KEYS[4], KEYS[5], server_now())
local head = redis.call('lindex', KEYS[3], 0)
if head then
    redis.call(ARGV[2], KEYS[2] .. ':' .. head, ARGV[1])
end
return existed
