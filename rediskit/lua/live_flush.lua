--[[
live_flush.lua: the trailing edge of live-update coalescing (boards/live.py, run by Celery
beat a few times a second). Releases the changes live_mark.lua held back, once they are due.

KEYS[1]  lb:live:watched  sorted set: member -> watched until (ms)
KEYS[2]  lb:live:due      sorted set: member -> earliest next publish (ms)
KEYS[3]  lb:live:dirty    set: members changed but held back
ARGV[1]  the interval between two publishes of one board window (ms)

Returns {member, ...}: dirty members due now, stamped as published and removed from the
dirty set. Members nobody watches any more are dropped; stale stamps and watches are pruned.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local out = {}
for _, m in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local watched = redis.call('ZSCORE', KEYS[1], m)
  if not watched or tonumber(watched) < now then
    redis.call('SREM', KEYS[3], m)
  else
    local due = redis.call('ZSCORE', KEYS[2], m)
    if not due or tonumber(due) <= now then
      redis.call('ZADD', KEYS[2], now + interval, m)
      redis.call('SREM', KEYS[3], m)
      out[#out + 1] = m
    end
  end
end
-- a stamp older than the interval no longer holds anything back
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - interval)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return out
