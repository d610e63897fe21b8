#include "aws/credentials.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <sstream>

namespace carve::aws {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

bool IsAccountId(std::string_view s) {
  return s.size() == 12 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<std::string> RandomChars(std::string_view alphabet, size_t n) {
  std::string out;
  while (out.size() < n) {
    unsigned char buf[64];
    if (RAND_bytes(buf, sizeof buf) != 1) return Internal("OpenSSL RAND_bytes failed");
    // Rejection sampling keeps every character equally likely.
    const unsigned limit = 256 - 256 % alphabet.size();
    for (unsigned char b : buf) {
      if (b < limit && out.size() < n) out.push_back(alphabet[b % alphabet.size()]);
    }
  }
  return out;
}

std::string Section(const Credential& c) {
  return "[" + c.profile + "]\naws_access_key_id = " + c.access_key_id +
         "\naws_secret_access_key = " + c.secret_access_key +
         "\ncarve_account_id = " + c.account_id + "\n" +
         (c.operator_role ? "carve_role = operator\n" : "");
}

// Appends `text` to `file`, creating it with mode 0600 (an existing file is forced to 0600).
Status AppendPrivate(const std::filesystem::path& file, const std::string& text) {
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    return Unavailable("cannot create directory " + file.parent_path().string() + ": " +
                       ec.message());
  }
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot open " + file.string() + " for writing");
  ::fchmod(fd, 0600);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) {
      ::close(fd);
      return Unavailable("cannot write " + file.string());
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return Unavailable("cannot fsync " + file.string());
  return OkStatus();
}

}  // namespace

Result<Credentials> Credentials::Parse(std::string_view text) {
  std::vector<Credential> all;
  std::optional<Credential> cur;
  auto finish = [&]() -> Status {
    if (!cur) return OkStatus();
    if (!cur->access_key_id.empty()) {
      if (cur->secret_access_key.empty()) {
        return InvalidArgument("credentials section [" + cur->profile +
                               "] has aws_access_key_id but no aws_secret_access_key");
      }
      if (cur->account_id.empty()) cur->account_id = std::string(kDefaultAccountId);
      for (const Credential& c : all) {
        if (c.access_key_id == cur->access_key_id) {
          return InvalidArgument("access key " + c.access_key_id + " appears in sections [" +
                                 c.profile + "] and [" + cur->profile + "]");
        }
      }
      all.push_back(std::move(*cur));
    }
    cur.reset();
    return OkStatus();
  };
  bool any_role = false;
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = Trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return InvalidArgument("credentials line " + std::to_string(line_no) +
                               ": section header '" + std::string(line) + "' lacks ']'");
      }
      CARVE_RETURN_IF_ERROR(finish());
      cur = Credential{std::string(Trim(line.substr(1, line.size() - 2))), "", "", ""};
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || !cur) {
      return InvalidArgument("credentials line " + std::to_string(line_no) + ": expected " +
                             (cur ? "'key = value'" : "a [section] first") + ", got '" +
                             std::string(line) + "'");
    }
    std::string key(Trim(line.substr(0, eq)));
    std::string value(Trim(line.substr(eq + 1)));
    if (key == "aws_access_key_id") {
      cur->access_key_id = value;
    } else if (key == "aws_secret_access_key") {
      cur->secret_access_key = value;
    } else if (key == "carve_account_id") {
      if (!IsAccountId(value)) {
        return InvalidArgument("credentials line " + std::to_string(line_no) +
                               ": carve_account_id '" + value + "' is not 12 digits");
      }
      cur->account_id = value;
    } else if (key == "carve_role") {
      if (value != "operator" && value != "tenant") {
        return InvalidArgument("credentials line " + std::to_string(line_no) + ": carve_role '" +
                               value + "' is not operator or tenant");
      }
      cur->operator_role = value == "operator";
      any_role = true;
    }
  }
  CARVE_RETURN_IF_ERROR(finish());
  if (!any_role) {
    for (Credential& c : all) c.operator_role = c.profile == "default";
  }
  return Credentials(std::move(all));
}

Result<Credentials> Credentials::Load(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return NotFound("credentials file " + file.string() + " does not exist");
  }
  std::ifstream in(file);
  if (!in) return Unavailable("cannot read credentials file " + file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = Parse(ss.str());
  if (!parsed.has_value()) {
    Error e = parsed.error();
    e.message = file.string() + ": " + e.message;
    return e;
  }
  return parsed;
}

Result<Credentials::Loaded> Credentials::LoadOrCreate(const std::filesystem::path& file) {
  auto loaded = Load(file);
  if (loaded.has_value()) return Loaded{std::move(loaded).value(), false};
  if (loaded.error().code != ErrorCode::kNotFound) return loaded.error();
  CARVE_ASSIGN_OR_RETURN(Credential fresh, GenerateCredential("default"));
  fresh.operator_role = true;  // The first key is the operator's (docs/security.md).
  CARVE_RETURN_IF_ERROR(AppendPrivate(file, Section(fresh)));
  return Loaded{Credentials({fresh}), true};
}

struct Credentials::Watched {
  std::filesystem::path file;
  std::function<void(const Status&, size_t)> reloaded;
  std::chrono::milliseconds every;
  std::mutex mu;  // Serializes reloads; never held with Credentials::mu_ waited on.
  std::chrono::steady_clock::time_point next_look{};
  std::filesystem::file_time_type mtime{};
  uintmax_t size = 0;
};

Credentials& Credentials::operator=(const Credentials& other) {
  if (this != &other) {
    auto snapshot = other.Snapshot();
    std::lock_guard lock(mu_);
    all_ = std::move(snapshot);
  }
  return *this;
}

void Credentials::Watch(std::filesystem::path file,
                        std::function<void(const Status&, size_t)> reloaded,
                        std::chrono::milliseconds every) {
  auto w = std::make_shared<Watched>();
  std::error_code ec;
  w->mtime = std::filesystem::last_write_time(file, ec);
  w->size = ec ? 0 : std::filesystem::file_size(file, ec);
  w->file = std::move(file);
  w->reloaded = std::move(reloaded);
  w->every = every;
  w->next_look = std::chrono::steady_clock::now() + every;
  std::lock_guard lock(mu_);
  watched_ = std::move(w);
}

void Credentials::MaybeReload() const {
  std::shared_ptr<Watched> w;
  {
    std::lock_guard lock(mu_);
    w = watched_;
  }
  if (!w) return;
  std::unique_lock reload(w->mu, std::try_to_lock);
  if (!reload.owns_lock()) return;  // Another caller is looking; use the keys as they are.
  const auto now = std::chrono::steady_clock::now();
  if (now < w->next_look) return;
  w->next_look = now + w->every;
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(w->file, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(w->file, ec);
  if (!ec && mtime == w->mtime && size == w->size) return;
  w->mtime = mtime;
  w->size = size;
  auto loaded = Load(w->file);
  if (!loaded.has_value()) {
    if (w->reloaded) w->reloaded(loaded.error(), 0);
    return;
  }
  auto fresh = loaded->Snapshot();
  const size_t keys = fresh->size();
  {
    std::lock_guard lock(mu_);
    all_ = std::move(fresh);
  }
  if (w->reloaded) w->reloaded(OkStatus(), keys);
}

std::shared_ptr<const std::vector<Credential>> Credentials::Snapshot() const {
  MaybeReload();
  std::lock_guard lock(mu_);
  return all_;
}

std::optional<Credential> Credentials::Find(std::string_view access_key_id) const {
  const auto all = Snapshot();
  for (const Credential& c : *all) {
    if (c.access_key_id == access_key_id) return c;
  }
  return std::nullopt;
}

Result<Credential> GenerateCredential(std::string profile, std::string account_id) {
  if (account_id.empty()) {
    CARVE_ASSIGN_OR_RETURN(account_id, RandomChars("0123456789", 12));
  } else if (!IsAccountId(account_id)) {
    return InvalidArgument("account id '" + account_id + "' is not 12 digits");
  }
  // Shapes follow AWS: AKIA + 16 base32 chars, and a 40-char secret.
  CARVE_ASSIGN_OR_RETURN(std::string key_tail, RandomChars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
  CARVE_ASSIGN_OR_RETURN(
      std::string secret,
      RandomChars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 40));
  return Credential{std::move(profile), "AKIA" + key_tail, std::move(secret),
                    std::move(account_id)};
}

Result<Credential> AddAccount(const std::filesystem::path& file, std::string profile,
                              std::string account_id) {
  auto existing = Credentials::Load(file);
  if (!existing.has_value() && existing.error().code != ErrorCode::kNotFound) {
    return existing.error();
  }
  if (existing.has_value()) {
    for (const Credential& c : existing->all()) {
      if (c.profile == profile) {
        return AlreadyExists("credentials profile [" + profile + "] already exists in " +
                             file.string());
      }
    }
  }
  CARVE_ASSIGN_OR_RETURN(Credential fresh,
                         GenerateCredential(std::move(profile), std::move(account_id)));
  CARVE_RETURN_IF_ERROR(AppendPrivate(file, "\n" + Section(fresh)));
  return fresh;
}

}  // namespace carve::aws
