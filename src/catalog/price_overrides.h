// Loading instance-type price overrides from a config file's `prices:` section.
#pragma once

#include <string_view>

#include "catalog/catalog.h"
#include "common/result.h"

namespace carve::catalog {

// Parses YAML text whose top level may hold a `prices:` map from instance type to USD per hour:
//
//   prices:
//     ml.p4d.24xlarge: 37.69
//     p5.48xlarge: 98.32      # the "ml." prefix may be left out
//
// Keys are resolved against the catalog and stored under the catalog's id, so PriceUsdPerHour
// finds them. A document without `prices:` (or an empty one) yields no overrides; other top-level
// keys are ignored, so the section can live in a larger config file.
// InvalidArgument (naming the key/value and the rule) for malformed YAML, a `prices` that is not
// a map, an unknown instance type, or a price that is not a finite number >= 0.
Result<PriceOverrides> LoadPriceOverrides(std::string_view yaml_text);

}  // namespace carve::catalog
