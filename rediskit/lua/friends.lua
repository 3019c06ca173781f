--[[
friends.lua: a player's friends on one board window in a single round trip.

KEYS[1]  the board window's sorted set
KEYS[2]  the index's built marker: missing (Redis restarted empty, not rebuilt yet), the
         script returns {"unbuilt"} rather than a partial answer
KEYS[3..] optional: rate-limit counters, as throttle.lua takes them, so a throttled read costs
         one round trip (boards/api/thin.py folds a player's own friends read into it)
ARGV[1]  2^TIME_BITS as a decimal string
ARGV[2]  maximum members returned per group of identical scores
ARGV[3]  "1" on a board with shared ranks (`better` is counted), else "0" (`better` is 0)
ARGV[4 + 2i - 2], ARGV[4 + 2i - 1]  for counter KEYS[2 + i]: requests allowed per window,
         window seconds
ARGV[4 + 2 * #counters ..] members: the player and their friends

Returns {exceeded} (one number: the 1-based index of the first limit exceeded) when a limit
refuses the request, without reading the board; otherwise a flat list, one group of five per
member that has a score:
  {member, score, above, better, group, ...}
  above   members with a strictly greater score (the board position before tie-breaks)
  better  members with a strictly better value (shared ranks; 0 on other boards)
  group   {member, ...} with the identical score, when there is more than one (else {})
]]
-- the rate limits first, exactly as throttle.lua counts them
local exceeded = 0
for i = 3, #KEYS do
  local n = i - 2
  local count = redis.call('INCR', KEYS[i])
  local seconds = tonumber(ARGV[3 + 2 * n])
  if count == 1 then
    redis.call('EXPIRE', KEYS[i], seconds + 1)
  end
  if count > tonumber(ARGV[2 + 2 * n]) and exceeded == 0 then
    exceeded = n
  end
end
if exceeded > 0 then
  return {exceeded}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'unbuilt'}
end
local key = KEYS[1]
local span = tonumber(ARGV[1])
local group_cap = tonumber(ARGV[2])
local shared = ARGV[3] == '1'
local members = {}
for i = 4 + 2 * (#KEYS - 2), #ARGV do members[#members + 1] = ARGV[i] end
if #members == 0 then return {} end
local scores = redis.call('ZMSCORE', key, unpack(members))
local out = {}
for i, score in ipairs(scores) do
  if score then
    local group = {}
    if redis.call('ZCOUNT', key, score, score) > 1 then
      group = redis.call('ZRANGEBYSCORE', key, score, score, 'LIMIT', 0, group_cap)
    end
    out[#out + 1] = members[i]
    out[#out + 1] = score
    out[#out + 1] = redis.call('ZCOUNT', key, '(' .. score, '+inf')
    if shared then
      local part = math.floor(tonumber(score) / span)
      out[#out + 1] = redis.call('ZCOUNT', key, string.format('%.0f', (part + 1) * span), '+inf')
    else
      out[#out + 1] = 0
    end
    out[#out + 1] = group
  end
end
return out
