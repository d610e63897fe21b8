// Credentials: access keys -> (secret, account id), kept in `<data-dir>/credentials`.
//
// The file uses the AWS shared-credentials format, so
// `AWS_SHARED_CREDENTIALS_FILE=<data-dir>/credentials aws sagemaker ...` works unchanged:
//
//   [default]
//   aws_access_key_id = AKIA...
//   aws_secret_access_key = ...
//   carve_account_id = 123456789012      <- carve's extra keys; the aws CLI ignores them
//   carve_role = operator                 <- operator or tenant (the default)
//
// Each section is one account (several sections = several accounts; a key missing
// carve_account_id gets the account "000000000000"). A section is a tenant of its account, and
// with `carve_role = operator` also an operator of the fleet (docs/security.md). A file in which
// no section names a role at all predates roles: its [default] section, the one carve server
// generated, is the operator, so an upgraded server keeps its agents. Parse/Load errors are
// InvalidArgument naming the line. Files are written with mode 0600. A Credentials value is safe
// to share across threads; one that watches its file (Watch) changes as the file does.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
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
  bool operator_role = false;     // carve_role = operator.
};

class Credentials {
 public:
  Credentials() = default;
  explicit Credentials(std::vector<Credential> all)
      : all_(std::make_shared<const std::vector<Credential>>(std::move(all))) {}
  // A copy holds the same keys, and does not watch the file.
  Credentials(const Credentials& other) : all_(other.Snapshot()) {}
  Credentials& operator=(const Credentials& other);

  // Parses shared-credentials text. Sections without aws_access_key_id are skipped.
  static Result<Credentials> Parse(std::string_view text);
  // Reads and parses `file`. NotFound if it does not exist.
  static Result<Credentials> Load(const std::filesystem::path& file);

  struct Loaded;
  // Loads `file`, or creates it (and its directory) holding a fresh random [default] key pair with
  // a random account id, mode 0600. `created` tells which happened.
  static Result<Loaded> LoadOrCreate(const std::filesystem::path& file);

  // From now on, reads `file` again when its modification time or size changed (looked at, at
  // most once a second by default, by Find and all()), so a section added or removed, or a role
  // changed, takes effect without a restart. A file that no longer parses keeps the last good keys.
  // `reloaded` (may be null) is told each outcome: OK with the new count of keys, or the error.
  // `every` is how often the file is looked at (tests look at every call).
  void Watch(std::filesystem::path file,
             std::function<void(const Status& outcome, size_t keys)> reloaded = nullptr,
             std::chrono::milliseconds every = std::chrono::seconds(1));

  // The key's credential, or nullopt if the key is unknown.
  std::optional<Credential> Find(std::string_view access_key_id) const;
  // Every key, as of now.
  std::vector<Credential> all() const { return *Snapshot(); }

 private:
  std::shared_ptr<const std::vector<Credential>> Snapshot() const;
  void MaybeReload() const;

  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<Credential>> all_ =
      std::make_shared<const std::vector<Credential>>();
  // Set by Watch.
  struct Watched;
  std::shared_ptr<Watched> watched_;
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
