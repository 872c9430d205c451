// Execution: the eager mode in force, running compiled programs, the list of
// work in flight, and the host <-> device transfers.
//
// Invariants:
//  - debug waits for every program and so raises device errors at the op;
//    strict enqueues and returns, errors surface when the value is read.
//  - Every byte aten or exec moves between host and device goes through
//    upload() / download(), which count it.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "exec/cache.h"
#include "ir/graph.h"
#include "runtime/pjrt.h"

namespace torch_tpu::exec {

enum class Mode { Debug, Strict, Fused };

Mode mode();
// The mode's storage: changed only by set_mode (exec/fused.h), which first
// runs work deferred under fused mode.
std::atomic<Mode>& mode_state();
const char* mode_name(Mode m);
// Accepts "debug" / "strict" / "fused"; throws ValueError otherwise.
Mode parse_mode(const std::string& name);

// Compiles `graph` (cached) and runs it on `device` with `args`, one buffer per
// graph parameter in Graph::params() order. Returns one buffer per output.
// Parameters the graph aliases with outputs are donated: their buffers are
// consumed by the run. `tiering`: how its first compile picks the tier of code.
std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const std::vector<runtime::Buffer*>& args,
                                    int device, Tiering tiering = Tiering::BySize);
// The same with the executable already in hand (exec::executable, cache.h).
std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const runtime::Executable& exe,
                                    const std::vector<runtime::Buffer*>& args, int device);

// Runs `graph` as one replica per device of `replica_devices` (compiled for
// exactly those devices, cached by them): args[i] are replica i's arguments,
// one buffer per parameter, and the result's [i] its outputs. The graph's
// collectives (lowering/collective.h) span the replicas; it donates nothing.
std::vector<std::vector<runtime::BufferPtr>> run_replicated(const ir::Graph& graph,
                                                            const std::vector<std::vector<runtime::Buffer*>>& args,
                                                            const std::vector<int>& replica_devices);

// Outputs of programs enqueued since the last await_in_flight() that are
// still referenced: what a stream or an event waits for.
std::vector<runtime::BufferPtr> in_flight();
// Waits until every program enqueued so far has finished (on every device:
// the CPU plugin gives no cheaper per-device wait); raises the first device
// error among them.
void await_in_flight();

// The dtype a device buffer holds for contents of `dtype`: complex32, which
// XLA lacks, is held (and computed on) as complex64; upload / download convert.
// A dtype the device cannot hold is a TypeError.
c10::ScalarType held_dtype(c10::ScalarType dtype);

// Copies host bytes (`shape` of `dtype`) to a new buffer on `device`.
runtime::BufferPtr upload(const void* data, c10::ScalarType dtype, const ir::Shape& shape, int device);
// Copies `nbytes` of `buffer`, which holds contents of `dtype`, to `dst` as
// host `dtype` elements, waiting for the buffer.
void download(const runtime::Buffer& buffer, c10::ScalarType dtype, void* dst, size_t nbytes);

}  // namespace torch_tpu::exec
