// ScoreBuckets: nodes grouped by a small integer score, for O(1) best-fit and worst-fit choice.
//
// The placement engine keeps one per request shape; a node's score is how much of that shape it
// has free (free partitions, free whole GPUs, the largest free core on an mGPU card). Nodes with
// score 0 are not listed. Each bucket is an intrusive doubly linked list and a 128-bit mask marks
// the non-empty buckets, so finding the lowest (BINPACK) or highest (SPREAD) score >= n costs a
// couple of bit scans, and updating a score costs an unlink and a link, without allocation.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace carve::core {

class ScoreBuckets {
 public:
  static constexpr int kMaxScore = 127;  // Higher scores are clamped.
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit ScoreBuckets(uint32_t node_count = 0)
      : score_(node_count, 0), next_(node_count, kNone), prev_(node_count, kNone) {
    head_.fill(kNone);
  }

  int score(uint32_t node) const { return score_[node]; }

  void Set(uint32_t node, int score) {
    score = score < 0 ? 0 : (score > kMaxScore ? kMaxScore : score);
    if (score == score_[node]) {
      return;
    }
    if (score_[node] != 0) {
      Unlink(node);
    }
    score_[node] = static_cast<uint8_t>(score);
    if (score != 0) {
      Link(node);
    }
  }

  // Calls visit(node) for each node with score >= min_score, lowest score first (ascending) or
  // highest first, until visit returns true. visit must not change any score. Returns the node
  // visit accepted, or kNone.
  template <typename Visit>
  uint32_t Find(int min_score, bool ascending, Visit&& visit) const {
    if (min_score < 1) {
      min_score = 1;
    }
    if (min_score > kMaxScore) {
      return kNone;
    }
    int b = ascending ? NextBucketUp(min_score) : NextBucketDown(kMaxScore);
    while (b >= min_score && b <= kMaxScore) {
      for (uint32_t n = head_[b]; n != kNone; n = next_[n]) {
        if (visit(n)) {
          return n;
        }
      }
      b = ascending ? NextBucketUp(b + 1) : NextBucketDown(b - 1);
    }
    return kNone;
  }

 private:
  // Lowest non-empty bucket >= from, or kMaxScore + 1.
  int NextBucketUp(int from) const {
    for (int w = from / 64; w < 2; ++w) {
      uint64_t bits = mask_[w] & (~uint64_t{0} << (w == from / 64 ? from % 64 : 0));
      if (bits != 0) {
        return w * 64 + std::countr_zero(bits);
      }
    }
    return kMaxScore + 1;
  }
  // Highest non-empty bucket <= from, or -1.
  int NextBucketDown(int from) const {
    if (from < 0) {
      return -1;
    }
    for (int w = from / 64; w >= 0; --w) {
      int top = w == from / 64 ? from % 64 : 63;
      uint64_t bits = mask_[w] & (top == 63 ? ~uint64_t{0} : ((uint64_t{1} << (top + 1)) - 1));
      if (bits != 0) {
        return w * 64 + 63 - std::countl_zero(bits);
      }
    }
    return -1;
  }
  void Link(uint32_t node) {
    int b = score_[node];
    next_[node] = head_[b];
    prev_[node] = kNone;
    if (head_[b] != kNone) {
      prev_[head_[b]] = node;
    }
    head_[b] = node;
    mask_[b / 64] |= uint64_t{1} << (b % 64);
  }
  void Unlink(uint32_t node) {
    int b = score_[node];
    if (prev_[node] != kNone) {
      next_[prev_[node]] = next_[node];
    } else {
      head_[b] = next_[node];
    }
    if (next_[node] != kNone) {
      prev_[next_[node]] = prev_[node];
    }
    if (head_[b] == kNone) {
      mask_[b / 64] &= ~(uint64_t{1} << (b % 64));
    }
  }

  std::vector<uint8_t> score_;
  std::vector<uint32_t> next_;
  std::vector<uint32_t> prev_;
  std::array<uint32_t, kMaxScore + 1> head_{};
  std::array<uint64_t, 2> mask_{};
};

}  // namespace carve::core
