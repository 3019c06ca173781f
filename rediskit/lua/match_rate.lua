--[[
match_rate.lua: count a submission's new matches per player for the anti-cheat rate rule
(anticheat/rules.py MaxRateRule), in one round trip.

KEYS[i]          the counter of player i (keys.match_rate_key)
ARGV[i]          how many of the submission's new matches name player i
ARGV[#KEYS + 1]  the rule's window in seconds

Returns, per player, their count in the current window after adding. A player's window opens
at their first counted match and lasts the window (the counter expires with it), so concurrent
submissions cannot both slip under the limit: each sees the other's matches.
]]
local window = tonumber(ARGV[#KEYS + 1])
local counts = {}
for i = 1, #KEYS do
  local n = tonumber(ARGV[i])
  local count = redis.call('INCRBY', KEYS[i], n)
  if count == n then
    redis.call('EXPIRE', KEYS[i], window)
  end
  counts[i] = count
end
return counts
