// The Python face of the rank pipeline's settings: _core.PipelineSettings is
// sp::rank_pipeline::PipelineSettings (include/straggler_probe/rank_pipeline/rank_pipeline.h),
// one attribute per field; straggler_probe/_transport.py copies a resolved Config into it by
// the names in PipelineSettings.SETTING_NAMES (the settings table's rows).
#pragma once

#include <pybind11/pybind11.h>

namespace sp::pyext {

// Adds the PipelineSettings class (default constructor, one attribute per field, SETTING_NAMES).
void bind_pipeline_settings(pybind11::module_& m);

}  // namespace sp::pyext
