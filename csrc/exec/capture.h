// compile mode: a torch.compile(backend="tpu") graph captured as one program
// and replayed on new inputs with no per-op work.
//
// A capture runs the graph once, in fused mode, into the empty shared
// recording with the split rules off. What the recording then holds becomes a
// CapturedGraph:
//  - its parameters are bound to the inputs' storages (by input position), to
//    buffers the graph holds as constants, or to pools of host values; the
//    random states among those are drawn anew from their generators on each
//    run, the other host values are the graph's constants;
//  - its outputs are the new contents of every input storage the graph wrote
//    (installed in the storages of the inputs of each run) and of the storages
//    of the returned tensors (fresh storages on each run).
//
// Invariants:
//  - A flush during the capture (a host read, a CPU fallback, a data-dependent
//    shape) means the graph cannot be captured whole; its results are still
//    correct, and capture_end() says why.
//  - run() takes inputs of the capture's layout (the caller guards on sizes,
//    strides, offsets, dtypes, storage sizes and storage sharing) and checks
//    what it relies on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "exec/recording.h"

namespace torch_tpu::exec {

class CapturedGraph {
 public:
  // Runs the program on `inputs`; returns the graph's tensor outputs.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs);

 private:
  friend std::shared_ptr<CapturedGraph> capture_end(const std::vector<at::Tensor>&, const std::vector<at::Tensor>&,
                                                    std::string&);
  // Runs the program and installs the written inputs' new contents; returns
  // the buffers of the returned tensors' storages.
  std::vector<runtime::BufferPtr> execute(const std::vector<at::Tensor>& inputs, bool draw_random);

  // The program, and the same program with each written input's buffer
  // donated to its new contents (used when nothing else holds those buffers:
  // an optimizer step then updates its tensors without a second copy).
  struct Variant {
    ir::Graph graph;
    runtime::ExecutablePtr exe;  // from the cache at the first run
  };
  Variant plain_, donating_;
  std::vector<size_t> donated_inputs_;  // inputs whose buffers donating_ consumes
  int device_ = 0;
  // Per program parameter: an input storage, a constant buffer, or a host pool.
  struct Param {
    int input = -1;
    runtime::BufferPtr constant;
    int pool = -1;
  };
  std::vector<Param> params_;
  std::vector<Recording::HostPool> pools_;
  std::vector<runtime::BufferPtr> constant_pools_;  // uploaded pools without random states
  struct RandomState {
    size_t pool;
    int64_t start;  // of the (seed, counter) pair
    at::Generator generator;
  };
  std::vector<RandomState> random_states_;
  // Program outputs [0, written_inputs_.size()) are new contents of these
  // inputs' storages; the rest are the storages of new_storages_.
  std::vector<int> written_inputs_;
  struct NewStorage {
    size_t nbytes;
    c10::ScalarType contents;
    int output;  // index into execute()'s result, or -1: never written
  };
  std::vector<NewStorage> new_storages_;
  // The returned tensors: views of a new storage, of an input's storage, or
  // of a storage the graph holds as a constant.
  struct Output {
    int new_storage = -1, input = -1;
    c10::Storage constant;
    c10::ScalarType dtype;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
  };
  std::vector<Output> outputs_;
  std::vector<size_t> input_nbytes_;  // 0 for CPU inputs
};

// Starts capturing: runs pending fused work, and gives input storages that
// were never written explicit zeros (a replay's inputs may hold anything).
// Callers then run the graph in fused mode on `inputs`.
void capture_begin(const std::vector<at::Tensor>& inputs);
// Ends the capture of a graph that read `inputs` and returned `outputs` (its
// tpu tensors). Returns the captured graph, after running it once so that
// `outputs` and the written inputs hold this call's results; or null, with
// `why_not` set, when the graph could not be captured whole (what ran is
// still this call's correct result).
std::shared_ptr<CapturedGraph> capture_end(const std::vector<at::Tensor>& inputs,
                                           const std::vector<at::Tensor>& outputs, std::string& why_not);
// What a captured program depends on in its tensor inputs, as bytes to key
// captures by: devices, dtypes, sizes, strides, offsets, storage sizes, and
// which inputs share a storage.
std::string layout_signature(const std::vector<at::Tensor>& inputs);
// Ends a capture whose graph raised; what it recorded runs as fused eager work.
void capture_abort();
// Whether a graph is being captured (between capture_begin and its end).
bool capture_active();

}  // namespace torch_tpu::exec
