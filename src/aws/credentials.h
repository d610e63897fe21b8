// Credentials: access keys -> (secret, account id), kept in `<data-dir>/credentials`.
//
// The file uses the AWS shared-credentials format, so
// `AWS_SHARED_CREDENTIALS_FILE=<data-dir>/credentials aws sagemaker ...` works unchanged:
//
//   [default]
//   aws_access_key_id = AKIA...
//   aws_secret_access_key = ...
//   carve_account_id = 123456789012      <- carve's extra key; the aws CLI ignores it
//
// Each section is one account (several sections = several accounts; a key missing
// carve_account_id gets the account "000000000000"). Parse/Load errors are InvalidArgument
// naming the line. Files are written with mode 0600. A Credentials value is immutable and
// safe to share across threads.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::aws {

inline constexpr std::string_view kDefaultAccountId = "000000000000";

struct Credential {
  std::string profile;            // Section name, e.g. "default".
  std::string access_key_id;      // 20 chars, "AKIA" + 16 of [A-Z2-7].
  std::string secret_access_key;  // 40 chars of [A-Za-z0-9/+].
  std::string account_id;         // 12 digits.
};

class Credentials {
 public:
  Credentials() = default;
  explicit Credentials(std::vector<Credential> all) : all_(std::move(all)) {}

  // Parses shared-credentials text. Sections without aws_access_key_id are skipped.
  static Result<Credentials> Parse(std::string_view text);
  // Reads and parses `file`. NotFound if it does not exist.
  static Result<Credentials> Load(const std::filesystem::path& file);

  struct Loaded;
  // Loads `file`, or creates it (and its directory) holding a fresh random [default] key pair with
  // a random account id, mode 0600. `created` tells which happened.
  static Result<Loaded> LoadOrCreate(const std::filesystem::path& file);

  // nullptr if the key is unknown. Valid as long as this Credentials lives.
  const Credential* Find(std::string_view access_key_id) const;
  const std::vector<Credential>& all() const { return all_; }

 private:
  std::vector<Credential> all_;
};

struct Credentials::Loaded {
  Credentials credentials;
  bool created = false;
};

// A fresh random credential (OpenSSL RAND_bytes). An empty `account_id` gets 12 random digits.
Result<Credential> GenerateCredential(std::string profile, std::string account_id = "");

// Appends a new section `profile` with fresh keys to `file` (creating it, mode 0600) and returns
// it. AlreadyExists if the profile is taken; InvalidArgument if `account_id` is not 12 digits.
Result<Credential> AddAccount(const std::filesystem::path& file, std::string profile,
                              std::string account_id = "");

}  // namespace carve::aws
