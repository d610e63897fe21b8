// Rules and error messages shared by every Store implementation, so FakeStore and SqliteStore
// reject the same inputs with the same words.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "store/store.h"

namespace carve::store {

inline constexpr size_t kMaxKeyPartBytes = 1024;

// InvalidArgument unless kind and name are non-empty and every part is at most
// kMaxKeyPartBytes with no NUL byte.
Status ValidateKey(const Key& key);
// "Endpoint 'ep1' (account 123456789012)" / "Node 'n1' (fleet-global)".
std::string DescribeKey(const Key& key);
Error AlreadyExistsError(const Key& key, int64_t current_version);
Error NotFoundError(const Key& key);
Error VersionConflictError(const Key& key, int64_t expected_version, int64_t current_version);
// The rules every Store applies to one mutation, given the record its key holds at that point of
// the commit (nullptr: none): a Put of nullopt needs the key absent (AlreadyExists), a Put of
// N > 0 and a Remove of N need version N (NotFound when absent, FailedPrecondition otherwise),
// and a Remove of nullopt needs the key present. OK when the mutation may be applied.
Status CheckMutation(const Mutation& mutation, const Record* current);
// The key a mutation writes or removes.
const Key& MutationKey(const Mutation& mutation);

}  // namespace carve::store
