-- prelude: the fair lock's helpers, shared by its scripts. It is not a
-- script of its own: lock_script::compose puts in front of each script the
-- definitions here (and in lock-script's common.lua) that it reaches, when
-- the scripts are built (see src/scripts.rs), so every one of them runs the
-- same eviction. Nothing but top-level `local` definitions below this
-- header (the composer cuts the file at each one).
--
-- server_now()         the server's clock (TIME) in epoch milliseconds, so a
--                      client's clock can neither reorder nor evict waiters.
--                      Redis 7 replicates a script's effects, not the script,
--                      so TIME is allowed before writes.
-- evict(queue, timeouts, handoff, now)
--                      drops stale queue heads: while the head of the list
--                      `queue` has no deadline in the zset `timeouts`, or one
--                      <= now, LPOP it and ZREM it, and HDEL its waiting
--                      ('w:') entry in `handoff`. Stops at the first live
--                      head (waiters behind a live one are not looked at).
-- hand_over(lock, queue, timeouts, handoff, channel, publish)
--                      for a lock just freed: grants it to the queue head
--                      when the head accepts a handoff, else tells the head
--                      to look again (see below).
--
-- Direct handoff (lock_core::LockClient::handoff_lock). The hash `handoff`
-- (redisson_lock_handoff:{<name>}, which Redisson never reads) has an
-- entry per queued waiter of ours that accepts a handoff:
--   'w:<lease ms>:<ticket>'  waiting; <ticket> names the wait (one per
--                            lock() call, the same for all its attempts)
--   'g:<ticket>'             the lock was granted to that wait, which may
--                            not have seen it yet
-- A grant makes the head the holder (one hold, with the lease it asked
-- for), takes it out of the queue, and publishes 'g<ticket>' on its own
-- channel: the waiter holds the lock without asking again. Its 'g:' entry
-- lets a later attempt of the same wait (one that missed the message)
-- take the grant instead of entering the lock a second time, and lets the
-- wait, when it gives up, give the grant back (leave_queue.lua). A head
-- without an entry (a Redisson waiter, or ours on the plain fair lock) is
-- told '0', as Redisson's fair lock does. Only a live head is granted:
-- evict() has just dropped the heads whose deadline passed, and their
-- entries with them: a waiter that died without leaving would otherwise
-- leave its entry for as long as live waiters keep the hash.
-- The hash always has an expiry, extended (never shortened) to cover each
-- entry written: a waiting entry until its waiter's deadline, a grant for
-- the lease it was granted with. Entries nothing removes (a waiter of ours
-- evicted by Redisson's scripts, which do not know the hash) go with it.
-- Out of memory: the grant writes a hold in place of the one just deleted,
-- after that DEL turned the script's memory check off (see common.lua).
local function server_now()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function evict(queue, timeouts, handoff, now)
    while true do
        local head = redis.call('lindex', queue, 0)
        if not head then
            return
        end
        local deadline = redis.call('zscore', timeouts, head)
        if deadline and tonumber(deadline) > now then
            return
        end
        redis.call('lpop', queue)
        redis.call('zrem', timeouts, head)
        -- Only a waiting entry: a grant ('g:') to another wait of the same
        -- owner is that wait's to take or give back.
        local entry = redis.call('hget', handoff, head)
        if entry and string.sub(entry, 1, 2) == 'w:' then
            redis.call('hdel', handoff, head)
        end
    end
end

local function hand_over(lock, queue, timeouts, handoff, channel, publish)
    local head = redis.call('lindex', queue, 0)
    if not head then
        return
    end
    local entry = redis.call('hget', handoff, head)
    local lease, ticket
    if entry then
        lease, ticket = string.match(entry, '^w:(%d+):(%d+)$')
    end
    if not ticket then
        redis.call(publish, channel .. ':' .. head, '0')
        return
    end
    redis.call('hset', lock, head, 1)
    redis.call('pexpire', lock, lease)
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, head)
    redis.call('hset', handoff, head, 'g:' .. ticket)
    -- Extended to cover the grant, never shortened (other waiters'
    -- entries may outlive it); a hash left without expiry gets one.
    local kept = redis.call('pttl', handoff)
    if kept < tonumber(lease) then
        redis.call('pexpire', handoff, lease)
    end
    redis.call(publish, channel .. ':' .. head, 'g' .. ticket)
end
