--[[
friends.lua: a player's friends on one board window in a single round trip (one Redis only:
on a cluster, and on sharded boards, boards/sharded.py reads them).

KEYS[1]  the board window's sorted set
KEYS[2]  the index's built marker: missing (Redis restarted empty, not rebuilt yet), the
         script returns {"unbuilt"} rather than a partial answer
KEYS[3 .. 2 + n]  optional (n = ARGV[4]): rate-limit counters, as throttle.lua takes them, so a
         throttled read costs one round trip (boards/api/thin.py folds a player's own friends
         read into it)
KEYS[3 + n]  with a token guard (ARGV[6] not empty): the player's token generation
         (keys.player_tokens_key)
KEYS[3 + n]  (KEYS[4 + n] after a token guard) optional: the player's friend list (keys.friend_list_key: member ids joined by
         ","), so the read needs no round trip of its own for it. Given, the members are
         ARGV's (the player) followed by the list's; the list missing (expired, forgotten
         after a change), the script returns {"nolist"} once the counters are counted
ARGV[1]  2^TIME_BITS as a decimal string
ARGV[2]  maximum members returned per group of identical scores
ARGV[3]  "1" on a board with shared ranks (`better` is counted), else "0" (`better` is 0)
ARGV[4]  n, the number of counter keys
ARGV[5]  the board window's profile key prefix (keys.profile_key_prefix), or "": each found
         member's cached profile is read too (keys.profile_key: prefix .. member .. ":" ..
         encoded), so a read whose process has not seen those profiles needs no MGET
ARGV[6]  a player token's generation, or "" for no token guard (boards/api/thin.py: the token
         is checked against revocation in the read's own round trip, docs/api.md §3.2)
ARGV[7 + 2i - 2], ARGV[7 + 2i - 1]  for counter i: requests allowed per window, window seconds
ARGV[7 + 2n ..] members: the player and their friends (with a friend list: the player)

Returns {"revoked"} when the player's generation is newer than the token's, {"tokenunknown"}
when Redis does not hold the player's generation (the caller asks Postgres), both before
counting anything; {exceeded} (one number: the 1-based index of the first limit exceeded) when a limit
refuses the request, without reading the board; otherwise a flat list, one group of six per
member that has a score:
  {member, score, above, better, group, profile, ...}
  member, score  integers
  above    members with a strictly greater score (the board position before tie-breaks)
  better   members with a strictly better value (shared ranks; 0 on other boards)
  group    {member, ...} with the identical score, when there is more than one (else {})
  profile  the cached profile string, or false (missing, or ARGV[5] empty)
Per member with a score: a ZCOUNT (is anyone else on this score?) and a ZREVRANK, or for a
member of such a group two ZCOUNTs and the group's ZRANGEBYSCORE; on shared boards one ZCOUNT
more per distinct value among them; the profiles in one MGET at the end.
]]
local n = tonumber(ARGV[4])
local list_at = 3 + n
-- the token guard first: a revoked token counts against no limit
if ARGV[6] ~= '' then
  local current = redis.call('GET', KEYS[3 + n])
  if not current then
    return {'tokenunknown'}
  end
  if tonumber(current) > tonumber(ARGV[6]) then
    return {'revoked'}
  end
  list_at = 4 + n
end
-- then the rate limits, exactly as throttle.lua counts them
local exceeded = 0
for i = 1, n do
  local count = redis.call('INCR', KEYS[2 + i])
  local seconds = tonumber(ARGV[6 + 2 * i])
  if count == 1 then
    redis.call('EXPIRE', KEYS[2 + i], seconds + 1)
  end
  if count > tonumber(ARGV[5 + 2 * i]) and exceeded == 0 then
    exceeded = i
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
local prefix = ARGV[5]
local members = {}
for i = 7 + 2 * n, #ARGV do members[#members + 1] = ARGV[i] end
local list_key = KEYS[list_at]
if list_key then
  local list = redis.call('GET', list_key)
  if not list then
    return {'nolist'}
  end
  for m in string.gmatch(list, '%d+') do members[#members + 1] = m end
end
if #members == 0 then return {} end
local scores = redis.call('ZMSCORE', key, unpack(members))
local out = {}
local profile_keys = {}
local profile_at = {}
local better_of = {}
for i, score in ipairs(scores) do
  if score then
    -- the place before tie-breaks: with no other member on this score, ZREVRANK is it (one
    -- walk of the skiplist, cheaper than a ZCOUNT from +inf); a member of a group of
    -- identical scores has the group ahead of or behind it in Redis's order, so its place
    -- is counted and the group read, for the reader to break the tie by player id
    local above, group
    if redis.call('ZCOUNT', key, score, score) > 1 then
      above = redis.call('ZCOUNT', key, '(' .. score, '+inf')
      group = redis.call('ZRANGEBYSCORE', key, score, score, 'LIMIT', 0, group_cap)
    else
      above = redis.call('ZREVRANK', key, members[i])
      group = {}
    end
    local number = tonumber(score)
    -- numbers, not strings: Redis hands a Lua number over as an integer, exactly (ids and
    -- scores are whole numbers below 2^53), so the reader converts nothing per friend
    out[#out + 1] = tonumber(members[i])
    out[#out + 1] = number
    out[#out + 1] = above
    if shared then
      -- one count per value: friends with the same value share it
      local part = math.floor(number / span)
      local better = better_of[part]
      if not better then
        better = redis.call('ZCOUNT', key, string.format('%.0f', (part + 1) * span), '+inf')
        better_of[part] = better
      end
      out[#out + 1] = better
    else
      out[#out + 1] = 0
    end
    out[#out + 1] = group
    out[#out + 1] = false
    if prefix ~= '' then
      -- the encoded value as Python writes the int (scores are whole numbers below 2^53)
      local encoded = number == 0 and '0' or string.format('%.0f', number)
      profile_keys[#profile_keys + 1] = prefix .. members[i] .. ':' .. encoded
      profile_at[#profile_keys] = #out
    end
  end
end
-- the cached profiles in one MGET (a missing one stays false)
for start = 1, #profile_keys, 1000 do
  local stop = math.min(start + 999, #profile_keys)
  local found = redis.call('MGET', unpack(profile_keys, start, stop))
  for j = 1, #found do
    out[profile_at[start + j - 1]] = found[j]
  end
end
return out
