// StableHLO collectives across the replicas of a replicated program.
#include "lowering/collective.h"

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

namespace {

// Every replica in one group: "dense<[[0, 1, ...]]> : tensor<1xNxi64>".
std::string all_replicas(int64_t replicas) {
  std::string ids;
  for (int64_t i = 0; i < replicas; ++i) ids += (i ? ", " : "") + std::to_string(i);
  return "replica_groups = dense<[[" + ids + "]]> : tensor<1x" + std::to_string(replicas) + "xi64>";
}

// Bool values combine as integers do in PyTorch: a sum or max is "any", a
// product or min is "all".
ReduceKind kind_for(c10::ScalarType dt, ReduceKind kind) {
  if (dt != c10::kBool) return kind;
  return (kind == ReduceKind::Prod || kind == ReduceKind::Min || kind == ReduceKind::And) ? ReduceKind::And
                                                                                            : ReduceKind::Or;
}

void check_dim(const Type& t, int64_t dim, int64_t replicas, const char* what) {
  TORCH_CHECK(dim >= 0 && dim < static_cast<int64_t>(t.shape.size()), "tpu: ", what, " along dimension ", dim,
              " of a ", t.shape.size(), "-d value");
  TORCH_CHECK(t.shape[dim] % replicas == 0, "tpu: ", what, " splits dimension ", dim, " of size ", t.shape[dim],
              " into ", replicas, " equal parts");
}

}  // namespace

Value all_reduce(Graph& g, Value v, ReduceKind kind, int64_t replicas) {
  Type t = g.type(v);
  return g.add("stablehlo.all_reduce", {v}, t, "{" + all_replicas(replicas) + "}",
               reduce_region(t.dtype, kind_for(t.dtype, kind), /*explicit_nan=*/false));
}

Value all_gather(Graph& g, Value v, int64_t dim, int64_t replicas) {
  Type t = g.type(v);
  TORCH_CHECK(dim >= 0 && dim < static_cast<int64_t>(t.shape.size()), "tpu: all_gather along dimension ", dim,
              " of a ", t.shape.size(), "-d value");
  Type out = t;
  out.shape[dim] *= replicas;
  return g.add("stablehlo.all_gather", {v}, out,
               "{all_gather_dim = " + std::to_string(dim) + " : i64, " + all_replicas(replicas) + "}");
}

Value reduce_scatter(Graph& g, Value v, int64_t dim, ReduceKind kind, int64_t replicas) {
  Type t = g.type(v);
  check_dim(t, dim, replicas, "reduce_scatter");
  Type out = t;
  out.shape[dim] /= replicas;
  return g.add("stablehlo.reduce_scatter", {v}, out,
               "{" + all_replicas(replicas) + ", scatter_dimension = " + std::to_string(dim) + " : i64}",
               reduce_region(t.dtype, kind_for(t.dtype, kind), /*explicit_nan=*/false));
}

Value all_to_all(Graph& g, Value v, int64_t dim, int64_t replicas) {
  Type t = g.type(v);
  check_dim(t, dim, replicas, "all_to_all");
  std::string d = std::to_string(dim) + " : i64";
  return g.add("stablehlo.all_to_all", {v}, t,
               "{concat_dimension = " + d + ", " + all_replicas(replicas) + ", split_count = " +
                   std::to_string(replicas) + " : i64, split_dimension = " + d + "}");
}

}  // namespace torch_tpu::lower
