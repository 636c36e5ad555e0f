-- acquire: take a non-reentrant lock (Redisson's RedissonNonReentrantLock:
-- the RLock layout, with a re-acquisition by the holder refused).
-- Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- KEYS[3]  fencing-token counter     redisson_lock_token:{<name>}
-- ARGV[1]  lease in milliseconds (>= 1)
-- ARGV[2]  owner field               "<client-uuid>:<owner-id>"
-- ARGV[3]  "1" to hand out a fencing token, "0" not to
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   {1, token}  acquired; token is the new fencing token, or 0 when none
--               was asked for.
--   {0, pttl}   held by another owner; pttl is the lock's PTTL (-1: no expiry)
--   error "NON_REENTRANT_REACQUIRE ..." when this owner holds the lock
--               already (Redisson's script answers the same code): a wait
--               would wait for itself. Nothing is written but the record.
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- writes nothing and returns its first outcome, so the repeat of an
-- acquisition whose reply was lost is not taken for a re-acquisition.
-- A non-hash value at KEYS[1] fails HEXISTS with WRONGTYPE before any write.
local REENTRY = 'reentry'
local function refuse_reentry()
    return redis.error_reply('NON_REENTRANT_REACQUIRE this owner holds the lock ' .. KEYS[1] ..
        ' already and it is not reentrant')
end
local first = recorded(KEYS[2], ARGV[4])
if first == RECORD_HELD then
    local pttl = redis.call('pttl', KEYS[1])
    if pttl == -2 then
        pttl = 0
    end
    return {0, pttl}
end
if first == REENTRY then
    return refuse_reentry()
end
if first then
    return {1, tonumber(first)}
end
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
    local token = next_token(KEYS[3], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    record(KEYS[2], token)
    return {1, token}
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    record(KEYS[2], REENTRY)
    return refuse_reentry()
end
record(KEYS[2], RECORD_HELD)
return {0, pttl}
