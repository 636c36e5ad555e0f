-- count: read a count-down latch's count (Redisson's
-- RCountDownLatch.getCount). Runs after counter.lua. Writes nothing.
--
-- KEYS[1]  latch key                 <prefix><name>
--
-- Reply: the count as stored (an integer string), or nil when the latch
--        does not exist (open).
--   error "WRONGTYPE ..." when KEYS[1] holds something other than an integer
local found = check_counter(KEYS[1])
if type(found) == 'table' then
    return found
end
return redis.call('get', KEYS[1])
