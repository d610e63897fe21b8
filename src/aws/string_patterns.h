// Hand-written matchers for the regular expressions in SageMaker's model (botocore sagemaker
// 2017-07-24). Each is a single pass over the value with no recursion and no regex engine:
// std::regex recurses once per character and overflowed the stack on a 50,000-character
// name (issue 35). Each function says the pattern it implements; all match the whole value.
// string_patterns_test.cc checks each against std::regex on every short string of a small
// alphabet.
#pragma once

#include <string_view>

namespace carve::aws {

// [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}  (EndpointName, EndpointConfigName, VariantName, hostnames)
bool MatchesEndpointName(std::string_view s);
// [a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?  (ModelName, InferenceComponentName)
bool MatchesModelName(std::string_view s);
// [a-zA-Z0-9-]+  (NameContains)
bool MatchesNameContains(std::string_view s);
// arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+  (RoleArn)
bool MatchesRoleArn(std::string_view s);
// arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:.+  (ResourceArn)
bool MatchesResourceArn(std::string_view s);
// mig-[0-9]+g\.[0-9]+gb([+-][a-z0-9.]+)*  (carve's partition types)
bool MatchesPartitionType(std::string_view s);
// [\S]+  (Image: no ASCII whitespace)
bool MatchesNoSpace(std::string_view s);
// (https|s3)://([^/]+)/?(.*)|file:///.*|/.*  (ModelDataUrl; carve adds model data on the nodes)
bool MatchesModelDataUrl(std::string_view s);

}  // namespace carve::aws
