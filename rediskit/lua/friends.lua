--[[
friends.lua: a player's friends on one board window in a single round trip.

KEYS[1]  the board window's sorted set
KEYS[2]  the index's built marker: missing (Redis restarted empty, not rebuilt yet), the
         script returns {"unbuilt"} rather than a partial answer
ARGV[1]  2^TIME_BITS as a decimal string
ARGV[2]  maximum members returned per group of identical scores
ARGV[3]  "1" on a board with shared ranks (`better` is counted), else "0" (`better` is 0)
ARGV[4..] members: the player and their friends

Returns a flat list, one group of five per member that has a score:
  {member, score, above, better, group, ...}
  above   members with a strictly greater score (the board position before tie-breaks)
  better  members with a strictly better value (shared ranks; 0 on other boards)
  group   {member, ...} with the identical score, when there is more than one (else {})
]]
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'unbuilt'}
end
local key = KEYS[1]
local span = tonumber(ARGV[1])
local group_cap = tonumber(ARGV[2])
local shared = ARGV[3] == '1'
local members = {}
for i = 4, #ARGV do members[#members + 1] = ARGV[i] end
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
