-- force_release frees lock KEYS[1] whoever holds it, handing it to the first
-- live waiter if there is one. A key holding something this driver did not
-- write is deleted. ARGV: 1 retention ms.
local lock = KEYS[1]
local held = redis.pcall('GET', lock)
if type(held) ~= 'string' or not (string.byte(held) == RELEASED_BYTE or string.find(held, '\n', 1, true)) then
	redis.call('DEL', lock)
	return 1
end
if string.byte(held) ~= RELEASED_BYTE then
	release(lock, held, nil, ARGV[1])
end
return 1
