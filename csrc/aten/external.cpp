// Functions lowered by another framework (JAX, Pallas in interpret mode or as
// Mosaic custom calls) run as ops on tpu tensors: the function's StableHLO
// becomes part of the program being recorded, as any ATen op's lowering does,
// so fused mode fuses it with the ops around it. torch_tpu/jax_ops.py lowers
// the functions and registers the op (torch_tpu::jax_call) with PyTorch.
#include "aten/kernels.h"
#include "aten/op.h"

namespace torch_tpu::aten {

std::vector<at::Tensor> call_function(const std::string& name, const std::string& definition,
                                      const std::vector<at::Tensor>& args, const std::vector<at::Tensor>& results) {
  Op op("torch_tpu::jax_call");
  std::vector<Value> values;
  values.reserve(args.size());
  for (const at::Tensor& t : args) values.push_back(op.in(t));
  std::vector<ir::Type> types;
  types.reserve(results.size());
  for (const at::Tensor& r : results) types.push_back(ir::Type{r.scalar_type(), shape_of(r)});
  std::vector<Value> outs = op.g().call(name, definition, values, types);
  std::vector<at::Tensor> tensors;
  tensors.reserve(outs.size());
  for (Value v : outs) tensors.push_back(op.result(v));
  op.run();
  return tensors;
}

}  // namespace torch_tpu::aten
