// Program rewrites applied before compiling (ordering overwrites after reads).
#include "exec/passes.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_tpu::exec {

namespace {

// An int32 scalar that is always 0 but that XLA cannot know to be: computed
// from the first element of `v`, so whatever uses it waits for v. -1 when v
// has no elements or its dtype has no integer image here.
ir::Value zero_after(ir::Graph& g, ir::Value v) {
  ir::Type t = g.type(v);
  if (t.numel() == 0 || c10::isComplexType(t.dtype)) return -1;
  if (!t.shape.empty()) {
    size_t rank = t.shape.size();
    std::string zeros = ir::i64_array(ir::Shape(rank, 0)), ones = ir::i64_array(ir::Shape(rank, 1));
    v = g.add("stablehlo.slice", {v}, ir::Type{t.dtype, ir::Shape(rank, 1)},
              "{start_indices = " + zeros + ", limit_indices = " + ones + ", strides = " + ones + "}");
    v = ir::reshape(g, v, {});
  }
  if (c10::isFloatingType(t.dtype)) {
    static const std::unordered_map<size_t, c10::ScalarType> same_width{
        {1, c10::kChar}, {2, c10::kShort}, {4, c10::kInt}, {8, c10::kLong}};
    auto it = same_width.find(c10::elementSize(t.dtype));
    if (it == same_width.end()) return -1;
    v = g.add("stablehlo.bitcast_convert", {v}, ir::Type{it->second, {}});
  }
  v = g.add("stablehlo.convert", {v}, ir::Type{c10::kInt, {}});
  ir::Value one = g.add("stablehlo.constant", {}, ir::Type{c10::kInt, {}}, "{value = dense<1> : tensor<i32>}");
  ir::Value bit = g.add("stablehlo.and", {v, one}, ir::Type{c10::kInt, {}});  // 0 or 1
  ir::Value zero = g.add("stablehlo.constant", {}, ir::Type{c10::kInt, {}}, "{value = dense<0> : tensor<i32>}");
  return g.add("stablehlo.minimum", {bit, zero}, ir::Type{c10::kInt, {}});
}

}  // namespace

// XLA keeps a donated parameter's old contents in a copy when a node reading
// them is not ordered before the output that overwrites them: a training
// step's backward matmul reads each weight that the optimizer step then
// updates in place, and nothing orders the two (in a whole small GPT step
// those copies were 3 of its 23 MiB). Such an output gets a data dependency
// on those readers that changes nothing: it becomes itself minus a zero
// computed from one element of each reader's result.
std::optional<ir::Graph> order_overwrites_after_reads(const ir::Graph& graph) {
  const auto& aliases = graph.aliases();
  size_t num_nodes = graph.num_nodes();
  if (aliases.empty() || num_nodes == 0) return std::nullopt;
  auto is_view = [](const std::string& op) {
    return op == "stablehlo.reshape" || op == "stablehlo.transpose" || op == "stablehlo.broadcast_in_dim" ||
           op == "stablehlo.slice" || op == "stablehlo.dynamic_slice" || op == "stablehlo.convert" ||
           op == "stablehlo.bitcast_convert";
  };
  std::vector<std::vector<size_t>> users(graph.num_values());
  for (size_t i = 0; i < num_nodes; ++i)
    for (ir::Value o : graph.operands(graph.node(i))) users[o].push_back(i);
  // reach[node * words + a / 64] has bit a when the node is an ancestor of
  // (or computes) the output of alias a.
  size_t words = (aliases.size() + 63) / 64;
  std::vector<uint64_t> reach(num_nodes * words, 0);
  for (size_t a = 0; a < aliases.size(); ++a) {
    int producer = graph.producer(graph.outputs()[aliases[a].second]);
    if (producer >= 0) reach[producer * words + a / 64] |= uint64_t{1} << (a % 64);
  }
  for (size_t i = num_nodes; i-- > 0;) {
    const uint64_t* bits = &reach[i * words];
    for (ir::Value o : graph.operands(graph.node(i))) {
      int d = graph.producer(o);
      if (d < 0) continue;
      for (size_t w = 0; w < words; ++w) reach[d * words + w] |= bits[w];
    }
  }
  std::optional<ir::Graph> ordered;
  std::vector<ir::Value> outputs = graph.outputs();
  for (size_t a = 0; a < aliases.size(); ++a) {
    auto [param_index, output_index] = aliases[a];
    ir::Value out = outputs[output_index];
    c10::ScalarType dtype = graph.type(out).dtype;
    if (graph.producer(out) < 0 || dtype == c10::kBool || c10::isComplexType(dtype)) continue;
    // The nodes that read the parameter's buffer: through views, which XLA
    // fuses into their users or turns into bitcasts of the buffer.
    std::vector<size_t> late_readers;
    std::vector<ir::Value> chain{graph.params()[param_index]};
    for (size_t c = 0; c < chain.size(); ++c) {
      for (size_t user : users[chain[c]]) {
        const ir::Node& n = graph.node(user);
        if (is_view(n.op.str())) {
          chain.push_back(n.first_result);
        } else if (!(reach[user * words + a / 64] >> (a % 64) & 1)) {
          late_readers.push_back(user);
        }
      }
    }
    // Only matrix products and convolutions: XLA computes them on their own
    // anyway, where taking an element of an elementwise reader's result
    // would make it compute that result apart from the fusion it belongs to.
    bool all_products = std::all_of(late_readers.begin(), late_readers.end(), [&](size_t r) {
      const std::string& op = graph.node(r).op.str();
      return op == "stablehlo.dot_general" || op == "stablehlo.convolution";
    });
    if (late_readers.empty() || !all_products) continue;
    if (!ordered) ordered = graph;
    ir::Graph& g = *ordered;
    ir::Value zero = -1;
    for (size_t r : late_readers) {
      ir::Value z = zero_after(g, graph.node(r).first_result);
      if (z < 0) continue;
      zero = zero < 0 ? z : g.add("stablehlo.minimum", {zero, z}, ir::Type{c10::kInt, {}});
    }
    if (zero < 0) continue;
    const ir::Type& type = g.type(out);
    ir::Value cast = g.add("stablehlo.convert", {zero}, ir::Type{dtype, {}});
    ir::Value wide = g.add("stablehlo.broadcast_in_dim", {cast}, type, "{broadcast_dimensions = array<i64>}");
    // x - (+0) is x for every x, -0 and NaN included.
    outputs[output_index] = g.add("stablehlo.subtract", {out, wide}, type);
  }
  if (!ordered) return std::nullopt;
  ordered->set_outputs(outputs);  // clears the aliases
  for (auto [param_index, output_index] : aliases) ordered->alias(param_index, output_index);
  return ordered;
}

}  // namespace torch_tpu::exec
