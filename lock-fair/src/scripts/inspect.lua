-- inspect: read a fair lock's holders, remaining time to live and queue.
-- Read-only: stale waiters are reported, not evicted.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  waiter queue (list)       redisson_lock_queue:{<name>}
-- KEYS[3]  waiter deadlines (zset)   redisson_lock_timeout:{<name>}
--
-- Reply: {fields, pttl, queue, deadlines, now}
--   fields     HGETALL of the lock as a flat array: field1, count1, ...
--              (empty when free)
--   pttl       PTTL of the lock: -2 missing, -1 no expiry, else milliseconds
--   queue      LRANGE of the queue: owner fields, head first
--   deadlines  one entry per queue entry, in order: its deadline in epoch
--              milliseconds (integer), or nil when it has none
--   now        the server's clock (TIME) in epoch milliseconds, so the
--              reader turns deadlines into time left without its own clock
--   error "WRONGTYPE ..." when KEYS[1] holds a value that is not a hash
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local queue = redis.call('lrange', KEYS[2], 0, -1)
local deadlines = {}
for i, field in ipairs(queue) do
    local score = redis.call('zscore', KEYS[3], field)
    if score then
        deadlines[i] = tonumber(score)
    else
        deadlines[i] = false
    end
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('hgetall', KEYS[1]), redis.call('pttl', KEYS[1]), queue, deadlines, now}
