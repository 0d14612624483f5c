#include "summary_file_writer.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "python_presence.h"
#include "straggler_probe/log.h"
#include "straggler_probe/preload/activation.h"
#include "straggler_probe/probe.h"
#include "straggler_probe/summary_file.h"

extern "C" {
int sp_pop_summary(void* buf, size_t capacity, size_t* size, int32_t timeout_ms)
    __attribute__((weak));
int sp_flush(void) __attribute__((weak));
}

namespace sp::preload {

namespace log = runtime::log;
namespace {

struct Writer {
  std::FILE* file = nullptr;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::mutex file_mutex;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 20);
};

std::atomic<Writer*> g_writer{nullptr};
std::once_flag g_once;

// Pops one summary (waiting up to timeout_ms) and appends it; false when none came.
bool drain_one(Writer& w, int32_t timeout_ms) {
  size_t size = 0;
  int rc = sp_pop_summary(w.buf.data(), w.buf.size(), &size, timeout_ms);
  if (rc == SP_ERR_INVALID && size > w.buf.size()) {
    w.buf.resize(size);
    rc = sp_pop_summary(w.buf.data(), w.buf.size(), &size, 0);
  }
  if (rc != SP_OK) return false;
  std::lock_guard<std::mutex> lock(w.file_mutex);
  if (w.file == nullptr) return false;
  if (!runtime::summary_file::append_record(w.file, w.buf.data(), size)) {
    log::warn_once("summary_file_write", "STRAGGLER_PROBE_OUT_DIR: a step summary could not be "
                                         "written (disk full?); later steps are still tried");
    return true;  // it was popped: go on with the next one
  }
  w.written.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void at_exit() {
  Writer* w = g_writer.load();
  if (w == nullptr || in_forked_child()) return;
  w->stop.store(true);
  if (w->thread.joinable()) w->thread.join();
  // The last marked steps: close them now and write them, waiting a little for the consumer.
  if (sp_flush != nullptr) sp_flush();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  while (std::chrono::steady_clock::now() < deadline && drain_one(*w, 100)) {
  }
  std::lock_guard<std::mutex> lock(w->file_mutex);
  if (w->file != nullptr) std::fclose(w->file);
  w->file = nullptr;
}

}  // namespace

uint64_t summaries_written() {
  Writer* w = g_writer.load();
  return w != nullptr ? w->written.load() : 0;
}

bool start_summary_file_writer(int32_t rank, std::string* why) {
  const char* dir = std::getenv("STRAGGLER_PROBE_OUT_DIR");
  if (dir == nullptr || *dir == '\0') {
    *why = "STRAGGLER_PROBE_OUT_DIR not set";
    return false;
  }
  if (python_in_process()) {
    *why = "a Python process: the straggler_probe package drains the summaries";
    return false;
  }
  if (sp_pop_summary == nullptr) {
    *why = "the runtime is not in this library";
    return false;
  }
  bool started = false;
  std::call_once(g_once, [&] {
    mkdir(dir, 0755);  // may exist already
    const std::string path = std::string(dir) + "/" + runtime::summary_file::file_name(rank);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
      *why = "cannot open " + path;
      log::warn_once("summary_file",
                     "STRAGGLER_PROBE_OUT_DIR: cannot write " + path + "; summaries not kept");
      return;
    }
    auto* w = new Writer();  // leaked: used by the exit handler
    w->file = f;
    w->thread = std::thread([w] {
      pthread_setname_np(pthread_self(), "sp_spsum_writer");  // top -H / perf show whose it is
      while (!w->stop.load(std::memory_order_relaxed)) drain_one(*w, 200);
    });
    g_writer.store(w);
    std::atexit(&at_exit);
    log::info("writing step summaries to " + path);
    started = true;
  });
  return started;
}

}  // namespace sp::preload
