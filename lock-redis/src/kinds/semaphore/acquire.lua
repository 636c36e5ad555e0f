-- acquire: take n permits if that many are free (Redisson's tryAcquire).
-- Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  request record            redisson_lock_latch:{<name>}:<request-id>
-- ARGV[1]  n (1..MAX_PERMITS)
-- ARGV[2]  the request's deadline (see recorded() in common.lua)
--
-- Reply:
--   1  taken: the count went down by n (its time to live kept)
--   0  fewer than n free (or no semaphore); nothing written but the record
-- Both outcomes are recorded: sent again (a retry after a lost reply, or a
-- late duplicate), the request answers its first outcome and takes
-- nothing. That is what makes an acquisition safe to retry: without it a
-- retry of an attempt that took n would take n more, which nobody would
-- ever give back; and a late duplicate of an attempt that found none free
-- would take permits after its caller gave up.
-- Out of memory: DECRBY is refused before anything is written.
local first = recorded_count(KEYS[2], ARGV[2])
if first == RECORD_HELD then
    return 0
end
if first ~= nil then
    return 1
end
local value = read_count(KEYS[1])
local n = tonumber(ARGV[1])
if value ~= nil and value >= n then
    redis.call('decrby', KEYS[1], n)
    record(KEYS[2], 1)
    return 1
end
record(KEYS[2], RECORD_HELD)
return 0
