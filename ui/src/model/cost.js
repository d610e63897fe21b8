// What a component costs, from GET /v1/catalog (instance prices, and each MIG profile's share
// of its GPU, computed by the planner: max(compute fraction, memory fraction)). The same
// arithmetic as `carve bench` (src/loadgen/bench_cost.h):
//
//   share of the instance = share of one GPU / GPUs on the instance
//       mig-4g.20gb on an A100-40GB: max(4/7, 4/8) = 0.571 of a GPU, / 8 GPUs = 0.0714
//       a copy of N whole GPUs: N / GPUs on the instance
//   copy $/h            = instance $/h x share of the instance
//   $/M output tokens   = component $/h / (output tokens/s x 3600) x 1e6

export function indexCatalog(catalog) {
  const types = new Map((catalog?.instance_types ?? []).map((t) => [t.id, t]));
  const gpus = new Map((catalog?.gpus ?? []).map((g) => [g.id, g]));
  return { types, gpus };
}

// {usdPerHour, source} for an instance type; usdPerHour null when the catalog has no price.
export function instancePrice(index, instanceType) {
  const t = index.types.get(instanceType);
  if (!t) return { usdPerHour: null, source: `instance type ${instanceType} is not in the catalog` };
  if (!(t.usd_per_hour > 0)) return { usdPerHour: null, source: t.price_source || 'no price' };
  return { usdPerHour: t.usd_per_hour, source: t.price_source };
}

// The fraction of an instance one copy holds: a partition type ("mig-4g.20gb"), or `devices`
// whole GPUs when partitionType is empty. null when the catalog cannot say.
export function copyShare(index, instanceType, partitionType, devices = 1) {
  const t = index.types.get(instanceType);
  if (!t || !(t.gpu_count > 0)) return null;
  if (!partitionType) return Math.min(devices, t.gpu_count) / t.gpu_count;
  const gpu = index.gpus.get(t.gpu);
  const name = partitionType.replace(/^mig-/, '');
  const profile = gpu?.profiles?.find((p) => p.name === name);
  if (!profile || !(profile.gpu_share > 0)) return null;
  return profile.gpu_share / t.gpu_count;
}

// $/h of `copies` copies; null when the price or the share is unknown.
export function componentCostPerHour(index, instanceType, partitionType, devices, copies) {
  const price = instancePrice(index, instanceType).usdPerHour;
  const share = copyShare(index, instanceType, partitionType, devices);
  if (price === null || share === null) return null;
  return price * share * copies;
}

// $ per million output tokens at `tokensPerSecond`; null when nothing counts tokens or none
// flowed (a cost per token is undefined then, not 0).
export function costPerMillionTokens(usdPerHour, tokensPerSecond) {
  if (usdPerHour === null || tokensPerSecond === null || tokensPerSecond === undefined) return null;
  if (!(tokensPerSecond > 0)) return null;
  return (usdPerHour / (tokensPerSecond * 3600)) * 1e6;
}
