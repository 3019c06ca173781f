--[[
page.lua: one page of a board in a single round trip, with what the reader needs to apply
the last tie-break of docs/api.md §6 (player id) and shared ranks.

KEYS[1]  the board window's sorted set
KEYS[2]  the index's built marker (rediskit/keys.py BUILT_MARKER): while it is missing (Redis
         restarted empty, a rebuild under way) the board may be partial, and the script says so
KEYS[3..] optional: with a token guard (ARGV[7] not empty), first the player's token generation
         (keys.player_tokens_key); then rate-limit counters, as throttle.lua takes them, so a
         throttled read costs one round trip (boards/api/players.py folds a player's own rank
         read into it)
ARGV[1]  mode: "range" (ARGV[2], ARGV[3] = first and last 0-based position, inclusive)
               "member" (ARGV[2] = member, ARGV[3] = how many neighbours on each side)
ARGV[4]  2^TIME_BITS as a decimal string (the value part of a score is floor(score / ARGV[4]))
ARGV[5]  maximum members returned per group of identical scores at the page's edges
ARGV[6]  "1" on a board with shared ranks: count `better` for every value on the page;
         otherwise only for the member's own value (its percentile needs it)
ARGV[7]  a player token's generation, or "" for no token guard (boards/api/thin.py: the token
         is checked against revocation in the read's own round trip, docs/api.md §3.2)
ARGV[6 + 2i], ARGV[7 + 2i]  for the i-th counter key: requests allowed per window, window seconds

Returns {"revoked"} when the player's generation is newer than the token's, {"tokenunknown"}
when Redis does not hold the player's generation (the caller asks Postgres), both before
counting anything; {exceeded} (one element: the 1-based index of the first limit exceeded) when
a limit refuses the request, without reading the board; {"unbuilt", 0} when the marker is
missing; otherwise

        {total, above_first, page, edges, better, my_score}
  total        ZCARD
  above_first  members with a strictly greater score than the page's first entry
  page         flat {member, score, ...} in Redis order
  edges        flat {member, score, ...}: whole groups of identical scores at both edges
  better       flat {value_part, count, ...}: for each distinct value on the page (shared
               boards only) and the member's own, how many members have a strictly better value
  my_score     the member's score (mode "member"), false if it is not on the board
Scores travel as the strings Redis gives, never through Lua's number formatting.
]]
-- the token guard first: a revoked token counts against no limit
local first_counter = 3
if ARGV[7] ~= '' then
  local current = redis.call('GET', KEYS[3])
  if not current then
    return {'tokenunknown'}
  end
  if tonumber(current) > tonumber(ARGV[7]) then
    return {'revoked'}
  end
  first_counter = 4
end
-- then the rate limits, exactly as throttle.lua counts them
local exceeded = 0
for i = first_counter, #KEYS do
  local n = i - first_counter + 1
  local count = redis.call('INCR', KEYS[i])
  local seconds = tonumber(ARGV[7 + 2 * n])
  if count == 1 then
    redis.call('EXPIRE', KEYS[i], seconds + 1)
  end
  if count > tonumber(ARGV[6 + 2 * n]) and exceeded == 0 then
    exceeded = n
  end
end
if exceeded > 0 then
  return {exceeded}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'unbuilt', 0}
end

local key = KEYS[1]
local span = tonumber(ARGV[4])
local group_cap = tonumber(ARGV[5])
local shared = ARGV[6] == '1'
local total = redis.call('ZCARD', key)
local lo, hi
local my_score = false

if ARGV[1] == 'member' then
  my_score = redis.call('ZSCORE', key, ARGV[2])
  if not my_score then
    return {total, 0, {}, {}, {}, false}
  end
  local around = tonumber(ARGV[3])
  local above = redis.call('ZCOUNT', key, '(' .. my_score, '+inf')
  local group = redis.call('ZCOUNT', key, my_score, my_score)
  -- the member's true position lies in [above, above + group - 1]
  lo = math.max(0, above - around)
  hi = above + group - 1 + around
else
  lo = tonumber(ARGV[2])
  hi = tonumber(ARGV[3])
end

local page = redis.call('ZREVRANGE', key, lo, hi, 'WITHSCORES')
if #page == 0 then
  return {total, 0, {}, {}, {}, my_score}
end

local first, last = page[2], page[#page]
local above_first = redis.call('ZCOUNT', key, '(' .. first, '+inf')
local edges = {}
local function add_group(score)
  if redis.call('ZCOUNT', key, score, score) > 1 then
    local members = redis.call('ZRANGEBYSCORE', key, score, score, 'WITHSCORES', 'LIMIT', 0, group_cap)
    for i = 1, #members do edges[#edges + 1] = members[i] end
  end
end
add_group(first)
if last ~= first then add_group(last) end

local better = {}
local seen = {}
local function count_better(score)
  local part = math.floor(tonumber(score) / span)
  if not seen[part] then
    seen[part] = true
    -- strictly better value: a value part of at least part + 1
    local threshold = string.format('%.0f', (part + 1) * span)
    better[#better + 1] = string.format('%.0f', part)
    better[#better + 1] = redis.call('ZCOUNT', key, threshold, '+inf')
  end
end
if shared then
  for i = 2, #page, 2 do count_better(page[i]) end
end
if my_score then count_better(my_score) end

return {total, above_first, page, edges, better, my_score}
