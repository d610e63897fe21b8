// The scrape token: what a Prometheus scraper presents on GET /metrics (docs/security.md,
// "Scrapers"), kept in <data-dir>/scrape-token, mode 0600. Prometheus reads the same file with
// `authorization: {credentials_file: ...}` and sends `Authorization: Bearer <token>`.
//
// The server writes a fresh random token on its first start; an operator rotates it by writing
// another (at least 32 characters) into the file, and the server takes the new one at the next
// scrape: the file is read again whenever its modification time or size changes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::app {

class ScrapeToken {
 public:
  // Creates the file with a random token (64 hex digits) when it does not exist. The file's own
  // errors (unreadable, too short a token, readable by others) are refused here, naming it.
  static Result<std::unique_ptr<ScrapeToken>> OpenOrCreate(std::filesystem::path file);

  // Whether `presented` is the current token (constant-time). A file that became unreadable or
  // invalid since refuses every token and logs why once.
  bool Matches(std::string_view presented);

  const std::filesystem::path& file() const { return file_; }

 private:
  explicit ScrapeToken(std::filesystem::path file) : file_(std::move(file)) {}
  // Reads the file again when it changed; holds mu_.
  void RefreshLocked();

  const std::filesystem::path file_;
  std::mutex mu_;
  std::string token_;  // "" while the file is unusable.
  std::filesystem::file_time_type mtime_{};
  uintmax_t size_ = 0;
  std::string last_problem_;
};

// The token file's content, checked: at least 32 characters of [A-Za-z0-9._~+/=-] after
// trailing whitespace is dropped. InvalidArgument naming the file otherwise.
Result<std::string> ParseScrapeToken(const std::filesystem::path& file, std::string_view text);

}  // namespace carve::app
