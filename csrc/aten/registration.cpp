// The one registration table of tpu kernels (sorted by ATen name), and the
// boxed fallback that serves every operator not in it: out= and in-place forms
// through their functional form's kernel, everything else on the CPU.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nested_from_padded_and_nested_example_native.h>
#include <ATen/ops/_nested_from_padded_native.h>
#include <ATen/ops/_nested_select_backward_native.h>
#include <ATen/ops/_nested_tensor_size_native.h>
#include <ATen/ops/_nested_tensor_storage_offsets_native.h>
#include <ATen/ops/_nested_tensor_strides_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/_safe_softmax_native.h>
#include <ATen/ops/_softmax_backward_data_native.h>
#include <ATen/ops/_softmax_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_test_autograd_multiple_dispatch_native.h>
#include <ATen/ops/_to_copy_native.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/abs_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/alias_native.h>
#include <ATen/ops/all_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/bmm_native.h>
#include <ATen/ops/cat_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/chunk_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/cos_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/detach_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/embedding_native.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/eq_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/ge_native.h>
#include <ATen/ops/gelu_backward_native.h>
#include <ATen/ops/gelu_native.h>
#include <ATen/ops/gt_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/is_same_size_native.h>
#include <ATen/ops/isinf_native.h>
#include <ATen/ops/isnan_native.h>
#include <ATen/ops/isneginf_native.h>
#include <ATen/ops/isposinf_native.h>
#include <ATen/ops/linear_backward_native.h>
#include <ATen/ops/linear_native.h>
#include <ATen/ops/logical_not_native.h>
#include <ATen/ops/masked_fill_native.h>
#include <ATen/ops/matmul_backward_native.h>
#include <ATen/ops/matmul_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/narrow_native.h>
#include <ATen/ops/native_dropout_backward_native.h>
#include <ATen/ops/native_dropout_native.h>
#include <ATen/ops/native_layer_norm_backward_native.h>
#include <ATen/ops/native_layer_norm_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/normal_native.h>
#include <ATen/ops/ones_like_native.h>
#include <ATen/ops/relu_native.h>
#include <ATen/ops/resize_as_sparse.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/select_native.h>
#include <ATen/ops/sgn_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/sin_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/split_with_sizes_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/squeeze_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/threshold_backward_native.h>
#include <ATen/ops/to_padded_tensor_native.h>
#include <ATen/ops/transpose_native.h>
#include <ATen/ops/unbind_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/value_selecting_reduction_backward_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/where_native.h>
#include <ATen/ops/zero_native.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "aten/kernels.h"
#include "aten/op.h"
#include "exec/exec.h"
#include "exec/fused.h"
#include "exec/metrics.h"
#include "runtime/env.h"

// at::sparse::flatten_indices, which a sparse COO tensor's validation calls
// (torch.sparse_coo_tensor(..., is_coalesced=True)), goes through a dispatch
// stub with no tpu kernel, where PyTorch asserts. Its kernel for tpu: each
// index's row-major position, the sum over dims of index * stride. The stub
// is declared as ATen declares it (its header is not installed).
namespace {
at::Tensor flatten_sparse_indices(const at::Tensor& indices, at::IntArrayRef size) {
  std::vector<int64_t> strides(size.size(), 1);
  for (int64_t d = static_cast<int64_t>(size.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * size[d + 1];
  auto stride = at::tensor(strides, indices.options().device(c10::kCPU)).to(indices.device()).unsqueeze(1);
  return (indices * stride).sum(0);
}
}  // namespace

namespace at::native {
using flatten_indices_fn = at::Tensor (*)(const at::Tensor& indices, at::IntArrayRef size);
DECLARE_DISPATCH(flatten_indices_fn, flatten_indices_stub);
REGISTER_PRIVATEUSE1_DISPATCH(flatten_indices_stub, &flatten_sparse_indices)
}  // namespace at::native

namespace torch_tpu::aten {
namespace {

bool fallback_allowed() {
  static const bool allowed = env::flag(env::kCpuFallback, true);
  return allowed;
}

// An out= or in-place overload that no kernel of ours names, whose functional
// sibling has a tpu kernel (`cumsum.out`, which PyTorch's `cumsum_` calls, beside
// `cumsum`): it runs that kernel and writes the results where its form says,
// instead of running on the CPU. `destinations` are the argument positions
// written: the out= arguments, or self.
struct FunctionalSibling {
  c10::OperatorHandle functional;
  std::vector<size_t> destinations;
  bool in_place;
  // The position of a `dtype` argument that, left None, the out= form fills
  // with out's dtype: PyTorch's scans and these reductions compute in it.
  std::optional<size_t> dtype_from_out;
  // PyTorch's linalg out= kernels take only their result's dtype, where
  // TensorIterator's out= forms cast to any dtype the result can be cast to.
  bool exact_dtype = false;
};

bool same_arguments(const std::vector<c10::Argument>& a, const std::vector<const c10::Argument*>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name() != b[i]->name() || a[i].type()->str() != b[i]->type()->str()) return false;
  return true;
}

std::optional<FunctionalSibling> find_functional_sibling(const c10::OperatorHandle& op) {
  const c10::FunctionSchema& schema = op.schema();
  const auto& args = schema.arguments();
  const std::string& name = schema.name();
  if (name.rfind("aten::", 0) != 0) return std::nullopt;
  FunctionalSibling sibling{op, {}, false, std::nullopt};
  sibling.exact_dtype = name.rfind("aten::linalg_", 0) == 0 || name.rfind("aten::_linalg_", 0) == 0 ||
                        name == "aten::triangular_solve" || name == "aten::lu_solve";
  std::vector<const c10::Argument*> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_out()) sibling.destinations.push_back(i);
    else inputs.push_back(&args[i]);
  }
  std::vector<c10::OperatorName> candidates;
  static const std::vector<c10::OperatorName> all_ops = c10::Dispatcher::singleton().getAllOpNames();
  if (sibling.destinations.empty()) {
    const bool self_written = !args.empty() && args[0].alias_info() && args[0].alias_info()->isWrite();
    for (size_t i = 1; i < args.size(); ++i)
      if (args[i].alias_info() && args[i].alias_info()->isWrite()) return std::nullopt;
    if (name.back() != '_' || !self_written || schema.returns().size() != 1) return std::nullopt;
    sibling.in_place = true;
    sibling.destinations.push_back(0);
    candidates.push_back({name.substr(0, name.size() - 1), schema.overload_name()});
  } else {
    if (schema.returns().size() != sibling.destinations.size()) return std::nullopt;
    static const std::set<std::string> computing_in_out_dtype = {"aten::cumsum", "aten::cumprod", "aten::prod",
                                                                  "aten::nansum"};
    if (computing_in_out_dtype.count(name) && sibling.destinations.size() == 1) {
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].name() == "dtype") sibling.dtype_from_out = i;
    }
    for (const auto& other : all_ops)
      if (other.name == name && other.overload_name != schema.overload_name()) candidates.push_back(other);
  }
  for (const auto& candidate : candidates) {
    auto handle = c10::Dispatcher::singleton().findOp(candidate);
    if (!handle || !handle->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1)) continue;
    const c10::FunctionSchema& f = handle->schema();
    if (f.is_mutable() || f.returns().size() != sibling.destinations.size() || !same_arguments(f.arguments(), inputs))
      continue;
    bool plain = true;
    for (const auto& r : f.returns()) plain &= !r.alias_info() && r.type()->kind() == c10::TypeKind::TensorType;
    for (size_t i : sibling.destinations) plain &= args[i].type()->kind() == c10::TypeKind::TensorType;
    if (!plain) continue;
    sibling.functional = *handle;
    return sibling;
  }
  return std::nullopt;
}

const std::optional<FunctionalSibling>& functional_sibling(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static std::unordered_map<c10::OperatorName, std::optional<FunctionalSibling>> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(op.operator_name());
  if (it == known.end()) it = known.emplace(op.operator_name(), find_functional_sibling(op)).first;
  return it->second;
}

// The results are cast into the destinations as TensorIterator's out= does.
void run_through_functional(const FunctionalSibling& s, const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - n, stack->end());
  torch::jit::drop(*stack, n);
  std::vector<at::Tensor> destinations;
  torch::jit::Stack call;
  for (size_t i : s.destinations) check_tpu(args[i].toTensor(), s.in_place ? "self" : "out");
  if (s.dtype_from_out && args[*s.dtype_from_out].isNone())
    args[*s.dtype_from_out] = args[s.destinations[0]].toTensor().scalar_type();
  for (size_t i = 0; i < n; ++i) {
    bool destination = std::find(s.destinations.begin(), s.destinations.end(), i) != s.destinations.end();
    if (destination) destinations.push_back(args[i].toTensor());
    if (!destination || s.in_place) call.push_back(std::move(args[i]));
  }
  s.functional.callBoxed(&call);
  TORCH_INTERNAL_ASSERT(call.size() == destinations.size());
  for (size_t k = 0; k < destinations.size(); ++k) {
    const at::Tensor result = call[k].toTensor();
    at::Tensor& destination = destinations[k];
    if (!result.defined()) continue;
    TORCH_CHECK(!s.exact_dtype || result.scalar_type() == destination.scalar_type(), "Expected out tensor to have "
                "dtype ", c10::scalarTypeToTypeMeta(result.scalar_type()), ", but got ",
                c10::scalarTypeToTypeMeta(destination.scalar_type()), " instead");
    TORCH_CHECK(at::canCast(result.scalar_type(), destination.scalar_type()), "result type ",
                result.scalar_type(), " can't be cast to the desired output type ", destination.scalar_type());
    if (s.in_place) {
      TORCH_CHECK(result.sizes() == destination.sizes(), "output with shape ", destination.sizes(),
                  " doesn't match the broadcast shape ", result.sizes());
    } else {
      at::native::resize_output(destination, result.sizes());
    }
    destination.copy_(result);
  }
  for (auto& d : destinations) stack->emplace_back(std::move(d));
}

// The copies the fallback makes would hide a written argument that partly
// overlaps another argument; the CPU kernel (TensorIterator) refuses that.
void check_written_overlap(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& args = op.schema().arguments();
  auto values = torch::jit::last(stack, args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].alias_info() || !args[i].alias_info()->isWrite() || !values[i].isTensor()) continue;
    const at::Tensor& written = values[i].toTensor();
    if (!written.defined() || written.layout() != at::kStrided) continue;
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i || !values[j].isTensor()) continue;
      const at::Tensor& other = values[j].toTensor();
      if (other.defined() && other.layout() == at::kStrided) at::assert_no_partial_overlap(written, other);
    }
  }
}

// The CPU kernel would take a CPU tensor beside tpu ones, which CUDA's kernels
// refuse: the same device check (CPU 0-d tensors pass, as TensorIterator's scalars).
void check_one_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& args = op.schema().arguments();
  auto values = torch::jit::last(stack, args.size());
  std::optional<c10::Device> device;
  const char* cpu_argument = nullptr;
  auto note = [&](const at::Tensor& t, const std::string& name) {
    if (!t.defined()) return;
    if (t.device().type() == c10::DeviceType::PrivateUse1) device = t.device();
    else if (t.device().is_cpu() && t.dim() > 0 && !cpu_argument) cpu_argument = name.c_str();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (values[i].isTensor()) note(values[i].toTensor(), args[i].name());
    else if (values[i].isTensorList())
      for (const at::Tensor& t : values[i].toTensorList().vec()) note(t, args[i].name());
    else if (values[i].isOptionalTensorList())
      for (const auto& t : values[i].toOptionalTensorList().vec()) note(t.value_or(at::Tensor()), args[i].name());
  }
  TORCH_CHECK(!device || !cpu_argument, "Expected all tensors to be on the same device, but found at least two devices, ",
              device ? device->str() : "", " and cpu! (when checking argument for argument ", cpu_argument ? cpu_argument : "",
              " in method ", op.schema().name(), ")");
}

// A random operator run on the CPU cannot take a tpu generator ("Expected a
// 'cpu' device type for generator"): it gets a CPU generator seeded from the
// next stream of the tpu one, so the tpu generator's seed still decides its
// numbers and it advances as a tpu random op would advance it.
void draw_cpu_generators_from_tpu_ones(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  size_t n = op.schema().arguments().size();
  for (size_t i = stack.size() - n; i < stack.size(); ++i) {
    c10::IValue& v = stack[i];
    if (!v.isGenerator()) continue;
    at::Generator generator = v.toGenerator();
    if (!generator.defined() || generator.device().type() != c10::DeviceType::PrivateUse1) continue;
    std::array<uint64_t, 2> stream;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      stream = generator.get<TpuGeneratorImpl>()->next_stream();
    }
    v = at::detail::createCPUGenerator(stream[0] ^ (stream[1] * 0x9E3779B97F4A7C15ULL));
  }
}

// `cpu_key` is the CPU twin of the key that reached the fallback: CPU for
// dense tpu tensors, SparseCPU for sparse COO ones.
void fallback_to(c10::DispatchKey cpu_key, const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema_name = op.schema().operator_name();
  std::string name = schema_name.name;
  if (!schema_name.overload_name.empty()) name += "." + schema_name.overload_name;
  if (cpu_key == c10::DispatchKey::SparseCPU) name += " (sparse)";
  if (cpu_key == c10::DispatchKey::SparseCsrCPU) name += " (sparse compressed)";
  if (cpu_key == c10::DispatchKey::CPU) check_one_device(op, *stack);
  TORCH_CHECK_NOT_IMPLEMENTED(fallback_allowed(), "tpu: operator '", name,
                              "' has no tpu lowering, and TORCH_TPU_CPU_FALLBACK=0 forbids running it on the CPU");
  auto& m = exec::metrics();
  bool first;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.cpu_fallbacks[name]++;
    // Warned once per operator per process, even across reset_metrics().
    static std::set<std::string> warned;
    first = warned.insert(name).second;
  }
  if (first) {
    TORCH_WARN("tpu: operator '", name, "' has no tpu lowering; it runs on the CPU (copying its tensors). ",
               "Set TORCH_TPU_CPU_FALLBACK=0 to make this an error.");
  }
  check_written_overlap(op, *stack);
  if (cpu_key == c10::DispatchKey::CPU) draw_cpu_generators_from_tpu_ones(op, *stack);
  // The CPU reads the operands' current values: deferred work runs first.
  exec::flush("cpu_fallback");
  at::native::cpu_fallback(op, stack, /*error_on_views=*/false, cpu_key);
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (const auto& sibling = functional_sibling(op)) return run_through_functional(*sibling, op, stack);
  fallback_to(c10::DispatchKey::CPU, op, stack);
}

// Kernels lowered for real dtypes only (the linear algebra on XLA's real
// decompositions): complex arguments run the operator on the CPU, as an
// operator without a lowering does, instead of refusing them.
template <auto kernel>
void real_here_complex_on_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  static const c10::KernelFunction here = c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(kernel));
  for (const c10::IValue& v : torch::jit::last(*stack, op.schema().arguments().size())) {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_complex())
      return fallback_to(c10::DispatchKey::CPU, op, stack);
  }
  here.callBoxed(op, keys, stack);
}
template <auto kernel>
torch::CppFunction real_only() {
  return torch::CppFunction::makeFromBoxedFunction<&real_here_complex_on_cpu<kernel>>();
}

void sparse_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  fallback_to(c10::DispatchKey::SparseCPU, op, stack);
}

void sparse_compressed_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  fallback_to(c10::DispatchKey::SparseCsrCPU, op, stack);
}

// Results of the sparse fallback come back with a sparse-to-sparse copy, which
// moves the indices and values tensors across devices. An out= tensor whose
// sizes or sparse and dense dims the result changed (torch.zeros(...,
// out=sparse)) is emptied first: the copy would refuse to change them on a
// non-empty tensor.
at::Tensor copy_from_and_resize_sparse(const at::Tensor& self, const at::Tensor& dst) {
  auto& out = const_cast<at::Tensor&>(dst);
  if (out.sizes() != self.sizes() || out.sparse_dim() != self.sparse_dim() || out.dense_dim() != self.dense_dim())
    out.sparse_resize_and_clear_(self.sizes(), self.sparse_dim(), self.dense_dim());
  return at::copy_sparse_to_sparse_(out, self);
}

// The same for compressed layouts (CSR, CSC, BSR, BSC): the member tensors take
// the source's sizes, then each is copied across devices.
at::Tensor copy_from_and_resize_sparse_compressed(const at::Tensor& self, const at::Tensor& dst) {
  at::resize_as_sparse_(dst, self);
  return const_cast<at::Tensor&>(dst).copy_(self);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

// Sparse COO tpu tensors: indices and values are ordinary tpu tensors, so
// PyTorch's layout-generic kernels build, view and copy them; every other
// sparse operator runs on the CPU through the fallback, as dense ones do.
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_cpu_fallback>());
}
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_coalesced_", at::native::_coalesced_sparse_);
  m.impl("_copy_from_and_resize", copy_from_and_resize_sparse);
  m.impl("_indices", at::native::_indices_sparse);
  m.impl("_nnz", at::native::_nnz_sparse);
  m.impl("_sparse_coo_tensor_with_dims", at::native::new_with_dims_sparse);
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", at::native::new_with_dims_and_tensor_sparse_symint);
  m.impl("_to_dense", sparse_to_dense);
  m.impl("_values", at::native::_values_sparse);
  m.impl("copy_", at::native::copy_sparse_wrapper_);
  m.impl("copy_sparse_to_sparse_", at::native::copy_sparse_);
  m.impl("dense_dim", at::native::dense_dim_sparse);
  m.impl("empty.memory_format", at::native::empty_sparse_symint);
  m.impl("indices", at::native::indices_sparse);
  m.impl("is_coalesced", at::native::is_coalesced_sparse);
  m.impl("sparse_dim", at::native::sparse_dim_sparse);
  m.impl("sparse_resize_", at::native::sparse_resize_);
  m.impl("sparse_resize_and_clear_", at::native::sparse_resize_and_clear_);
  m.impl("values", at::native::values_sparse);
  m.impl("view_as_complex", at::native::view_as_complex_sparse);
  m.impl("view_as_real", at::native::view_as_real_sparse);
}

// Sparse compressed tpu tensors (CSR, CSC, BSR, BSC) the same way: the
// layout-generic kernels that build, take apart and copy them, everything else
// on the CPU.
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_compressed_cpu_fallback>());
}
TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  m.impl("_copy_from_and_resize", copy_from_and_resize_sparse_compressed);
  m.impl("_nnz", at::native::_nnz_sparse_csr);
  m.impl("ccol_indices", at::native::ccol_indices_sparse_csr);
  m.impl("clone", at::native::clone_sparse_compressed);
  m.impl("col_indices", at::native::col_indices_sparse_csr);
  m.impl("copy_", at::native::copy_sparse_compressed_);
  m.impl("crow_indices", at::native::crow_indices_sparse_csr);
  m.impl("dense_dim", at::native::dense_dim_sparse_csr);
  m.impl("empty.memory_format", at::native::empty_sparse_compressed_symint);
  m.impl("empty_like", at::native::empty_like_sparse_csr);
  m.impl("resize_as_sparse_", at::native::resize_as_sparse_compressed_);
  m.impl("row_indices", at::native::row_indices_sparse_csr);
  m.impl("select.int", at::native::select_sparse_csr);
  m.impl("sparse_dim", at::native::sparse_dim_sparse_csr);
  m.impl("values", at::native::values_sparse_csr);
}

// Nested (strided) tpu tensors: PyTorch's nested kernels work on the nested
// tensor's buffer through ordinary ops, so those it registers alike for
// NestedTensorCPU and NestedTensorCUDA (native_functions.yaml; listed by
// scripts/nested_kernels.py) serve tpu too, with to_padded_tensor's and bmm's
// CPU kernels, which also only call ops. The others raise PyTorch's "could not
// run ... with arguments from the 'NestedTensortpu' backend".
TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("_nested_from_padded_and_nested_example", at::native::NestedTensor_from_padded_and_nested_example);
  m.impl("_nested_select_backward", at::native::_nested_select_backward_symint);
  m.impl("_nested_tensor_size", at::native::_nested_tensor_size);
  m.impl("_nested_tensor_storage_offsets", at::native::_nested_tensor_storage_offsets);
  m.impl("_nested_tensor_strides", at::native::_nested_tensor_strides);
  m.impl("_safe_softmax", at::native::_safe_softmax);
  m.impl("_softmax", at::native::softmax_nested);
  m.impl("_softmax_backward_data", at::native::nested_softmax_backward);
  m.impl("_test_autograd_multiple_dispatch.fullcoverage", at::native::_test_autograd_multiple_dispatch_fullcoverage);
  m.impl("_test_autograd_multiple_dispatch.ntonly", at::native::_test_autograd_multiple_dispatch_ntonly);
  m.impl("_to_copy", at::native::_to_copy_nested);
  m.impl("_transformer_encoder_layer_fwd", at::native::transformer_encoder_layer_forward);
  m.impl("abs", at::native::NestedTensor_abs);
  m.impl("abs_", at::native::NestedTensor_abs_);
  m.impl("add.Tensor", at::native::NestedTensor_add_Tensor);
  m.impl("add_.Tensor", at::native::NestedTensor_add__Tensor);
  m.impl("alias", at::native::alias_nested);
  m.impl("all.dim", at::native::NestedTensor_all);
  m.impl("bmm", at::native::bmm_nested);
  m.impl("cat", at::native::cat_nested);
  m.impl("chunk", at::native::chunk_nested_tensor);
  m.impl("clone", at::native::clone_nested);
  m.impl("copy_", at::native::copy_nested_);
  m.impl("cos", at::native::NestedTensor_cos);
  m.impl("detach", at::native::detach);
  m.impl("div.Scalar", at::native::NestedTensor_div_Scalar);
  m.impl("div.Tensor", at::native::NestedTensor_div_Tensor);
  m.impl("embedding", at::native::NestedTensor_embedding);
  m.impl("empty_like", at::native::empty_like_nested);
  m.impl("eq.Scalar", at::native::eq_scalar_nested);
  m.impl("eq.Tensor", at::native::eq_tensor_nested);
  m.impl("fill_.Scalar", static_cast<at::Tensor& (*)(at::Tensor&, const at::Scalar&)>(at::native::fill_nested_));
  m.impl("fill_.Tensor", static_cast<at::Tensor& (*)(at::Tensor&, const at::Tensor&)>(at::native::fill_nested_));
  m.impl("ge.Scalar", at::native::ge_scalar_nested);
  m.impl("gelu", at::native::NestedTensor_gelu);
  m.impl("gelu_", at::native::NestedTensor_gelu_);
  m.impl("gelu_backward", at::native::gelu_backwards_nested);
  m.impl("gt.Scalar", at::native::gt_scalar_nested);
  m.impl("is_same_size", at::native::nested_is_same_size);
  m.impl("isinf", at::native::NestedTensor_isinf);
  m.impl("isnan", at::native::NestedTensor_isnan);
  m.impl("isneginf", at::native::NestedTensor_isneginf);
  m.impl("isposinf", at::native::NestedTensor_isposinf);
  m.impl("linear", at::native::nested_linear);
  m.impl("linear_backward", at::native::nested_linear_backward);
  m.impl("logical_not", at::native::NestedTensor_logical_not);
  m.impl("logical_not_", at::native::NestedTensor_logical_not_);
  m.impl("masked_fill.Scalar", at::native::NestedTensor_masked_fill);
  m.impl("matmul", at::native::matmul_nested);
  m.impl("matmul.out", at::native::matmul_out_nested);
  m.impl("matmul_backward", at::native::matmul_backward_nested);
  m.impl("mul.Scalar", at::native::NestedTensor_mul_Scalar);
  m.impl("mul.Tensor", at::native::NestedTensor_mul_Tensor);
  m.impl("mul_.Scalar", at::native::NestedTensor_mul__Scalar);
  m.impl("mul_.Tensor", at::native::NestedTensor_mul__Tensor);
  m.impl("narrow", at::native::narrow_nested_symint);
  m.impl("native_dropout", at::native::native_dropout_nested);
  m.impl("native_dropout_backward", at::native::native_dropout_backward);
  m.impl("native_layer_norm", at::native::nested_layer_norm);
  m.impl("native_layer_norm_backward", at::native::layer_norm_backward_nested);
  m.impl("neg", at::native::NestedTensor_neg);
  m.impl("neg_", at::native::NestedTensor_neg_);
  m.impl("normal_", at::native::normal_nested_);
  m.impl("ones_like", at::native::ones_like);
  m.impl("relu", at::native::NestedTensor_relu);
  m.impl("relu_", at::native::NestedTensor_relu_);
  m.impl("select.int", at::native::select_nested);
  m.impl("sgn", at::native::NestedTensor_sgn);
  m.impl("sgn_", at::native::NestedTensor_sgn_);
  m.impl("silu", at::native::NestedTensor_silu);
  m.impl("silu_", at::native::NestedTensor_silu_);
  m.impl("silu_backward", at::native::silu_backward_nested);
  m.impl("sin", at::native::NestedTensor_sin);
  m.impl("split_with_sizes", at::native::split_with_sizes_nested);
  m.impl("sqrt", at::native::NestedTensor_sqrt);
  m.impl("squeeze", at::native::squeeze_nested);
  m.impl("squeeze.dim", static_cast<at::Tensor (*)(const at::Tensor&, int64_t)>(at::native::squeeze_dim_nested));
  m.impl("squeeze.dims", static_cast<at::Tensor (*)(const at::Tensor&, at::IntArrayRef)>(at::native::squeeze_dim_nested));
  m.impl("sub.Tensor", at::native::NestedTensor_sub_Tensor);
  m.impl("tanh", at::native::NestedTensor_tanh);
  m.impl("tanh_", at::native::NestedTensor_tanh_);
  m.impl("threshold_backward", at::native::threshold_backwards_nested);
  m.impl("to_padded_tensor", at::native::NestedTensor_to_padded_tensor_generic);
  m.impl("transpose.int", at::native::transpose_nested);
  m.impl("unbind.int", at::native::NestedTensor_unbind);
  m.impl("unsqueeze", at::native::unsqueeze_nested);
  m.impl("value_selecting_reduction_backward", at::native::value_selecting_reduction_backward_nested_symint);
  m.impl("values", at::native::values_nested);
  m.impl("view", at::native::view_nested);
  m.impl("where.self", at::native::NestedTensor_where);
  m.impl("where.self_out", at::native::NestedTensor_where_out);
  m.impl("zero_", at::native::zero_nested_);
}

// Copies read and write conjugate and negative views themselves (see Op::in):
// PyTorch's fallbacks for those bits would resolve them with a copy, which for
// a tpu tensor comes back here.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define TPU_REGISTER_COMPARE(name)                             \
  m.impl(#name ".Scalar", Forms<&name##_scalar>::functional);  \
  m.impl(#name ".Scalar_out", Forms<&name##_scalar>::out);     \
  m.impl(#name ".Tensor", Forms<&name>::functional);           \
  m.impl(#name ".Tensor_out", Forms<&name>::out);              \
  m.impl(#name "_.Scalar", Forms<&name##_scalar>::in_place);   \
  m.impl(#name "_.Tensor", Forms<&name>::in_place);
  m.impl("__ilshift__.Scalar", python_ilshift<at::Scalar>);
  m.impl("__ilshift__.Tensor", python_ilshift<at::Tensor>);
  m.impl("__irshift__.Scalar", python_irshift<at::Scalar>);
  m.impl("__irshift__.Tensor", python_irshift<at::Tensor>);
  m.impl("__lshift__.Scalar", python_lshift<at::Scalar>);
  m.impl("__lshift__.Tensor", python_lshift<at::Tensor>);
  m.impl("__rshift__.Scalar", python_rshift<at::Scalar>);
  m.impl("__rshift__.Tensor", python_rshift<at::Tensor>);
  m.impl("_adaptive_avg_pool2d", adaptive_avg_pool2d);
  m.impl("_adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward);
  m.impl("_adaptive_avg_pool3d", adaptive_avg_pool3d);
  m.impl("_adaptive_avg_pool3d_backward", adaptive_avg_pool3d_backward);
  m.impl("_amp_foreach_non_finite_check_and_unscale_", amp_foreach_non_finite_check_and_unscale_);
  m.impl("_amp_update_scale_", amp_update_scale_);
  m.impl("_batch_norm_with_update", batch_norm_with_update);
  m.impl("_cdist_backward", _cdist_backward);
  m.impl("_cdist_forward", _cdist_forward);
  m.impl("_cholesky_solve_helper", real_only<&cholesky_solve_helper>());
  m.impl("_convert_weight_to_int4pack", convert_weight_to_int4pack);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_ctc_loss", ctc_loss);
  m.impl("_ctc_loss.Tensor", ctc_loss_tensor);
  m.impl("_ctc_loss_backward", ctc_loss_backward);
  m.impl("_cummax_helper", cummax_helper);
  m.impl("_cummin_helper", cummin_helper);
  m.impl("_efficientzerotensor", _efficientzerotensor);
  m.impl("_embedding_bag", _embedding_bag);
  m.impl("_embedding_bag_backward", _embedding_bag_backward);
  m.impl("_embedding_bag_dense_backward", _embedding_bag_dense_backward);
  m.impl("_embedding_bag_forward_only", _embedding_bag);
  m.impl("_embedding_bag_per_sample_weights_backward", _embedding_bag_per_sample_weights_backward);
  m.impl("_fft_c2c", _fft_c2c);
  m.impl("_fft_c2r", _fft_c2r);
  m.impl("_fft_r2c", _fft_r2c);
  m.impl("_foreach_add_.List", foreach_add_list_);
  m.impl("_foreach_add_.Scalar", foreach_add_scalar_);
  m.impl("_foreach_addcdiv_.Scalar", foreach_addcdiv_scalar_);
  m.impl("_foreach_addcdiv_.ScalarList", foreach_addcdiv_scalar_list_);
  m.impl("_foreach_addcmul_.Scalar", foreach_addcmul_scalar_);
  m.impl("_foreach_div_.ScalarList", foreach_div_scalar_list_);
  m.impl("_foreach_lerp_.Scalar", foreach_lerp_scalar_);
  m.impl("_foreach_mul_.List", foreach_mul_list_);
  m.impl("_foreach_mul_.Scalar", foreach_mul_scalar_);
  m.impl("_foreach_sqrt", foreach_sqrt);
  m.impl("_foreach_sqrt_", foreach_sqrt_);
  m.impl("_foreach_sub_.List", foreach_sub_list_);
  m.impl("_fused_adagrad_", fused_adagrad<double>);
  m.impl("_fused_adagrad_.tensor_lr", fused_adagrad<const at::Tensor&>);
  m.impl("_fused_adam_", fused_adam<false, double>);
  m.impl("_fused_adam_.tensor_lr", fused_adam<false, const at::Tensor&>);
  m.impl("_fused_adamw_", fused_adam<true, double>);
  m.impl("_fused_adamw_.tensor_lr", fused_adam<true, const at::Tensor&>);
  m.impl("_fused_sgd_", fused_sgd<double>);
  m.impl("_fused_sgd_.tensor_lr", fused_sgd<const at::Tensor&>);
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
  m.impl("_index_put_impl_", index_put_impl_);
  m.impl("_lazy_clone", lazy_clone);
  m.impl("_linalg_det", real_only<&_linalg_det>());
  m.impl("_linalg_eigh", real_only<&_linalg_eigh>());
  m.impl("_linalg_slogdet", real_only<&_linalg_slogdet>());
  m.impl("_linalg_solve_ex", real_only<&_linalg_solve_ex>());
  m.impl("_linalg_svd", real_only<&_linalg_svd>());
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("_log_softmax", log_softmax);
  m.impl("_log_softmax_backward_data", log_softmax_backward);
  m.impl("_logcumsumexp", real_only<&logcumsumexp>());
  m.impl("_native_batch_norm_legit", native_batch_norm_legit);
  m.impl("_native_batch_norm_legit.no_stats", native_batch_norm_legit_no_stats);
  // A nested tensor from a padded one (to_padded_tensor's backward): PyTorch's
  // generic kernel; its shape argument is a CPU tensor by design.
  m.impl("_nested_from_padded", at::native::nested_from_padded_generic);
  m.impl("_pdist_backward", _pdist_backward);
  m.impl("_pdist_forward", _pdist_forward);
  m.impl("_prelu_kernel", _prelu_kernel);
  m.impl("_prelu_kernel_backward", _prelu_kernel_backward);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("_segment_reduce_backward", _segment_reduce_backward);
  m.impl("_softmax", softmax);
  m.impl("_softmax_backward_data", softmax_backward);
  m.impl("_thnn_fused_gru_cell", thnn_fused_gru_cell);
  m.impl("_thnn_fused_lstm_cell", thnn_fused_lstm_cell);
  m.impl("_unique", unique);
  m.impl("_unique2", unique2);
  m.impl("_upsample_bicubic2d_aa", _upsample_bicubic2d_aa);
  m.impl("_upsample_bicubic2d_aa_backward", _upsample_bicubic2d_aa_backward);
  m.impl("_upsample_bilinear2d_aa", _upsample_bilinear2d_aa);
  m.impl("_upsample_bilinear2d_aa_backward", _upsample_bilinear2d_aa_backward);
  m.impl("_upsample_nearest_exact1d", _upsample_nearest_exact1d);
  m.impl("_upsample_nearest_exact1d_backward", _upsample_nearest_exact1d_backward);
  m.impl("_upsample_nearest_exact2d", _upsample_nearest_exact2d);
  m.impl("_upsample_nearest_exact2d_backward", _upsample_nearest_exact2d_backward);
  m.impl("_upsample_nearest_exact3d", _upsample_nearest_exact3d);
  m.impl("_upsample_nearest_exact3d_backward", _upsample_nearest_exact3d_backward);
  m.impl("_weight_int4pack_mm", weight_int4pack_mm);
  m.impl("_weight_norm_interface", weight_norm_interface);
  m.impl("_weight_norm_interface_backward", weight_norm_interface_backward);
  m.impl("abs", Forms<&abs>::functional);
  m.impl("abs.out", Forms<&abs>::out);
  m.impl("abs_", Forms<&abs>::in_place);
  m.impl("acos", Forms<&acos>::functional);
  m.impl("acos.out", Forms<&acos>::out);
  m.impl("acos_", Forms<&acos>::in_place);
  m.impl("acosh", Forms<&acosh>::functional);
  m.impl("acosh.out", Forms<&acosh>::out);
  m.impl("acosh_", Forms<&acosh>::in_place);
  m.impl("adaptive_max_pool2d", adaptive_max_pool2d);
  m.impl("adaptive_max_pool2d_backward", adaptive_max_pool2d_backward);
  m.impl("adaptive_max_pool3d", adaptive_max_pool3d);
  m.impl("adaptive_max_pool3d_backward", adaptive_max_pool3d_backward);
  m.impl("add.Tensor", Forms<&add>::functional);
  m.impl("add.out", Forms<&add>::out);
  m.impl("add_.Tensor", Forms<&add>::in_place);
  m.impl("addbmm", Forms<&addbmm>::functional);
  m.impl("addbmm.out", Forms<&addbmm>::out);
  m.impl("addbmm_", Forms<&addbmm>::in_place);
  m.impl("addcdiv", Forms<&addcdiv>::functional);
  m.impl("addcdiv.out", Forms<&addcdiv>::out);
  m.impl("addcdiv_", Forms<&addcdiv>::in_place);
  m.impl("addcmul", Forms<&addcmul>::functional);
  m.impl("addcmul.out", Forms<&addcmul>::out);
  m.impl("addcmul_", Forms<&addcmul>::in_place);
  m.impl("addmm", Forms<&addmm>::functional);
  m.impl("addmm.out", Forms<&addmm>::out);
  m.impl("addmm_", Forms<&addmm>::in_place);
  m.impl("addmv", Forms<&addmv>::functional);
  m.impl("addmv.out", Forms<&addmv>::out);
  m.impl("addr", Forms<&addr>::functional);
  m.impl("addr.out", Forms<&addr>::out);
  m.impl("addr_", Forms<&addr>::in_place);
  m.impl("all", all_all);
  m.impl("all.dim", all_dim);
  m.impl("amax", Forms<&amax>::functional);
  m.impl("amax.out", Forms<&amax>::out);
  m.impl("amin", Forms<&amin>::functional);
  m.impl("amin.out", Forms<&amin>::out);
  m.impl("aminmax", aminmax);
  m.impl("angle", Forms<&angle>::functional);
  m.impl("angle.out", Forms<&angle>::out);
  m.impl("any", any_all);
  m.impl("any.dim", any_dim);
  m.impl("arange.start_out", arange_out);
  m.impl("argmax", argmax);
  m.impl("argmin", argmin);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("asin", Forms<&asin>::functional);
  m.impl("asin.out", Forms<&asin>::out);
  m.impl("asin_", Forms<&asin>::in_place);
  m.impl("asinh", Forms<&asinh>::functional);
  m.impl("asinh.out", Forms<&asinh>::out);
  m.impl("asinh_", Forms<&asinh>::in_place);
  m.impl("atan", Forms<&atan>::functional);
  m.impl("atan.out", Forms<&atan>::out);
  m.impl("atan2", Forms<&atan2>::functional);
  m.impl("atan2.out", Forms<&atan2>::out);
  m.impl("atan2_", Forms<&atan2>::in_place);
  m.impl("atan_", Forms<&atan>::in_place);
  m.impl("atanh", Forms<&atanh>::functional);
  m.impl("atanh.out", Forms<&atanh>::out);
  m.impl("atanh_", Forms<&atanh>::in_place);
  m.impl("avg_pool2d", avg_pool2d);
  m.impl("avg_pool2d_backward", avg_pool2d_backward);
  m.impl("avg_pool3d", avg_pool3d);
  m.impl("avg_pool3d_backward", avg_pool3d_backward);
  m.impl("baddbmm", Forms<&baddbmm>::functional);
  m.impl("baddbmm.out", Forms<&baddbmm>::out);
  m.impl("baddbmm_", Forms<&baddbmm>::in_place);
  m.impl("batch_norm_backward", batch_norm_backward);
  m.impl("bernoulli", bernoulli);
  m.impl("bernoulli_.Tensor", bernoulli_tensor_);
  m.impl("bernoulli_.float", bernoulli_float_);
  m.impl("binary_cross_entropy", binary_cross_entropy);
  m.impl("binary_cross_entropy_backward", binary_cross_entropy_backward);
  m.impl("bitwise_and.Tensor", Forms<&bitwise_and>::functional);
  m.impl("bitwise_and.Tensor_out", Forms<&bitwise_and>::out);
  m.impl("bitwise_and_.Tensor", Forms<&bitwise_and>::in_place);
  m.impl("bitwise_left_shift.Tensor", Forms<&bitwise_left_shift>::functional);
  m.impl("bitwise_left_shift.Tensor_out", Forms<&bitwise_left_shift>::out);
  m.impl("bitwise_left_shift_.Tensor", Forms<&bitwise_left_shift>::in_place);
  m.impl("bitwise_not", Forms<&bitwise_not>::functional);
  m.impl("bitwise_not.out", Forms<&bitwise_not>::out);
  m.impl("bitwise_not_", Forms<&bitwise_not>::in_place);
  m.impl("bitwise_or.Tensor", Forms<&bitwise_or>::functional);
  m.impl("bitwise_or.Tensor_out", Forms<&bitwise_or>::out);
  m.impl("bitwise_or_.Tensor", Forms<&bitwise_or>::in_place);
  m.impl("bitwise_right_shift.Tensor", Forms<&bitwise_right_shift>::functional);
  m.impl("bitwise_right_shift.Tensor_out", Forms<&bitwise_right_shift>::out);
  m.impl("bitwise_right_shift_.Tensor", Forms<&bitwise_right_shift>::in_place);
  m.impl("bitwise_xor.Tensor", Forms<&bitwise_xor>::functional);
  m.impl("bitwise_xor.Tensor_out", Forms<&bitwise_xor>::out);
  m.impl("bitwise_xor_.Tensor", Forms<&bitwise_xor>::in_place);
  m.impl("bmm", Forms<&bmm>::functional);
  m.impl("bmm.out", Forms<&bmm>::out);
  m.impl("bucketize.Tensor", bucketize);
  m.impl("cat", Forms<&cat>::functional);
  m.impl("cat.out", Forms<&cat>::out);
  m.impl("cauchy_", cauchy_);
  m.impl("ceil", Forms<&ceil>::functional);
  m.impl("ceil.out", Forms<&ceil>::out);
  m.impl("ceil_", Forms<&ceil>::in_place);
  m.impl("channel_shuffle", channel_shuffle);
  m.impl("cholesky", real_only<&cholesky>());
  m.impl("cholesky_inverse", real_only<&cholesky_inverse>());
  m.impl("clamp", Forms<&clamp>::functional);
  m.impl("clamp.Tensor", Forms<&clamp_tensor>::functional);
  m.impl("clamp.Tensor_out", Forms<&clamp_tensor>::out);
  m.impl("clamp.out", Forms<&clamp>::out);
  m.impl("clamp_", Forms<&clamp>::in_place);
  m.impl("clamp_.Tensor", Forms<&clamp_tensor>::in_place);
  m.impl("clamp_max", Forms<&clamp_max>::functional);
  m.impl("clamp_max.Tensor", Forms<&clamp_max_tensor>::functional);
  m.impl("clamp_max.Tensor_out", Forms<&clamp_max_tensor>::out);
  m.impl("clamp_max.out", Forms<&clamp_max>::out);
  m.impl("clamp_max_", Forms<&clamp_max>::in_place);
  m.impl("clamp_max_.Tensor", Forms<&clamp_max_tensor>::in_place);
  m.impl("clamp_min", Forms<&clamp_min>::functional);
  m.impl("clamp_min.Tensor", Forms<&clamp_min_tensor>::functional);
  m.impl("clamp_min.Tensor_out", Forms<&clamp_min_tensor>::out);
  m.impl("clamp_min.out", Forms<&clamp_min>::out);
  m.impl("clamp_min_", Forms<&clamp_min>::in_place);
  m.impl("clamp_min_.Tensor", Forms<&clamp_min_tensor>::in_place);
  m.impl("col2im", col2im);
  m.impl("complex.out", complex_out);
  m.impl("conj_physical.out", Forms<&conj_physical>::out);
  m.impl("convolution_backward_overrideable", convolution_backward_overrideable);
  m.impl("convolution_overrideable", convolution_overrideable);
  m.impl("copysign.Tensor", Forms<&copysign>::functional);
  m.impl("copysign.out", Forms<&copysign>::out);
  m.impl("copysign_.Tensor", Forms<&copysign>::in_place);
  m.impl("cos", Forms<&cos>::functional);
  m.impl("cos.out", Forms<&cos>::out);
  m.impl("cos_", Forms<&cos>::in_place);
  m.impl("cosh", Forms<&cosh>::functional);
  m.impl("cosh.out", Forms<&cosh>::out);
  m.impl("cosh_", Forms<&cosh>::in_place);
  m.impl("count_nonzero.dim_IntList", count_nonzero);
  m.impl("cumprod", cumprod);
  m.impl("cumsum", cumsum);
  m.impl("digamma", Forms<&digamma>::functional);
  m.impl("digamma.out", Forms<&digamma>::out);
  m.impl("digamma_", Forms<&digamma>::in_place);
  m.impl("div.Tensor", Forms<&div>::functional);
  m.impl("div.Tensor_mode", Forms<&div_mode>::functional);
  m.impl("div.out", Forms<&div>::out);
  m.impl("div.out_mode", Forms<&div_mode>::out);
  m.impl("div_.Tensor", Forms<&div>::in_place);
  m.impl("div_.Tensor_mode", Forms<&div_mode>::in_place);
  m.impl("dot", dot);
  m.impl("elu", Forms<&elu>::functional);
  m.impl("elu.out", Forms<&elu>::out);
  m.impl("elu_", Forms<&elu>::in_place);
  m.impl("elu_backward", elu_backward);
  m.impl("embedding_dense_backward", embedding_dense_backward);
  m.impl("embedding_renorm_", embedding_renorm_);
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  TPU_REGISTER_COMPARE(eq)
  m.impl("equal", equal);
  m.impl("erf", Forms<&erf>::functional);
  m.impl("erf.out", Forms<&erf>::out);
  m.impl("erf_", Forms<&erf>::in_place);
  m.impl("erfc", Forms<&erfc>::functional);
  m.impl("erfc.out", Forms<&erfc>::out);
  m.impl("erfc_", Forms<&erfc>::in_place);
  m.impl("erfinv", Forms<&erfinv>::functional);
  m.impl("erfinv.out", Forms<&erfinv>::out);
  m.impl("erfinv_", Forms<&erfinv>::in_place);
  m.impl("exp", Forms<&exp>::functional);
  m.impl("exp.out", Forms<&exp>::out);
  m.impl("exp2", Forms<&exp2>::functional);
  m.impl("exp2.out", Forms<&exp2>::out);
  m.impl("exp2_", Forms<&exp2>::in_place);
  m.impl("exp_", Forms<&exp>::in_place);
  m.impl("expm1", Forms<&expm1>::functional);
  m.impl("expm1.out", Forms<&expm1>::out);
  m.impl("expm1_", Forms<&expm1>::in_place);
  m.impl("exponential_", exponential_);
  m.impl("eye.m_out", eye_m_out);
  m.impl("eye.out", eye_out);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("flip", flip);
  m.impl("floor", Forms<&floor>::functional);
  m.impl("floor.out", Forms<&floor>::out);
  m.impl("floor_", Forms<&floor>::in_place);
  m.impl("floor_divide", Forms<&floor_divide>::functional);
  m.impl("floor_divide.out", Forms<&floor_divide>::out);
  m.impl("floor_divide_.Tensor", Forms<&floor_divide>::in_place);
  m.impl("fmax", Forms<&fmax>::functional);
  m.impl("fmax.out", Forms<&fmax>::out);
  m.impl("fmin", Forms<&fmin>::functional);
  m.impl("fmin.out", Forms<&fmin>::out);
  m.impl("fmod.Tensor", Forms<&fmod>::functional);
  m.impl("fmod.Tensor_out", Forms<&fmod>::out);
  m.impl("fmod_.Tensor", Forms<&fmod>::in_place);
  m.impl("frac", Forms<&frac>::functional);
  m.impl("frac.out", Forms<&frac>::out);
  m.impl("frac_", Forms<&frac>::in_place);
  m.impl("fractional_max_pool2d", fractional_max_pool2d);
  m.impl("fractional_max_pool2d_backward", fractional_max_pool2d_backward);
  m.impl("fractional_max_pool3d", fractional_max_pool3d);
  m.impl("fractional_max_pool3d_backward", fractional_max_pool3d_backward);
  m.impl("frexp.Tensor_out", frexp_out);
  m.impl("gather", gather);
  m.impl("gcd", Forms<&gcd>::functional);
  m.impl("gcd.out", Forms<&gcd>::out);
  m.impl("gcd_", Forms<&gcd>::in_place);
  TPU_REGISTER_COMPARE(ge)
  m.impl("gelu", gelu);
  m.impl("gelu_backward", gelu_backward);
  m.impl("geometric_", geometric_);
  m.impl("geqrf", real_only<&geqrf>());
  m.impl("glu", glu);
  m.impl("glu_backward", glu_backward);
  m.impl("grid_sampler_2d", grid_sampler_2d);
  m.impl("grid_sampler_3d", grid_sampler_3d);
  TPU_REGISTER_COMPARE(gt)
  m.impl("hardshrink", Forms<&hardshrink>::functional);
  m.impl("hardshrink.out", Forms<&hardshrink>::out);
  m.impl("hardshrink_backward", hardshrink_backward);
  m.impl("hardsigmoid", Forms<&hardsigmoid>::functional);
  m.impl("hardsigmoid.out", Forms<&hardsigmoid>::out);
  m.impl("hardsigmoid_", Forms<&hardsigmoid>::in_place);
  m.impl("hardsigmoid_backward", hardsigmoid_backward);
  m.impl("hardswish", Forms<&hardswish>::functional);
  m.impl("hardswish.out", Forms<&hardswish>::out);
  m.impl("hardswish_", Forms<&hardswish>::in_place);
  m.impl("hardswish_backward", hardswish_backward);
  m.impl("hardtanh", Forms<&hardtanh>::functional);
  m.impl("hardtanh.out", Forms<&hardtanh>::out);
  m.impl("hardtanh_", Forms<&hardtanh>::in_place);
  m.impl("hardtanh_backward", hardtanh_backward);
  m.impl("hash_tensor", Forms<&hash_tensor>::functional);
  m.impl("hash_tensor.out", Forms<&hash_tensor>::out);
  m.impl("heaviside", Forms<&heaviside>::functional);
  m.impl("heaviside.out", Forms<&heaviside>::out);
  m.impl("heaviside_", Forms<&heaviside>::in_place);
  m.impl("histc", histc);
  m.impl("huber_loss", huber_loss);
  m.impl("huber_loss_backward", huber_loss_backward);
  m.impl("hypot", Forms<&hypot>::functional);
  m.impl("hypot.out", Forms<&hypot>::out);
  m.impl("hypot_", Forms<&hypot>::in_place);
  m.impl("i0", Forms<&i0>::functional);
  m.impl("i0.out", Forms<&i0>::out);
  m.impl("i0_", Forms<&i0>::in_place);
  m.impl("im2col", im2col);
  m.impl("index.Tensor", index_tensor);
  m.impl("index_add", Forms<&index_add>::functional);
  m.impl("index_add.out", Forms<&index_add>::out);
  m.impl("index_add_", Forms<&index_add>::in_place);
  m.impl("index_copy", Forms<&index_copy>::functional);
  m.impl("index_copy.out", Forms<&index_copy>::out);
  m.impl("index_copy_", Forms<&index_copy>::in_place);
  m.impl("index_fill_.int_Scalar", index_fill_scalar_);
  m.impl("index_fill_.int_Tensor", index_fill_tensor_);
  m.impl("index_reduce", Forms<&index_reduce>::functional);
  m.impl("index_reduce.out", Forms<&index_reduce>::out);
  m.impl("index_reduce_", Forms<&index_reduce>::in_place);
  m.impl("index_select", index_select);
  m.impl("isin.Tensor_Tensor", isin);
  m.impl("isnan", isnan);
  m.impl("isneginf", Forms<&isneginf>::functional);
  m.impl("isneginf.out", Forms<&isneginf>::out);
  m.impl("isposinf", Forms<&isposinf>::functional);
  m.impl("isposinf.out", Forms<&isposinf>::out);
  m.impl("kthvalue", kthvalue);
  m.impl("lcm", Forms<&lcm>::functional);
  m.impl("lcm.out", Forms<&lcm>::out);
  m.impl("lcm_", Forms<&lcm>::in_place);
  TPU_REGISTER_COMPARE(le)
  m.impl("leaky_relu", Forms<&leaky_relu>::functional);
  m.impl("leaky_relu.out", Forms<&leaky_relu>::out);
  m.impl("leaky_relu_", Forms<&leaky_relu>::in_place);
  m.impl("leaky_relu_backward", leaky_relu_backward);
  m.impl("lerp.Scalar", Forms<&lerp_scalar>::functional);
  m.impl("lerp.Scalar_out", Forms<&lerp_scalar>::out);
  m.impl("lerp.Tensor", Forms<&lerp_tensor>::functional);
  m.impl("lerp.Tensor_out", Forms<&lerp_tensor>::out);
  m.impl("lerp_.Scalar", Forms<&lerp_scalar>::in_place);
  m.impl("lerp_.Tensor", Forms<&lerp_tensor>::in_place);
  m.impl("lgamma", Forms<&lgamma>::functional);
  m.impl("lgamma.out", Forms<&lgamma>::out);
  m.impl("lgamma_", Forms<&lgamma>::in_place);
  m.impl("linalg_cholesky_ex", real_only<&linalg_cholesky_ex>());
  m.impl("linalg_cross", Forms<&linalg_cross>::functional);
  m.impl("linalg_cross.out", Forms<&linalg_cross>::out);
  m.impl("linalg_householder_product", real_only<&linalg_householder_product>());
  m.impl("linalg_inv_ex", real_only<&linalg_inv_ex>());
  m.impl("linalg_lu", real_only<&linalg_lu>());
  m.impl("linalg_lu_factor_ex", real_only<&linalg_lu_factor_ex>());
  m.impl("linalg_lu_solve", real_only<&linalg_lu_solve>());
  m.impl("linalg_matrix_exp", real_only<&linalg_matrix_exp>());
  m.impl("linalg_qr", real_only<&linalg_qr>());
  m.impl("linalg_solve_triangular", real_only<&linalg_solve_triangular>());
  m.impl("linalg_vector_norm", linalg_vector_norm);
  m.impl("linspace.out", linspace_out);
  m.impl("log", Forms<&log>::functional);
  m.impl("log.out", Forms<&log>::out);
  m.impl("log10", Forms<&log10>::functional);
  m.impl("log10.out", Forms<&log10>::out);
  m.impl("log10_", Forms<&log10>::in_place);
  m.impl("log1p", Forms<&log1p>::functional);
  m.impl("log1p.out", Forms<&log1p>::out);
  m.impl("log1p_", Forms<&log1p>::in_place);
  m.impl("log2", Forms<&log2>::functional);
  m.impl("log2.out", Forms<&log2>::out);
  m.impl("log2_", Forms<&log2>::in_place);
  m.impl("log_", Forms<&log>::in_place);
  m.impl("log_normal_", log_normal_);
  m.impl("log_sigmoid_backward", log_sigmoid_backward);
  m.impl("log_sigmoid_forward", log_sigmoid_forward);
  m.impl("logaddexp", Forms<&logaddexp>::functional);
  m.impl("logaddexp.out", Forms<&logaddexp>::out);
  m.impl("logaddexp2", Forms<&logaddexp2>::functional);
  m.impl("logaddexp2.out", Forms<&logaddexp2>::out);
  m.impl("logical_and", Forms<&logical_and>::functional);
  m.impl("logical_and.out", Forms<&logical_and>::out);
  m.impl("logical_and_", Forms<&logical_and>::in_place);
  m.impl("logical_not", Forms<&logical_not>::functional);
  m.impl("logical_not.out", Forms<&logical_not>::out);
  m.impl("logical_not_", Forms<&logical_not>::in_place);
  m.impl("logical_or", Forms<&logical_or>::functional);
  m.impl("logical_or.out", Forms<&logical_or>::out);
  m.impl("logical_or_", Forms<&logical_or>::in_place);
  m.impl("logical_xor", Forms<&logical_xor>::functional);
  m.impl("logical_xor.out", Forms<&logical_xor>::out);
  m.impl("logical_xor_", Forms<&logical_xor>::in_place);
  m.impl("logit", Forms<&logit>::functional);
  m.impl("logit.out", Forms<&logit>::out);
  m.impl("logit_", Forms<&logit>::in_place);
  m.impl("logit_backward", logit_backward);
  m.impl("logspace.out", logspace_out);
  TPU_REGISTER_COMPARE(lt)
  m.impl("lu_unpack", lu_unpack);
  m.impl("masked_fill_.Scalar", masked_fill_scalar_);
  m.impl("masked_fill_.Tensor", masked_fill_tensor_);
  m.impl("masked_scatter_", masked_scatter_);
  m.impl("masked_select", masked_select);
  m.impl("max", max_all);
  m.impl("max.dim", max_dim);
  m.impl("max_pool2d_with_indices", max_pool2d_with_indices);
  m.impl("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward);
  m.impl("max_pool3d_with_indices", max_pool3d_with_indices);
  m.impl("max_pool3d_with_indices_backward", max_pool3d_with_indices_backward);
  m.impl("max_unpool2d", max_unpool2d);
  m.impl("max_unpool3d", max_unpool3d);
  m.impl("maximum", Forms<&maximum>::functional);
  m.impl("maximum.out", Forms<&maximum>::out);
  m.impl("mean.dim", Forms<&mean_dim>::functional);
  m.impl("mean.out", Forms<&mean_dim>::out);
  m.impl("median", median);
  m.impl("median.dim", median_dim);
  m.impl("min", min_all);
  m.impl("min.dim", min_dim);
  m.impl("minimum", Forms<&minimum>::functional);
  m.impl("minimum.out", Forms<&minimum>::out);
  m.impl("mish", Forms<&mish>::functional);
  m.impl("mish.out", Forms<&mish>::out);
  m.impl("mish_", Forms<&mish>::in_place);
  m.impl("mish_backward", mish_backward);
  m.impl("mm", Forms<&mm>::functional);
  m.impl("mm.out", Forms<&mm>::out);
  m.impl("mode", mode);
  m.impl("mode.values", mode_out);
  m.impl("mse_loss", mse_loss);
  m.impl("mse_loss_backward", mse_loss_backward);
  m.impl("mul.Tensor", Forms<&mul>::functional);
  m.impl("mul.out", Forms<&mul>::out);
  m.impl("mul_.Tensor", Forms<&mul>::in_place);
  m.impl("multi_margin_loss", multi_margin_loss);
  m.impl("multi_margin_loss_backward", multi_margin_loss_backward);
  m.impl("multilabel_margin_loss_backward", multilabel_margin_loss_backward);
  m.impl("multilabel_margin_loss_forward", multilabel_margin_loss_forward);
  m.impl("multinomial", multinomial);
  m.impl("nan_to_num", Forms<&nan_to_num>::functional);
  m.impl("nan_to_num.out", Forms<&nan_to_num>::out);
  m.impl("nan_to_num_", Forms<&nan_to_num>::in_place);
  m.impl("nanmedian", nanmedian);
  m.impl("nanmedian.dim", nanmedian_dim);
  m.impl("nansum", nansum);
  m.impl("native_batch_norm", native_batch_norm);
  m.impl("native_batch_norm_backward", native_batch_norm_backward);
  m.impl("native_dropout", native_dropout);
  m.impl("native_dropout_backward", native_dropout_backward);
  m.impl("native_group_norm", native_group_norm);
  m.impl("native_group_norm_backward", native_group_norm_backward);
  m.impl("native_layer_norm", native_layer_norm);
  m.impl("native_layer_norm_backward", native_layer_norm_backward);
  TPU_REGISTER_COMPARE(ne)
  m.impl("neg", Forms<&neg>::functional);
  m.impl("neg.out", Forms<&neg>::out);
  m.impl("neg_", Forms<&neg>::in_place);
  m.impl("nextafter", Forms<&nextafter>::functional);
  m.impl("nextafter.out", Forms<&nextafter>::out);
  m.impl("nextafter_", Forms<&nextafter>::in_place);
  m.impl("nll_loss2d_backward", nll_loss2d_backward);
  m.impl("nll_loss2d_forward", nll_loss2d_forward);
  m.impl("nll_loss_backward", nll_loss_backward);
  m.impl("nll_loss_forward", nll_loss_forward);
  m.impl("nonzero", Forms<&nonzero>::functional);
  m.impl("nonzero.out", Forms<&nonzero>::out);
  m.impl("nonzero_static", nonzero_static);
  m.impl("norm.ScalarOpt_dim", norm_dim);
  m.impl("norm.ScalarOpt_dim_dtype", norm_dim_dtype);
  m.impl("normal.Tensor_Tensor", Forms<&normal_tensor_tensor>::functional);
  m.impl("normal.Tensor_Tensor_out", Forms<&normal_tensor_tensor>::out);
  m.impl("normal.Tensor_float", Forms<&normal_tensor_float>::functional);
  m.impl("normal.Tensor_float_out", Forms<&normal_tensor_float>::out);
  m.impl("normal.float_Tensor", Forms<&normal_float_tensor>::functional);
  m.impl("normal.float_Tensor_out", Forms<&normal_float_tensor>::out);
  m.impl("normal_", normal_);
  m.impl("ormqr", real_only<&ormqr>());
  m.impl("polar.out", polar_out);
  m.impl("polygamma", Forms<&polygamma>::functional);
  m.impl("polygamma.out", Forms<&polygamma>::out);
  m.impl("polygamma_", polygamma_);
  m.impl("pow.Scalar", Forms<&pow_scalar_base>::functional);
  m.impl("pow.Scalar_out", Forms<&pow_scalar_base>::out);
  m.impl("pow.Tensor_Scalar", Forms<&pow_tensor_scalar>::functional);
  m.impl("pow.Tensor_Scalar_out", Forms<&pow_tensor_scalar>::out);
  m.impl("pow.Tensor_Tensor", Forms<&pow>::functional);
  m.impl("pow.Tensor_Tensor_out", Forms<&pow>::out);
  m.impl("pow_.Scalar", Forms<&pow_tensor_scalar>::in_place);
  m.impl("pow_.Tensor", Forms<&pow>::in_place);
  m.impl("prod", prod);
  m.impl("prod.dim_int", Forms<&prod_dim>::functional);
  m.impl("prod.int_out", Forms<&prod_dim>::out);
  m.impl("put_", put_);
  m.impl("random_", random_);
  m.impl("random_.from", random_from);
  m.impl("random_.to", random_to);
  m.impl("randperm.generator_out", randperm_out);
  m.impl("reciprocal", Forms<&reciprocal>::functional);
  m.impl("reciprocal.out", Forms<&reciprocal>::out);
  m.impl("reciprocal_", Forms<&reciprocal>::in_place);
  m.impl("reflection_pad1d", reflection_pad1d);
  m.impl("reflection_pad1d_backward", reflection_pad1d_backward);
  m.impl("reflection_pad2d", reflection_pad2d);
  m.impl("reflection_pad2d_backward", reflection_pad2d_backward);
  m.impl("reflection_pad3d", reflection_pad3d);
  m.impl("reflection_pad3d_backward", reflection_pad3d_backward);
  m.impl("relu", Forms<&relu>::functional);
  m.impl("relu_", Forms<&relu>::in_place);
  m.impl("remainder.Tensor", Forms<&remainder>::functional);
  m.impl("remainder.Tensor_out", Forms<&remainder>::out);
  m.impl("remainder_.Tensor", Forms<&remainder>::in_place);
  m.impl("renorm", real_only<&Forms<&renorm>::functional>());
  m.impl("renorm.out", real_only<&Forms<&renorm>::out>());
  m.impl("renorm_", real_only<&Forms<&renorm>::in_place>());
  m.impl("replication_pad1d", replication_pad1d);
  m.impl("replication_pad1d_backward", replication_pad1d_backward);
  m.impl("replication_pad2d", replication_pad2d);
  m.impl("replication_pad2d_backward", replication_pad2d_backward);
  m.impl("replication_pad3d", replication_pad3d);
  m.impl("replication_pad3d_backward", replication_pad3d_backward);
  m.impl("resize_", resize_);
  m.impl("roll", roll);
  m.impl("round", Forms<&round>::functional);
  m.impl("round.decimals", Forms<&round_decimals>::functional);
  m.impl("round.decimals_out", Forms<&round_decimals>::out);
  m.impl("round.out", Forms<&round>::out);
  m.impl("round_", Forms<&round>::in_place);
  m.impl("round_.decimals", Forms<&round_decimals>::in_place);
  m.impl("rrelu_with_noise", Forms<&rrelu_with_noise>::functional);
  m.impl("rrelu_with_noise.out", Forms<&rrelu_with_noise>::out);
  m.impl("rrelu_with_noise_", Forms<&rrelu_with_noise>::in_place);
  m.impl("rrelu_with_noise_backward", rrelu_with_noise_backward);
  m.impl("rsqrt", Forms<&rsqrt>::functional);
  m.impl("rsqrt.out", Forms<&rsqrt>::out);
  m.impl("rsqrt_", Forms<&rsqrt>::in_place);
  m.impl("rsub.Tensor", rsub);
  m.impl("scatter.reduce", Forms<&scatter_reduce>::functional);
  m.impl("scatter.reduce_out", Forms<&scatter_reduce>::out);
  m.impl("scatter.src", Forms<&scatter_src>::functional);
  m.impl("scatter.src_out", Forms<&scatter_src>::out);
  m.impl("scatter.value", Forms<&scatter_value>::functional);
  m.impl("scatter.value_out", Forms<&scatter_value>::out);
  m.impl("scatter.value_reduce", Forms<&scatter_value_reduce>::functional);
  m.impl("scatter.value_reduce_out", Forms<&scatter_value_reduce>::out);
  m.impl("scatter_add", Forms<&scatter_add>::functional);
  m.impl("scatter_add_", Forms<&scatter_add>::in_place);
  m.impl("scatter_reduce.two", Forms<&scatter_reduce_two>::functional);
  m.impl("scatter_reduce.two_out", Forms<&scatter_reduce_two>::out);
  m.impl("scatter_reduce_.two", Forms<&scatter_reduce_two>::in_place);
  m.impl("searchsorted.Tensor", searchsorted);
  m.impl("segment_reduce", segment_reduce);
  m.impl("set_", set_empty);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("sgn", Forms<&sgn>::functional);
  m.impl("sgn.out", Forms<&sgn>::out);
  m.impl("sgn_", Forms<&sgn>::in_place);
  m.impl("sigmoid", Forms<&sigmoid>::functional);
  m.impl("sigmoid.out", Forms<&sigmoid>::out);
  m.impl("sigmoid_", Forms<&sigmoid>::in_place);
  m.impl("sigmoid_backward", Forms<&sigmoid_backward>::functional);
  m.impl("sign", Forms<&sign>::functional);
  m.impl("sign.out", Forms<&sign>::out);
  m.impl("sign_", Forms<&sign>::in_place);
  m.impl("signbit", Forms<&signbit>::functional);
  m.impl("signbit.out", Forms<&signbit>::out);
  m.impl("silu", Forms<&silu>::functional);
  m.impl("silu.out", Forms<&silu>::out);
  m.impl("silu_", Forms<&silu>::in_place);
  m.impl("silu_backward", Forms<&silu_backward>::functional);
  m.impl("sin", Forms<&sin>::functional);
  m.impl("sin.out", Forms<&sin>::out);
  m.impl("sin_", Forms<&sin>::in_place);
  m.impl("sinc", Forms<&sinc>::functional);
  m.impl("sinc.out", Forms<&sinc>::out);
  m.impl("sinc_", Forms<&sinc>::in_place);
  m.impl("sinh", Forms<&sinh>::functional);
  m.impl("sinh.out", Forms<&sinh>::out);
  m.impl("sinh_", Forms<&sinh>::in_place);
  m.impl("smooth_l1_loss", smooth_l1_loss);
  m.impl("smooth_l1_loss_backward", smooth_l1_loss_backward);
  m.impl("softplus", Forms<&softplus>::functional);
  m.impl("softplus.out", Forms<&softplus>::out);
  m.impl("softplus_backward", softplus_backward);
  m.impl("softshrink", Forms<&softshrink>::functional);
  m.impl("softshrink.out", Forms<&softshrink>::out);
  m.impl("softshrink_backward", softshrink_backward);
  m.impl("sort.stable", sort_stable);
  m.impl("sort.values_stable", sort_stable_out);
  m.impl("special_airy_ai", Forms<&special_airy_ai>::functional);
  m.impl("special_airy_ai.out", Forms<&special_airy_ai>::out);
  m.impl("special_bessel_j0", Forms<&special_bessel_j0>::functional);
  m.impl("special_bessel_j0.out", Forms<&special_bessel_j0>::out);
  m.impl("special_bessel_j1", Forms<&special_bessel_j1>::functional);
  m.impl("special_bessel_j1.out", Forms<&special_bessel_j1>::out);
  m.impl("special_bessel_y0", Forms<&special_bessel_y0>::functional);
  m.impl("special_bessel_y0.out", Forms<&special_bessel_y0>::out);
  m.impl("special_bessel_y1", Forms<&special_bessel_y1>::functional);
  m.impl("special_bessel_y1.out", Forms<&special_bessel_y1>::out);
  m.impl("special_chebyshev_polynomial_t", Forms<&special_chebyshev_polynomial_t>::functional);
  m.impl("special_chebyshev_polynomial_t.out", Forms<&special_chebyshev_polynomial_t>::out);
  m.impl("special_chebyshev_polynomial_u", Forms<&special_chebyshev_polynomial_u>::functional);
  m.impl("special_chebyshev_polynomial_u.out", Forms<&special_chebyshev_polynomial_u>::out);
  m.impl("special_chebyshev_polynomial_v", Forms<&special_chebyshev_polynomial_v>::functional);
  m.impl("special_chebyshev_polynomial_v.out", Forms<&special_chebyshev_polynomial_v>::out);
  m.impl("special_chebyshev_polynomial_w", Forms<&special_chebyshev_polynomial_w>::functional);
  m.impl("special_chebyshev_polynomial_w.out", Forms<&special_chebyshev_polynomial_w>::out);
  m.impl("special_entr", Forms<&special_entr>::functional);
  m.impl("special_entr.out", Forms<&special_entr>::out);
  m.impl("special_erfcx", Forms<&special_erfcx>::functional);
  m.impl("special_erfcx.out", Forms<&special_erfcx>::out);
  m.impl("special_hermite_polynomial_h", Forms<&special_hermite_polynomial_h>::functional);
  m.impl("special_hermite_polynomial_h.out", Forms<&special_hermite_polynomial_h>::out);
  m.impl("special_hermite_polynomial_he", Forms<&special_hermite_polynomial_he>::functional);
  m.impl("special_hermite_polynomial_he.out", Forms<&special_hermite_polynomial_he>::out);
  m.impl("special_i0e", Forms<&special_i0e>::functional);
  m.impl("special_i0e.out", Forms<&special_i0e>::out);
  m.impl("special_i1", Forms<&special_i1>::functional);
  m.impl("special_i1.out", Forms<&special_i1>::out);
  m.impl("special_i1e", Forms<&special_i1e>::functional);
  m.impl("special_i1e.out", Forms<&special_i1e>::out);
  m.impl("special_laguerre_polynomial_l", Forms<&special_laguerre_polynomial_l>::functional);
  m.impl("special_laguerre_polynomial_l.out", Forms<&special_laguerre_polynomial_l>::out);
  m.impl("special_legendre_polynomial_p", Forms<&special_legendre_polynomial_p>::functional);
  m.impl("special_legendre_polynomial_p.out", Forms<&special_legendre_polynomial_p>::out);
  m.impl("special_log_ndtr", Forms<&special_log_ndtr>::functional);
  m.impl("special_log_ndtr.out", Forms<&special_log_ndtr>::out);
  m.impl("special_modified_bessel_i0", Forms<&special_modified_bessel_i0>::functional);
  m.impl("special_modified_bessel_i0.out", Forms<&special_modified_bessel_i0>::out);
  m.impl("special_modified_bessel_i1", Forms<&special_modified_bessel_i1>::functional);
  m.impl("special_modified_bessel_i1.out", Forms<&special_modified_bessel_i1>::out);
  m.impl("special_modified_bessel_k0", Forms<&special_modified_bessel_k0>::functional);
  m.impl("special_modified_bessel_k0.out", Forms<&special_modified_bessel_k0>::out);
  m.impl("special_modified_bessel_k1", Forms<&special_modified_bessel_k1>::functional);
  m.impl("special_modified_bessel_k1.out", Forms<&special_modified_bessel_k1>::out);
  m.impl("special_ndtri", Forms<&special_ndtri>::functional);
  m.impl("special_ndtri.out", Forms<&special_ndtri>::out);
  m.impl("special_scaled_modified_bessel_k0", Forms<&special_scaled_modified_bessel_k0>::functional);
  m.impl("special_scaled_modified_bessel_k0.out", Forms<&special_scaled_modified_bessel_k0>::out);
  m.impl("special_scaled_modified_bessel_k1", Forms<&special_scaled_modified_bessel_k1>::functional);
  m.impl("special_scaled_modified_bessel_k1.out", Forms<&special_scaled_modified_bessel_k1>::out);
  m.impl("special_shifted_chebyshev_polynomial_t", Forms<&special_shifted_chebyshev_polynomial_t>::functional);
  m.impl("special_shifted_chebyshev_polynomial_t.out", Forms<&special_shifted_chebyshev_polynomial_t>::out);
  m.impl("special_shifted_chebyshev_polynomial_u", Forms<&special_shifted_chebyshev_polynomial_u>::functional);
  m.impl("special_shifted_chebyshev_polynomial_u.out", Forms<&special_shifted_chebyshev_polynomial_u>::out);
  m.impl("special_shifted_chebyshev_polynomial_v", Forms<&special_shifted_chebyshev_polynomial_v>::functional);
  m.impl("special_shifted_chebyshev_polynomial_v.out", Forms<&special_shifted_chebyshev_polynomial_v>::out);
  m.impl("special_shifted_chebyshev_polynomial_w", Forms<&special_shifted_chebyshev_polynomial_w>::functional);
  m.impl("special_shifted_chebyshev_polynomial_w.out", Forms<&special_shifted_chebyshev_polynomial_w>::out);
  m.impl("special_spherical_bessel_j0", Forms<&special_spherical_bessel_j0>::functional);
  m.impl("special_spherical_bessel_j0.out", Forms<&special_spherical_bessel_j0>::out);
  m.impl("special_xlog1py", Forms<&special_xlog1py>::functional);
  m.impl("special_xlog1py.out", Forms<&special_xlog1py>::out);
  m.impl("special_zeta", Forms<&special_zeta>::functional);
  m.impl("special_zeta.out", Forms<&special_zeta>::out);
  m.impl("sqrt", Forms<&sqrt>::functional);
  m.impl("sqrt.out", Forms<&sqrt>::out);
  m.impl("sqrt_", Forms<&sqrt>::in_place);
  m.impl("std.correction", std_correction);
  m.impl("std_mean.correction", std_mean);
  m.impl("sub.Tensor", Forms<&sub>::functional);
  m.impl("sub.out", Forms<&sub>::out);
  m.impl("sub_.Tensor", Forms<&sub>::in_place);
  m.impl("sum.IntList_out", Forms<&sum_dim>::out);
  m.impl("sum.dim_IntList", Forms<&sum_dim>::functional);
  m.impl("take", take);
  m.impl("tan", Forms<&tan>::functional);
  m.impl("tan.out", Forms<&tan>::out);
  m.impl("tan_", Forms<&tan>::in_place);
  m.impl("tanh", Forms<&tanh>::functional);
  m.impl("tanh.out", Forms<&tanh>::out);
  m.impl("tanh_", Forms<&tanh>::in_place);
  m.impl("tanh_backward", Forms<&tanh_backward>::functional);
  m.impl("threshold", Forms<&threshold>::functional);
  m.impl("threshold.out", Forms<&threshold>::out);
  m.impl("threshold_", Forms<&threshold>::in_place);
  m.impl("threshold_backward", threshold_backward);
  m.impl("topk", topk);
  m.impl("topk.values", topk_out);
  m.impl("trace", trace);
  m.impl("triangular_solve", real_only<&triangular_solve>());
  m.impl("tril", Forms<&tril>::functional);
  m.impl("tril.out", Forms<&tril>::out);
  m.impl("tril_", Forms<&tril>::in_place);
  m.impl("tril_indices", tril_indices);
  m.impl("triu", Forms<&triu>::functional);
  m.impl("triu.out", Forms<&triu>::out);
  m.impl("triu_", Forms<&triu>::in_place);
  m.impl("triu_indices", triu_indices);
  m.impl("trunc", Forms<&trunc>::functional);
  m.impl("trunc.out", Forms<&trunc>::out);
  m.impl("trunc_", Forms<&trunc>::in_place);
  m.impl("unfold", at::native::unfold);
  m.impl("unfold_backward", unfold_backward);
  m.impl("uniform_", uniform_);
  m.impl("unique_consecutive", unique_consecutive);
  m.impl("unique_dim", unique_dim);
  m.impl("upsample_bicubic2d", upsample_bicubic2d);
  m.impl("upsample_bicubic2d_backward", upsample_bicubic2d_backward);
  m.impl("upsample_bilinear2d", upsample_bilinear2d);
  m.impl("upsample_bilinear2d_backward", upsample_bilinear2d_backward);
  m.impl("upsample_linear1d", upsample_linear1d);
  m.impl("upsample_linear1d_backward", upsample_linear1d_backward);
  m.impl("upsample_nearest1d", upsample_nearest1d);
  m.impl("upsample_nearest1d_backward", upsample_nearest1d_backward);
  m.impl("upsample_nearest2d", upsample_nearest2d);
  m.impl("upsample_nearest2d_backward", upsample_nearest2d_backward);
  m.impl("upsample_nearest3d", upsample_nearest3d);
  m.impl("upsample_nearest3d_backward", upsample_nearest3d_backward);
  m.impl("upsample_trilinear3d", upsample_trilinear3d);
  m.impl("upsample_trilinear3d_backward", upsample_trilinear3d_backward);
  m.impl("var.correction", var_correction);
  m.impl("var_mean.correction", var_mean);
  m.impl("vdot", vdot);
  m.impl("view", at::native::view);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("where.self", Forms<&where_self>::functional);
  m.impl("where.self_out", Forms<&where_self>::out);
  m.impl("xlogy.OutTensor", Forms<&xlogy>::out);
  m.impl("xlogy.Tensor", Forms<&xlogy>::functional);
  m.impl("xlogy_.Tensor", Forms<&xlogy>::in_place);
  m.impl("zero_", zero_);
#undef TPU_REGISTER_COMPARE
}

namespace {

// An operator with a kernel of its own for a sparse CPU layout (mul, add, sum,
// ...) often also has a composite kernel for dense tensors, which the
// dispatcher prefers to the sparse fallback above and which fails on a sparse
// tensor. Each such operator gets the fallback by name, after the kernels
// registered above (defined earlier in this file, so registered first). The
// library returned holds the registrations.
template <void (*fallback)(const c10::OperatorHandle&, torch::jit::Stack*)>
std::unique_ptr<torch::Library> route_sparse_kernels_to_cpu(c10::DispatchKey cpu_key, c10::DispatchKey tpu_key) {
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", tpu_key, __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    auto op = dispatcher.findOp(name);
    if (!op || !op->hasKernelForDispatchKey(cpu_key) || op->hasKernelForDispatchKey(tpu_key)) continue;
    std::string unqualified = name.name.substr(6);
    if (!name.overload_name.empty()) unqualified += "." + name.overload_name;
    library->impl(unqualified.c_str(), torch::CppFunction::makeFromBoxedFunction<fallback>());
  }
  return library;
}

const auto sparse_routes =
    route_sparse_kernels_to_cpu<&sparse_cpu_fallback>(c10::DispatchKey::SparseCPU, c10::DispatchKey::SparsePrivateUse1);
const auto sparse_compressed_routes = route_sparse_kernels_to_cpu<&sparse_compressed_cpu_fallback>(
    c10::DispatchKey::SparseCsrCPU, c10::DispatchKey::SparseCsrPrivateUse1);

}  // namespace

}  // namespace torch_tpu::aten
