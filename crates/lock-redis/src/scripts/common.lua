-- common: helpers shared by the lock scripts of lock-redis and lock-fair.
-- It is not a script of its own: it is put in front of every lock script
-- that uses it when the scripts are built (src/scripts.rs here, and
-- lock-fair's src/scripts.rs), so each rule is written once.
--
-- next_token(counter, fenced)
--     the next fencing token from the counter `counter` (INCR), or 0 when
--     `fenced` is not '1'. Callers take the token before writing anything
--     else: Lua does not roll back, so a failure after a hold was written
--     would leave a hold nobody has a guard for. A counter that does not
--     hold an integer fails the script with the error
--     "BADTOKEN <counter> does not hold an integer fencing token counter";
--     an out-of-memory refusal fails it with Redis's own OOM error.
local function next_token(counter, fenced)
    if fenced ~= '1' then
        return 0
    end
    local token = redis.pcall('incr', counter)
    if type(token) == 'table' then
        if string.sub(token.err, 1, 4) == 'OOM ' then
            error(token)
        end
        error({err = 'BADTOKEN ' .. counter .. ' does not hold an integer fencing token counter'})
    end
    return token
end

