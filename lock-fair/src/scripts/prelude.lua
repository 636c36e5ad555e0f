-- prelude: shared by the fair lock's writing scripts. It is not a script of
-- its own: it is put in front of acquire.lua, release.lua, leave_queue.lua
-- and force_unlock.lua when they are built (see src/scripts.rs), so every
-- one of them runs the same eviction.
--
-- server_now()         the server's clock (TIME) in epoch milliseconds, so a
--                      client's clock can neither reorder nor evict waiters.
--                      Redis 7 replicates a script's effects, not the script,
--                      so TIME is allowed before writes.
-- evict(queue, timeouts, now)
--                      drops stale queue heads: while the head of the list
--                      `queue` has no deadline in the zset `timeouts`, or one
--                      <= now, LPOP it and ZREM it. Stops at the first live
--                      head (waiters behind a live one are not looked at).
local function server_now()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function evict(queue, timeouts, now)
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
    end
end

