-- leave_queue: a waiter that gave up (timed out, or its future was dropped)
-- leaves the fair lock's queue; a lock granted to its wait is given back;
-- if the lock is free, the new head is granted it or told it is next
-- (hand_over() in prelude.lua). Runs after prelude.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
--          (the head is told on KEYS[2] .. ':' .. <head's owner field>)
-- KEYS[3]  waiter queue (list)       redisson_lock_queue:{<name>}
-- KEYS[4]  waiter deadlines (zset)   redisson_lock_timeout:{<name>}
-- KEYS[5]  handoff entries (hash)    redisson_lock_handoff:{<name>}
-- ARGV[1]  owner field of the waiter "<client-uuid>:<owner-id>"
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the wait's ticket, "0" for none: only that wait's handoff entry
--          is removed, and only a grant to it given back (one hold: the
--          owner may have entered the lock again since, through another
--          guard, and keeps that hold)
--
-- The deadlines of the waiters behind are not changed (Redisson moves them
-- up by the leaver's wait time; ours refresh their own).
--
-- Reply: 1 (also when the waiter was not queued).
redis.call('lrem', KEYS[3], 0, ARGV[1])
redis.call('zrem', KEYS[4], ARGV[1])
local entry = ARGV[3] ~= '0' and redis.call('hget', KEYS[5], ARGV[1])
if entry == 'g:' .. ARGV[3] then
    redis.call('hdel', KEYS[5], ARGV[1])
    local held = redis.call('hget', KEYS[1], ARGV[1])
    if held and tonumber(held) > 1 then
        redis.call('hincrby', KEYS[1], ARGV[1], -1)
    elseif held then
        redis.call('del', KEYS[1])
    end
elseif entry and string.match(entry, '^w:%d+:(%d+)$') == ARGV[3] then
    redis.call('hdel', KEYS[5], ARGV[1])
end
evict(KEYS[3], KEYS[4], KEYS[5], server_now())
if redis.call('exists', KEYS[1]) == 0 then
    hand_over(KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[2], ARGV[2])
end
return 1
