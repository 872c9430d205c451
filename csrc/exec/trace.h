// Host-side events for torch.profiler, through PyTorch's RecordFunction: what
// the runtime did on this thread (tpu::execute, tpu::compile, tpu::flush,
// tpu::transfer_to_device / _to_host), nested in the ATen ops that caused it.
// Nothing is built unless a profiler listens. And, while switched on
// (torch_tpu.profiler), each program's run on its device.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "runtime/pjrt.h"

namespace torch_tpu::exec {

// One event for the scope's lifetime, named by `name()` and carrying integer
// attributes (the profiler's kwinputs, e.g. bytes or ops).
class TraceScope {
 public:
  template <typename NameFn>
  TraceScope(NameFn&& name, std::initializer_list<std::pair<const char*, int64_t>> attributes)
      : guard_(at::RecordScope::USER_SCOPE) {
    if (!guard_.isActive()) return;
    name_ = name();
    std::unordered_map<std::string, c10::IValue> kwargs;
    for (const auto& [key, value] : attributes) kwargs.emplace(key, value);
    guard_.before(std::string_view(name_), &kwargs);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  std::string name_;  // declared first: it outlives the event that refers to it
  at::RecordFunction guard_;
};

// Names the programs compiled and run in its scope (on this thread): a fused
// flush's ATen ops, a compiled graph. Outside any, a program is named by the
// ATen op running (strict and debug mode).
class ProgramLabel {
 public:
  explicit ProgramLabel(std::string label);
  ~ProgramLabel();
  ProgramLabel(const ProgramLabel&) = delete;
  ProgramLabel& operator=(const ProgramLabel&) = delete;

  // The innermost label; "" outside any.
  static const std::string& current();
  // The label, else the ATen op running, else "program".
  static std::string program_name();
  // "tpu::execute: <program_name()>".
  static std::string execute_event_name();

 private:
  std::string previous_;
};

// A program's run on a device, in c10::getTime() nanoseconds (the profiler's
// clock): from its enqueue to its outputs being ready (PJRT's event). PJRT
// says when a program ends, not when it starts: on a device that runs one
// program at a time the span includes its wait behind earlier ones.
struct DeviceRun {
  std::string name;
  int device;
  int64_t start_ns, end_ns;
};

void set_device_timing(bool enabled);
bool device_timing();
// Records the run of a program just enqueued; `output` is one of its results.
void note_device_run(std::string name, int device, int64_t enqueued_ns, const runtime::BufferPtr& output);
// The runs whose outputs are ready, in enqueue order, once every noted run has
// reported (call after a synchronize); they are removed.
std::vector<DeviceRun> take_device_runs();

}  // namespace torch_tpu::exec
