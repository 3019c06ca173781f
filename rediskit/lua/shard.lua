--[[
shard.lua: one shard's part of a read of a sharded board (boards/sharded.py merges the shards'
answers). One key, so one slot of a Redis Cluster; the index's built marker is asked in the
same pipeline by the caller (it lives in another slot).

KEYS[1]  the shard's sorted set
ARGV[1]  mode
ARGV[2]  maximum members returned per group of identical scores
ARGV[3]  2^TIME_BITS as a decimal string (the value part of a score is floor(score / ARGV[3]))

mode "top"     ARGV[4] = last 0-based position wanted (the shard's prefix 0..ARGV[4])
  returns {total, page, edge}
    page  flat {member, score, ...} of positions 0..ARGV[4], highest first
    edge  flat {member, score, ...}: every member with the page's last score, when more than
          one has it (members past the prefix may rank inside the merged page)

mode "near"    ARGV[4] = a score (as Redis writes it), ARGV[5] = neighbours wanted per side
  returns {total, above, better, equal, up, up_edge, down, down_edge}
    above   members with a strictly greater score
    better  members with a strictly better value (value part at least part(score) + 1)
    equal   {member, ...} with exactly this score
    up      flat {member, score, ...}: the ARGV[5] lowest scores above it, ascending
    down    flat {member, score, ...}: the ARGV[5] highest scores below it, descending
    up_edge, down_edge  flat: every member with the farthest score of up / down, when more
            than one has it

mode "counts"  ARGV[4..] = scores
  returns, per score, {above, better, equal} as in "near" (better counted once per value)
mode "places"  as "counts", with better 0: a board without shared ranks reads no better
  counts (its friends boards and standings use the position alone, docs/reads.md)
Scores travel as the strings Redis gives, never through Lua's number formatting.
]]
local key = KEYS[1]
local mode = ARGV[1]
local group_cap = tonumber(ARGV[2])
local span = tonumber(ARGV[3])

local function group(score)
  if redis.call('ZCOUNT', key, score, score) > 1 then
    return redis.call('ZRANGEBYSCORE', key, score, score, 'WITHSCORES', 'LIMIT', 0, group_cap)
  end
  return {}
end

local function better(score)
  local part = math.floor(tonumber(score) / span)
  return redis.call('ZCOUNT', key, string.format('%.0f', (part + 1) * span), '+inf')
end

local function members_with(score)
  return redis.call('ZRANGEBYSCORE', key, score, score, 'LIMIT', 0, group_cap)
end

if mode == 'top' then
  local total = redis.call('ZCARD', key)
  local page = redis.call('ZREVRANGE', key, 0, tonumber(ARGV[4]), 'WITHSCORES')
  local edge = {}
  if #page > 0 then edge = group(page[#page]) end
  return {total, page, edge}
end

if mode == 'near' then
  local score = ARGV[4]
  local n = tonumber(ARGV[5])
  local total = redis.call('ZCARD', key)
  local above = redis.call('ZCOUNT', key, '(' .. score, '+inf')
  local equal = members_with(score)
  local up, down, up_edge, down_edge = {}, {}, {}, {}
  if n > 0 then
    up = redis.call('ZRANGEBYSCORE', key, '(' .. score, '+inf', 'WITHSCORES', 'LIMIT', 0, n)
    down = redis.call('ZREVRANGEBYSCORE', key, '(' .. score, '-inf', 'WITHSCORES', 'LIMIT', 0, n)
    if #up > 0 then up_edge = group(up[#up]) end
    if #down > 0 then down_edge = group(down[#down]) end
  end
  return {total, above, better(score), equal, up, up_edge, down, down_edge}
end

-- counts, places
local counted = mode == 'counts'
local better_of = {}
local out = {}
for i = 4, #ARGV do
  local score = ARGV[i]
  local b = 0
  if counted then
    local part = math.floor(tonumber(score) / span)
    b = better_of[part]
    if not b then
      b = better(score)
      better_of[part] = b
    end
  end
  out[#out + 1] = {redis.call('ZCOUNT', key, '(' .. score, '+inf'), b, members_with(score)}
end
return out
