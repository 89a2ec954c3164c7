"""The Lua scripts of the Redis crawl state (formats/crawl-state.md §6 names every key and script).

Each multi-step operation on the shared frontier is one script, so it runs atomically in Redis (no
other client's command interleaves). Every script takes the crawl's key prefix as ``ARGV[1]``
(``archiver:{NAME}:``; the hash tag keeps every key of a crawl in one Redis Cluster slot) and builds
its key names from it. Time is Redis's own clock (``TIME``), never a worker's.

A row is the hash ``u:<key>`` with the fields of :class:`archiver.capture.state.Row` (a missing
field is None). The invariant every script keeps: a ``pending`` row is in exactly one of the
frontier ``q:<kind>``, the lease set ``leases`` or the retry schedule ``retry``; ``counts`` holds
the number of rows per ``state:kind``. Under a page budget (``--max-pages N``: ``budget``), every
page leased is in ``budget:leased`` and every page stored in ``budget:stored``, and the two together
never hold more than N keys (formats/crawl-state.md §6.8).
"""

from __future__ import annotations

__all__ = [
    "ADD",
    "CLAIM",
    "FINISH",
    "HOST_ACQUIRE",
    "HOST_RELEASE",
    "MARK",
    "PROBE",
    "RELEASE",
    "RENEW",
    "REQUEUE",
]

_COMMON = r"""
local P = ARGV[1]
local NULL = cjson.null
local LIMITS = {["beyond the depth limit"] = true, ["beyond the page budget"] = true}

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- frontier order: priority, then depth, then discovery (exact in a double below 2^53)
local function score(priority, depth, seq)
  return priority * 1e13 + math.min(depth, 9999) * 1e9 + seq
end

local function count(state, kind, n)
  redis.call('HINCRBY', P .. 'counts', state .. ':' .. kind, n)
end

-- the page budget (--max-pages): N in ``budget``; a slot is a page stored (``budget:stored``) or
-- leased (``budget:leased``); nil when the crawl has none
local BUDGET_REASON = 'beyond the page budget'

local function budget()
  local n = redis.call('GET', P .. 'budget')
  if n then return tonumber(n) end
  return nil
end

local function budget_spent()
  local n = budget()
  return n ~= nil and redis.call('SCARD', P .. 'budget:stored') >= n
end

-- slots free: N - pages stored - pages leased
local function room(n)
  return n - redis.call('SCARD', P .. 'budget:stored') - redis.call('SCARD', P .. 'budget:leased')
end

-- every slot holds a stored page: the pages still queued will never be claimed (500 a call)
local function close_budget(n)
  if redis.call('SCARD', P .. 'budget:stored') < n then return end
  local popped = redis.call('ZPOPMIN', P .. 'q:page', 500)
  for i = 1, #popped, 2 do
    local u = P .. 'u:' .. popped[i]
    redis.call('HSET', u, 'state', 'skipped', 'outcome', 'skipped', 'reason', BUDGET_REASON)
    count('pending', 'page', -1)
    count('skipped', 'page', 1)
  end
  redis.call('HINCRBY', P .. 'stats', 'budget_skipped', #popped / 2)
end

local function val(v)
  if v == NULL then return nil end
  return v
end

-- an alias names the key at the end of its owner's chain (an owner may have handed its path on)
local function owner_at_end(key)
  local seen = {[key] = true}
  while true do
    local r = redis.call('HMGET', P .. 'u:' .. key, 'state', 'final_url')
    if r[1] ~= 'merged' or not r[2] or seen[r[2]] then return key end
    key = r[2]
    seen[key] = true
  end
end

-- tree.md 3.3, crawl-state.md 6.2: ``key`` owns its path and just ended failed, unconfirmed or
-- refused: the smallest alias merged into it that was never tried itself (outcome 'merged') goes
-- back to the frontier (no attempt counted) and owns the path; the other aliases name it, and
-- ``key`` is merged into it, keeping its failure's outcome and reason
local function hand_over(key)
  local u = P .. 'u:' .. key
  local mine = redis.call('HMGET', u, 'path', 'kind', 'state')
  local path = mine[1]
  if not path or redis.call('HGET', P .. 'paths', path) ~= key then return end
  local members = redis.call('SMEMBERS', P .. 'al:' .. key)
  table.sort(members)
  local heir = nil
  for _, m in ipairs(members) do
    local r = redis.call('HMGET', P .. 'u:' .. m, 'state', 'outcome', 'final_url')
    if r[1] == 'merged' and r[2] == 'merged' and r[3] == key then
      heir = m
      break
    end
  end
  if not heir then return end
  local h = P .. 'u:' .. heir
  local r = redis.call('HMGET', h, 'kind', 'priority', 'depth', 'seq')
  redis.call('HSET', h, 'state', 'pending', 'path', path)
  redis.call('HDEL', h, 'outcome', 'reason', 'final_url')
  count('merged', r[1], -1)
  count('pending', r[1], 1)
  redis.call('ZADD', P .. 'q:' .. r[1], score(tonumber(r[2]), tonumber(r[3]), tonumber(r[4])), heir)
  for _, m in ipairs(members) do
    if m ~= heir and redis.call('HGET', P .. 'u:' .. m, 'final_url') == key then
      redis.call('HSET', P .. 'u:' .. m, 'final_url', heir)
      redis.call('SADD', P .. 'al:' .. heir, m)
    end
  end
  redis.call('DEL', P .. 'al:' .. key)
  redis.call('HSET', u, 'state', 'merged', 'final_url', heir)
  count(mine[3], mine[2], -1)
  count('merged', mine[2], 1)
  redis.call('SADD', P .. 'al:' .. heir, key)
  redis.call('HSET', P .. 'paths', path, heir)
end

-- the references one item names: {key, kind, depth, referrer, priority, stylesheet, path, state,
-- final_url, reason}; appends the keys that were new or revived to ``out``
local function add_item(it, out)
  local key, kind, depth, ref = it[1], it[2], tonumber(it[3]), val(it[4])
  local prio, css, path = tonumber(it[5]), tonumber(it[6]), val(it[7])
  local st, fin, reason = it[8], val(it[9]), it[10]
  local u = P .. 'u:' .. key
  if not redis.call('ZSCORE', P .. 'seen', key) then
    if st == 'merged' and fin then fin = owner_at_end(fin) end
    local seq = redis.call('INCR', P .. 'seq')
    redis.call('ZADD', P .. 'seen', seq, key)
    if st == 'pending' and path then
      -- two keys for one tree path (tree.md 3.3): the first one to reach Redis owns it
      local owner = redis.call('HGET', P .. 'paths', path)
      if owner and owner ~= key then
        st = 'merged'
        fin = owner
      elseif kind == 'page' and budget_spent() then
        st = 'skipped'
      elseif not owner then
        redis.call('HSET', P .. 'paths', path, key)
      end
    elseif st == 'pending' and kind == 'page' and budget_spent() then
      st = 'skipped'
    end
    if st == 'skipped' and it[8] == 'pending' then
      reason = BUDGET_REASON
      redis.call('HINCRBY', P .. 'stats', 'budget_skipped', 1)
    end
    local f = {'kind', kind, 'state', st, 'depth', depth, 'priority', prio, 'seq', seq,
               'stylesheet', css, 'attempts', 0}
    if ref then f[#f + 1] = 'referrer'; f[#f + 1] = ref end
    if path then f[#f + 1] = 'path'; f[#f + 1] = path end
    if fin then f[#f + 1] = 'final_url'; f[#f + 1] = fin end
    if st == 'skipped' or st == 'merged' then f[#f + 1] = 'outcome'; f[#f + 1] = st end
    if reason and reason ~= '' then f[#f + 1] = 'reason'; f[#f + 1] = reason end
    redis.call('HSET', u, unpack(f))
    if st == 'merged' and fin then redis.call('SADD', P .. 'al:' .. fin, key) end
    count(st, kind, 1)
    if st == 'pending' then
      redis.call('ZADD', P .. 'q:' .. kind, score(prio, depth, seq), key)
    end
    out[#out + 1] = key
    return
  end
  local row = redis.call('HMGET', u, 'depth', 'referrer', 'state', 'reason', 'kind', 'priority', 'seq')
  local d, r = tonumber(row[1]), row[2] or ''
  local best = d
  if d > depth or (d == depth and r > (ref or '')) then
    best = depth
    redis.call('HSET', u, 'depth', depth)
    if ref then redis.call('HSET', u, 'referrer', ref) else redis.call('HDEL', u, 'referrer') end
    if row[3] == 'pending' then
      redis.call('ZADD', P .. 'q:' .. row[5], 'XX', score(tonumber(row[6]), depth, tonumber(row[7])), key)
    end
  end
  if css == 1 then redis.call('HSET', u, 'stylesheet', 1) end
  local revive = st == 'pending' and row[3] == 'skipped' and LIMITS[row[4]]
  if revive and not (kind == 'page' and budget_spent()) then
    if row[4] == BUDGET_REASON then redis.call('HINCRBY', P .. 'stats', 'budget_skipped', -1) end
    redis.call('HSET', u, 'state', 'pending', 'kind', kind)
    redis.call('HDEL', u, 'outcome', 'reason')
    if path then redis.call('HSET', u, 'path', path) end
    count('skipped', row[5], -1)
    count('pending', kind, 1)
    redis.call('ZADD', P .. 'q:' .. kind, score(tonumber(row[6]), best, tonumber(row[7])), key)
    out[#out + 1] = key
  end
end

local function add_items(json, out)
  for _, it in ipairs(cjson.decode(json)) do add_item(it, out) end
end

-- leases past their deadline go back to the frontier through the retry schedule, attempts + 1;
-- a row whose leases expired max_attempts times fails for good (a URL that kills its workers)
local function reap(now, max_attempts, backoff)
  local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 100)
  for _, key in ipairs(expired) do
    redis.call('ZREM', P .. 'leases', key)
    redis.call('HDEL', P .. 'owner', key)
    redis.call('SREM', P .. 'budget:leased', key)
    local u = P .. 'u:' .. key
    local attempts = redis.call('HINCRBY', u, 'attempts', 1)
    local kind = redis.call('HGET', u, 'kind')
    redis.call('HINCRBY', P .. 'stats', 'expired', 1)
    redis.call('SADD', P .. 'reaped', key)
    if attempts >= max_attempts then
      redis.call('HSET', u, 'state', 'failed', 'outcome', 'failed',
                 'reason', 'its lease expired ' .. attempts .. ' times (the workers holding it stopped)')
      count('pending', kind, -1)
      count('failed', kind, 1)
    else
      redis.call('ZADD', P .. 'retry', now + math.min(backoff * 2 ^ (attempts - 1), 60000), key)
    end
  end
end

-- rows whose retry time has come join the frontier again
local function promote(now)
  local due = redis.call('ZRANGEBYSCORE', P .. 'retry', '-inf', now, 'LIMIT', 0, 100)
  for _, key in ipairs(due) do
    redis.call('ZREM', P .. 'retry', key)
    local r = redis.call('HMGET', P .. 'u:' .. key, 'kind', 'priority', 'depth', 'seq', 'state')
    if r[5] == 'pending' then
      redis.call('ZADD', P .. 'q:' .. r[1], score(tonumber(r[2]), tonumber(r[3]), tonumber(r[4])), key)
    end
  end
end
"""

#: ARGV: prefix, items (JSON) → the keys that were new or revived.
ADD = (
    _COMMON
    + r"""
local out = {}
add_items(ARGV[2], out)
return out
"""
)

#: ARGV: prefix, kind, n, worker, lease_ms, max_attempts, backoff_ms, then the hosts this worker has
#: rows of in flight → {key, token, fields…} per row claimed (fields: HGETALL of the row). Reaps
#: expired leases and promotes due retries first. Under a page budget, pages are claimed only while
#: pages stored + pages leased < N; once every slot holds a stored page, the pages still queued are
#: skipped for the budget. Every slot busy (formats/crawl-state.md §2): among the first n + 128
#: queued, one row per host that is free (not named busy, its lock held by no worker, not taken by
#: this claim) goes first, then the earliest of the others; claimed in queue order.
CLAIM = (
    _COMMON
    + r"""
local now = now_ms()
reap(now, tonumber(ARGV[6]), tonumber(ARGV[7]))
promote(now)
local worker, lease, n = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[3])
local cap = ARGV[2] == 'page' and budget() or nil
if cap then
  close_budget(cap)
  n = math.min(n, room(cap))
end
local popped = {}
if n > 0 then
  local queue = P .. 'q:' .. ARGV[2]
  local busy = {}
  local idle = ARGV[8] == '1'
  for i = 9, #ARGV do busy[ARGV[i]] = true end
  local free, rest, locked = {}, {}, {}
  local last_new = 1
  local range = redis.call('ZRANGE', queue, 0, n + 1023)
  for i, key in ipairs(range) do
    if i - last_new > n + 128 then break end  -- n + 128 rows in a row of hosts already seen
    local host = string.match(key, '^[^:/?#]+://([^/?#]*)') or ''
    if locked[host] == nil then  -- a host new to this claim: its lock looked up once
      last_new = i
      locked[host] = redis.call('EXISTS', P .. 'host:' .. host .. ':lock') == 1
    end
    if busy[host] or locked[host] then
      if #rest < n then rest[#rest + 1] = i end
    else
      busy[host] = true
      free[#free + 1] = i
      if #free >= n + 16 then break end  -- hosts.FAIR free hosts past n compared
    end
  end
  -- the free hosts served longest ago first (never served: first of all), then queue order
  if #free > n then
    local served = {}
    for _, i in ipairs(free) do
      local host = string.match(range[i], '^[^:/?#]+://([^/?#]*)') or ''
      served[i] = tonumber(redis.call('HGET', P .. 'served', host) or '-1')
    end
    table.sort(free, function(a, b)
      if served[a] ~= served[b] then return served[a] < served[b] end
      return a < b
    end)
    local keep = {}
    for j = 1, n do keep[j] = free[j] end
    free = keep
  end
  -- a row of a busy host would only wait on its lock: the slots free hosts leave are filled so
  -- only by a worker with nothing in flight (one host, or every host busy: it still moves on)
  local chosen = free
  if idle then
    for j = 1, math.min(#rest, n - #free) do chosen[#chosen + 1] = rest[j] end
  end
  table.sort(chosen)
  for _, i in ipairs(chosen) do
    local host = string.match(range[i], '^[^:/?#]+://([^/?#]*)') or ''
    redis.call('HSET', P .. 'served', host, redis.call('INCR', P .. 'served:clock'))
    redis.call('ZREM', queue, range[i])
    popped[#popped + 1] = range[i]
    popped[#popped + 1] = 0
  end
end
local out = {}
for i = 1, #popped, 2 do
  local key = popped[i]
  local token = redis.call('INCR', P .. 'token')
  redis.call('HSET', P .. 'owner', key, worker .. ' ' .. token)
  redis.call('ZADD', P .. 'leases', now + lease, key)
  if cap then redis.call('SADD', P .. 'budget:leased', key) end
  out[#out + 1] = {key, token, redis.call('HGETALL', P .. 'u:' .. key)}
end
redis.call('HSET', P .. 'alive', worker, now)
return out
"""
)

#: ARGV: prefix, worker, lease_ms, n, key1, token1 … keyn, tokenn, then host, holder pairs → the
#: keys whose claim was lost. The host locks this worker holds are extended by a lease too (a worker
#: that dies holding one frees its host within a lease).
RENEW = (
    _COMMON
    + r"""
local now = now_ms()
local worker, lease = ARGV[2], tonumber(ARGV[3])
local last = 4 + 2 * tonumber(ARGV[4])
local lost = {}
for i = 5, last, 2 do
  local key = ARGV[i]
  if redis.call('HGET', P .. 'owner', key) == worker .. ' ' .. ARGV[i + 1] then
    redis.call('ZADD', P .. 'leases', 'XX', now + lease, key)
  else
    lost[#lost + 1] = key
  end
end
for i = last + 1, #ARGV, 2 do
  local lock = P .. 'host:' .. ARGV[i] .. ':lock'
  if redis.call('GET', lock) == ARGV[i + 1] then redis.call('PEXPIRE', lock, lease) end
end
redis.call('HSET', P .. 'alive', worker, now)
return lost
"""
)

#: ARGV: prefix, worker, key1, token1 … → how many claims went back to the frontier: a worker that
#: stops (Ctrl-C, SIGTERM, the end of its run) gives back what it still holds, no attempt counted,
#: and a page's budget slot with it. Fenced: a claim this worker lost (its lease expired, the row
#: went to another) is left alone.
RELEASE = (
    _COMMON
    + r"""
local n = 0
for i = 3, #ARGV, 2 do
  local key = ARGV[i]
  if redis.call('HGET', P .. 'owner', key) == ARGV[2] .. ' ' .. ARGV[i + 1] then
    redis.call('HDEL', P .. 'owner', key)
    redis.call('ZREM', P .. 'leases', key)
    redis.call('SREM', P .. 'budget:leased', key)
    local r = redis.call('HMGET', P .. 'u:' .. key, 'kind', 'priority', 'depth', 'seq')
    redis.call('ZADD', P .. 'q:' .. r[1], score(tonumber(r[2]), tonumber(r[3]), tonumber(r[4])), key)
    n = n + 1
  end
end
return n
"""
)

#: ARGV: prefix, key, worker, token ('' = a row this worker never claimed), state, outcome, reason,
#: status ('' = none), final_url ('' = none), items (JSON), stored ('1' when a page was stored: it
#: keeps its budget slot) → {1, new keys…}, or {0} when refused (the claim was lost: another worker
#: may hold the row, or it went back to the frontier).
FINISH = (
    _COMMON
    + r"""
local key, worker, token = ARGV[2], ARGV[3], ARGV[4]
local u = P .. 'u:' .. key
local holder = redis.call('HGET', P .. 'owner', key)
local old = redis.call('HMGET', u, 'state', 'kind')
if not old[1] then return {0} end
if token ~= '' then
  if holder ~= worker .. ' ' .. token then return {0} end
  redis.call('HDEL', P .. 'owner', key)
  redis.call('ZREM', P .. 'leases', key)
  redis.call('SREM', P .. 'budget:leased', key)
  if ARGV[11] == '1' and budget() then redis.call('SADD', P .. 'budget:stored', key) end
elseif holder or old[1] == 'pending' then
  return {0}
end
local st = ARGV[5]
redis.call('HSET', u, 'state', st, 'outcome', ARGV[6], 'reason', ARGV[7])
if ARGV[8] ~= '' then redis.call('HSET', u, 'status', ARGV[8]) else redis.call('HDEL', u, 'status') end
if ARGV[9] ~= '' then redis.call('HSET', u, 'final_url', ARGV[9]) else redis.call('HDEL', u, 'final_url') end
redis.call('HINCRBY', u, 'attempts', 1)
count(old[1], old[2], -1)
count(st, old[2], 1)
redis.call('HINCRBY', P .. 'wc:' .. worker, st, 1)
if ARGV[6] == 'redirected' and ARGV[9] ~= '' then
  redis.call('SADD', P .. 'rd:' .. ARGV[9], key)
end
if st == 'failed' or st == 'unconfirmed' or st == 'refused' then hand_over(key) end
local out = {1}
add_items(ARGV[10], out)
return out
"""
)

#: ARGV: prefix, key, state, outcome, reason, final_url ('' = none) → 1 if the row exists.
MARK = (
    _COMMON
    + r"""
local key, st = ARGV[2], ARGV[3]
local u = P .. 'u:' .. key
local r = redis.call('HMGET', u, 'state', 'kind', 'priority', 'depth', 'seq')
if not r[1] then return 0 end
redis.call('HSET', u, 'state', st, 'outcome', ARGV[4], 'reason', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', u, 'final_url', ARGV[6]) else redis.call('HDEL', u, 'final_url') end
count(r[1], r[2], -1)
count(st, r[2], 1)
if r[1] == 'pending' and st ~= 'pending' then
  redis.call('ZREM', P .. 'q:' .. r[2], key)
  redis.call('ZREM', P .. 'retry', key)
  redis.call('ZREM', P .. 'leases', key)
  redis.call('HDEL', P .. 'owner', key)
  redis.call('SREM', P .. 'budget:leased', key)
elseif st == 'pending' and r[1] ~= 'pending' then
  redis.call('ZADD', P .. 'q:' .. r[2], score(tonumber(r[3]), tonumber(r[4]), tonumber(r[5])), key)
end
return 1
"""
)

#: ARGV: prefix, mode ('requeue' or 'refresh'), max_attempts, states… → rows made pending. Only
#: while nothing is pending anywhere (a crawl being started again, not one under way): a worker
#: joining a running crawl requeues nothing. One pass over every row (a rare operation).
REQUEUE = (
    _COMMON
    + r"""
local busy = redis.call('ZCARD', P .. 'q:page') + redis.call('ZCARD', P .. 'q:asset')
  + redis.call('ZCARD', P .. 'leases') + redis.call('ZCARD', P .. 'retry')
if busy > 0 then return 0 end
local wanted = {}
for i = 4, #ARGV do wanted[ARGV[i]] = true end
local refresh, max_attempts = ARGV[2] == 'refresh', tonumber(ARGV[3])
if refresh then redis.call('DEL', P .. 'budget:stored') end  -- every page is to be stored again
local n = 0
for _, key in ipairs(redis.call('ZRANGE', P .. 'seen', 0, -1)) do
  local u = P .. 'u:' .. key
  local r = redis.call('HMGET', u, 'state', 'kind', 'priority', 'depth', 'seq', 'attempts')
  if wanted[r[1]] and (refresh or tonumber(r[6]) < max_attempts) then
    redis.call('HSET', u, 'state', 'pending')
    if refresh then redis.call('HSET', u, 'attempts', 0) end
    count(r[1], r[2], -1)
    count('pending', r[2], 1)
    redis.call('ZADD', P .. 'q:' .. r[2], score(tonumber(r[3]), tonumber(r[4]), tonumber(r[5])), key)
    n = n + 1
  end
end
return n
"""
)

#: ARGV: prefix, max_attempts, backoff_ms → {queued, leased, scheduled, ms to the next retry or -1};
#: reaps expired leases and promotes due retries first (any worker runs the reaper this way). Queued
#: pages count only while the page budget has a slot free (else they wait for a leased page to end).
PROBE = (
    _COMMON
    + r"""
local now = now_ms()
reap(now, tonumber(ARGV[2]), tonumber(ARGV[3]))
promote(now)
local pages = redis.call('ZCARD', P .. 'q:page')
local cap = budget()
if cap then
  close_budget(cap)
  pages = redis.call('ZCARD', P .. 'q:page')
  if room(cap) <= 0 and not budget_spent() then pages = 0 end  -- spent: more to close
end
local queued = pages + redis.call('ZCARD', P .. 'q:asset')
local nxt = redis.call('ZRANGE', P .. 'retry', 0, 0, 'WITHSCORES')
local due = -1
if #nxt > 0 then due = math.max(0, tonumber(nxt[2]) - now) end
return {queued, redis.call('ZCARD', P .. 'leases'), redis.call('ZCARD', P .. 'retry'), due}
"""
)

#: ARGV: prefix, host, holder, lock_ms → 0 when ``holder`` now holds the host (one request at a
#: time per host, the lock expiring after lock_ms if its holder dies), else the ms to wait.
HOST_ACQUIRE = (
    _COMMON
    + r"""
local now = now_ms()
local lock = P .. 'host:' .. ARGV[2] .. ':lock'
local cur = redis.call('GET', lock)
if cur and cur ~= ARGV[3] then
  return math.max(1, math.min(redis.call('PTTL', lock), 50))
end
local nxt = tonumber(redis.call('GET', P .. 'host:' .. ARGV[2] .. ':next') or '0')
if nxt > now then return nxt - now end
redis.call('SET', lock, ARGV[3], 'PX', tonumber(ARGV[4]))
return 0
"""
)

#: ARGV: prefix, host, holder, gap_ms: the request ended; the host's next request may start
#: gap_ms from now (Redis time), whoever sends it.
HOST_RELEASE = (
    _COMMON
    + r"""
local now = now_ms()
local lock = P .. 'host:' .. ARGV[2] .. ':lock'
if redis.call('GET', lock) == ARGV[3] then redis.call('DEL', lock) end
local key = P .. 'host:' .. ARGV[2] .. ':next'
local want = now + tonumber(ARGV[4])
if want > tonumber(redis.call('GET', key) or '0') then
  redis.call('SET', key, want, 'PX', tonumber(ARGV[4]) + 3600000)
end
return 1
"""
)
