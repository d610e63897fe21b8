// Test helper: signs SigV4Requests with sigv4::SignRequest and a fixed identity, so tests can
// produce valid requests and then break one thing at a time.
#pragma once

#include <string>

#include "aws/sigv4.h"

namespace carve::aws {

struct TestSigner {
  std::string access_key = "AKIDEXAMPLE";
  std::string secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  std::string region = "us-east-1";
  std::string service = "sagemaker";

  void Sign(SigV4Request& r, const std::string& amz_date) const {
    sigv4::SignRequest(r, access_key, secret, region, service, amz_date);
  }
};

}  // namespace carve::aws
