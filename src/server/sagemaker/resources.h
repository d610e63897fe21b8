// Shared vocabulary of the SageMaker service: store kinds, ARNs, the modeled string rules for
// names and tags, and timestamp encoding.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/sagemaker/validation.h"

namespace carve::server::sagemaker {

// Store kinds (store::Key::kind) and the ARN resource type of each.
inline constexpr std::string_view kModel = "Model";
inline constexpr std::string_view kEndpointConfig = "EndpointConfig";
inline constexpr std::string_view kEndpoint = "Endpoint";
inline constexpr std::string_view kInferenceComponent = "InferenceComponent";

// The member of a stored endpoint config that keeps where CreateEndpointConfig placed each
// variant's partitions (never part of a response).
inline constexpr std::string_view kCarveLayouts = "CarveLayouts";

// "endpoint-config" for kEndpointConfig, etc.; "" for an unknown kind.
std::string_view ArnResourceType(std::string_view kind);
// The service's human name in messages: "endpoint configuration", "inference component".
std::string_view HumanName(std::string_view kind);

// arn:aws:sagemaker:<region>:<account>:<type>/<name>. Names keep their case.
std::string MakeArn(std::string_view region, std::string_view account, std::string_view kind,
                    std::string_view name);

struct ParsedArn {
  std::string account;
  std::string kind;  // One of the kinds above.
  std::string name;
};
// nullopt when the text is not a SageMaker ARN of a kind this service keeps.
std::optional<ParsedArn> ParseArn(std::string_view arn);

// Modeled rules (botocore sagemaker 2017-07-24).
inline constexpr StringRule kEndpointNameRule =
    PatternRule(0, 63, "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
                &MatchesEndpointName);  // Also EndpointConfigName, VariantName.
inline constexpr StringRule kModelNameRule =
    PatternRule(0, 63, "[a-zA-Z0-9]([\\-a-zA-Z0-9]*[a-zA-Z0-9])?",
                &MatchesModelName);  // Also InferenceComponentName.
inline constexpr StringRule kNameContainsRule =
    PatternRule(0, 63, "[a-zA-Z0-9-]+", &MatchesNameContains);
inline constexpr StringRule kRoleArnRule =
    PatternRule(20, 2048, "arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+",
                &MatchesRoleArn);
inline constexpr StringRule kResourceArnRule = PatternRule(
    0, 256, "arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:.+", &MatchesResourceArn);
inline constexpr StringRule kPartitionTypeRule =
    PatternRule(0, 32, "mig-[0-9]+g\\.[0-9]+gb([+-][a-z0-9.]+)*", &MatchesPartitionType);
extern const StringRule kTagKeyRule;    // 1..128, [\p{L}\p{Z}\p{N}_.:/=+\-@]*
extern const StringRule kTagValueRule;  // 0..256, same characters.

// Validates a TagList member (max 50 of {Key R, Value R}); returns it normalised as
// [{"Key":..,"Value":..}] or nullopt after recording violations.
std::optional<nlohmann::json> ValidateTags(Validator& v, const nlohmann::json& parent,
                                           std::string_view member, std::string_view path);

// Epoch seconds with milliseconds, as the real service sends them.
nlohmann::json EpochSeconds(int64_t unix_millis);

}  // namespace carve::server::sagemaker
