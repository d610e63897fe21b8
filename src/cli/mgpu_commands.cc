// `carve mgpu check [--file F]`: reads mGPU parameter text (stdin when no file), prints the
// statements, the share each role resolves to, pass-through keys, warnings and the verdict.
// Exit 0 when valid, 1 when rejected (reason on stderr), 2 when the file cannot be read.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "core/mgpu_params.h"

namespace carve::cli {
namespace {

using core::MgpuRole;
using core::MgpuShare;
using Json = nlohmann::ordered_json;

constexpr MgpuRole kRoles[] = {MgpuRole::kCustomTask, MgpuRole::kRayWorker, MgpuRole::kRayHead};

std::string RoleKey(MgpuRole role) {
  switch (role) {
    case MgpuRole::kCustomTask:
      return "custom_task";
    case MgpuRole::kRayWorker:
      return "ray_worker";
    case MgpuRole::kRayHead:
      break;
  }
  return "ray_head";
}

Json ShareJson(const std::optional<MgpuShare>& share) {
  if (!share) {
    return nullptr;
  }
  Json j;
  j["core_percent"] = share->core_percent;
  j["memory_mib"] = share->memory_mib ? Json(*share->memory_mib) : Json(nullptr);
  j["whole_cards"] = share->whole_cards();
  j["cards"] = share->card_count();
  return j;
}

Json StatementsJson(const std::vector<core::MgpuParam>& params) {
  Json out = Json::array();
  for (const core::MgpuParam& p : params) {
    out.push_back({{"key", p.key}, {"value", p.value}, {"line", p.line}, {"column", p.column}});
  }
  return out;
}

int Check(const std::string& text, bool json) {
  auto parsed = core::ParseMgpuParams(text);
  Result<core::ResolvedMgpuParams> resolved =
      parsed.has_value() ? core::ResolveMgpuParams(*parsed)
                         : Result<core::ResolvedMgpuParams>(parsed.error());
  const bool valid = resolved.has_value();
  if (json) {
    Json out;
    out["valid"] = valid;
    out["statements"] = parsed.has_value() ? StatementsJson(parsed->statements) : Json::array();
    Json shares = Json::object();
    for (MgpuRole role : kRoles) {
      shares[RoleKey(role)] = valid ? ShareJson(resolved->ForRole(role)) : Json(nullptr);
    }
    out["shares"] = shares;
    out["passthrough"] = valid ? StatementsJson(resolved->passthrough) : Json::array();
    out["warnings"] = parsed.has_value() ? Json(parsed->warnings) : Json::array();
    out["reasons"] = valid ? Json::array() : Json::array({resolved.error().message});
    std::cout << out.dump(2) << "\n";
  } else {
    if (parsed.has_value()) {
      std::cout << "statements:\n";
      if (parsed->statements.empty()) {
        std::cout << "  (none)\n";
      }
      for (const core::MgpuParam& p : parsed->statements) {
        std::cout << fmt::format("  line {:<3} {} = {}\n", p.line, p.key, p.value);
      }
    }
    if (valid) {
      std::cout << "shares:\n";
      for (MgpuRole role : kRoles) {
        const auto& share = resolved->ForRole(role);
        std::cout << fmt::format(
            "  {:<12} {}\n", std::string(core::MgpuRoleName(role)) + ":",
            share ? share->ToString() : "not set (an mGPU queue gives one full card, core=100)");
      }
      if (!resolved->passthrough.empty()) {
        std::cout << "passed through to the engine:\n";
        for (const core::MgpuParam& p : resolved->passthrough) {
          std::cout << fmt::format("  {} = {}\n", p.key, p.value);
        }
      }
    }
    if (parsed.has_value() && !parsed->warnings.empty()) {
      std::cout << "warnings:\n";
      for (const std::string& w : parsed->warnings) {
        std::cout << "  " << w << "\n";
      }
    }
    std::cout << "verdict: " << (valid ? "valid" : "rejected") << "\n";
  }
  if (!valid) {
    std::cerr << "rejected: " << resolved.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterMgpuCommands(CLI::App& app, Context& ctx) {
  CLI::App* mgpu = app.add_subcommand("mgpu", "mGPU share parameters");
  mgpu->require_subcommand(1);
  CLI::App* check = mgpu->add_subcommand(
      "check", "Check mGPU parameter text (key=value; statements) read from --file or stdin");
  auto file = std::make_shared<std::string>();
  check->add_option("--file,-f", *file, "File with the parameter text (default: stdin)");
  check->callback([&ctx, file] {
    std::string text;
    if (file->empty()) {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::ifstream in(*file, std::ios::binary);
      if (!in) {
        std::cerr << "cannot read --file " << *file << ": no such file or not readable\n";
        ctx.exit_code = 2;
        return;
      }
      std::ostringstream buf;
      buf << in.rdbuf();
      text = buf.str();
    }
    ctx.exit_code = Check(text, ctx.json);
  });
}

}  // namespace carve::cli
