--[[
live_mark.lua: the leading edge of live-update coalescing (boards/live.py). Called after
values reached the sorted sets; decides, per board window, whether to publish now.

KEYS[1]  lb:live:watched  sorted set: member -> watched until (ms)
KEYS[2]  lb:live:due      sorted set: member -> earliest next publish (ms)
KEYS[3]  lb:live:dirty    set: members changed but held back until they are due
ARGV[1]  the interval between two publishes of one board window (ms)
ARGV[2..] members "{board_id}|{window}" that changed

Returns {now, {member, ...}, {due, ...}}
  now     Redis' clock (ms)
  members the watched members due now; they are stamped as published (due again after the
          interval)
  due     for members that were not dirty yet and are held back now: when each is due (ms).
          The caller schedules one trailing flush for them; later changes in the same interval
          find them dirty already and schedule nothing.
Unwatched members cost one ZSCORE: nobody listens, nothing is kept.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local out = {}
local held = {}
for i = 2, #ARGV do
  local m = ARGV[i]
  local watched = redis.call('ZSCORE', KEYS[1], m)
  if watched and tonumber(watched) >= now then
    local due = redis.call('ZSCORE', KEYS[2], m)
    if not due or tonumber(due) <= now then
      redis.call('ZADD', KEYS[2], now + interval, m)
      redis.call('SREM', KEYS[3], m)
      out[#out + 1] = m
    elseif redis.call('SADD', KEYS[3], m) == 1 then
      held[#held + 1] = due
    end
  end
end
return {now, out, held}
