// The ATen boundary: an Op turns at::Tensor arguments into graph values, lets
// a lowering build the result, and installs the program's outputs into tpu
// storages when it runs.
//
// Invariants:
//  - One Op is one program: every input read (including reads of views) and
//    every write (including writes into views) of one ATen call lands in the
//    same graph, so an ATen op costs one PJRT execution.
//  - Inputs are deduplicated per storage: a storage read and written by the
//    same op is one parameter, and later reads in the op see the old contents.
//  - 0-d CPU tensors and Python scalars are runtime parameters, never
//    constants, so new values do not recompile.
#pragma once

#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>

#include "device/device.h"
#include "ir/graph.h"
#include "lowering/builder.h"
#include "runtime/pjrt.h"

namespace torch_tpu::aten {

using ir::Graph;
using ir::Shape;
using ir::Value;

class Op {
 public:
  explicit Op(const char* name) : scope_(name) {}

  Graph& g() { return graph_; }
  // Reads `t` (a tpu tensor with any strides, or a 0-d CPU tensor) as a value
  // of shape t.sizes() and dtype t.scalar_type().
  Value in(const at::Tensor& t);
  // A runtime scalar input of `dtype`.
  Value scalar(const c10::Scalar& s, c10::ScalarType dtype);
  // Random state input for one random op producing `like`, drawn from `gen`
  // (or the default generator of like's device).
  Value rng_state(std::optional<at::Generator> gen, const at::Tensor& like);

  // A new contiguous tpu tensor that receives `v` when the op runs.
  at::Tensor result(Value v);
  // Writes `v` (converted to dst's dtype and broadcast to its shape) into the
  // elements of dst's view.
  void write(const at::Tensor& dst, Value v);
  // Compiles (cached) and executes; in debug mode waits for completion.
  void run();

  int device() const { return device_ < 0 ? current_device() : device_; }

 private:
  void use_device(int d);
  Value storage_value(const at::Tensor& t);

  runtime::OpNameScope scope_;
  Graph graph_;
  int device_ = -1;
  // One per graph parameter: a device buffer, or (buffer null) a host value
  // uploaded at run(), once the op's device is known from its tensors.
  struct Arg {
    runtime::BufferPtr buffer;
    at::Tensor host;
  };
  std::vector<Arg> args_;
  std::unordered_map<StorageData*, Value> storage_params_;
  // The latest contents of storages written by this op, by storage.
  std::vector<std::pair<StorageData*, Value>> writes_;
  std::vector<c10::Storage> keep_alive_;
};

// Reads the tensor to host memory as a contiguous CPU tensor of its dtype.
at::Tensor to_cpu(const at::Tensor& t);
// Checks that `t` is a tpu tensor, with PyTorch's same-device message otherwise.
void check_tpu(const at::Tensor& t, const char* what);

}  // namespace torch_tpu::aten
