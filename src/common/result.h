// Result<T> and Status: the error model used across carve (shaped like std::expected).
//
// A fallible function returns Result<T>; callers test has_value() and read value() or error().
// Codes are deliberately few; see docs/design.md "Errors" for when to use which. Domain outcomes
// ("does not fit") are values, not errors.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace carve {

enum class ErrorCode {
  kInvalidArgument,     // The caller's input breaks a rule; retrying the same call fails again.
  kNotFound,            // A named thing does not exist.
  kAlreadyExists,       // A thing with that name exists already.
  kFailedPrecondition,  // The system is not in a state that allows the call (busy, wrong state).
  kResourceExhausted,   // Not enough capacity or quota.
  kUnavailable,         // Transient: retry the same call later.
  kInternal,            // A broken invariant or an unexpected environment failure.
  kUnimplemented,       // Not supported here.
};

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code;
  std::string message;

  friend bool operator==(const Error&, const Error&) = default;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const& {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(v_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool has_value() const { return ok_; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

using Status = Result<void>;

inline Status OkStatus() { return {}; }

inline Error InvalidArgument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Error AlreadyExists(std::string m) { return {ErrorCode::kAlreadyExists, std::move(m)}; }
inline Error FailedPrecondition(std::string m) {
  return {ErrorCode::kFailedPrecondition, std::move(m)};
}
inline Error ResourceExhausted(std::string m) {
  return {ErrorCode::kResourceExhausted, std::move(m)};
}
inline Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
inline Error Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Error Unimplemented(std::string m) { return {ErrorCode::kUnimplemented, std::move(m)}; }

}  // namespace carve

// NOLINTBEGIN(bugprone-macro-parentheses): lhs is a declaration and cannot be parenthesised.
#define CARVE_INTERNAL_CONCAT2(a, b) a##b
#define CARVE_INTERNAL_CONCAT(a, b) CARVE_INTERNAL_CONCAT2(a, b)

// Returns the error of a failed Result/Status from the enclosing function.
#define CARVE_RETURN_IF_ERROR(expr)                                  \
  do {                                                               \
    auto carve_internal_status = (expr);                             \
    if (!carve_internal_status.has_value()) {                        \
      return std::move(carve_internal_status).error();               \
    }                                                                \
  } while (0)

// `CARVE_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a successful Result or returns its
// error. Expands to several statements: do not use as the body of an unbraced if.
#define CARVE_ASSIGN_OR_RETURN(lhs, expr) \
  CARVE_INTERNAL_ASSIGN_OR_RETURN(CARVE_INTERNAL_CONCAT(carve_internal_result_, __LINE__), lhs, expr)
#define CARVE_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.has_value()) return std::move(tmp).error();  \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
