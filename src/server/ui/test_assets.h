// A small asset table for the server_ui tests (test_assets.cc).
#pragma once

#include <span>

#include "server/ui/embedded_asset.h"

namespace carve::server::ui {

std::span<const EmbeddedAsset> TestAssets();

}  // namespace carve::server::ui
