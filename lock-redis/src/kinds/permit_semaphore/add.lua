-- add: add (or, negative, remove) free permits (Redisson's addPermits of an
-- RPermitExpirableSemaphore). Runs after common.lua, count.lua and
-- leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- KEYS[4]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  delta (-MAX_PERMITS..MAX_PERMITS)
-- ARGV[2]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[3]  the request's deadline (see recorded() in common.lua)
--
-- Reply (after reclaiming expired permits):
--   {1, count}  SET to the new count (a missing count counts as 0); the
--               new count published when the delta is positive (Redisson
--               publishes nothing for a removal)
--   {0, count}  refused: the count would leave +-MAX_PERMITS; nothing written
-- Recorded: a retry never adds twice.
local first = recorded_count(KEYS[4], ARGV[3])
if first ~= nil then
    return {1, first}
end
-- Out of memory (see common.lua): the reclaim writes first and cannot be
-- refused; what follows grows memory only by creating a missing count.
if read_count(KEYS[1]) == nil then
    refuse_if_out_of_memory(KEYS[2])
end
reclaim(KEYS[1], KEYS[2], KEYS[3], server_now(), ARGV[2])
local value = read_count(KEYS[1]) or 0
local count = value + tonumber(ARGV[1])
if count > MAX_PERMITS or count < -MAX_PERMITS then
    return {0, value}
end
redis.call('set', KEYS[1], count)
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[3], count)
end
record(KEYS[4], count)
return {1, count}
