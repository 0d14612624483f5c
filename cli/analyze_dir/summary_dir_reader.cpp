#include "summary_dir_reader.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

#include "common/exit_codes.h"
#include "straggler_probe/summary_file.h"

namespace sp::cli {
namespace {

namespace fs = std::filesystem;

namespace summary_file = runtime::summary_file;

std::string ranks_list(const std::vector<int32_t>& ranks, const std::string& before, const std::string& after) {
  std::string out;
  const size_t shown = std::min<size_t>(ranks.size(), 8);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + before + std::to_string(ranks[i]) + after;
  if (ranks.size() > shown) out += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return out;
}

// The first summary's world size, and where it was read, to name both sides of a mismatch.
struct WorldSeen {
  int32_t size = 0;
  std::string where;
};

class RankFileIndexer {
 public:
  RankFileIndexer(RankSummaryFile* file, WorldSeen* world, std::vector<std::string>* notes)
      : file_(file), world_(world), notes_(notes) {}

  void run() {
    std::ifstream in(file_->path, std::ios::binary);
    std::error_code ec;
    const uint64_t size = fs::file_size(file_->path, ec);
    if (!in || ec) throw BadInput(file_->path + ": cannot read" + (ec ? ": " + ec.message() : std::string()));
    uint64_t offset = 0;
    std::string bytes;
    for (uint32_t index = 0; offset < size; ++index) {
      const std::string at = file_->path + ": record " + std::to_string(index) + " at byte " + std::to_string(offset);
      std::array<uint8_t, summary_file::kLengthBytes> prefix{};
      const uint64_t left = size - offset;
      if (left < prefix.size()) {
        torn_tail(at + ": cut short: " + std::to_string(left) + " byte(s) of a 4-byte length prefix");
        return;
      }
      in.read(reinterpret_cast<char*>(prefix.data()), prefix.size());
      const uint32_t length = summary_file::decode_length(prefix);
      if (const std::string problem = summary_file::length_problem(length); !problem.empty()) {
        throw BadInput(at + ": " + problem + ": not a summary file, or corrupted");
      }
      if (length > left - prefix.size()) {
        torn_tail(at + ": cut short: length " + std::to_string(length) + " but " +
                  std::to_string(left - prefix.size()) + " byte(s) follow");
        return;
      }
      bytes.resize(length);
      in.read(bytes.data(), length);
      if (!in) throw BadInput(at + ": read failed (the file changed while being read?)");
      runtime::StepSummary s;
      std::string error;
      if (!runtime::decode_summary(bytes, &s, &error)) throw BadInput(at + ": cannot decode: " + error);
      check(s, at);
      file_->steps[s.step] = SummaryRecord{offset, length, index};
      offset += prefix.size() + length;
    }
  }

 private:
  // The file ends inside its last record: the writer appends whole records, so this is a rank
  // that stopped (was killed) while writing, and every record before it is complete. The cut
  // record is left out with a note; corruption anywhere else stays an error.
  void torn_tail(const std::string& what) {
    notes_->push_back(what + "; the rank stopped while writing it? This last record is left out");
  }

  void check(const runtime::StepSummary& s, const std::string& at) const {
    if (s.world_size <= 0) throw BadInput(at + ": world size " + std::to_string(s.world_size));
    if (s.rank != file_->rank) {
      throw BadInput(at + ": summary of rank " + std::to_string(s.rank) + " in the file of rank " +
                     std::to_string(file_->rank));
    }
    if (s.rank >= s.world_size) {
      throw BadInput(at + ": rank " + std::to_string(s.rank) + " outside its world size " +
                     std::to_string(s.world_size));
    }
    if (world_->size == 0) {
      *world_ = {s.world_size, at};
    } else if (s.world_size != world_->size) {
      throw BadInput(at + ": world size " + std::to_string(s.world_size) + ", but " + world_->where + " has " +
                     std::to_string(world_->size));
    }
    if (const auto it = file_->steps.find(s.step); it != file_->steps.end()) {
      throw BadInput(at + ": step " + std::to_string(s.step) + " again (first in record " +
                     std::to_string(it->second.index) + ")");
    }
  }

  RankSummaryFile* file_;
  WorldSeen* world_;
  std::vector<std::string>* notes_;
};

}  // namespace

std::vector<int64_t> SummaryDirIndex::all_steps() const {
  std::vector<int64_t> steps;
  for (const auto& f : ranks) {
    for (const auto& [step, record] : f.steps) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

std::vector<int32_t> SummaryDirIndex::missing_ranks(int64_t step) const {
  std::vector<int32_t> missing;
  for (const auto& f : ranks) {
    if (!f.steps.count(step)) missing.push_back(f.rank);
  }
  return missing;
}

runtime::StepSummary SummaryDirIndex::load(int32_t rank, int64_t step) const {
  const RankSummaryFile& f = ranks.at(static_cast<size_t>(rank));
  const SummaryRecord& r = f.steps.at(step);
  std::ifstream in(f.path, std::ios::binary);
  std::string bytes(r.length, '\0');
  in.seekg(static_cast<std::streamoff>(r.offset + summary_file::kLengthBytes));
  in.read(bytes.data(), r.length);
  runtime::StepSummary s;
  std::string error;
  if (!in || !runtime::decode_summary(bytes, &s, &error) || s.step != step || s.rank != rank) {
    throw BadInput(f.path + ": record " + std::to_string(r.index) + " at byte " + std::to_string(r.offset) +
                   ": changed while being analysed" + (error.empty() ? std::string() : ": " + error));
  }
  return s;
}

SummaryDirIndex index_summary_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw BadInput(dir + ": " + (fs::exists(dir, ec) ? "not a directory" : "no such directory"));
  }
  // rank -> path, every *.spsum accounted for: a file that is not a rank's is an error, not skipped.
  std::map<int32_t, std::string> files;
  std::vector<fs::directory_entry> entries;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
  if (ec) throw BadInput(dir + ": cannot list: " + ec.message());
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(summary_file::kFileSuffix)) continue;
    const std::string path = (fs::path(dir) / name).string();
    const std::optional<int32_t> rank = summary_file::rank_of_file_name(name);
    if (!rank) throw BadInput(path + ": not a per-rank summary file name (expected rank<R>.spsum)");
    if (!e.is_regular_file(ec)) throw BadInput(path + ": not a regular file");
    if (const auto [it, fresh] = files.emplace(*rank, path); !fresh) {
      throw BadInput(path + ": duplicate rank " + std::to_string(*rank) + " (also " + it->second + ")");
    }
  }
  if (files.empty()) {
    throw BadInput(dir + ": no rank<R>.spsum files (they are written by ranks run under LD_PRELOAD with "
                         "STRAGGLER_PROBE_OUT_DIR=" + dir + ")");
  }

  WorldSeen world;
  std::vector<std::string> torn_tails;
  std::vector<RankSummaryFile> indexed;
  for (const auto& [rank, path] : files) {
    RankSummaryFile f;
    f.rank = rank;
    f.path = path;
    RankFileIndexer(&f, &world, &torn_tails).run();
    indexed.push_back(std::move(f));
  }
  if (world.size == 0) {
    throw BadInput(dir + ": no step summaries: all " + std::to_string(files.size()) +
                   " rank file(s) are empty (no rank reached the end of a step)");
  }
  // Ranks are checked against the summaries' world size, so an empty file beyond it is caught too.
  for (const auto& f : indexed) {
    if (f.rank >= world.size) {
      throw BadInput(f.path + ": rank " + std::to_string(f.rank) + " outside the world size " +
                     std::to_string(world.size) + " of the summaries (" + world.where + ")");
    }
  }
  std::vector<int32_t> missing;
  for (int32_t r = 0; r < world.size; ++r) {
    if (!files.count(r)) missing.push_back(r);
  }
  if (!missing.empty()) {
    throw BadInput(dir + ": missing rank(s) " + ranks_list(missing, "", "") + " of world size " +
                   std::to_string(world.size) + " (no " + ranks_list(missing, "rank", ".spsum") + ")");
  }
  SummaryDirIndex index;
  index.world_size = world.size;
  index.torn_tails = std::move(torn_tails);
  index.ranks = std::move(indexed);  // files are keyed by rank 0..W-1, so ranks[r].rank == r
  return index;
}

}  // namespace sp::cli
