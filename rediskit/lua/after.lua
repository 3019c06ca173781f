--[[
after.lua: the next page of a board window (or of one shard of it) after a cursor, in
O(log N + page): one ZCOUNT, one ZRANGEBYSCORE of the cursor's score and one
ZREVRANGEBYSCORE with an exclusive bound, never a walk from the top. boards/cursor.py merges
the shards' answers and applies the last tie-break of docs/api.md §6 (player id); docs/reads.md,
"Deep paging".

KEYS[1]  the sorted set (one key: one slot of a Redis Cluster; the caller asks the index's
         built marker in the same pipeline)
ARGV[1]  the cursor's score, as Redis writes it
ARGV[2]  how many members after it are wanted
ARGV[3]  maximum members returned per group of identical scores
ARGV[4]  2^TIME_BITS as a decimal string (the value part of a score is floor(score / ARGV[4]))
ARGV[5]  "1" on a board with shared ranks: count `better` for every value returned

Returns {total, above, equal, page, edge, better}
  total  ZCARD
  above  members with a strictly greater score than the cursor's
  equal  flat {member, score, ...}: the members with exactly the cursor's score (the caller
         keeps those whose player id sorts after the cursor's)
  page   flat {member, score, ...}: the ARGV[2] highest scores strictly below the cursor's
  edge   flat {member, score, ...}: every member with the page's last score, when more than
         one has it (members past the page may sort inside it by player id)
  better flat {value_part, count, ...}: members with a strictly better value, per distinct
         value part of equal and page (shared boards only)
Scores travel as the strings Redis gives, never through Lua's number formatting.
]]
local key = KEYS[1]
local score = ARGV[1]
local n = tonumber(ARGV[2])
local group_cap = tonumber(ARGV[3])
local span = tonumber(ARGV[4])
local shared = ARGV[5] == '1'

local total = redis.call('ZCARD', key)
local above = redis.call('ZCOUNT', key, '(' .. score, '+inf')
local equal = redis.call('ZRANGEBYSCORE', key, score, score, 'WITHSCORES', 'LIMIT', 0, group_cap)
local page = redis.call('ZREVRANGEBYSCORE', key, '(' .. score, '-inf', 'WITHSCORES', 'LIMIT', 0, n)
local edge = {}
if #page > 0 then
  local last = page[#page]
  if redis.call('ZCOUNT', key, last, last) > 1 then
    edge = redis.call('ZRANGEBYSCORE', key, last, last, 'WITHSCORES', 'LIMIT', 0, group_cap)
  end
end

local better = {}
if shared then
  local seen = {}
  local function count_better(s)
    local part = math.floor(tonumber(s) / span)
    if not seen[part] then
      seen[part] = true
      better[#better + 1] = string.format('%.0f', part)
      better[#better + 1] = redis.call('ZCOUNT', key, string.format('%.0f', (part + 1) * span), '+inf')
    end
  end
  for i = 2, #equal, 2 do count_better(equal[i]) end
  for i = 2, #page, 2 do count_better(page[i]) end
  for i = 2, #edge, 2 do count_better(edge[i]) end
end

return {total, above, equal, page, edge, better}
