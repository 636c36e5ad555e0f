-- counter: the helper every count-down latch script starts with (put in
-- front of each script, after common.lua, when it is built, see mod.rs), so the rule is
-- written once.
--
-- check_counter(key)
--     'none' when `key` does not exist, 'count' when it holds an integer as
--     Redis's INCR/DECR read one (an optional '-', no leading zeros, within
--     the signed 64-bit range, compared as text: a Lua number cannot tell
--     those bounds from their neighbours); otherwise the script fails with
--     WRONGTYPE before writing anything, so a value of another kind at the
--     latch's key is reported and left untouched.
local function check_counter(key)
    local t = redis.call('type', key)['ok']
    if t == 'none' then
        return 'none'
    end
    if t == 'string' then
        local v = redis.call('get', key)
        local sign, digits = string.match(v, '^(%-?)([1-9]%d*)$')
        if v == '0' then
            return 'count'
        end
        if digits then
            local limit = sign == '-' and '9223372036854775808' or '9223372036854775807'
            if string.len(digits) < 19
                or (string.len(digits) == 19 and digits <= limit) then
                return 'count'
            end
        end
    end
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
