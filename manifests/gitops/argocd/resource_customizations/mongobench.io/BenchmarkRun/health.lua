-- Argo CD health of a BenchmarkRun (mongobench.io/v1alpha1), from status.phase, progress and
-- conditions (names documented in operator/mongobench/k8s/conditions.py and the CRD):
--   Succeeded                                   -> Healthy
--   Failed                                      -> Degraded (the Succeeded condition says why)
--   Pending while its cluster is not Ready,
--   or its scenario ConfigMap is missing        -> Suspended (waits for something outside it)
--   Pending otherwise, Preparing, Loading,
--   Running, Collecting                         -> Progressing (with step i/n and percent)
-- A finished run annotated mongobench.io/superseded=true (Git names it no more: the experiments
-- chart's hook marks it, with argocd.argoproj.io/ignore-healthcheck) is Healthy whatever its
-- outcome, which the message keeps: an old failure must not hold the Application Degraded.
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

local phase = status.phase
local annotations = obj.metadata.annotations
local superseded = annotations ~= nil and annotations["mongobench.io/superseded"] == "true"

if phase == "Succeeded" then
  hs.status = "Healthy"
  local done = condition(status, "Succeeded")
  hs.message = (done ~= nil and done.message ~= nil and done.message ~= "") and done.message or "Succeeded"
elseif phase == "Failed" then
  hs.status = "Degraded"
  local done = condition(status, "Succeeded")
  local cluster = condition(status, "ClusterReady")
  if done ~= nil and done.message ~= nil and done.message ~= "" then
    hs.message = "Failed: " .. done.message
  elseif cluster ~= nil and cluster.status == "False" then
    hs.message = "Failed: " .. (cluster.message or cluster.reason or "")
  else
    hs.message = "Failed"
  end
end
if hs.status ~= nil then
  if superseded then
    hs.status = "Healthy"
    hs.message = "Superseded, kept for its results: " .. hs.message
  end
  return hs
end

local cluster = condition(status, "ClusterReady")
if phase == "Pending" and cluster ~= nil and cluster.status == "False" then
  hs.status = "Suspended"
  hs.message = "Waiting for its cluster: " .. (cluster.message or cluster.reason or "")
  return hs
end
local scenario = condition(status, "ScenarioReady")
if phase == "Pending" and scenario ~= nil and scenario.status == "False" then
  hs.status = "Suspended"
  hs.message = "Waiting for its scenario: " .. (scenario.message or scenario.reason or "")
  return hs
end

hs.status = "Progressing"
local progress = status.progress
if progress ~= nil and progress.summary ~= nil then
  local text = phase .. " " .. progress.summary
  if progress.percent ~= nil then
    text = text .. " (" .. tostring(progress.percent) .. "%)"
  end
  if progress.current ~= nil and progress.current ~= "" then
    text = text .. ": " .. progress.current
  end
  hs.message = text
else
  hs.message = phase
end
local retrying = condition(status, "Progressing")
if retrying ~= nil and retrying.status == "False" and retrying.message ~= nil then
  hs.message = hs.message .. "; retrying: " .. retrying.message
end
return hs
