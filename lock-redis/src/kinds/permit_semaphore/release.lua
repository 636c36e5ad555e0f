-- release: give back permits by id, all or none, and announce it: one id
-- is Redisson's tryRelease(id), several its tryRelease(List). Runs after
-- common.lua, count.lua and leases.lua.
--
-- KEYS[1]  permit count              <prefix><name>
-- KEYS[2]  leases                    {<name>}:timeout
-- KEYS[3]  channel                   redisson_sc:{<name>}
-- KEYS[4]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[2]  the request's deadline (see recorded() in common.lua)
-- ARGV[3]  what the notice carries, as Redisson's two releases publish:
--          "count" the new count (tryRelease(id)), "given" the number
--          given back (tryRelease(List)); either wakes up to that many
--          waiters
-- ARGV[4…] the permit ids, 32 hex characters each, no id twice
--
-- Reply (after reclaiming expired permits, a released one included if its
-- lease ended):
--   m > 0  every id was taken: all removed, the count up by m, the notice
--          published
--   0      one of them is not taken (never, released, or expired): none
--          given back, nothing else written
-- Recorded: sent again, it answers its first reply and gives back nothing
-- twice.
-- Out of memory (see common.lua): the reclaim writes first and cannot be
-- refused, and frees lease members; what follows grows memory only by
-- creating a missing count, so then it is refused first.
local first = recorded_count(KEYS[4], ARGV[2])
if first ~= nil then
    return first
end
if read_count(KEYS[1]) == nil then
    refuse_if_out_of_memory(KEYS[2])
end
reclaim(KEYS[1], KEYS[2], KEYS[3], server_now(), ARGV[1])
local ids = {}
for i = 4, #ARGV do
    local id = raw_id(ARGV[i])
    if not redis.call('zscore', KEYS[2], id) then
        record(KEYS[4], 0)
        return 0
    end
    ids[#ids + 1] = id
end
-- In chunks, so that no UNPACK outgrows Lua's stack.
local removed = 0
for i = 1, #ids, 1000 do
    removed = removed + redis.call('zrem', KEYS[2], unpack(ids, i, math.min(i + 999, #ids)))
end
local count = redis.call('incrby', KEYS[1], removed)
if ARGV[3] == 'count' then
    redis.call(ARGV[1], KEYS[3], count)
else
    redis.call(ARGV[1], KEYS[3], removed)
end
record(KEYS[4], removed)
return removed
