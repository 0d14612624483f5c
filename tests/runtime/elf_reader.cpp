#include "elf_reader.h"

#include <elf.h>

#include <cstring>
#include <fstream>

namespace sp::runtime::testing {
namespace {

template <class T>
bool read_at(const std::string& data, size_t offset, T* out) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
  std::memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

std::string string_at(const std::string& data, const Elf64_Shdr& strtab, size_t index) {
  const size_t begin = strtab.sh_offset + index;
  if (begin >= data.size() || index >= strtab.sh_size) return {};
  const size_t end = data.find('\0', begin);
  return data.substr(begin, (end == std::string::npos ? data.size() : end) - begin);
}

// In a shared library the .init_array slots are filled by R_X86_64_RELATIVE relocations whose
// addend is the function's address; .symtab names that address.
void resolve_init_array(const std::string& data, const std::vector<Elf64_Shdr>& sections,
                        ElfInfo* info) {
  const Elf64_Shdr* init = nullptr;
  const Elf64_Shdr* symtab = nullptr;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type == SHT_INIT_ARRAY) init = &sh;
    if (sh.sh_type == SHT_SYMTAB) symtab = &sh;
  }
  if (init == nullptr) return;
  std::vector<uint64_t> targets;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_RELA) continue;
    for (size_t off = sh.sh_offset; off + sizeof(Elf64_Rela) <= sh.sh_offset + sh.sh_size;
         off += sizeof(Elf64_Rela)) {
      Elf64_Rela rela{};
      if (!read_at(data, off, &rela)) break;
      if (rela.r_offset >= init->sh_addr && rela.r_offset < init->sh_addr + init->sh_size &&
          ELF64_R_TYPE(rela.r_info) == R_X86_64_RELATIVE) {
        targets.push_back(static_cast<uint64_t>(rela.r_addend));
      }
    }
  }
  for (uint64_t target : targets) {
    std::string name = "?";
    if (symtab != nullptr && symtab->sh_link < sections.size()) {
      const Elf64_Shdr& strtab = sections[symtab->sh_link];
      for (size_t off = symtab->sh_offset; off + sizeof(Elf64_Sym) <= symtab->sh_offset + symtab->sh_size;
           off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym{};
        if (!read_at(data, off, &sym)) break;
        if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value == target) {
          name = string_at(data, strtab, sym.st_name);
          break;
        }
      }
    }
    info->init_array_functions.push_back(name);
  }
}

}  // namespace

std::optional<ElfInfo> read_elf(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    *error = "cannot open " + path;
    return std::nullopt;
  }
  std::string data(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(data.data(), static_cast<std::streamsize>(data.size()))) {
    *error = "cannot read " + path;
    return std::nullopt;
  }
  Elf64_Ehdr eh{};
  if (!read_at(data, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    *error = path + " is not a 64-bit little-endian ELF file";
    return std::nullopt;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!read_at(data, eh.e_shoff + i * sizeof(Elf64_Shdr), &sections[i])) {
      *error = "truncated section headers in " + path;
      return std::nullopt;
    }
  }
  ElfInfo info;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type == SHT_DYNSYM && sh.sh_link < sections.size()) {
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (size_t off = sh.sh_offset + sizeof(Elf64_Sym); off + sizeof(Elf64_Sym) <= sh.sh_offset + sh.sh_size;
           off += sizeof(Elf64_Sym)) {  // entry 0 is the null symbol
        Elf64_Sym sym{};
        if (!read_at(data, off, &sym)) break;
        const unsigned bind = ELF64_ST_BIND(sym.st_info);
        DynamicSymbol ds;
        ds.name = string_at(data, strtab, sym.st_name);
        ds.defined = sym.st_shndx != SHN_UNDEF;
        ds.global = bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE;
        ds.is_function = ELF64_ST_TYPE(sym.st_info) == STT_FUNC;
        info.dynamic_symbols.push_back(std::move(ds));
      }
    } else if (sh.sh_type == SHT_DYNAMIC && sh.sh_link < sections.size()) {
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (size_t off = sh.sh_offset; off + sizeof(Elf64_Dyn) <= sh.sh_offset + sh.sh_size;
           off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn{};
        if (!read_at(data, off, &dyn) || dyn.d_tag == DT_NULL) break;
        if (dyn.d_tag == DT_NEEDED) info.needed.push_back(string_at(data, strtab, dyn.d_un.d_val));
      }
    } else if (sh.sh_type == SHT_INIT_ARRAY) {
      info.init_array_entries += sh.sh_size / sizeof(Elf64_Addr);
    }
  }
  resolve_init_array(data, sections, &info);
  return info;
}

}  // namespace sp::runtime::testing
