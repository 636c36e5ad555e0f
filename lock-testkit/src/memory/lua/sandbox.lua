-- The sandbox every script runs in, built once per engine (engine.rs).
-- It gives scripts what Redis 7.0 gives them: the allow-listed base
-- functions and libraries, the `redis` library, KEYS and ARGV. Every
-- global is read-only ("Attempt to modify a readonly table"), reading a
-- global that does not exist is an error, and there is no os, io, require,
-- loadfile, dofile, print, getfenv or setfenv. (Not modelled: Redis's cjson,
-- cmsgpack, struct and bit libraries.)
--
-- Called with a Rust function, where(): the source and line of the script
-- code that raised the error being handled. Returns:
--   base      the readable globals; the engine sets KEYS and ARGV in it
--   internals a table the engine shares with this code: `lib` is the
--             table behind `redis`, whose `call` and `pcall` the engine sets
--             for each run (Rust functions, so that, as in Redis, they are C
--             frames and a `return redis.call(...)` keeps the script's frame
--             for error locations); `raised` holds the error table of a
--             failed redis.call, which Rust can only raise as an opaque
--             value: the error handler and pcall/xpcall swap it back in
--   run       run(f) calls the compiled script f, returning true and its
--             result, or false and the error as Redis reports it
--             ({err=..., source=..., line=...})
local where = ...

local error, type, tostring, select, ipairs, pairs, setmetatable, rawget =
    error, type, tostring, select, ipairs, pairs, setmetatable, rawget
local sub, find, gsub = string.sub, string.find, string.gsub
local G = _G

local readonly = setmetatable({}, { __mode = 'k' })

local function deny()
    error('Attempt to modify a readonly table', 2)
end

-- A read-only view of t; it is what scripts see of each library.
local function protect(t)
    local view = setmetatable({}, { __index = t, __newindex = deny, __metatable = false })
    readonly[view] = true
    return view
end

local base = {}
for _, name in ipairs({
    'assert', 'collectgarbage', 'coroutine', 'error', 'gcinfo', 'getmetatable',
    'ipairs', 'load', 'loadstring', 'math', 'next', 'pairs', 'pcall', 'rawequal',
    'rawget', 'select', 'setmetatable', 'string', 'table', 'tonumber', 'tostring',
    'type', 'unpack', 'xpcall', '_VERSION',
}) do
    local value = G[name]
    if type(value) == 'table' then
        value = protect(value)
    end
    base[name] = value
end

local raw_rawset = rawset
base.rawset = function(t, k, v)
    if readonly[t] or t == G then
        error('Attempt to modify a readonly table', 0)
    end
    return raw_rawset(t, k, v)
end

-- Redis's luaPushErrorBuff: "-CODE message" keeps its code, anything else
-- gets ERR; surrounding newlines are trimmed.
local function error_table(s)
    local code, message = 'ERR', s
    if sub(s, 1, 1) == '-' then
        local space = find(s, ' ', 1, true)
        if space then
            code, message = sub(s, 2, space - 1), sub(s, space + 1)
        else
            message = sub(s, 2)
        end
    end
    message = gsub(gsub(message, '^[\r\n]+', ''), '[\r\n]+$', '')
    return { err = code .. ' ' .. message }
end

local redis = {}
local internals = { lib = redis }

-- The error a script sees: a failed redis.call's table rather than the
-- opaque value Rust raised.
local function take_raised(err)
    if type(err) == 'userdata' then
        local raised = internals.raised
        if raised ~= nil then
            internals.raised = nil
            return raised
        end
    end
    return err
end

local raw_pcall, raw_xpcall = pcall, xpcall

-- Redis 7.0's pcall hands a script the message of an {err=...} error
-- (what redis.call raised before 7.0), not the table; xpcall's handler
-- gets the table.
local function settle(ok, ...)
    if ok then
        return ok, ...
    end
    local err = take_raised((...))
    if type(err) == 'table' and type(rawget(err, 'err')) == 'string' then
        err = rawget(err, 'err')
    end
    return false, err
end

base.pcall = function(f, ...)
    return settle(raw_pcall(f, ...))
end

base.xpcall = function(f, handle)
    return raw_xpcall(f, function(err)
        return handle(take_raised(err))
    end)
end

function redis.error_reply(...)
    local s = ...
    if select('#', ...) ~= 1 or type(s) ~= 'string' then
        return error_table('wrong number or type of arguments')
    end
    if sub(s, 1, 1) ~= '-' then
        s = '-' .. s
    end
    return error_table(s)
end

function redis.status_reply(...)
    local s = ...
    if select('#', ...) ~= 1 or type(s) ~= 'string' then
        return error_table('wrong number or type of arguments')
    end
    return { ok = s }
end

-- sha1hex, log, setresp and set_repl are Rust functions (library.rs).

function redis.replicate_commands()
    return true
end

function redis.breakpoint()
    return false
end

function redis.debug() end

redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = '7.0.15', 0x07000f
base.redis = protect(redis)

-- The real global table becomes an empty, locked front for `base`, so
-- chunks made by loadstring (which get it as their environment) are
-- sandboxed too.
local names = {}
for name in pairs(G) do
    names[#names + 1] = name
end
for _, name in ipairs(names) do
    G[name] = nil
end
base._G = G
readonly[G] = true
setmetatable(G, {
    __index = function(_, name)
        local value = base[name]
        if value == nil then
            error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
        end
        return value
    end,
    __newindex = deny,
    __metatable = false,
})

-- Redis's __redis__err__handler: a raised string becomes {err='ERR ' .. s};
-- the error is located at the script code that raised it.
local function handler(err)
    err = take_raised(err)
    if type(err) ~= 'table' then
        err = { err = 'ERR ' .. tostring(err) }
    end
    local source, line = where()
    if source then
        err.source, err.line = source, line
    end
    return err
end

local function run(f)
    internals.raised = nil
    return raw_xpcall(f, handler)
end

return base, internals, run
