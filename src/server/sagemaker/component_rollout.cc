// ComponentPlacement's step of a rolling deployment (deployment.h): which old copies stop and how
// many new ones are placed in this pass.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/utf8.h"
#include "server/sagemaker/component_pass.h"

namespace carve::server::sagemaker {

std::string ComponentPlacement::RollOut(const std::string& account, ComponentRecord& c,
                                        const ComponentCopies& cc, std::chrono::seconds startup,
                                        CopyPass& pass) {
  const int64_t now_ms = clock_.UnixMillis();
  // Twice at most: a rollback swaps the roles of the two versions and takes its first step in
  // the same pass.
  for (int round = 0; round < 2; ++round) {
    Deployment& d = *c.deployment;
    std::vector<LiveCopy> fresh;
    std::vector<size_t> old;  // In copy-number order, as keep is.
    for (size_t i : pass.keep) {
      if (cc.copies[i].record.spec_version == c.spec_version) {
        fresh.push_back(cc.copies[i]);
      } else {
        old.push_back(i);
      }
    }
    const ServingState serving =
        Serving(account, c, fresh, startup, d.phase == DeploymentPhase::kRolling);
    if (serving.reconnecting) return "Rolling update paused: " + serving.starting;
    const DeploymentCounts counts{c.desired, static_cast<int>(fresh.size()), serving.running,
                                  static_cast<int>(old.size())};
    const DeploymentStep step = NextDeploymentStep(d, counts, serving.failure, now_ms);
    if (step.kind == DeploymentStep::Kind::kRollBack) {
      spdlog::warn("component {}/{}: rolling back to specification version {}: {}", account, c.name,
                   d.from.version, step.reason);
      const CopySpec failed = c.Current();
      c.Apply(d.from);
      d.from = failed;
      d.phase = DeploymentPhase::kRollingBack;
      d.reason = step.reason;
      d.rolled_back_ms = now_ms;
      d.baked_ms = 0;
      d.batch_open = false;
      continue;
    }
    if (step.kind == DeploymentStep::Kind::kDone) {
      if (d.phase == DeploymentPhase::kRollingBack) {
        c.failure_reason = FitUtf8("The update was rolled back: " + d.reason, kMaxFailureReason);
      } else {
        c.failure_reason.clear();
      }
      spdlog::info("component {}/{}: every copy runs specification version {}{}", account, c.name,
                   c.spec_version,
                   d.phase == DeploymentPhase::kRollingBack ? " (rolled back)" : "");
      c.deployment.reset();
      return "";
    }
    if (step.start_bake) {
      d.baked_ms = now_ms;
      d.batch_open = false;
    }
    for (int k = 0; k < step.stop && !old.empty(); ++k) {  // The highest copy numbers first.
      pass.Stop(old.back());
      old.pop_back();
    }
    pass.wanted = step.place;
    int got = pass.Place(step.place);
    std::string note;
    if (step.new_batch && got == 0 && !old.empty()) {
      // Not one copy of the batch fits: stop one batch of old copies to make room.
      const int room = std::min(d.BatchSize(c.desired), static_cast<int>(old.size()));
      for (int k = 0; k < room; ++k) {
        pass.Stop(old.back());
        old.pop_back();
      }
      pass.reason.clear();
      got = pass.Place(step.place);
      note = fmt::format(
          "; no room for a new batch beside the old copies, so {} cop{} of the "
          "previous specification stopped first",
          room, room == 1 ? "y" : "ies");
      spdlog::info("component {}/{}: stopped {} old copies to make room for a batch", account,
                   c.name, room);
    }
    if (step.new_batch && got > 0) d.batch_open = true;
    return step.progress + note;
  }
  return c.deployment ? "Rolling back" : "";
}

}  // namespace carve::server::sagemaker
