// YAML out of a JSON tree, for specs people read (/var/run/cdi/*.yaml):
// block mappings and sequences, every string value double-quoted with
// JSON's escapes (valid YAML 1.2, and a string never turns into a number, a
// bool or null), numbers and bools plain. Keys plain when they are simple
// names (the spec's own), quoted otherwise.
#include "gpuslice/nvidia/generate.hpp"

#include <algorithm>
#include <cctype>

namespace gpuslice::nvidia {

namespace {

using Json = nlohmann::ordered_json;

std::string scalar(const Json &v) { return v.dump(); }

bool is_collection(const Json &v) { return (v.is_object() || v.is_array()) && !v.empty(); }

std::string key_text(const std::string &key) {
  const bool plain = !key.empty() && (std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_') &&
                     std::all_of(key.begin(), key.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                     });
  return plain ? key : Json(key).dump();
}

void emit(const Json &v, int indent, std::string &out);

void emit_object(const Json &v, int indent, std::string &out, bool first_inline) {
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!(first && first_inline))
      out.append(static_cast<std::size_t>(indent), ' ');
    first = false;
    out += key_text(it.key()) + ":";
    if (is_collection(it.value())) {
      out += "\n";
      emit(it.value(), it.value().is_array() ? indent : indent + 2, out);
    } else {
      out += " " + scalar(it.value()) + "\n";
    }
  }
}

void emit(const Json &v, int indent, std::string &out) {
  if (v.is_object()) {
    emit_object(v, indent, out, false);
  } else if (v.is_array()) {
    for (const auto &item : v) {
      out.append(static_cast<std::size_t>(indent), ' ');
      out += "- ";
      if (item.is_object() && !item.empty())
        emit_object(item, indent + 2, out, true);
      else if (item.is_array() && !item.empty()) {
        out += "\n";
        emit(item, indent + 2, out);
      } else
        out += scalar(item) + "\n";
    }
  }
}

} // namespace

std::string to_yaml(const Json &doc) {
  std::string out = "---\n";
  if (is_collection(doc))
    emit(doc, 0, out);
  else
    out += scalar(doc) + "\n";
  return out;
}

} // namespace gpuslice::nvidia
