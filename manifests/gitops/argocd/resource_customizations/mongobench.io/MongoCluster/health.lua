-- Argo CD health of a MongoCluster (mongobench.io/v1alpha1), from status.phase and conditions
-- (names documented in operator/mongobench/k8s/conditions.py and the CRD):
--   Ready                                  -> Healthy
--   Pending, Provisioning, Initializing,
--   Scaling, Deleting, or a spec the
--   operator has not observed yet           -> Progressing
--   Degraded (was Ready, members are not)  -> Degraded
--   Failed                                 -> Degraded
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

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report a status"
  return hs
end

local generation = obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end

local ready = condition(status, "Ready")
local message = status.phase
if ready ~= nil and ready.message ~= nil and ready.message ~= "" then
  message = status.phase .. ": " .. ready.message
end

if status.phase == "Ready" then
  local updated = condition(status, "Updated")
  if updated ~= nil and updated.status == "False" then
    -- Ready, but a rolling restart or a shard removal is still going on.
    hs.status = "Progressing"
    hs.message = "Ready, updating: " .. (updated.message or updated.reason or "")
    return hs
  end
  hs.status = "Healthy"
  hs.message = message
elseif status.phase == "Failed" then
  local configured = condition(status, "Configured")
  hs.status = "Degraded"
  if configured ~= nil and configured.status == "False" and configured.message ~= nil and configured.message ~= "" then
    hs.message = "Failed: " .. configured.message
  else
    hs.message = message
  end
elseif status.phase == "Degraded" then
  hs.status = "Degraded"
  hs.message = message
else
  hs.status = "Progressing"
  hs.message = message
end
return hs
