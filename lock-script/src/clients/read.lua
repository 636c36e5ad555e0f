-- Reads client records. Writes nothing.
-- KEYS the records (one hash tag: one slot)
-- Reply: one flat field, value array per key (empty when gone)
local out = {}
for i, key in ipairs(KEYS) do
    out[i] = redis.call('HGETALL', key)
end
return out
