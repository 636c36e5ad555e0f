-- acquire: take a reentrant lock, or re-enter it as its owner (Redisson layout);
-- with ARGV[5] "1", Redisson's non-reentrant lock over the same layout, which
-- refuses its holder instead. Runs after common.lua.
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
-- ARGV[5]  "1" to refuse a re-entry (the non-reentrant lock), "0" to count it
--
-- Reply:
--   {1, token}  acquired (first hold or one more hold); token is the new
--               fencing token, or 0 when none was asked for.
--   {0, pttl}   held by another owner; pttl is the lock's PTTL (-1: no expiry)
--   error "NON_REENTRANT_REACQUIRE ..." with ARGV[5] "1" when this owner
--               holds the lock (Redisson's script answers the same code): a
--               wait would wait for itself. Nothing is written but the record.
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- (same record key) writes nothing and returns {1, token} with its first
-- token, or {0, pttl} with the lock's current PTTL (0 when it is gone).
-- A non-hash value at KEYS[1] makes HEXISTS fail with WRONGTYPE, and a
-- counter at KEYS[3] that is not an integer fails a fenced acquisition with
-- BADTOKEN (see common.lua): either way the script aborts before writing
-- anything.
local first = recorded_acquire(KEYS[2], ARGV[4], KEYS[1])
if first then
    return first
end
local pttl = redis.call('pttl', KEYS[1])
local ours = pttl ~= -2 and redis.call('hexists', KEYS[1], ARGV[2]) == 1
if ours and ARGV[5] == '1' then
    record(KEYS[2], RECORD_REENTRY)
    return refuse_reentry(KEYS[1])
end
if pttl == -2 or ours then
    local token = next_token(KEYS[3], ARGV[3])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    extend(KEYS[1], ARGV[1], pttl)
    record(KEYS[2], token)
    return {1, token}
end
record(KEYS[2], RECORD_HELD)
return {0, pttl}
