-- delete: delete a count-down latch whatever its count (Redisson's
-- RCountDownLatch.delete), at most once per request id. Runs after
-- counter.lua.
--
-- KEYS[1]  latch key                 <prefix><name>
-- KEYS[2]  latch channel             redisson_countdownlatch__channel__{<prefix><name>}
-- KEYS[3]  request record            redisson_unlock_latch:{<prefix><name>}:<request-id>
-- ARGV[1]  new-count message ("1": waiters read the count again)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the request's deadline (see recorded() in common.lua)
--
-- Reply (recorded: a repeat never deletes a count set after the first run):
--   1    deleted, and the message published
--   0    there was no latch
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an
--        integer (left untouched: this never deletes another kind's value)
local first = recorded(KEYS[3], ARGV[3])
if first then
    return tonumber(first)
end
local found = check_counter(KEYS[1])
if type(found) == 'table' then
    return found
end
if found == 'none' then
    record(KEYS[3], 0)
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[2], KEYS[2], ARGV[1])
record(KEYS[3], 1)
return 1
