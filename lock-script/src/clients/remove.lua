-- Removes one client's record and its registry entry (the client closed).
-- KEYS[1] the registry; KEYS[2] the client's record
-- ARGV[1] client id
-- Reply: 1
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
