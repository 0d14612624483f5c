// Loading and validating a job's trace (CSV, plain or gzip) and its meta.yaml.
//
// Every problem with the input is reported as one TraceError naming the file, the 1-based line
// and the column, e.g. "trace.csv:1234: column 'duration': negative duration -0.5". Nothing is
// dropped, clamped or guessed: the first problem found stops the load.
//
// The CSV schema is the reference one (tests/data/README.md): a header line naming exactly the
// 11 columns dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc in any order,
// then one row per operation. A column outside the schema is an error too (rather than being
// ignored) so that a trace from a different exporter is never half-read. Times are decimal
// seconds parsed exactly (std::from_chars), integers are plain decimal. Blank lines are errors,
// so data row i (0-based) is always on line i + 2.
#pragma once

#include <string>
#include <string_view>

#include "straggler_probe/whatif/trace_table.h"

namespace sp::whatif {

// Reads a whole file into memory, inflating it when it starts with the gzip magic bytes
// (1f 8b), whatever its name. Truncated or corrupt gzip data is an error.
std::string read_file_maybe_gzip(const std::string& path);

// meta.yaml: flat "key: value" lines (blank lines and '#' comments allowed). Keys: trial_name
// and the sizes dp_size, pp_size, tp_size, dsp_size, vpp_size, world_size are required;
// run_id is optional (default 0). Unknown or repeated keys, non-integer or non-positive sizes,
// and world_size != dp_size * pp_size * tp_size * dsp_size are errors.
JobMeta parse_meta(std::string_view text, const std::string& file_label);
JobMeta load_meta(const std::string& path);

// Parses and validates a CSV trace held in memory; file_label names it in errors.
// Besides the per-field checks (number format, finiteness, op type, duration >= 0), rows must
// agree with the metadata: 0 <= dp_rank < dp_size, 0 <= stage < pp_size,
// 0 <= rank < world_size, -1 <= mc < vpp_size, -1 <= gmc < pp_size * vpp_size, mb_id >= -1,
// seq_id >= 0, step >= 0; a rank keeps one (dp_rank, stage) throughout; and no two rows share
// (rank, step, optype, seq_id).
TraceTable parse_trace_csv(std::string_view text, const std::string& file_label,
                           const JobMeta& meta);

// read_file_maybe_gzip + parse_trace_csv.
TraceTable load_trace_csv(const std::string& path, const JobMeta& meta);

}  // namespace sp::whatif
