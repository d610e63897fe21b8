#include "catalog/price_overrides.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>

namespace carve::catalog {
namespace {

// yaml-cpp reports errors by throwing; keep the exception inside this function.
Result<YAML::Node> ParseYaml(std::string_view text) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("price overrides: not valid YAML: {}", e.what()));
  }
}

Result<double> ParsePrice(const std::string& key, const YAML::Node& value) {
  double price = 0;
  if (!value.IsScalar() || !YAML::convert<double>::decode(value, price)) {
    return InvalidArgument(
        fmt::format("prices.{}: expected a price in USD per hour (a number >= 0)", key));
  }
  if (!std::isfinite(price) || price < 0) {
    return InvalidArgument(fmt::format(
        "prices.{}={}: a price must be a finite number of USD per hour >= 0", key, value.Scalar()));
  }
  return price;
}

}  // namespace

Result<PriceOverrides> LoadPriceOverrides(std::string_view yaml_text) {
  CARVE_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(yaml_text));
  PriceOverrides out;
  if (root.IsNull()) {
    return out;
  }
  if (!root.IsMap()) {
    return InvalidArgument("price overrides: the document must be a map with a 'prices:' key");
  }
  YAML::Node prices = root["prices"];
  if (!prices || prices.IsNull()) {
    return out;
  }
  if (!prices.IsMap()) {
    return InvalidArgument(
        "prices: expected a map from instance type to USD per hour, e.g. "
        "'prices: {ml.p4d.24xlarge: 37.69}'");
  }
  for (const auto& entry : prices) {
    if (!entry.first.IsScalar()) {
      return InvalidArgument("prices: every key must be an instance type name");
    }
    const std::string& key = entry.first.Scalar();
    auto type = FindInstanceType(key);
    if (!type) {
      return InvalidArgument(fmt::format("prices.{}: {}", key, type.error().message));
    }
    CARVE_ASSIGN_OR_RETURN(double price, ParsePrice(key, entry.second));
    auto [it, inserted] = out.emplace(std::string((*type)->id), price);
    if (!inserted) {
      return InvalidArgument(fmt::format(
          "prices.{}: {} is priced twice; give each instance type once", key, it->first));
    }
  }
  return out;
}

}  // namespace carve::catalog
