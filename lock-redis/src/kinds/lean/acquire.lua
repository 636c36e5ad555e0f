-- acquire: take a lean lock (the redis.io single-instance pattern: one string
-- key holding its holder's token, as go-redsync, redis-py's Lock,
-- node-redlock and rslock keep it). Not re-entrant. Runs after common.lua.
--
-- KEYS[1]  lock key                  <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- KEYS[3]  fencing-token counter     redisson_lock_token:{<name>}
-- ARGV[1]  lease in milliseconds (>= 1)
-- ARGV[2]  owner token               "<client-uuid>:<owner-id>"
-- ARGV[3]  "1" to hand out a fencing token, "0" not to
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   {1, token}  acquired: the key now holds ARGV[2] with a PX of ARGV[1];
--               token is the new fencing token, or 0 when none was asked for
--   {0, pttl}   held by another token; pttl is the key's PTTL (-1: no expiry)
--   error "NON_REENTRANT_REACQUIRE ..." when the key holds this owner's token
--               already: a wait would wait for itself. Nothing is written
--               but the record.
-- Every outcome is recorded (see record() in common.lua): a repeated request
-- writes nothing and returns its first outcome ({0, pttl} with the current
-- PTTL, 0 when the key is gone). A value of another type at KEYS[1] makes
-- GET fail with WRONGTYPE, and a counter at KEYS[3] that is not an integer
-- fails a fenced acquisition with BADTOKEN: either way the script aborts
-- before writing anything.
local first = recorded_acquire(KEYS[2], ARGV[4], KEYS[1])
if first then
    return first
end
local holder = redis.call('get', KEYS[1])
if holder == ARGV[2] then
    record(KEYS[2], RECORD_REENTRY)
    return refuse_reentry(KEYS[1])
end
if holder then
    record(KEYS[2], RECORD_HELD)
    return held_reply(KEYS[1])
end
local token = next_token(KEYS[3], ARGV[3])
redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[1])
record(KEYS[2], token)
return {1, token}
