-- trainforge: Argo CD health check for the kubeflow.org/v1 training jobs (PyTorchJob,
-- TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob, MXJob) and the mpi-operator's
-- kubeflow.org/v2beta1 MPIJob (Argo CD keys a check by group and kind, not version). One
-- script serves them all because they share one condition algorithm (conditions are
-- appended in order of recency; a finished job keeps Running with status "False").
--
-- Contract (Argo CD resource.customizations.health.<group>_<kind>): the live object is
-- the global `obj`; the script returns {status = ..., message = ...}.
-- Mapping: Failed=True -> Degraded, Succeeded=True -> Healthy, Suspended=True ->
-- Suspended, anything else -> Progressing. A condition counts only when its status is
-- the string "True": a finished job still lists Running (False) and a resumed job lists
-- Suspended (False).
-- The condition types of this kind's outcomes (train-compile writes them per kind).
local FAILED, SUCCEEDED, SUSPENDED = "Failed", "Succeeded", "Suspended"
local hs = {status = "Progressing", message = ""}

local function describe(condition)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.message
  end
  if condition.reason ~= nil and condition.reason ~= "" then
    return condition.reason
  end
  return condition.type
end

-- Argo CD answers this itself before calling a custom check; repeated here so the
-- script gives the same answer when it is run on its own (tests, other tools).
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Pending deletion"
  return hs
end

if obj.status == nil or obj.status.conditions == nil then
  hs.message = "Waiting for the training operator to report status"
  return hs
end

local active = {}
local latest = nil
for _, condition in ipairs(obj.status.conditions) do
  if condition.status == "True" and condition.type ~= nil then
    active[condition.type] = condition
    latest = condition
  end
end

if active[FAILED] ~= nil then
  hs.status = "Degraded"
  hs.message = describe(active[FAILED])
elseif active[SUCCEEDED] ~= nil then
  hs.status = "Healthy"
  hs.message = describe(active[SUCCEEDED])
elseif active[SUSPENDED] ~= nil then
  hs.status = "Suspended"
  hs.message = describe(active[SUSPENDED])
elseif latest ~= nil then
  hs.message = describe(latest)
else
  hs.message = "Waiting for the training operator to report status"
end
return hs
