"""The Lua scripts of the Redis store: each one is one atomic step on one model's keys.

(The decision writes are ``MULTI``/``EXEC`` transactions:
:mod:`service.store.redis.decision_writes`.)

A model's keys share the hash tag ``{name}``, so they live in one Redis Cluster slot.
Values of pending decisions are ``deadline|keep_until|payload``; log entries are stream
entries with the id ``<offset>-0`` and fields ``e`` (event id), ``d`` (decision), ``f``
(feedback JSON, absent for an expired decision) and ``t`` (acknowledged at).

The counters hash holds ``mark`` while the store holds the model (see
:mod:`service.store.base`): the scripts that append to the log, take the lease or save
a checkpoint answer ``gone`` without it.  ``base`` is the log offset the model was held
at, ``offered`` the highest snapshot sequence offered as a checkpoint since.
"""

_HELD = """
local mark = redis.call('HGET', KEYS[CTR], 'mark')
if not mark then return GONE end
"""


def _held(ctr_key: int, gone: str) -> str:
    """Lua that answers ``gone`` unless the counters hash (KEYS[ctr_key]) holds a mark."""
    return _HELD.replace("CTR", str(ctr_key)).replace("GONE", gone)


_PARSE = """
local function parse(v)
  local a = string.find(v, '|', 1, true)
  local b = string.find(v, '|', a + 1, true)
  return tonumber(string.sub(v, 1, a - 1)), tonumber(string.sub(v, a + 1, b - 1)),
    string.sub(v, b + 1)
end
"""

#: KEYS ev, done, due, log, counters ; ARGV event_id, now, feedback, seen (an offset the
#: caller was given: a log that ends before it came back from an older snapshot)
FEEDBACK = (
    _PARSE
    + """
local v = redis.call('GET', KEYS[1])
if not v then
  local t = redis.call('GET', KEYS[2])
  if t == 'used' then return {'duplicate'} end
  if t then return {'expired'} end
  return {'unknown'}
end
local deadline, keep_until, payload = parse(v)
local now = tonumber(ARGV[2])
if now > deadline then return {'expired'} end
"""
    + _held(5, "{'gone'}")
    + """
local last = tonumber(redis.call('HGET', KEYS[5], 'log_last') or '0')
if last < tonumber(ARGV[4]) then return {'behind', last} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('SET', KEYS[2], 'used', 'PX', math.max(1, math.floor((keep_until - now) * 1000)))
local offset = redis.call('HINCRBY', KEYS[5], 'log_last', 1)
redis.call('XADD', KEYS[4], offset .. '-0', 'e', ARGV[1], 'd', payload, 'f', ARGV[3], 't', ARGV[2])
return {'claimed', payload, offset}
"""
)

#: KEYS due, log, counters ; ARGV now, limit, log (0/1), ev key prefix, done key prefix,
#: seen (as FEEDBACK's: -2 when logging on a log that ends before it)
EXPIRE = (
    _PARSE
    + _held(3, "-1")
    + """
if ARGV[3] == '1' and tonumber(redis.call('HGET', KEYS[3], 'log_last') or '0') < tonumber(ARGV[6])
then return -2 end
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, ARGV[2])
local n = 0
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local v = redis.call('GET', ARGV[4] .. id)
  if v then
    local deadline, keep_until, payload = parse(v)
    redis.call('DEL', ARGV[4] .. id)
    redis.call('SET', ARGV[5] .. id, 'expired', 'PX',
      math.max(1, math.floor((keep_until - now) * 1000)))
    if ARGV[3] == '1' then
      local offset = redis.call('HINCRBY', KEYS[3], 'log_last', 1)
      redis.call('XADD', KEYS[2], offset .. '-0', 'e', id, 'd', payload, 't', ARGV[1])
    end
    n = n + 1
  end
end
return n
"""
)

#: KEYS due, counters ; ARGV ev key prefix, done key prefix, deadline, expire_ms, n, then
#: n event ids and n values ; {} when every decision was stored (and counted), else
#: nothing stored and per id 'v' .. its pending value, 'd' .. its tombstone, or ''
PUT_NEW = """
local n = tonumber(ARGV[5])
local found, taken = {}, false
for i = 1, n do
  local id = ARGV[5 + i]
  local v = redis.call('GET', ARGV[1] .. id)
  if v then
    found[i], taken = 'v' .. v, true
  else
    local t = redis.call('GET', ARGV[2] .. id)
    if t then found[i], taken = 'd' .. t, true else found[i] = '' end
  end
end
if taken then return found end
for i = 1, n do
  local id = ARGV[5 + i]
  redis.call('SET', ARGV[1] .. id, ARGV[5 + n + i], 'PX', ARGV[4])
  redis.call('ZADD', KEYS[1], ARGV[3], id)
end
redis.call('HINCRBY', KEYS[2], 'decisions', n)
return {}
"""

#: KEYS lease, counters ; ARGV holder, ttl_ms ; {token, mark}, {-1} when held by another
ACQUIRE = (
    _held(2, "{-2}")
    + """
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|' then return {-1} end
local token = redis.call('HINCRBY', KEYS[2], 'token', 1)
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
return {token, mark}
"""
)

#: KEYS lease ; ARGV value, ttl_ms (0 = release)
RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""

# an idle learner: renew its lease (KEYS[1]) if still held under ARGV[1]; 0 when lost,
# 2 when its log (last offset in KEYS[2]) went past ARGV[3] or a checkpoint was asked
# for (KEYS[3]), 1 when there is nothing to do
IDLE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if tonumber(redis.call('HGET', KEYS[2], 'log_last') or '0') > tonumber(ARGV[3]) then return 2 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end
return 1
"""

_SAVE = """
local function save(token, version, created, size, offset, acked, keep, blob, channel, name,
                    keep_bytes)
  local newest = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
  if token == -1 then
    token = newest + 1
    redis.call('DEL', KEYS[5])
    redis.call('HSET', KEYS[1], 'token', token)
  elseif token < newest then
    return {'fenced', newest}
  end
  local seq = redis.call('HINCRBY', KEYS[1], 'sequence', 1)
  local member = seq .. '|' .. version .. '|' .. created .. '|' .. size .. '|' .. offset
    .. '|' .. acked .. '|' .. token
  redis.call('HSET', KEYS[2], seq, blob)
  redis.call('ZADD', KEYS[3], seq, member)
  -- the newest keep, within keep_bytes together (0: no bound); the newest always stays
  local kept, total, cut = 0, 0, false
  for _, old in ipairs(redis.call('ZREVRANGE', KEYS[3], 0, -1)) do
    local bytes = tonumber(string.match(old, '^%d+|[^|]*|[^|]*|(%d+)|'))
    cut = cut or kept >= keep or (kept > 0 and keep_bytes > 0 and total + bytes > keep_bytes)
    if cut then
      redis.call('HDEL', KEYS[2], string.match(old, '^(%d+)|'))
      redis.call('ZREM', KEYS[3], old)
    else
      kept, total = kept + 1, total + bytes
    end
  end
  local oldest = oldest_offset()
  if oldest ~= nil then redis.call('XTRIM', KEYS[4], 'MINID', (oldest + 1) .. '-0') end
  redis.call('PUBLISH', channel, name)
  return {'ok', seq, token}
end
"""

_OLDEST = """
local function oldest_offset()
  local oldest = nil
  for _, kept in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local i, offset = 0, nil
    for part in string.gmatch(kept, '[^|]+') do
      i = i + 1
      if i == 5 then offset = tonumber(part) end
    end
    if oldest == nil or offset < oldest then oldest = offset end
  end
  return oldest
end
"""

#: KEYS counters, blobs, index, log, lease
#: ARGV token, version, created_at, size, offset, acked_at, keep, blob, channel, name, mark,
#: keep_bytes (the mark the token was issued under; '' = not known, then only the token is
#: compared; keep_bytes 0: no bound)
SAVE_CHECKPOINT = (
    _OLDEST
    + _SAVE
    + _held(1, "{'gone'}")
    + """
if ARGV[11] ~= '' and ARGV[1] ~= '-1' and ARGV[11] ~= mark then
  return {'fenced', tonumber(redis.call('HGET', KEYS[1], 'token') or '0')}
end
return save(tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7]),
  ARGV[8], ARGV[9], ARGV[10], tonumber(ARGV[12]))
"""
)

#: KEYS counters, blobs, index, log, lease
#: ARGV mark, log_last, sequence, token, decisions, created_at, channel, name,
#:      offered sequence (0 = none), version, size, keep, blob, keep_bytes (0: no bound) ;
#:      {1 if newly held, saved 0/1}
HOLD = (
    _OLDEST
    + _SAVE
    + """
local newly = 0
if not redis.call('HGET', KEYS[1], 'mark') then
  for i, field in ipairs({'log_last', 'sequence', 'token', 'decisions'}) do
    if tonumber(ARGV[i + 1]) > tonumber(redis.call('HGET', KEYS[1], field) or '0') then
      redis.call('HSET', KEYS[1], field, ARGV[i + 1])
    end
  end
  redis.call('HINCRBY', KEYS[1], 'token', 1)
  redis.call('DEL', KEYS[5])
  local base = redis.call('HGET', KEYS[1], 'log_last') or '0'
  redis.call('HSET', KEYS[1], 'mark', ARGV[1], 'base', base, 'offered', 0)
  newly = 1
end
local offered = tonumber(ARGV[9])
if offered <= tonumber(redis.call('HGET', KEYS[1], 'offered')) then return {newly, 0} end
local base = redis.call('HGET', KEYS[1], 'base')
local oldest = oldest_offset()
if oldest ~= nil and oldest > tonumber(base) then return {newly, 0} end
redis.call('HSET', KEYS[1], 'offered', offered)
save(-1, ARGV[10], ARGV[6], ARGV[11], base, '0', tonumber(ARGV[12]), ARGV[13], ARGV[7], ARGV[8],
  tonumber(ARGV[14]))
return {newly, 1}
"""
)


#: KEYS models ; ARGV name, record, limit.  Writes the record of a new name unless the
#: hash holds ``limit`` records or more: then answers how many it holds (-1: written; -2:
#: the name has a record, left as it is)
SAVE_CAPPED = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return -2 end
local held = redis.call('HLEN', KEYS[1])
if held >= tonumber(ARGV[3]) then return held end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return -1
"""

#: KEYS creates (the claims of the creates of one name: token -> deadline, or
#: ``recorded``), then every other key of the model ; ARGV token, recorded (1/0), now.
#: A create that wrote no record deletes the model's keys unless another claim is alive
END_CREATE = """
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], 'recorded')
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
local claims = redis.call('HVALS', KEYS[1])
for _, claim in ipairs(claims) do
  if claim == 'recorded' or tonumber(claim) > tonumber(ARGV[3]) then return 0 end
end
redis.call('DEL', unpack(KEYS))
return 1
"""
