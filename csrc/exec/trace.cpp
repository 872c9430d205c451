// Host-side profiler events: the program labels of this thread; device runs.
#include "exec/trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <c10/util/ApproximateClock.h>

namespace torch_tpu::exec {

namespace {
thread_local std::string program_label;
}  // namespace

ProgramLabel::ProgramLabel(std::string label) : previous_(std::move(program_label)) {
  program_label = std::move(label);
}
ProgramLabel::~ProgramLabel() { program_label = std::move(previous_); }

const std::string& ProgramLabel::current() { return program_label; }

std::string ProgramLabel::program_name() {
  if (!program_label.empty()) return program_label;
  const char* op = runtime::OpNameScope::current();
  return op && *op ? op : "program";
}

std::string ProgramLabel::execute_event_name() { return "tpu::execute: " + program_name(); }

namespace {
struct DeviceTimeline {
  std::atomic<bool> enabled{false};
  std::mutex mutex;
  std::condition_variable finished;
  size_t pending = 0;  // runs noted whose outputs are not ready yet
  std::vector<DeviceRun> done;
};

DeviceTimeline& timeline() {
  static DeviceTimeline t;
  return t;
}
}  // namespace

void set_device_timing(bool enabled) {
  DeviceTimeline& t = timeline();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.enabled = enabled;
}

bool device_timing() { return timeline().enabled.load(std::memory_order_relaxed); }

void note_device_run(std::string name, int device, int64_t enqueued_ns, const runtime::BufferPtr& output) {
  DeviceTimeline& t = timeline();
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    t.pending++;
  }
  auto finish = [name = std::move(name), device, enqueued_ns] {
    int64_t end = c10::getTime();
    DeviceTimeline& t = timeline();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.done.push_back({name, device, enqueued_ns, end});
    t.pending--;
    t.finished.notify_all();
  };
  try {
    runtime::Runtime::get().when_ready(*output, finish);
  } catch (...) {
    finish();  // no callback: the run is timed as ending now
  }
}

std::vector<DeviceRun> take_device_runs() {
  DeviceTimeline& t = timeline();
  std::unique_lock<std::mutex> lock(t.mutex);
  // The plugin reports a ready output on its own thread, shortly after a
  // synchronize has returned; a run that never reports is left out.
  t.finished.wait_for(lock, std::chrono::seconds(10), [&] { return t.pending == 0; });
  std::vector<DeviceRun> runs;
  runs.swap(t.done);
  // Programs may finish out of order (the CPU plugin runs independent ones at once).
  std::stable_sort(runs.begin(), runs.end(), [](const DeviceRun& a, const DeviceRun& b) { return a.start_ns < b.start_ns; });
  return runs;
}

}  // namespace torch_tpu::exec
