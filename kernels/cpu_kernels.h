// The CPU kernels behind run_cpu (kernel.h), each over raw pointers in the order of
// cpu_operands. Internal to kernels/; tests check each against a naive reference.
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/op_signature.h"

namespace dtsim::kernels {

// The exclusive bound of an integer operand's values: embedding ids (the table's rows),
// labels (a row's classes).
int64_t op_bound(const OpSignature& op, std::string_view operand);
// A pooling op's input elements per row and its window (the forward's reads and compares
// per output), from the work the workload model counted.
int64_t pool_input_width(const OpSignature& op);
int64_t pool_window(const OpSignature& op);

namespace cpu {

// C = op(A) op(B) for each of g.batch GEMMs (OpenBLAS sgemm); with `accumulate`, C += ...
void gemm(const GemmDims& g, bool accumulate, const float* a, const float* b, float* c);

void layer_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd);
void layer_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta);
void rms_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma, float* y,
                      float* rstd);
void rms_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                       const float* gamma, const float* rstd, float* dx, float* dgamma);
void softmax_forward(int64_t rows, int64_t width, const float* x, float* y);
void softmax_backward(int64_t rows, int64_t width, const float* y, const float* dy, float* dx);
void gelu_forward(int64_t n, const float* x, float* y);
void gelu_backward(int64_t n, const float* x, const float* dy, float* dx);
void relu_forward(int64_t n, const float* x, float* y);
void relu_backward(int64_t n, const float* x, const float* dy, float* dx);
void swiglu_forward(int64_t n, const float* gate, const float* up, float* y);
void swiglu_backward(int64_t n, const float* gate, const float* up, const float* dy,
                     float* dgate, float* dup);
inline constexpr float kDropoutKeep = 0.9f;
void dropout_forward(int64_t n, const float* x, float* y, uint8_t* mask);
void dropout_backward(int64_t n, const float* dy, const uint8_t* mask, float* dx);
void add_forward(int64_t n, const float* a, const float* b, float* y);
void add_backward(int64_t n, const float* dy, float* da, float* db);
void bias_forward(int64_t rows, int64_t width, const float* x, const float* bias, float* y);
void bias_backward(int64_t rows, int64_t width, const float* dy, float* dx, float* dbias);
void embedding_forward(int64_t rows, int64_t width, const float* table, const int32_t* ids,
                       float* y);
void embedding_backward(int64_t rows, int64_t width, const float* dy, const int32_t* ids,
                        float* dtable);
void cross_entropy_forward(int64_t rows, int64_t width, const float* logits,
                           const int32_t* labels, float* probs, float* loss);
void cross_entropy_backward(int64_t rows, int64_t width, const float* probs,
                            const int32_t* labels, float* dlogits);
void batch_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd);
void batch_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta);
// q [batch, heads, q_len, d], k and v [batch, kv_heads, kv_len, d], o like q, lse
// [batch, heads, q_len]; dk and dv are overwritten.
void flash_attention_forward(const AttentionDims& a, bool causal, const float* q, const float* k,
                             const float* v, float* o, float* lse);
void flash_attention_backward(const AttentionDims& a, bool causal, const float* q, const float* k,
                              const float* v, const float* o, const float* dout, const float* lse,
                              float* dq, float* dk, float* dv);
// NCHW images, weights [k, c * r * s], outputs [n, k, p, q]; `col` holds one image's
// im2col matrix [c * r * s, p * q]. The weight gradient accumulates.
int64_t conv_output_pixels(const ConvDims& c);
void conv_forward(const ConvDims& c, const float* x, const float* w, float* y, float* col);
void conv_backward_data(const ConvDims& c, const float* dy, const float* w, float* dx, float* col);
void conv_backward_weight(const ConvDims& c, const float* dy, const float* x, float* dw,
                          float* col);
// Each of `out_width` outputs per row is the maximum of `window` inputs from where its share
// of the row begins; the backward pass spreads each output's gradient over its share.
void pool_forward(int64_t rows, int64_t in_width, int64_t out_width, int64_t window, const float* x,
                  float* y);
void pool_backward(int64_t rows, int64_t in_width, int64_t out_width, const float* dy, float* dx);
// bf16 [rows, width] to FP8 E4M3, row-major and transposed.
void cast_to_fp8(int64_t rows, int64_t width, const uint16_t* x, uint8_t* y, uint8_t* y_t);
float e4m3_to_float(uint8_t v);
// AdamW with PyTorch's defaults (lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weight decay 0.01).
void adamw_step(int64_t n, const float* grad, float* param, float* m, float* v);

}  // namespace cpu
}  // namespace dtsim::kernels
