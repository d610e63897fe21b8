// The page's one request (GET /v1/ui/endpoints): every endpoint, configuration and component
// of the caller's account as the SageMaker API describes them, each endpoint's instances as
// /v1/fleet draws them, and the components' history. Shaped here as the sections read it.
export function shapeView(view) {
  const endpoints = (view.Endpoints ?? []).map((e) => ({...e, config: e.EndpointConfig ?? null}));
  return {
    endpoints,
    components: view.InferenceComponents ?? [],
    unreadable: view.Unreadable ?? [],
    fleet: {nodes: endpoints.flatMap((e) => e.Nodes ?? [])},
    history: view.History ?? null,
  };
}
