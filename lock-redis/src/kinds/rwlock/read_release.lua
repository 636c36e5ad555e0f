-- read_release: give back one read hold of a read-write lock (Redisson's
-- RedissonReadLock unlock). Runs after common.lua.
--
-- KEYS[1]  lock hash                 <prefix><name>
-- KEYS[2]  channel                   redisson_rwlock:{<prefix><name>}
-- KEYS[3]  this owner's hold-key prefix
--                                    {<prefix><name>}:<owner>:rwlock_timeout
-- KEYS[4]  every owner's hold-key prefix (before ":<owner>")
--                                    {<prefix><name>}
-- KEYS[5]  request record            redisson_unlock_latch:{<name>}:<request-id>
-- ARGV[1]  unlock message ("0": wake one waiter per client)
-- ARGV[2]  reader field              "<client-uuid>:<owner-id>"
-- ARGV[3]  publish command           "PUBLISH" or "SPUBLISH"
-- ARGV[4]  the request's deadline (see recorded() in common.lua)
--
-- The owner's holds are interchangeable (only their count is stored), so
-- the one given back is the one whose key ends soonest: its key takes over
-- the TTL of the highest-numbered key, which is deleted (Redisson deletes
-- the highest-numbered key, which can drop the longest lease and leave a
-- remaining watchdog hold with a short one). Then the hash lives as long as
-- the longest hold key left over all readers; when none is left (dead
-- readers' keys expired) and no writer holds it, the hash is deleted and
-- ARGV[1] published. In write mode (this owner's writer holds it too) the
-- hash's TTL is never shortened.
--
-- Reply:
--   1    this owner's last read hold is gone (the lock may still be held by
--        other readers or this owner's writer; it is deleted, and waiters
--        told, when nobody holds it any more)
--   0    one read hold fewer; the owner still reads
--   nil  not held by this owner (no lock at all: ARGV[1] is published, as
--        Redisson does, so a waiter that missed a notice looks again)
-- Every outcome is recorded (see record() in common.lua); a repeat writes
-- nothing and returns its first reply, nil included.
-- Out of memory (see common.lua): giving back the owner's last hold only
-- deletes (HDEL, DEL, PEXPIRE, PUBLISH) and succeeds; a partial release
-- fails at its HINCRBY with nothing written.
-- A non-hash value at KEYS[1] makes HGET fail with WRONGTYPE before any
-- write.
local first = recorded_release(KEYS[5], ARGV[4])
if first ~= 'none' then
    return first or nil
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    if redis.call('exists', KEYS[1]) == 0 then
        redis.call(ARGV[3], KEYS[2], ARGV[1])
    end
    record(KEYS[5], RECORD_NOT_HELD)
    return nil
end
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if count == nil then
    record(KEYS[5], RECORD_NOT_HELD)
    return nil
end
if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], -1)
else
    redis.call('hdel', KEYS[1], ARGV[2])
end
-- Give back the hold that ends soonest (a missing key has ended).
local function ends(key)
    local ttl = redis.call('pttl', key)
    if ttl == -1 then
        return math.huge
    end
    return math.max(ttl, 0)
end
local last = KEYS[3] .. ':' .. count
local last_ends = ends(last)
local soonest, soonest_ends = count, last_ends
for i = count - 1, 1, -1 do
    local i_ends = ends(KEYS[3] .. ':' .. i)
    if i_ends < soonest_ends then
        soonest, soonest_ends = i, i_ends
    end
end
if soonest ~= count then
    -- Key `soonest` stays, with the TTL of the last key, which goes.
    local kept = KEYS[3] .. ':' .. soonest
    if last_ends == 0 then
        redis.call('del', kept)
    elseif soonest_ends == 0 then
        -- Its key had expired already; out of memory it stays so.
        redis.pcall('set', kept, 1, 'px', last_ends)
    elseif last_ends ~= math.huge then
        redis.call('pexpire', kept, last_ends)
    end
end
redis.call('del', last)
local reply = 0
if count == 1 then
    reply = 1
end
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    local fields = redis.call('hkeys', KEYS[1])
    for _, field in ipairs(fields) do
        local n = tonumber(redis.call('hget', KEYS[1], field))
        if n ~= nil then
            for i = n, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)
                longest = math.max(longest, ttl)
            end
        end
    end
    if mode == 'write' then
        local pttl = redis.call('pttl', KEYS[1])
        if longest > 0 then
            extend(KEYS[1], longest, pttl)
        end
        record(KEYS[5], reply)
        return reply
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        record(KEYS[5], reply)
        return reply
    end
end
-- Nobody holds it any more (dead readers' hold keys have expired).
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
record(KEYS[5], reply)
return reply
