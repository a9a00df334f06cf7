-- wrk: each thread sends the signed GETs of its own file (scripts/gateway-tokens), each once.
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

local requests = {}
local next_index = 1
function init(args)
  for line in io.lines(args[1] .. "." .. id) do
    local path, whash, wtoken = line:match("^(%S+) (%S+) (%S+)$")
    requests[#requests + 1] = wrk.format("GET", path, { ["whash"] = whash, ["wtoken"] = wtoken })
  end
end

function request()
  local r = requests[next_index]
  next_index = next_index + 1
  if next_index > #requests then next_index = 1 end  -- past the end: replays, counted as errors
  return r
end
