// Just enough of an ELF64 reader for the library checks: the dynamic symbol table (what the
// library exports), its DT_NEEDED entries and what .init_array runs at load (constructors).
// Parsing the file ourselves keeps the tests free of binutils.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sp::runtime::testing {

struct DynamicSymbol {
  std::string name;
  bool defined = false;  // st_shndx != SHN_UNDEF
  bool global = false;   // STB_GLOBAL or STB_WEAK
  bool is_function = false;
};

struct ElfInfo {
  std::vector<DynamicSymbol> dynamic_symbols;
  std::vector<std::string> needed;
  size_t init_array_entries = 0;
  // The functions .init_array calls at load (from its relocations and .symtab); "?" when a
  // target cannot be named (a stripped library).
  std::vector<std::string> init_array_functions;
};

// nullopt and *error when the file cannot be read or is not a 64-bit little-endian ELF.
std::optional<ElfInfo> read_elf(const std::string& path, std::string* error);

}  // namespace sp::runtime::testing
