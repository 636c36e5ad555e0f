-- delete: delete a count-down latch whatever its count (Redisson's
-- RCountDownLatch.delete), at most once per request id. Runs after
-- counter.lua.
--
-- KEYS[1]  latch key                 <prefix><name>
-- KEYS[2]  latch channel             redisson_countdownlatch__channel__{<prefix><name>}
-- KEYS[3]  request latch             redisson_unlock_latch:{<prefix><name>}:<request-id>
-- ARGV[1]  new-count message ("1": waiters read the count again)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  request latch ttl in milliseconds; "0" keeps none
--
-- Reply (latched: a repeat never deletes a count set after the first run):
--   1    deleted, and the message published
--   0    there was no latch
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an
--        integer (left untouched: this never deletes another kind's value)
local ttl = tonumber(ARGV[3])
local first = latched(KEYS[3], ttl)
if first then
    return first
end
local found = check_counter(KEYS[1])
if type(found) == 'table' then
    return found
end
if found == 'none' then
    keep(KEYS[3], 0, ttl)
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
keep(KEYS[3], 1, ttl)
return 1
