-- Argo CD health of a BenchmarkExperiment (mongobench.io/v1alpha1), from status.phase, progress,
-- failedSlots and the Succeeded condition (names documented in operator/mongobench/k8s/conditions.py):
--   Succeeded                 -> Healthy (runs that failed under onCellFailure: Continue are
--                                counted in the message)
--   Failed                    -> Degraded (the Succeeded condition says why: a cell, or the spec)
--   Pending, Running          -> Progressing (cells done / cells, and the current cell)
local hs = {}

local function condition(status, type_)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end

local function failed_slots(status)
  if status.failedSlots == nil then
    return 0
  end
  local n = 0
  for _ in ipairs(status.failedSlots) do
    n = n + 1
  end
  return n
end

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report a status"
  return hs
end

local phase = status.phase
local done = condition(status, "Succeeded")
local said = done ~= nil and done.message ~= nil and done.message ~= ""

if phase == "Succeeded" then
  hs.status = "Healthy"
  hs.message = said and done.message or "Succeeded"
  local failed = failed_slots(status)
  if failed > 0 then
    hs.message = hs.message .. "; " .. tostring(failed) .. " run(s) failed (status.failedSlots)"
  end
  return hs
end

if phase == "Failed" then
  hs.status = "Degraded"
  hs.message = said and ("Failed: " .. done.message) or "Failed"
  return hs
end

hs.status = "Progressing"
local progress = status.progress
if progress ~= nil and progress.summary ~= nil then
  hs.message = phase .. " " .. progress.summary .. " cells"
  if progress.current ~= nil and progress.current ~= "" then
    hs.message = hs.message .. ": " .. progress.current
  end
else
  hs.message = phase
end
return hs
