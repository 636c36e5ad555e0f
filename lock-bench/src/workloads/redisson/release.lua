-- RedissonLock's unlock as Redisson 4.x sends it: a request record answers
-- a retried unlock with the first one's result; a full release deletes
-- the hash and tells waiters on the lock's channel.
-- KEYS[1] the lock's hash, KEYS[2] its channel, KEYS[3] this request's
-- record (`redisson_unlock_latch:{name}:<request id>`).
-- ARGV[1] the unlock message, ARGV[2] the lease (ms), ARGV[3] the owner's
-- field, ARGV[4] the publish command, ARGV[5] how long the record lives (ms).
local recorded = redis.call('get', KEYS[3])
if recorded ~= false then
  return tonumber(recorded)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local result
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  result = 0
else
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  result = 1
end
redis.call('set', KEYS[3], result, 'px', ARGV[5])
return result
