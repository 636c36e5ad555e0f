-- acquire: take a reentrant lock, or re-enter it as its owner (Redisson layout).
-- Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- KEYS[3]  fencing-token counter     redisson_lock_token:{<name>}
-- ARGV[1]  lease in milliseconds (>= 1): the lock expires no earlier than
--          this from now (never sooner than it already would; see extend()
--          in common.lua)
-- ARGV[2]  owner field               "<client-uuid>:<owner-id>"
-- ARGV[3]  "1" to hand out a fencing token, "0" not to
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   {1, token}  acquired (first hold or one more hold); token is the new
--               fencing token, or 0 when none was asked for.
--   {0, pttl}   held by another owner; pttl is the lock's PTTL (-1: no expiry)
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- (same record key) writes nothing and returns {1, token} with its first
-- token, or {0, pttl} with the lock's current PTTL (0 when it is gone).
-- A non-hash value at KEYS[1] makes HEXISTS fail with WRONGTYPE, and a
-- counter at KEYS[3] that is not an integer fails a fenced acquisition with
-- BADTOKEN (see common.lua): either way the script aborts before writing
-- anything.
local first = recorded(KEYS[2], ARGV[4])
if first == RECORD_HELD then
    local pttl = redis.call('pttl', KEYS[1])
    if pttl == -2 then
        pttl = 0
    end
    return {0, pttl}
end
if first then
    return {1, tonumber(first)}
end
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    local token = next_token(KEYS[3], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    extend(KEYS[1], ARGV[1], pttl)
    record(KEYS[2], token)
    return {1, token}
end
record(KEYS[2], RECORD_HELD)
return {0, pttl}
