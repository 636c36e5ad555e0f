-- available: the free permits (Redisson's availablePermits). Read-only.
-- Runs after common.lua and count.lua.
--
-- KEYS[1]  permit count              <prefix><name>
--
-- Reply: the count, 0 when missing.
return read_count(KEYS[1]) or 0
