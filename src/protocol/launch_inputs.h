// The rules for what a tenant may put into a launch: the container image reference, the model
// data path and the environment. The server applies them when a model or job is submitted
// (a 400 naming the rule), the agent again just before it launches (docs/security.md, "Launch
// inputs"). Pure apart from ResolveModelData, which reads the file system.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::protocol {

// SageMaker's bound on Image (ContainerDefinition), checked before anything else.
inline constexpr size_t kMaxImageLength = 255;
// distribution/reference: RepositoryNameTotalLengthMax, and the longest tag.
inline constexpr size_t kMaxRepositoryNameLength = 255;
inline constexpr size_t kMaxTagLength = 128;

// The rule CheckImageReference applies, in words, for error messages.
inline constexpr std::string_view kImageRule =
    "an OCI image reference (distribution spec): [host[:port]/]name[:tag][@digest], name of "
    "lower-case path components [a-z0-9]+ joined by '.', '_', '__' or '-', at most 255 "
    "characters, never starting with '-'";

// OK when `ref` is an image reference by the distribution/reference grammar:
//   reference := name [":" tag] ["@" digest]
//   name      := [domain "/"] path-component ("/" path-component)*
//   domain    := host [":" port]          (host: dns labels joined by '.', or [ipv6])
//   path-component := [a-z0-9]+ (([._]|__|-+) [a-z0-9]+)*
//   tag       := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//   digest    := algorithm ":" hex        (algorithm [A-Za-z][A-Za-z0-9]* joined by [+._-],
//                                          hex [0-9a-fA-F]{32,}; sha256 needs 64 lower-case)
// and at most kMaxImageLength characters. InvalidArgument naming the first rule broken.
// Hand-written: the length is bounded before any matching, and nothing backtracks.
Status CheckImageReference(std::string_view ref);

// SageMaker's limits on a container's Environment (ContainerDefinition).
inline constexpr size_t kMaxEnvironmentEntries = 100;
inline constexpr size_t kMaxEnvironmentNameLength = 1024;
inline constexpr size_t kMaxEnvironmentValueLength = 1024;
inline constexpr size_t kMaxEnvironmentTotalBytes = 32 * 1024;  // names + values

// Variables the loader, the driver or carve set for a workload: refused in a tenant's
// Environment. Prefixes end in '_'.
inline constexpr std::string_view kReservedEnvironmentPrefixes[] = {"LD_", "NVIDIA_", "CUDA_MPS_",
                                                                    "CARVE_"};
inline constexpr std::string_view kReservedEnvironmentNames[] = {"CUDA_VISIBLE_DEVICES", "PATH",
                                                                 "SAGEMAKER_BIND_TO_PORT"};
// CARVE_ variables a runtime documents as its users' inputs (carve testmodel's options).
inline constexpr std::string_view kAllowedCarveVariables[] = {
    "CARVE_MODEL",
    "CARVE_PRECISION",
    "CARVE_TESTMODEL_SPEED",
    "CARVE_TESTMODEL_FAIL_INVOCATIONS",
    "CARVE_TESTMODEL_FAIL_AFTER_TOKENS",
    "CARVE_TESTMODEL_FAIL_PING",
    "CARVE_TESTMODEL_CONTROL",
};

// True when `name` is reserved (above) and not allowed.
bool ReservedEnvironmentName(std::string_view name);

// OK when `env` keeps SageMaker's limits (entries, name pattern [a-zA-Z_][a-zA-Z0-9_]* and
// lengths, 32 KiB in all), no value holds a NUL or line break (values travel one per line in
// an env file) and no name is reserved. InvalidArgument naming the variable (its first 64
// characters) and the rule. `field` prefixes the message ("Environment", "environment").
Status CheckEnvironment(const std::map<std::string, std::string>& env, std::string_view field);

// The rule ResolveModelData applies, in words.
inline constexpr std::string_view kModelRootRule =
    "a file:///path or /path ModelDataUrl must name a directory inside one of the operator's "
    "model roots (carve server --model-root) once symlinks and '..' are resolved, with no ':' "
    "in the path";

// True when `url` names model data on the nodes' file systems: file://... or a bare path.
bool IsLocalModelData(std::string_view url);

// The path `url` (file:///path or /path) names, with symlinks and ".." resolved, when it lies
// inside one of `roots` (themselves resolved the same way); InvalidArgument naming the URL,
// the resolved path, the roots and kModelRootRule otherwise (also for ':' in the path, a
// relative path, or no roots at all). `must_exist`: the agent's check at launch resolves with
// std::filesystem::canonical (the path must exist); the server's with weakly_canonical, since
// the data lives on the nodes.
Result<std::string> ResolveModelData(std::string_view url, std::span<const std::string> roots,
                                     bool must_exist);

// `value` cut to its first 64 characters for a message, with "..." when cut.
std::string Preview(std::string_view value);

}  // namespace carve::protocol
