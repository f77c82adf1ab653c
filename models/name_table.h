// Lookups in a table of (enum value, name) pairs, for the registries whose names are data.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace dtsim::models {

template <typename Enum, size_t N>
std::string_view name_in(const std::pair<Enum, std::string_view> (&table)[N], Enum value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <typename Enum, size_t N>
std::optional<Enum> value_in(const std::pair<Enum, std::string_view> (&table)[N],
                             std::string_view name) {
  for (const auto& [e, n] : table) {
    if (n == name) return e;
  }
  return std::nullopt;
}

}  // namespace dtsim::models
