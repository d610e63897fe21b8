#include "common/result.h"

namespace carve {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kInternal:
      return "Internal";
    case ErrorCode::kUnimplemented:
      return "Unimplemented";
  }
  return "Unknown";
}

}  // namespace carve
