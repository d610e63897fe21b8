#include "app/scrape_token.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace carve::app {
namespace fs = std::filesystem;

namespace {

constexpr size_t kMinTokenLength = 32;
constexpr size_t kMaxTokenLength = 4096;

Result<std::string> ReadToken(const fs::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return Unavailable("cannot read " + file.string());
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    return FailedPrecondition(file.string() + " has mode " + mode +
                              "; the scrape token must be private to its owner (chmod 600 " +
                              file.string() + ")");
  }
  std::ifstream in(file);
  if (!in) return Unavailable("cannot read " + file.string());
  std::string text(kMaxTokenLength + 2, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return ParseScrapeToken(file, text);
}

Status WriteFresh(const fs::path& file) {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return Internal("OpenSSL RAND_bytes failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : raw) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  token += "\n";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot create " + file.string());
  const bool written =
      ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size()) &&
      ::fsync(fd) == 0;
  ::close(fd);
  if (!written) return Unavailable("cannot write " + file.string());
  return OkStatus();
}

}  // namespace

Result<std::string> ParseScrapeToken(const fs::path& file, std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  if (text.size() < kMinTokenLength || text.size() > kMaxTokenLength) {
    return InvalidArgument(file.string() + ": the scrape token is " + std::to_string(text.size()) +
                           " characters; it must be " + std::to_string(kMinTokenLength) + " to " +
                           std::to_string(kMaxTokenLength));
  }
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("._~+/=-").find(c) != std::string_view::npos;
    if (!ok) {
      return InvalidArgument(file.string() +
                             ": the scrape token may hold only letters, digits and ._~+/=-");
    }
  }
  return std::string(text);
}

Result<std::unique_ptr<ScrapeToken>> ScrapeToken::OpenOrCreate(fs::path file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    CARVE_RETURN_IF_ERROR(WriteFresh(file));
    spdlog::info("wrote a new scrape token to {} (Prometheus: authorization.credentials_file)",
                 file.string());
  }
  CARVE_RETURN_IF_ERROR(ReadToken(file));  // Refuse a bad file at start, not at the first scrape.
  std::unique_ptr<ScrapeToken> t(new ScrapeToken(std::move(file)));
  std::lock_guard lock(t->mu_);
  t->RefreshLocked();
  return t;
}

void ScrapeToken::RefreshLocked() {
  std::error_code ec;
  const auto mtime = fs::last_write_time(file_, ec);
  const auto size = ec ? 0 : fs::file_size(file_, ec);
  if (!ec && !token_.empty() && mtime == mtime_ && size == size_) return;
  auto read = ReadToken(file_);
  if (!read.has_value()) {
    token_.clear();
    if (read.error().message != last_problem_) {
      last_problem_ = read.error().message;
      spdlog::error("scrape token refused until fixed: {}", last_problem_);
    }
    return;
  }
  token_ = std::move(read).value();
  mtime_ = mtime;
  size_ = size;
  last_problem_.clear();
}

bool ScrapeToken::Matches(std::string_view presented) {
  std::lock_guard lock(mu_);
  RefreshLocked();
  if (token_.empty() || presented.size() != token_.size()) return false;
  return CRYPTO_memcmp(presented.data(), token_.data(), token_.size()) == 0;
}

}  // namespace carve::app
