-- take: take a lean lock for an owner made for one wait, once a plain
-- `SET <key> <token> NX PX <lease> GET` found the key there (the lean
-- path: no request record, as go-redsync, redis-py's Lock, node-redlock
-- and rslock take it, plus the owner's own hold taken back). Writes only
-- the lock key.
--
-- KEYS[1]  lock key                  <prefix><name>
-- ARGV[1]  lease in milliseconds (>= 1)
-- ARGV[2]  owner token               "<client-uuid>:<owner-id>"
--
-- Reply:
--   {1, 0}     taken: the key now holds ARGV[2] with a PX of ARGV[1]. Also
--              when it held ARGV[2] already: an earlier attempt of the same
--              wait took it (its reply lost); its lease is set anew, so it
--              counts from this request, which the guard's deadline does.
--   {0, pttl}  held by another token; pttl is the key's PTTL (-1: no expiry)
-- A value of another type at KEYS[1] makes GET fail with WRONGTYPE before
-- anything is written.
local holder = redis.call('get', KEYS[1])
if holder == ARGV[2] then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {1, 0}
end
if holder then
    return {0, redis.call('pttl', KEYS[1])}
end
redis.call('set', KEYS[1], ARGV[2], 'px', ARGV[1])
return {1, 0}
