#include "common/bounded_json.h"

#include <string>
#include <unordered_set>
#include <vector>

namespace carve {
namespace {

using nlohmann::json;

// A SAX handler that builds the value with nlohmann's own DOM builder and refuses, by returning
// false (which ends sax_parse at once), the first container past the depth limit and the first
// repeated key. json_sax_dom_parser is in nlohmann's detail namespace but is what json::parse
// itself uses; it has kept this interface since 3.2.
class BoundedSax {
 public:
  BoundedSax(json& root, int max_depth)
      : dom_(root, /*allow_exceptions_=*/false), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return dom_.number_float(v, s);
  }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }

  bool start_object(std::size_t n) {
    if (!Enter()) return false;
    keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(json::string_t& k) {
    if (!keys_.back().insert(k).second) {
      error_ = InvalidArgument("has the key " + JsonPreview(json(k), 128) +
                               " more than once in one object (duplicate JSON keys are refused)");
      return false;
    }
    return dom_.key(k);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return Enter() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    // what() quotes the token read so far, which can be the caller's megabyte-long string.
    error_ = InvalidArgument("is not valid JSON: " + TextPreview(ex.what(), 200));
    return false;
  }

  const Error& error() const { return error_; }

 private:
  bool Enter() {
    if (++depth_ <= max_depth_) return true;
    error_ = InvalidArgument("nests arrays and objects deeper than " + std::to_string(max_depth_) +
                             " levels (the JSON depth limit)");
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const int max_depth_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  // One set per open object.
  Error error_ = InvalidArgument("is not valid JSON");
};

// `s` as a JSON string literal, its content cut as TextPreview cuts it.
void AppendString(std::string_view s, size_t max_bytes, std::string& out) {
  const std::string cut = TextPreview(s, max_bytes);
  out += json(cut).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Recursion is bounded by max_depth (the caller's constant), never by the value.
void AppendPreview(const json& v, int depth, int max_depth, size_t max_bytes, std::string& out) {
  if (out.size() > max_bytes) return;
  if (v.is_string()) {
    AppendString(v.get_ref<const std::string&>(), max_bytes, out);
    return;
  }
  if (!v.is_structured()) {
    out += v.dump();  // A number, boolean, null or (never from ParseJson) a binary.
    return;
  }
  const bool object = v.is_object();
  if (v.empty() || depth >= max_depth) {
    out += object ? (v.empty() ? "{}" : "{...}") : (v.empty() ? "[]" : "[...]");
    return;
  }
  out += object ? '{' : '[';
  for (auto it = v.begin(); it != v.end() && out.size() <= max_bytes; ++it) {
    if (it != v.begin()) out += ',';
    if (object) {
      AppendString(it.key(), max_bytes, out);
      out += ':';
    }
    AppendPreview(*it, depth + 1, max_depth, max_bytes, out);
  }
  out += object ? '}' : ']';
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, int max_depth) {
  json root;
  BoundedSax sax(root, max_depth);
  try {
    if (json::sax_parse(text.begin(), text.end(), &sax)) return root;
  } catch (const json::exception& e) {  // Not expected with a non-throwing handler.
    return InvalidArgument("is not valid JSON: " + TextPreview(e.what(), 200));
  }
  return sax.error();
}

std::string TextPreview(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up over continuation bytes (10xxxxxx) so that no UTF-8 sequence is split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

std::string JsonPreview(const nlohmann::json& v, size_t max_bytes, int max_depth) {
  std::string out;
  AppendPreview(v, 0, max_depth, max_bytes, out);
  return TextPreview(out, max_bytes);
}

}  // namespace carve
