// straggler-probe: the offline command line on the what-if engine.
//
// Exit codes (exit_codes.h): 0 success, 2 bad input (one line on stderr naming the file, line,
// column and problem), 1 anything else. No stack traces: every exception ends here.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "analyze/analyze_command.h"
#include "analyze_dir/analyze_dir_command.h"
#include "common/exit_codes.h"
#include "common/lib_path.h"
#include "common/process_memory.h"
#include "straggler_probe/whatif/lane_model.h"
#include "straggler_probe/whatif/op_graph.h"
#include "straggler_probe/whatif/trace_table.h"

namespace {

int fail(int code, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "straggler-probe: error: %s\n", message.c_str());
  return code;
}

// Warnings read like the errors: "straggler-probe: warning: ...", on stderr.
void setup_logging() {
  auto logger = spdlog::stderr_logger_st("straggler-probe");
  logger->set_pattern("%n: %l: %v");
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sp::cli;
  // LD_PRELOAD=$(straggler-probe --lib-path) torchrun ... : answered before any parsing.
  if (argc == 2 && std::string_view(argv[1]) == "--lib-path") return print_lib_path();
  keep_freed_memory();
  try {
    setup_logging();
    CLI::App app{"straggler-probe: find the stragglers in a large-model training trace (what-if analysis)",
                 "straggler-probe"};
    app.footer(
        "Examples:\n  straggler-probe analyze --trace trace.csv.gz --meta meta.yaml --out report/ --steps 12 20-23\n"
        "  straggler-probe analyze-dir sp_out/   (rank<R>.spsum files of a run with STRAGGLER_PROBE_OUT_DIR=sp_out)\n"
        "Exit codes: 0 success, 2 bad input (one line naming file, line and column), 1 internal failure.\n"
        "straggler-probe --lib-path prints where libstraggler_probe.so is (for LD_PRELOAD).");
    app.set_version_flag("--version", std::string("straggler-probe ") + SP_VERSION);
    app.require_subcommand(1);
    AnalyzeArgs analyze_args;
    CLI::App* analyze = add_analyze_command(app, analyze_args);
    AnalyzeDirArgs analyze_dir_args;
    CLI::App* analyze_dir = add_analyze_dir_command(app, analyze_dir_args);
    // CLI11 reports an unknown command as "A subcommand is required"; name it instead.
    if (argc > 1 && argv[1][0] != '-') {
      std::string known;
      bool found = false;
      for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
        found = found || sub->get_name() == argv[1];
      }
      if (!found) {
        return fail(kExitBadInput, std::string("unknown command '") + argv[1] + "' (commands: " + known + "; see --help)");
      }
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      return fail(kExitBadInput, std::string(e.what()) + " (see straggler-probe --help)");
    }
    if (analyze->parsed()) return run_analyze(analyze_args);
    if (analyze_dir->parsed()) return run_analyze_dir(analyze_dir_args);
    return fail(kExitInternal, "no subcommand ran");
  } catch (const sp::whatif::TraceError& e) {
    return fail(kExitBadInput, e.what());
  } catch (const BadInput& e) {
    return fail(kExitBadInput, e.what());
  } catch (const sp::whatif::ModelError& e) {
    return fail(kExitBadInput, std::string("the trace cannot be modelled: ") + e.what());
  } catch (const sp::whatif::GraphError& e) {
    return fail(kExitBadInput, std::string("the trace's dependency graph is invalid: ") + e.what());
  } catch (const std::exception& e) {
    return fail(kExitInternal, e.what());
  } catch (...) {
    return fail(kExitInternal, "unknown internal error");
  }
}
