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
-- recorded(key, deadline)
--     the first outcome (a string) of a request sent again, kept under its
--     request record `key`; or nil when the request has not run, and may
--     run now. Every script that changes something calls it before its
--     first write. A request carries `deadline` (ARGV: ms since the Unix
--     epoch, by the store's clock as the client estimates it): one that has
--     not run by then never runs, and the script fails with
--     "STALEREQUEST <now-ms> ..." before writing anything. So a request held
--     on a connection, in a frozen server or in a partition cannot apply
--     late, however late it arrives: it runs at most once, and only before
--     its deadline, while a record written by its first run outlives the
--     deadline (see record()). Both sides of that rule read the same clock
--     (the store's TIME, and key expiry, which Redis keeps as an absolute
--     time and replicates as one), so it holds also when that clock steps
--     or differs from the client's, and on a replica promoted after a
--     failover.
-- store_now()
--     the store's clock (TIME) in ms since the Unix epoch, read once per
--     script: the reading recorded() took, or a first one. Redis keeps
--     time still for key expiry while a script runs, so one reading is as
--     good as two, and costs one command fewer.
-- record(key, value)
--     keeps `value`, the outcome of the request recorded() let run, under
--     its record `key` until RECORD_GRACE_MS past the request's deadline,
--     so that the request sent again gets the same answer and writes
--     nothing. Every outcome is recorded: RECORD_HELD for an acquisition
--     that found the lock held, RECORD_NOT_HELD for a release by an owner
--     that did not hold it, the token or 0/1 otherwise. Written with
--     redis.pcall: a server out of memory refuses SET, and an outcome that
--     needed no other refused write (a release of the last hold, "held",
--     "not held") must still be answered; such a request is then not
--     recognised if sent again before its deadline.
-- extend(lock, lease, pttl)
--     sets the expiry of the lock hash `lock`, whose PTTL was `pttl` before
--     this script wrote its hold, to `lease` ms from now, unless it would
--     expire later anyway: PEXPIRE lease when pttl < lease, nothing else
--     (the hash keeps the expiry it had, which is what PEXPIRE pttl would
--     set again; writing a hold into a hash keeps its expiry). A new lock
--     (pttl -2) gets `lease`; a lock without expiry (pttl -1) keeps none.
--     Acquire, re-entry, partial release and renewal all go through it, so one
--     owner's holds with different leases (a short re-entry, a watchdog
--     renewal, the release of either) never shorten the time another guard
--     of that owner was promised. (Redisson sets the newest lease.)
-- recorded_release(record_key, deadline)
--     the first reply of a release request sent again: 'none' when it has
--     not run (run it; see recorded()), false for "not held" (reply nil),
--     else 0 or 1.
-- give_back(lock, owner, lease, record_key)
--     gives back one hold of `owner`: "not held" (recorded; returns nil) when
--     it has none, one hold fewer (lease extended, recorded; returns 0) when
--     it has more, and 'last' when this is its last hold, which the caller
--     then deletes and announces (DEL and PUBLISH are never refused for
--     memory) before recording 1.
-- held_reply(lock)
--     the reply {0, pttl} of an acquisition that found `lock` held (or, for
--     a repeated request, whose first run did): its PTTL, 0 when it is gone
--     since.
-- refuse_reentry(lock)
--     the error "NON_REENTRANT_REACQUIRE ..." (Redisson's code) of a
--     non-reentrant acquisition by the owner holding `lock`; a repeat of it
--     finds RECORD_REENTRY in its record.
-- recorded_acquire(key, deadline, lock)
--     the first reply of an exclusive acquisition sent again (see
--     recorded()): held_reply(lock) for "held", refuse_reentry(lock) for a
--     refused re-entry, {1, token} for a hold; nil when it has not run.
-- refuse_if_out_of_memory(zset)
--     fails the script with Redis's OOM error when the server was out of
--     memory as the script started, writing nothing: a ZADD XX of the
--     member '' (never a member of ours or Redisson's) to the sorted set
--     (or missing key) `zset` is refused like any growing write, and
--     otherwise changes nothing. For a script that must write something
--     that cannot be refused (an eviction, a reclaim) before what may grow
--     memory: call it before that first write, on the paths that grow.
--
-- Cost. Every EVALSHA runs the script's whole text and each redis.call is
-- a command of its own, so the hot scripts keep both few. Measured on
-- redis 7.0.15 with callgrind (instructions inside EVALSHA per
-- acquire+release pair of the reentrant lock, over a pair of empty
-- scripts, which itself costs about 31 000): the pair costs about 121 000
-- in 12 commands (GET TIME PTTL HINCRBY PEXPIRE SET; GET TIME HGET DEL
-- PUBLISH SET); Redisson 4.x's own pair, without deadlines or acquire
-- records, about 52 000 in 9. Of ours: each function defined here is a
-- closure Lua creates again on every run, about 400 each, so a script
-- gets only the definitions it reaches (compose in lock-script);
-- TIME, its arithmetic and the deadline check about 9 000 per script
-- (tonumber() calls on its strings cost 2 300 more: arithmetic converts
-- them by itself); a number turned into a command argument about 3 000
-- by string.format, 2 000 when Lua converts it in redis.call — so numbers
-- that come from ARGV are passed on as the ARGV strings (ttl, lease), and
-- record() writes the outcomes 0 and 1 as strings; the acquire record's
-- GET and SET PX about 21 000 (see "Why a first hold is recorded too" for
-- why it stays). The raw SET NX + GET/DEL pair of a non-reentrant lock
-- without records needs 3 commands.
--
-- Out of memory. A server at maxmemory with the noeviction policy refuses,
-- inside a script (these scripts declare no flags, so Redis checks each
-- command, not the script as a whole), every command that may grow memory,
-- with "OOM command not allowed when used memory > 'maxmemory'". Measured
-- on redis 7.0.15 with CONFIG SET maxmemory 1, inside EVALSHA:
--   refused:  HINCRBY, HSET, SET, INCR, RPUSH, LPUSH, ZADD, ZINCRBY
--   allowed:  DEL, PUBLISH (SPUBLISH alike), PEXPIRE, PERSIST, HDEL, LPOP,
--             LREM, ZREM, and every read (GET, HGET, HEXISTS, EXISTS, PTTL,
--             LINDEX, ZSCORE, TYPE, TIME)
-- The rule (measured on redis 7.0.15): Redis decides "out of memory" once,
-- as the script starts, and refuses growing commands only until the
-- script's first write command of any kind. Any write turns the check off
-- for the rest of the script, even one that frees memory or changes
-- nothing (a DEL, a ZREM, a ZREMRANGEBYSCORE that removes nothing, an
-- LPOP): every growing command after it succeeds, however far past
-- maxmemory. So a script that may grow memory (a new hold, a lease
-- member, a queue entry, a count created) must meet a refusable write
-- before its first write of any kind: either its first write is the
-- growing one (INCR of the token, HINCRBY, SET, RPUSH, DECRBY), or it
-- calls refuse_if_out_of_memory() before an eviction or reclaim that
-- comes first (the fair lock's acquire, the expirable semaphore's
-- acquire). Lua does not roll back, so nothing may be written before
-- that point; past it, the script runs to its end. The only growth
-- allowed after a write that cannot be refused is the request's record:
-- one small key with a TTL of a few seconds, which a release must keep
-- even out of memory so that its retry is answered.
-- So an acquisition, a partial release and joining a fair queue fail
-- whole, mapped to LockError::OutOfMemory. A release of the last hold
-- only frees memory: it reads the count (HGET), then DELs and PUBLISHes,
-- and records with pcall, so it succeeds. Renewal only sets expiries and
-- succeeds too.
--
-- Why record "held" and "not held" too: a request stuck on the wire can
-- arrive after its owner moved on (its retry found the lock held, the owner
-- then took the lock with a new request; or its release found nothing and
-- the owner then took the lock again). Run afresh it would take a second
-- hold under one guard, or release the newer hold. lock-core's reconcile()
-- (op.rs) stays sound: it repeats an acquisition whose reply was lost;
-- "acquired" means the request took the lock (first run or the repeat) and
-- is undone; "held" means it ran without taking it (first run or the
-- repeat itself), and a late original can no longer take it afterwards.
--
-- Why a first hold is recorded too, though a retry could do without: a
-- request of an owner that holds nothing yet, repeated, finds the owner's
-- field when its first attempt took the lock, and could answer from that
-- alone. But a late duplicate (stuck on the wire) can arrive after that
-- hold ended — released, expired, force-unlocked by us, or deleted by a
-- Redisson client's forceUnlock() or delete() — and then finds the lock
-- free: only a key written when the hold was taken survives every one of
-- those ends, so the acquire record stays a key of its own. Kept as a
-- field of the lock hash instead (the GET and the SET PX of "Cost" gone),
-- it goes with the hash: a late copy then takes the free lock again, a
-- hold of no guard, or counts one more hold on the owner's newer one
-- (the checks records::a_late_copy_of_* in lock-testkit fail so). A
-- release-time tombstone that a late copy would read instead costs a
-- write again, and still misses expiry and foreign deletes. And a refused
-- acquisition must be recorded in a key of its own for the same reason:
-- its late copy, arriving once the owner holds the lock by a newer
-- request, would count a second hold under that one guard
-- (records::a_repeated_held_attempt_takes_nothing).
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

local RECORD_HELD = 'held'
local RECORD_NOT_HELD = 'not held'
local RECORD_CLAIMED = 'claimed'

-- Past its deadline a record lives this much longer: a margin for the
-- store's clock read by TIME running ahead of the time Redis froze for key
-- expiry when the script started. lock-core's RECORD_GRACE_MS is the same
-- (a test checks): a stale refusal well past it no longer proves that the
-- request never ran (lock-core's outcome_forgotten).
local RECORD_GRACE_MS = 1000
local record_px = nil
local store_time_ms = nil

local function store_now()
    if not store_time_ms then
        local time = redis.call('time')
        -- Arithmetic turns TIME's decimal strings into numbers by itself:
        -- a tonumber() call each would cost more (see "Cost" above).
        store_time_ms = time[1] * 1000 + math.floor(time[2] / 1000)
    end
    return store_time_ms
end

local function recorded(key, deadline)
    local first = redis.call('get', key)
    if first then
        return first
    end
    local now = store_now()
    local left = deadline - now
    if left < 0 then
        return error({err = 'STALEREQUEST ' .. string.format('%.0f', now)
            .. ' the request reached the store after its deadline; it did not run and never will'})
    end
    record_px = string.format('%.0f', left + RECORD_GRACE_MS)
    return nil
end

local function record(key, value)
    if value == 0 then
        value = '0'
    elseif value == 1 then
        value = '1'
    end
    redis.pcall('set', key, value, 'px', record_px)
end

local RECORD_REENTRY = 'reentry'

local function held_reply(lock)
    local pttl = redis.call('pttl', lock)
    if pttl == -2 then
        pttl = 0
    end
    return {0, pttl}
end

local function refuse_reentry(lock)
    return redis.error_reply('NON_REENTRANT_REACQUIRE this owner holds the lock ' .. lock ..
        ' already and it is not reentrant')
end

local function recorded_acquire(key, deadline, lock)
    local first = recorded(key, deadline)
    if first == RECORD_HELD then
        return held_reply(lock)
    end
    if first == RECORD_REENTRY then
        return refuse_reentry(lock)
    end
    if first then
        return {1, tonumber(first)}
    end
    return nil
end

local function refuse_if_out_of_memory(zset)
    redis.call('zadd', zset, 'xx', 0, '')
end

local function extend(lock, lease, pttl)
    if pttl ~= -1 and pttl < tonumber(lease) then
        redis.call('pexpire', lock, lease)
    end
end

local function recorded_release(key, deadline)
    local first = recorded(key, deadline)
    if first == RECORD_NOT_HELD then
        return false
    end
    if first then
        return tonumber(first)
    end
    return 'none'
end

local function give_back(lock, owner, lease, key)
    local held = redis.call('hget', lock, owner)
    if not held then
        record(key, RECORD_NOT_HELD)
        return nil
    end
    if tonumber(held) > 1 then
        local pttl = redis.call('pttl', lock)
        redis.call('hincrby', lock, owner, -1)
        extend(lock, lease, pttl)
        record(key, 0)
        return 0
    end
    return 'last'
end
