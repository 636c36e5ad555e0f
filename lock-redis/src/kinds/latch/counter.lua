-- counter: the helper every count-down latch script starts with (put in
-- front of each script, after common.lua, when it is built, see mod.rs), so the rule is
-- written once.
--
-- check_counter(key)
--     'none' when `key` does not exist, 'count' when it holds an integer as
--     Redis's INCR/DECR read one (an optional '-', no leading zeros, at
--     most 20 characters); otherwise the script fails with WRONGTYPE before
--     writing anything, so a value of another kind at the latch's key is
--     reported and left untouched.
local function check_counter(key)
    local t = redis.call('type', key)['ok']
    if t == 'none' then
        return 'none'
    end
    if t == 'string' then
        local v = redis.call('get', key)
        if string.len(v) <= 20 and (v == '0' or string.match(v, '^%-?[1-9]%d*$')) then
            return 'count'
        end
    end
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
