--[[
throttle.lua: count one request against fixed-window rate limits, in one round trip.

KEYS[i]        the counter of limit i in the current window (keys.throttle_key)
ARGV[2i-1]     limit i: requests allowed per window
ARGV[2i]       limit i: window length in seconds

Returns 0 when every limit allows the request, else the (1-based) index of the first limit
exceeded. A counter expires at most one window and a second after its first request, so it
never outlives its window by much.
]]
local exceeded = 0
for i = 1, #KEYS do
  local count = redis.call('INCR', KEYS[i])
  local seconds = tonumber(ARGV[2 * i])
  if count == 1 then
    redis.call('EXPIRE', KEYS[i], seconds + 1)
  end
  if count > tonumber(ARGV[2 * i - 1]) and exceeded == 0 then
    exceeded = i
  end
end
return exceeded
