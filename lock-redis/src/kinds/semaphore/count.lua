-- count: helpers of the semaphore scripts (semaphore/ and
-- permit_semaphore/). Put after common.lua (recorded(), record()) in front of each
-- script that uses them (mod.rs), so each rule is written once.
--
-- MAX_PERMITS
--     the bound of every count (Java's Integer.MAX_VALUE: Redisson reads
--     counts as ints). A change that would leave [-MAX_PERMITS, MAX_PERMITS]
--     is refused with nothing written.
-- read_count(key)
--     the count at `key` as a number, or nil when the key is missing. A
--     value that is not a string fails the script with GET's WRONGTYPE; a
--     string that is not an integer with "WRONGTYPE <key> does not hold a
--     permit count". Either way before anything is written, and the value
--     is left as it is.
-- recorded_count(key, deadline)
--     the first outcome (a number) of a request sent again, or nil when the
--     request has not run (run it; see recorded() in common.lua). 'held' (RECORD_HELD, see common.lua)
--     comes back as it is.
local MAX_PERMITS = 2147483647

local function read_count(key)
    local value = redis.call('get', key)
    if not value then
        return nil
    end
    local n = tonumber(value)
    if n == nil or n ~= math.floor(n) or string.find(value, '^-?%d+$') == nil then
        error({err = 'WRONGTYPE ' .. key .. ' does not hold a permit count'})
    end
    return n
end

local function recorded_count(key, deadline)
    local first = recorded(key, deadline)
    if first == RECORD_HELD then
        return first
    end
    if first then
        return tonumber(first)
    end
    return nil
end
