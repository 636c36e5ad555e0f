-- acquire: take a reentrant lock, or re-enter it as its owner (Redisson layout).
-- Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  acquire latch             redisson_lock_latch:{<name>}:<request-id>
-- KEYS[3]  fencing-token counter     redisson_lock_token:{<name>}
-- ARGV[1]  lease in milliseconds (>= 1)
-- ARGV[2]  owner field               "<client-uuid>:<owner-id>"
-- ARGV[3]  "1" to hand out a fencing token, "0" not to
-- ARGV[4]  latch ttl in milliseconds; "0" keeps no latch
--
-- Reply:
--   {1, token}  acquired (first hold or one more hold); token is the new
--               fencing token, or 0 when none was asked for. A repeated
--               request (same latch key) returns its first reply unchanged.
--   {0, pttl}   held by another owner; pttl is the lock's PTTL (-1: no expiry)
-- A non-hash value at KEYS[1] makes HEXISTS fail with WRONGTYPE, and a
-- counter at KEYS[3] that is not an integer fails a fenced acquisition with
-- BADTOKEN (see common.lua): either way the script aborts before writing
-- anything.
local latch_ttl = tonumber(ARGV[4])
if latch_ttl > 0 then
    local latched = redis.call('get', KEYS[2])
    if latched then
        return {1, tonumber(latched)}
    end
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = next_token(KEYS[3], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    if latch_ttl > 0 then
        redis.call('set', KEYS[2], token, 'px', latch_ttl)
    end
    return {1, token}
end
return {0, redis.call('pttl', KEYS[1])}
