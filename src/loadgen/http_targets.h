// The two HTTP targets of `carve bench`:
//   - any OpenAI-compatible server (vLLM, SGLang, carve testmodel): POST /v1/completions or
//     /v1/chat/completions with stream: true, read as server-sent events;
//   - carve's SageMaker runtime: POST /endpoints/{name}/invocations-response-stream, SigV4-signed
//     like the aws CLI (service "sagemaker"), the inference component in
//     X-Amzn-SageMaker-Inference-Component, read as an AWS event stream of PayloadPart frames.
// Each session owns one keep-alive HTTP connection. Only http:// URLs are supported.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "loadgen/target.h"
#include "protocol/signed_client.h"

namespace carve::loadgen {

enum class OpenAiApi { kCompletions, kChat };

struct OpenAiTargetOptions {
  std::string url;         // "http://127.0.0.1:8000"; a trailing "/v1" is accepted
  std::string model;       // sent as "model" when not empty
  OpenAiApi api = OpenAiApi::kCompletions;
  bool ignore_eos = true;  // vLLM's extension: generate exactly max_tokens
};

struct RuntimeTargetOptions {
  std::string endpoint_url;  // "http://127.0.0.1:8080"
  std::string endpoint;      // EndpointName
  std::string component;     // InferenceComponentName; empty: header not sent
  protocol::ClientCredentials credentials;  // empty access key: unsigned
};

// The request bodies, exposed for tests.
std::string OpenAiBody(const OpenAiTargetOptions& options, const BenchRequest& request);
std::string RuntimeBody(const BenchRequest& request);

struct ParsedUrl {
  std::string origin;  // "http://host:port"
  std::string host_header;  // "host:port"
  std::string path;    // "" or "/v1" (no trailing slash)
};
// InvalidArgument naming the URL for anything but http://host[:port][/path].
Result<ParsedUrl> ParseHttpUrl(std::string_view url);

Result<std::unique_ptr<Target>> MakeOpenAiTarget(OpenAiTargetOptions options);
// InvalidArgument for a bad URL or an endpoint / component name SageMaker would reject.
Result<std::unique_ptr<Target>> MakeRuntimeTarget(RuntimeTargetOptions options);

}  // namespace carve::loadgen
