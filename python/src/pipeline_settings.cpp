#include "pipeline_settings.h"

#include "straggler_probe/rank_pipeline/rank_pipeline.h"

namespace py = pybind11;

namespace sp::pyext {

using rank_pipeline::PipelineSettings;

void bind_pipeline_settings(py::module_& m) {
  py::class_<PipelineSettings> cls(m, "PipelineSettings",
                                   "What start_pipeline takes; the settings' defaults are the "
                                   "settings table's (docs/CONFIG.md).");
  cls.def(py::init<>());
#define SP_BIND_FIELD(name) cls.def_readwrite(#name, &PipelineSettings::name);
  SP_PIPELINE_SETTING_FIELDS(SP_BIND_FIELD)
  SP_PIPELINE_PLACE_FIELDS(SP_BIND_FIELD)
#undef SP_BIND_FIELD
  py::list names;  // the fields that are rows of the settings table, in its order
#define SP_FIELD_NAME(name) names.append(#name);
  SP_PIPELINE_SETTING_FIELDS(SP_FIELD_NAME)
#undef SP_FIELD_NAME
  cls.attr("SETTING_NAMES") = py::tuple(names);
}

}  // namespace sp::pyext
