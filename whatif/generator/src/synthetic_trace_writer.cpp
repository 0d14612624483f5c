// Writers for synthetic traces: the reference CSV schema (plain or gzip) and meta.yaml.
#include <zlib.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "straggler_probe/whatif/synthetic_trace.h"

namespace sp::whatif {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// 17 significant digits: parsing the text as double gives back exactly the stored value
// (a float32 widened to double), as in the reference traces.
void append_time(std::string& out, double v) {
  char buf[40];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 17);
  out.append(buf, res.ptr);
}

// Either a plain file or a gzip stream; fails loudly, naming the path.
class Sink {
 public:
  explicit Sink(const std::string& path) : path_(path) {
    if (ends_with(path, ".gz")) {
      // Level 3: most of the size gain of the default level at a fraction of its time.
      gz_ = gzopen(path.c_str(), "wb3");
      if (gz_ == nullptr) fail();
    } else {
      plain_.reset(std::fopen(path.c_str(), "wb"));
      if (!plain_) fail();
    }
  }
  ~Sink() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void write(const std::string& data) {
    if (data.empty()) return;
    if (gz_ != nullptr) {
      if (gzwrite(gz_, data.data(), static_cast<unsigned>(data.size())) !=
          static_cast<int>(data.size())) {
        fail();
      }
    } else if (std::fwrite(data.data(), 1, data.size(), plain_.get()) != data.size()) {
      fail();
    }
  }

  void close() {
    if (gz_ != nullptr) {
      const int rc = gzclose(gz_);
      gz_ = nullptr;
      if (rc != Z_OK) fail();
    } else if (plain_) {
      if (std::fclose(plain_.release()) != 0) fail();
    }
  }

 private:
  [[noreturn]] void fail() const { throw std::runtime_error("cannot write " + path_); }

  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  gzFile gz_ = nullptr;
  std::unique_ptr<std::FILE, FileCloser> plain_;
};

}  // namespace

void write_trace_csv(const TraceTable& table, const std::string& path) {
  Sink sink(path);
  std::string buf = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n";
  buf.reserve(1 << 20);
  const auto field = [&buf](int64_t v) {
    append_int(buf, v);
    buf.push_back(',');
  };
  for (size_t i = 0; i < table.size(); ++i) {
    field(table.dp_rank[i]), field(table.stage[i]), field(table.rank[i]), field(table.step[i]);
    buf.append(op_type_name(table.optype[i]));
    buf.push_back(',');
    append_time(buf, table.start_ts[i]);
    buf.push_back(',');
    append_time(buf, table.duration[i]);
    buf.push_back(',');
    field(table.seq_id[i]), field(table.mc[i]), field(table.mb_id[i]);
    append_int(buf, table.gmc[i]);
    buf.push_back('\n');
    if (buf.size() > (1 << 20) - 256) {
      sink.write(buf);
      buf.clear();
    }
  }
  sink.write(buf);
  sink.close();
}

void write_meta_yaml(const JobMeta& meta, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "trial_name: " << meta.trial_name << "\n"
      << "run_id: " << meta.run_id << "\n"
      << "dp_size: " << meta.dp_size << "\n"
      << "dsp_size: " << meta.dsp_size << "\n"
      << "pp_size: " << meta.pp_size << "\n"
      << "tp_size: " << meta.tp_size << "\n"
      << "vpp_size: " << meta.vpp_size << "\n"
      << "world_size: " << meta.world_size << "\n";
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace sp::whatif
