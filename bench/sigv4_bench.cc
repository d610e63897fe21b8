// SigV4 verification cost per request: the server verifies every SageMaker call and every
// runtime invocation, so this is on the router's hot path (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <ctime>

#include "aws/sigv4.h"

namespace {

using carve::aws::Credential;
using carve::aws::Credentials;
using carve::aws::SigV4Request;
using carve::aws::SigV4Verifier;

const Credential kCred{"default", "AKIABENCH00000000000", "benchsecret0000000000000000000000000000",
                       "123456789012"};

// An InvokeEndpoint request as botocore signs it.
SigV4Request Signed(const std::string& body) {
  SigV4Request r{"POST",
                 "/endpoints/bench/invocations",
                 "",
                 {{"Host", "127.0.0.1:8080"},
                  {"Content-Type", "application/json"},
                  {"X-Amzn-SageMaker-Inference-Component", "bench"}},
                 body};
  carve::aws::sigv4::SignRequest(r, kCred.access_key_id, kCred.secret_access_key, "us-east-1",
                                 "sagemaker", carve::aws::sigv4::FormatAmzDate(std::time(nullptr)));
  return r;
}

void BM_VerifyInvocation(benchmark::State& state) {
  Credentials creds({kCred});
  SigV4Verifier verifier(creds, carve::SystemClock::Get(), "sagemaker", "us-east-1");
  const SigV4Request request = Signed(std::string(static_cast<size_t>(state.range(0)), 'x'));
  for (auto _ : state) {
    auto outcome = verifier.Verify(request);
    if (!std::holds_alternative<carve::aws::VerifiedCaller>(outcome)) {
      state.SkipWithError("signature did not verify");
      break;
    }
    benchmark::DoNotOptimize(outcome);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_VerifyInvocation)->Arg(48)->Arg(4096)->Arg(1 << 20);

void BM_HmacSha256(benchmark::State& state) {
  const std::string key(32, 'k');
  const std::string data(200, 'd');
  for (auto _ : state) benchmark::DoNotOptimize(carve::aws::sigv4::HmacSha256(key, data));
}
BENCHMARK(BM_HmacSha256);

void BM_SigningKey(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(carve::aws::sigv4::SigningKey(kCred.secret_access_key, "20261130",
                                                           "us-east-1", "sagemaker"));
  }
}
BENCHMARK(BM_SigningKey);

}  // namespace

BENCHMARK_MAIN();
