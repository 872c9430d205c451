// Host-side profiler events: the program labels of this thread.
#include "exec/trace.h"

#include "runtime/pjrt.h"

namespace torch_tpu::exec {

namespace {
thread_local std::string program_label;
}  // namespace

ProgramLabel::ProgramLabel(std::string label) : previous_(std::move(program_label)) {
  program_label = std::move(label);
}
ProgramLabel::~ProgramLabel() { program_label = std::move(previous_); }

const std::string& ProgramLabel::current() { return program_label; }

std::string ProgramLabel::execute_event_name() {
  if (!program_label.empty()) return "tpu::execute: " + program_label;
  const char* op = runtime::OpNameScope::current();
  return std::string("tpu::execute: ") + (op && *op ? op : "program");
}

}  // namespace torch_tpu::exec
