-- RedissonLock's acquire as Redisson 4.x sends it (lock with a lease):
-- take the hash when nobody holds it or re-enter when we do; otherwise
-- answer how long the holder's lease has left.
-- KEYS[1] the lock's hash. ARGV[1] the lease (ms), ARGV[2] the owner's
-- field (`<client uuid>:<thread id>`).
if redis.call('exists', KEYS[1]) == 0
    or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
