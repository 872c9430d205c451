// Declarations of the tpu kernels registered in registration.cpp. Each
// signature matches its ATen schema exactly (the dispatcher checks it at load).
#pragma once

#include <ATen/ATen.h>

namespace torch_tpu::aten {

// Memory, copies, views (memory.cpp)
at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format);
at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory);
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
at::Scalar local_scalar_dense(const at::Tensor& self);
at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value);
at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero_(at::Tensor& self);
const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format);
at::Tensor& set_storage(at::Tensor& self, at::Storage source, int64_t storage_offset, at::IntArrayRef size,
                        at::IntArrayRef stride);
at::Tensor& set_source_storage(at::Tensor& self, at::Storage source);
at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source);
at::Tensor& set_empty(at::Tensor& self);

// Elementwise (elementwise.cpp)
at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor& add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out);
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor& sub_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out);
#define TPU_DECLARE_BINARY(name)                                                    \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other);                 \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other);                    \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);
TPU_DECLARE_BINARY(mul)
TPU_DECLARE_BINARY(div)
TPU_DECLARE_BINARY(maximum)
TPU_DECLARE_BINARY(minimum)
TPU_DECLARE_BINARY(pow)
TPU_DECLARE_BINARY(eq)
TPU_DECLARE_BINARY(ne)
TPU_DECLARE_BINARY(lt)
TPU_DECLARE_BINARY(le)
TPU_DECLARE_BINARY(gt)
TPU_DECLARE_BINARY(ge)
TPU_DECLARE_BINARY(logical_and)
TPU_DECLARE_BINARY(logical_or)
TPU_DECLARE_BINARY(logical_xor)
TPU_DECLARE_BINARY(bitwise_and)
TPU_DECLARE_BINARY(bitwise_or)
TPU_DECLARE_BINARY(bitwise_xor)
TPU_DECLARE_BINARY(sigmoid_backward)
TPU_DECLARE_BINARY(tanh_backward)
TPU_DECLARE_BINARY(silu_backward)
#undef TPU_DECLARE_BINARY
#define TPU_DECLARE_SCALAR_CMP(name)                                                \
  at::Tensor name##_scalar(const at::Tensor& self, const at::Scalar& other);        \
  at::Tensor& name##_scalar_(at::Tensor& self, const at::Scalar& other);            \
  at::Tensor& name##_scalar_out(const at::Tensor& self, const at::Scalar& other, at::Tensor& out);
TPU_DECLARE_SCALAR_CMP(eq)
TPU_DECLARE_SCALAR_CMP(ne)
TPU_DECLARE_SCALAR_CMP(lt)
TPU_DECLARE_SCALAR_CMP(le)
TPU_DECLARE_SCALAR_CMP(gt)
TPU_DECLARE_SCALAR_CMP(ge)
#undef TPU_DECLARE_SCALAR_CMP
at::Tensor pow_tensor_scalar(const at::Tensor& self, const at::Scalar& exponent);
at::Tensor& pow_tensor_scalar_(at::Tensor& self, const at::Scalar& exponent);
at::Tensor& pow_tensor_scalar_out(const at::Tensor& self, const at::Scalar& exponent, at::Tensor& out);
#define TPU_DECLARE_UNARY(name)                        \
  at::Tensor name(const at::Tensor& self);             \
  at::Tensor& name##_(at::Tensor& self);               \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out);
TPU_DECLARE_UNARY(neg)
TPU_DECLARE_UNARY(abs)
TPU_DECLARE_UNARY(exp)
TPU_DECLARE_UNARY(log)
TPU_DECLARE_UNARY(sqrt)
TPU_DECLARE_UNARY(rsqrt)
TPU_DECLARE_UNARY(tanh)
TPU_DECLARE_UNARY(sigmoid)
TPU_DECLARE_UNARY(sin)
TPU_DECLARE_UNARY(cos)
TPU_DECLARE_UNARY(reciprocal)
TPU_DECLARE_UNARY(logical_not)
TPU_DECLARE_UNARY(bitwise_not)
TPU_DECLARE_UNARY(floor)
TPU_DECLARE_UNARY(ceil)
TPU_DECLARE_UNARY(round)
TPU_DECLARE_UNARY(trunc)
TPU_DECLARE_UNARY(sign)
TPU_DECLARE_UNARY(erf)
TPU_DECLARE_UNARY(log1p)
TPU_DECLARE_UNARY(expm1)
TPU_DECLARE_UNARY(silu)
#undef TPU_DECLARE_UNARY
at::Tensor relu(const at::Tensor& self);
at::Tensor& relu_(at::Tensor& self);
at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& threshold);
at::Tensor where_self(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other);
at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value);
at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value);
at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const at::Scalar& weight);

// Reductions, matmul, nn (reduction.cpp)
at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype);
at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype);
at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor linalg_vector_norm(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype);
at::Tensor max_all(const at::Tensor& self);
std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim);
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor var_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim);
at::Tensor std_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim);
at::Tensor min_all(const at::Tensor& self);
at::Tensor any_all(const at::Tensor& self);
at::Tensor all_all(const at::Tensor& self);
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction);
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction);
at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, at::Tensor& out);
at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2);
at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2);
at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha);
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                at::ScalarType input_dtype);
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype);
at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen);
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen);
at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen);
at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen);
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen);

// Losses, normalization, activations, dropout, indexing (nn.cpp)
std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index);
at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask);
at::Tensor gelu(const at::Tensor& self, c10::string_view approximate);
at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate);
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train);
at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale);
at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim);
at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out);
at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad);
at::Tensor scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);
at::Tensor& scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);
at::Tensor scatter_src(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);
at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out);
at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index);
at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq);
at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value);
at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value);
at::Tensor clamp(const at::Tensor& self, const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max);

// Optimizer multi-tensor ops (foreach.cpp)
void foreach_add_scalar_(at::TensorList self, const at::Scalar& scalar);
void foreach_add_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha);
void foreach_sub_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha);
void foreach_mul_scalar_(at::TensorList self, const at::Scalar& scalar);
void foreach_mul_list_(at::TensorList self, at::TensorList other);
void foreach_div_scalar_list_(at::TensorList self, at::ArrayRef<at::Scalar> scalars);
void foreach_lerp_scalar_(at::TensorList self, at::TensorList end, const at::Scalar& weight);
void foreach_addcmul_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value);
void foreach_addcdiv_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value);
void foreach_addcdiv_scalar_list_(at::TensorList self, at::TensorList t1, at::TensorList t2,
                                  at::ArrayRef<at::Scalar> scalars);
std::vector<at::Tensor> foreach_sqrt(at::TensorList self);
void foreach_sqrt_(at::TensorList self);

}  // namespace torch_tpu::aten
