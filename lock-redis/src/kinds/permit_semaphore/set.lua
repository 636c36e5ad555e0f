-- set: set the total number of permits, free and taken (Redisson's
-- setPermits of an RPermitExpirableSemaphore). Runs after common.lua,
-- count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- KEYS[4]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  the total (0..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the request's deadline (see recorded() in common.lua)
--
-- The total is not stored: it is the free count plus the taken permits
-- (every member of the leases, expired or not: reclaiming moves a permit
-- from one to the other and leaves the total as it is, so this script
-- need not reclaim, as Redisson's does not).
--
-- Reply:
--   {1, count}  no count yet: SET to the total, published (payload: the
--               total); or the count moved by (total - old total), so
--               that taken permits stay taken and the count may go
--               negative, published (payload: the total, as Redisson); or
--               the total was already that: nothing written, nothing
--               published. count is the free count after.
--   {0, count}  refused: the count would leave +-MAX_PERMITS; nothing
--               written
-- Recorded: sent again, it answers {1, count as it was then} and moves
-- nothing twice.
-- Out of memory: SET or INCRBY is the first write, refused before anything
-- else.
local first = recorded_count(KEYS[4], ARGV[3])
if first ~= nil then
    return {1, first}
end
local value = read_count(KEYS[1])
local total = tonumber(ARGV[1])
if value == nil then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call(ARGV[2], KEYS[3], ARGV[1])
    record(KEYS[4], total)
    return {1, total}
end
local maximum = value + redis.call('zcard', KEYS[2])
if maximum == total then
    record(KEYS[4], value)
    return {1, value}
end
local count = value + total - maximum
if count > MAX_PERMITS or count < -MAX_PERMITS then
    return {0, value}
end
redis.call('incrby', KEYS[1], total - maximum)
redis.call(ARGV[2], KEYS[3], ARGV[1])
record(KEYS[4], count)
return {1, count}
