--[[
live_mark.lua: the leading edge of live-update coalescing (boards/live.py). Called after
values reached the sorted sets; decides, per board window, whether to publish now.

KEYS[1]  lb:live:watched  sorted set: member -> watched until (ms)
KEYS[2]  lb:live:due      sorted set: member -> earliest next publish (ms)
KEYS[3]  lb:live:dirty    set: members changed but held back until they are due
ARGV[1]  the interval between two publishes of one board window (ms)
ARGV[2..] members "{board_id}|{window}" that changed

Returns {member, ...}: the watched members due now; they are stamped as published (due again
after the interval). Changed members not due yet go to the dirty set for live_flush.lua.
Unwatched members cost one ZSCORE: nobody listens, nothing is kept.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local m = ARGV[i]
  local watched = redis.call('ZSCORE', KEYS[1], m)
  if watched and tonumber(watched) >= now then
    local due = redis.call('ZSCORE', KEYS[2], m)
    if not due or tonumber(due) <= now then
      redis.call('ZADD', KEYS[2], now + interval, m)
      redis.call('SREM', KEYS[3], m)
      out[#out + 1] = m
    else
      redis.call('SADD', KEYS[3], m)
    end
  end
end
return out
