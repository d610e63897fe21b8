#include "store/record_cache.h"

#include <algorithm>

namespace carve::store {

void RecordCache::Reset(std::vector<Record> records, int64_t revision) {
  std::map<Slot, Record> fresh;
  for (Record& r : records) {
    Slot slot = SlotOf(r.key);
    fresh.insert_or_assign(std::move(slot), std::move(r));
  }
  std::lock_guard lock(mu_);
  records_ = std::move(fresh);
  revision_ = revision;
  advanced_.notify_all();
}

void RecordCache::Apply(const std::vector<CacheEvent>& events, int64_t revision) {
  std::lock_guard lock(mu_);
  for (const CacheEvent& e : events) {
    if (e.record) {
      records_.insert_or_assign(SlotOf(e.key), *e.record);
    } else {
      records_.erase(SlotOf(e.key));
    }
  }
  Raise(revision);
}

void RecordCache::Advance(int64_t revision) {
  std::lock_guard lock(mu_);
  Raise(revision);
}

void RecordCache::Raise(int64_t revision) {
  if (revision <= revision_) return;
  revision_ = revision;
  advanced_.notify_all();
}

bool RecordCache::AwaitRevision(int64_t revision, std::chrono::milliseconds wait) const {
  std::unique_lock lock(mu_);
  return advanced_.wait_for(lock, wait, [&] { return revision_ >= revision; });
}

int64_t RecordCache::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

size_t RecordCache::size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

std::optional<Record> RecordCache::Get(const Key& key) const {
  std::lock_guard lock(mu_);
  auto it = records_.find(SlotOf(key));
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

std::vector<Record> RecordCache::List(const std::string& account, const std::string& kind,
                                      const ListOptions& options) const {
  std::string from = options.name_prefix;
  if (!options.after_name.empty()) {
    from = std::max(from, options.after_name + std::string(1, '\0'));
  }
  std::vector<Record> out;
  std::lock_guard lock(mu_);
  for (auto it = records_.lower_bound({kind, account, from}); it != records_.end(); ++it) {
    const auto& [k, a, name] = it->first;
    if (k != kind || a != account || !name.starts_with(options.name_prefix)) break;
    out.push_back(it->second);
    if (options.limit > 0 && static_cast<int>(out.size()) >= options.limit) break;
  }
  return out;
}

std::vector<Record> RecordCache::ListAllAccounts(const std::string& kind) const {
  std::vector<Record> out;
  std::lock_guard lock(mu_);
  for (auto it = records_.lower_bound({kind, "", ""});
       it != records_.end() && std::get<0>(it->first) == kind; ++it) {
    out.push_back(it->second);
  }
  return out;
}

}  // namespace carve::store
