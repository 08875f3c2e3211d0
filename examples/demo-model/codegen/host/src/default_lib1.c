// Hand-written demo (mlf-build): y = relu(W·x + b), x float32[1][4], y float32[1][3].
#define TVM_EXPORTS
#include "tvm/runtime/c_runtime_api.h"
#include "tvm/runtime/c_backend_api.h"
#include <math.h>
#include <stdbool.h>
#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_nn_dense(float* p0, float* T_matmul, uint8_t* global_const_workspace_2_var, uint8_t* global_workspace_3_var);
#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_add_nn_relu(float* p0, float* T_relu, uint8_t* global_const_workspace_4_var, uint8_t* global_workspace_5_var);
#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default___tvm_main__(float* x_buffer_var, float* output_buffer_var, uint8_t* global_const_workspace_0_var, uint8_t* global_workspace_1_var);

/* T_matmul[j] = sum over k of W[j][k] * p0[k]; W is at constant offset 0. */
#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_nn_dense(float* p0, float* T_matmul, uint8_t* global_const_workspace_2_var, uint8_t* global_workspace_3_var) {
  float* dense_weight_let = (float*)(&(global_const_workspace_2_var[0]));
  (void)global_workspace_3_var;
  for (int32_t j = 0; j < 3; ++j) {
    float acc = 0.000000e+00f;
    for (int32_t k = 0; k < 4; ++k) {
      acc = acc + (p0[k] * dense_weight_let[((j * 4) + k)]);
    }
    T_matmul[j] = acc;
  }
  return 0;
}

/* T_relu[j] = max(p0[j] + b[j], 0); b is at constant offset 48. */
#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_add_nn_relu(float* p0, float* T_relu, uint8_t* global_const_workspace_4_var, uint8_t* global_workspace_5_var) {
  float* bias_let = (float*)(&(global_const_workspace_4_var[48]));
  (void)global_workspace_5_var;
  for (int32_t j = 0; j < 3; ++j) {
    float v = p0[j] + bias_let[j];
    T_relu[j] = ((v) > (0.000000e+00f) ? (v) : (0.000000e+00f));
  }
  return 0;
}

/* The graph: dense into the workspace, then bias and relu into the output. */
#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default___tvm_main__(float* x_buffer_var, float* output_buffer_var, uint8_t* global_const_workspace_0_var, uint8_t* global_workspace_1_var) {
  float* sid_1_let = (float*)(&(global_workspace_1_var[0]));
  if (tvmgen_default_fused_nn_dense(x_buffer_var, sid_1_let, global_const_workspace_0_var, global_workspace_1_var) != 0 ) return -1;
  if (tvmgen_default_fused_add_nn_relu(sid_1_let, output_buffer_var, global_const_workspace_0_var, global_workspace_1_var) != 0 ) return -1;
  return 0;
}
