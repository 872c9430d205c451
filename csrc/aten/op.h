// The ATen boundary: an Op turns at::Tensor arguments into graph values, lets
// a lowering build the result, and hands the program's writes to a Recording.
//
// Invariants:
//  - One Op is one ATen call: every input read (including reads of views) and
//    every write (including writes into views) of the call lands in one
//    Recording. In debug and strict mode that Recording is the op's own and
//    runs at run() (one PJRT execution per ATen op); in fused mode it is the
//    shared one and runs at the next flush.
//  - Reads see the latest contents, including writes made earlier by the same op.
//  - 0-d CPU tensors, Python scalars and the offsets at which views start are
//    runtime parameters, never constants, so new values do not recompile.
//  - An op that throws before run() leaves nothing behind in the Recording.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "device/device.h"
#include "exec/fused.h"
#include "ir/graph.h"
#include "lowering/builder.h"
#include "lowering/view.h"
#include "runtime/pjrt.h"

namespace torch_tpu::aten {

using ir::Graph;
using ir::Shape;
using ir::Value;

using lower::ViewStart;

class Op {
 public:
  explicit Op(const char* name);
  ~Op();
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  Graph& g() { return rec_->graph(); }
  // Reads `t` (a tpu tensor with any strides, or a 0-d CPU tensor) as a value
  // of shape t.sizes() and dtype t.scalar_type(), with its conjugate and
  // negative bits applied.
  Value in(const at::Tensor& t);
  // A runtime scalar input of `dtype`.
  Value scalar(const c10::Scalar& s, c10::ScalarType dtype);
  // Random state input for one random op producing `like`, drawn from `gen`
  // (or the default generator of like's device).
  Value rng_state(std::optional<at::Generator> gen, const at::Tensor& like);

  // A new contiguous tpu tensor that receives `v` when the op runs.
  at::Tensor result(Value v);
  // The same laid out in `format` (channels_last results of channels_last inputs).
  at::Tensor result(Value v, at::MemoryFormat format);
  // The same laid out as at::empty_like(like) would be: like's strides if it
  // is dense, else dense strides in the same order.
  at::Tensor result_like(Value v, const at::Tensor& like);
  // Writes `v` (converted to dst's dtype and broadcast to its shape) into the
  // elements of dst's view.
  void write(const at::Tensor& dst, Value v);
  // debug / strict: compiles (cached) and executes (debug waits for it);
  // fused: the op is recorded, and the split rules may flush.
  void run();

  int device() const { return rec_->device() < 0 ? current_device() : rec_->device(); }

  // A device-side check, as CUDA's device-side asserts: when any element of
  // `failed` (bool) is true once the program has run, the first host synchronization
  // on this device after that (a read to the host, item(), synchronize())
  // raises IndexError(`message`). See raise_device_check_failure().
  void check_on_device(Value failed, const std::string& message);

 private:
  Value apply_math_bits(const at::Tensor& t, Value v);
  void note_dtype(c10::ScalarType dtype) { complex_ |= c10::isComplexType(dtype); }
  void check_complex_support() const;
  void use_device(int device);
  Value storage_value(const at::Tensor& t);
  ViewStart view_start(const at::Tensor& t);
  Value host_values(const void* data, c10::ScalarType dtype, const Shape& shape);

  // The host scalars this op has read, by value and dtype.
  struct HostScalar {
    c10::ScalarType type, dtype;
    double bits[2];
  };
  std::vector<std::pair<HostScalar, Value>> scalars_;
  runtime::OpNameScope scope_;
  std::optional<exec::FusedOpScope> fused_;
  size_t first_node_ = 0;
  bool complex_ = false;  // the op reads or makes complex values
  std::unique_ptr<exec::Recording> own_;  // debug / strict
  exec::Recording* rec_;
};

// For kernels written for real dtypes only: complex inputs get the same
// NotImplementedError as Op::run gives for any real-only lowering.
inline void check_not_complex(const char* name, const at::Tensor& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(!t.is_complex(), "tpu: ", name, " does not support complex tensors yet");
}
inline Shape shape_of(const at::Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }
// Half types compute (accumulate) in float32, as PyTorch's CPU kernels do; complex32 in complex64.
inline c10::ScalarType accumulate_type(c10::ScalarType t) {
  if (t == c10::kComplexHalf) return c10::kComplexFloat;
  return (t == c10::kHalf || t == c10::kBFloat16) ? c10::kFloat : t;
}
// PyTorch index semantics: negative indices count from the end (result int64).
// `index` is op.in(index_tensor) or a reshape or broadcast of it; when that
// tensor is on the device, an index outside [-size, size) fails a device-side
// check (CPU index tensors are checked on the host before they get here).
Value wrap_index(Op& op, const at::Tensor& index_tensor, Value index, int64_t size);
// Checks that the values of a device index tensor (`index`, int64, is
// op.in(index_tensor) or a reshape of it) lie in [lo, hi): at once when the
// host holds them (a small upload), with host_error(bad value) raised as an
// IndexError or (index_error false) a RuntimeError; else by a device-side
// check that fails with device_error.
void check_index_values(Op& op, const at::Tensor& index_tensor, Value index, int64_t lo, int64_t hi,
                        const std::function<std::string(int64_t)>& host_error, bool index_error,
                        const std::string& device_error);

// Raises the first device-side check of `device` that failed in a program
// that has run since the last call (checks still pending in fused mode's
// program wait for it to run). Called where the host waits for the device.
void raise_device_check_failure(int device);
// Whether device-side index checks are recorded (TORCH_TPU_CHECK_INDICES,
// default on); returns the previous setting.
bool set_device_checks(bool enabled);

// An out= kernel's tail: resizes `out` like `result` and copies it in.
at::Tensor& write_out(at::Tensor& out, const at::Tensor& result);
// The same for an op that returns (values, indices): values of self's dtype, Long indices.
std::tuple<at::Tensor&, at::Tensor&> write_values_indices(const char* name, const at::Tensor& self,
                                                          std::tuple<at::Tensor, at::Tensor> result,
                                                          at::Tensor& values, at::Tensor& indices);

// Where an op's result goes. An op with functional, in-place and out= forms
// is one definition, `at::Tensor name(Dest, args...)`, and Forms<&name> makes
// the kernels of its forms that the registration table binds: the definition
// computes the result once and delivers it where the Dest says.
class Dest {
 public:
  enum Form { New, InPlace, Out };
  Dest() = default;  // a new tensor: the functional form
  static Dest in_place(const at::Tensor& self) { return Dest(InPlace, self); }
  static Dest out(const at::Tensor& out) { return Dest(Out, out); }
  Form form() const { return form_; }
  bool is_new() const { return form_ == New; }
  // self (in-place) or the out= tensor; only when !is_new().
  const at::Tensor& target() const { return *target_; }
  // The ATen name of this form (for errors and metrics): one of the three.
  const char* form_name(const char* functional, const char* in_place, const char* out) const {
    return form_ == New ? functional : form_ == InPlace ? in_place : out;
  }
  // out=: the out tensor resized to `sizes` (PyTorch's resize_output), before
  // the op records; nothing for the other forms.
  void resize_out(at::IntArrayRef sizes) const;
  // The op's result `v`: a new tensor, or written into the target (converted
  // to its dtype); runs the op.
  at::Tensor deliver(Op& op, Value v) const;
  // A result computed by other kernels, delivered: returned as it is (New),
  // copied into self (in-place), or into out resized to its shape (out=).
  at::Tensor deliver(const at::Tensor& result) const;

 private:
  Dest(Form form, const at::Tensor& target) : form_(form), target_(&target) {}
  Form form_ = New;
  const at::Tensor* target_ = nullptr;
};

template <class F, F Definition>
struct FormsOf;
// An op whose first argument is not a tensor (cat, normal(float, Tensor)): functional and out=.
template <class... A, at::Tensor (*Definition)(Dest, A...)>
struct FormsOf<at::Tensor (*)(Dest, A...), Definition> {
  static at::Tensor functional(A... a) { return Definition(Dest(), a...); }
  static at::Tensor& out(A... a, at::Tensor& out) {
    Definition(Dest::out(out), a...);
    return out;
  }
};
// An op on self: functional, in-place (self receives the result) and out=.
template <class... A, at::Tensor (*Definition)(Dest, const at::Tensor&, A...)>
struct FormsOf<at::Tensor (*)(Dest, const at::Tensor&, A...), Definition> {
  static at::Tensor functional(const at::Tensor& self, A... a) { return Definition(Dest(), self, a...); }
  static at::Tensor& in_place(at::Tensor& self, A... a) {
    Definition(Dest::in_place(self), self, a...);
    return self;
  }
  static at::Tensor& out(const at::Tensor& self, A... a, at::Tensor& out) {
    Definition(Dest::out(out), self, a...);
    return out;
  }
};
template <auto Definition>
using Forms = FormsOf<decltype(Definition), Definition>;

// Reads the tensor to host memory as a contiguous CPU tensor of its dtype;
// in fused mode pending work runs first, counted as a flush for `reason`.
at::Tensor to_cpu(const at::Tensor& t, const char* reason = "to_cpu");
// A host copy of the storage's current contents, if one is kept: storages read
// a piece at a time (all(t), a Python loop over t[i]) and small uploads (index
// tensors, checked on the host) keep one while their contents stay unchanged.
std::shared_ptr<const HostCopy> kept_host_copy(const StorageData& sd);
void keep_host_copy(StorageData& sd, const void* bytes, size_t nbytes);
// Checks that `t` is a tpu tensor, with PyTorch's same-device message otherwise.
void check_tpu(const at::Tensor& t, const char* what);

}  // namespace torch_tpu::aten
