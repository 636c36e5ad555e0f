-- give_back: delete a lean lock taken by `take.lua` while it holds the
-- owner's token, and tell our waiters (the fast path's release: no request
-- record).
--
-- KEYS[1]  lock key                  <prefix><name>
-- KEYS[2]  unlock channel            redisson_lock__channel:{<name>}
-- ARGV[1]  unlock message ("0": wake one waiter per client)
-- ARGV[2]  owner token               "<client-uuid>:<owner-id>"
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
--
-- Reply:
--   1    released: the key deleted, the message published
--   0    the key is gone (for a repeat whose first copy may have deleted
--        it: released; otherwise: not held)
--   nil  the key holds another token (nothing written)
-- A value of another type at KEYS[1] makes GET fail with WRONGTYPE before
-- anything is written.
local holder = redis.call('get', KEYS[1])
if holder == ARGV[2] then
    redis.call('del', KEYS[1])
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    return 1
end
if holder then
    return nil
end
return 0
