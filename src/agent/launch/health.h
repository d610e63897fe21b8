// Ports and readiness for workload processes: each copy gets its own free port, and counts as
// ready (InService) only once `GET /ping` on that port answers 200.
#pragma once

#include <chrono>
#include <functional>

#include "common/result.h"

namespace carve::launch {

// A port that was free a moment ago on 127.0.0.1 (bind to port 0, read it, close). Another
// process may take it before the workload binds it; a workload that fails to bind exits and is
// restarted on a new port. Internal with errno's text when no socket can be bound.
Result<int> FindFreePort();

// Polls `GET http://127.0.0.1:<port>/ping` every `interval` until it answers 200, `timeout`
// passes (Unavailable naming the port and the last answer or connection error), or `alive`
// returns false (FailedPrecondition: the process died before it was ready).
Status WaitForPing(int port, std::chrono::milliseconds timeout,
                   const std::function<bool()>& alive = [] { return true; },
                   std::chrono::milliseconds interval = std::chrono::milliseconds(50));

}  // namespace carve::launch
