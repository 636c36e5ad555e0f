-- leave_queue: a waiter that gave up (timed out, or its future was dropped)
-- leaves the fair lock's queue; if the lock is free, the new head is told it
-- is next. Runs after prelude.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
--          (the head is told on KEYS[2] .. ':' .. <head's owner field>)
-- KEYS[3]  waiter queue (list)       redisson_lock_queue:{<name>}
-- KEYS[4]  waiter deadlines (zset)   redisson_lock_timeout:{<name>}
-- ARGV[1]  owner field of the waiter "<client-uuid>:<owner-id>"
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
--
-- The deadlines of the waiters behind are not changed (Redisson moves them
-- up by the leaver's wait time; ours refresh their own).
--
-- Reply: 1 (also when the waiter was not queued).
redis.call('lrem', KEYS[3], 0, ARGV[1])
redis.call('zrem', KEYS[4], ARGV[1])
evict(KEYS[3], KEYS[4], server_now())
if redis.call('exists', KEYS[1]) == 0 then
    local head = redis.call('lindex', KEYS[3], 0)
    if head then
        redis.call(ARGV[2], KEYS[2] .. ':' .. head, '0')
    end
end
return 1
