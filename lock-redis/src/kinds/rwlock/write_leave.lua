-- write_leave: a waiting writer gives up (timed out, or its future was
-- dropped): it no longer holds readers off.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  waiting writers (ours)    redisson_rwlock_writers:{<name>}
-- KEYS[3]  channel                   redisson_rwlock:{<prefix><name>}
-- ARGV[1]  writer field              "<client-uuid>:<owner-id>:write"
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
--
-- When no writer is left waiting and no writer holds the lock, "1" is
-- published: readers that waited behind this writer look again.
--
-- Reply: 1 when the writer was waiting, 0 when it was not.
local removed = redis.call('zrem', KEYS[2], ARGV[1])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[2], '-inf', now)
if removed == 1 and redis.call('zcard', KEYS[2]) == 0 then
    local kind = redis.call('type', KEYS[1])['ok']
    if kind == 'none' or (kind == 'hash' and redis.call('hget', KEYS[1], 'mode') ~= 'write') then
        redis.call(ARGV[2], KEYS[3], '1')
    end
end
return removed
