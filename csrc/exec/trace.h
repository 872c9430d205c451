// Host-side events for torch.profiler, through PyTorch's RecordFunction: what
// the runtime did on this thread (tpu::execute, tpu::compile, tpu::flush,
// tpu::transfer_to_device / _to_host), nested in the ATen ops that caused it.
// Nothing is built unless a profiler listens.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

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
  // "tpu::execute: <the label, or the ATen op running>".
  static std::string execute_event_name();

 private:
  std::string previous_;
};

}  // namespace torch_tpu::exec
