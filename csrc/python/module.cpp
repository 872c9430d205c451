// The Python extension torch_tpu._C: runtime queries, modes and metrics.
#include <torch/extension.h>
#include <pybind11/chrono.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include "aten/kernels.h"
#include "aten/op.h"
#include "device/device.h"
#include "distributed/backend.h"
#include "exec/cache.h"
#include "exec/capture.h"
#include "exec/disk_cache.h"
#include "exec/exec.h"
#include "exec/fused.h"
#include "exec/metrics.h"
#include "exec/trace.h"
#include "runtime/pjrt.h"

namespace py = pybind11;
using namespace torch_tpu;

// From torch/csrc/profiler/python/combined_traceback.h, which needs headers the
// wheel does not ship (nlohmann/json): Python stacks for memory history.
namespace torch {
TORCH_API std::vector<py::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
TORCH_PYTHON_API void installCapturedTracebackPython();
}  // namespace torch

PYBIND11_MODULE(_C, m) {
  m.def("_set_plugin_path", &runtime::set_plugin_path);
  m.def("_is_initialized", &runtime::Runtime::initialized);
  m.def("_is_in_bad_fork", &runtime::Runtime::in_bad_fork);
  m.def("device_count", [] { return runtime::Runtime::get().device_count(); });
  m.def("platform_name", [] { return runtime::Runtime::get().platform_name(); });
  m.def("platform_version", [] { return runtime::Runtime::get().platform_version(); });
  m.def("plugin_path", [] { return runtime::Runtime::get().plugin_path(); });
  m.def("device_kind", [](int d) { return runtime::Runtime::get().device_kind(d); });
  m.def("_cache_dir", [] { return exec::disk_cache::directory(); });
  m.def("_set_device_timing", &exec::set_device_timing);
  m.def("_record_memory_history", [](bool enabled) {
    if (enabled) torch::installCapturedTracebackPython();
    set_allocation_context(enabled ? +[]() -> std::shared_ptr<c10::GatheredContext> {
      return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/false);
    } : nullptr);
  });
  // The live storages as (device, address, bytes, on_device, frames or None).
  m.def("_live_storages", [] {
    auto live = live_storages();
    std::vector<torch::CapturedTraceback*> recorded;
    for (auto& s : live)
      if (s.allocated_by) recorded.push_back(torch::getCapturedTracebackFromContext(s.allocated_by));
    std::vector<py::object> frames = torch::py_symbolize(recorded);
    py::list out;
    size_t next = 0;
    for (auto& s : live) {
      py::object f = s.allocated_by ? frames[next++] : py::none();
      out.append(py::make_tuple(s.device, s.address, s.nbytes, s.on_device, f));
    }
    return out;
  });
  m.def("_take_device_runs", [] {
    std::vector<exec::DeviceRun> taken;
    {
      py::gil_scoped_release release;
      taken = exec::take_device_runs();
    }
    py::list runs;
    for (auto& r : taken) runs.append(py::make_tuple(r.name, r.device, r.start_ns, r.end_ns));
    return runs;
  });
  m.def("_cache_max_bytes", &exec::disk_cache::max_bytes);
  m.def("current_device", [] { return current_device(); });
  m.def("set_device", [](int d) {
    c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->setDevice(c10::Device(c10::DeviceType::PrivateUse1, d));
  });
  m.def("memory_stats", [](int d) {
    auto s = runtime::Runtime::get().memory_stats(d);
    py::dict out;
    out["bytes_in_use"] = s.bytes_in_use;
    out["peak_bytes_in_use"] = s.peak_bytes_in_use;
    out["num_allocs"] = s.num_allocs;
    out["bytes_limit"] = s.bytes_limit;
    out["num_ooms"] = s.num_ooms;
    return out;
  });
  m.def("reset_peak_memory_stats", [](int d) { runtime::Runtime::get().reset_peak(d); });
  m.def("_release_free_host_memory", &runtime::release_free_host_memory);
  m.def("synchronize", [](int d) {
    py::gil_scoped_release release;
    exec::synchronize(d);
    aten::raise_device_check_failure(d);
  });
  m.def("_set_device_checks", [](bool enabled) { return aten::set_device_checks(enabled); });
  m.def("default_generator", [](int d) { return default_generator(d); });
  m.def("set_eager_mode", [](const std::string& name) { exec::set_mode(exec::parse_mode(name)); });
  m.def("get_eager_mode", [] { return std::string(exec::mode_name(exec::mode())); });
  m.def("metrics", [] {
    auto& mt = exec::metrics();
    py::dict out;
    out["compiles"] = mt.compiles.load();
    out["cache_hits"] = mt.cache_hits.load();
    out["cache_misses"] = mt.cache_misses.load();
    out["executions"] = mt.executions.load();
    out["compile_seconds"] = mt.compile_nanos.load() / 1e9;
    out["quick_compiles"] = mt.quick_compiles.load();
    out["full_recompiles"] = mt.full_recompiles.load();
    out["bytes_to_device"] = mt.bytes_to_device.load();
    out["bytes_to_host"] = mt.bytes_to_host.load();
    out["cached_programs"] = exec::cache_size();
    out["disk_cache_hits"] = mt.disk_cache_hits.load();
    out["disk_cache_writes"] = mt.disk_cache_writes.load();
    out["ops_deferred"] = mt.ops_deferred.load();
    py::dict fallbacks, flushes;
    std::vector<exec::ShapeFamily> families;
    {
      std::lock_guard<std::mutex> lock(mt.mutex);
      for (auto& [k, v] : mt.cpu_fallbacks) fallbacks[py::str(k)] = v;
      for (auto& [k, v] : mt.flushes) flushes[py::str(k)] = v;
      for (auto& [k, f] : mt.shape_families) families.push_back(f);
    }
    std::stable_sort(families.begin(), families.end(),
                     [](const auto& a, const auto& b) { return a.programs > b.programs; });
    py::list shape_families;
    for (auto& f : families) {
      py::dict d;
      d["programs"] = f.programs;
      d["ops"] = f.label;
      shape_families.append(d);
    }
    out["cpu_fallbacks"] = fallbacks;
    out["flushes"] = flushes;
    out["shape_families"] = shape_families;
    return out;
  });
  m.def("reset_metrics", [] { exec::metrics().reset(); });
  m.def("flush", [] {
    py::gil_scoped_release release;
    exec::flush("explicit");
  });
  m.def("last_flushed_program", &exec::last_flushed_program);
  m.def("_call_function", &aten::call_function);
  m.def("_set_fused_max_nodes", &exec::set_fused_max_nodes);
  m.def("_set_fused_max_held_bytes", &exec::set_fused_max_held_bytes);
  m.def("_set_memory_mapping_limit", &exec::set_memory_mapping_limit);

  // torch.distributed (torch_tpu/distributed.py): defined on first use, once
  // torch.distributed has registered c10d's Backend type with pybind.
  m.def("_define_distributed_types", [](py::module_ module) {
    py::class_<distributed::TpuBackend, c10d::Backend, c10::intrusive_ptr<distributed::TpuBackend>>(module,
                                                                                                  "_TpuBackend")
        .def(py::init<int, int, c10::intrusive_ptr<c10d::Backend>, const std::string&, std::chrono::milliseconds>(),
             py::arg("rank"), py::arg("size"), py::arg("host"), py::arg("in_process_group"), py::arg("timeout"))
        .def_property_readonly("transport", &distributed::TpuBackend::transport);
  });

  // compile mode (torch_tpu/_compile.py)
  py::class_<exec::CapturedGraph, std::shared_ptr<exec::CapturedGraph>>(m, "_CapturedGraph")
      .def("run", &exec::CapturedGraph::run);
  m.def("_capture_begin", &exec::capture_begin);
  m.def("_layout_signature", [](const std::vector<at::Tensor>& inputs) { return py::bytes(exec::layout_signature(inputs)); });
  m.def("_capture_abort", &exec::capture_abort);
  m.def("_capture_end", [](const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
    std::string why_not;
    auto captured = exec::capture_end(inputs, outputs, why_not);
    return py::make_tuple(captured, why_not);
  });
}
