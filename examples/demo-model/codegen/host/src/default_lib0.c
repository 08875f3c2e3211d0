// Hand-written demo (mlf-build): the AOT entry point, constants and workspace.
#include "tvm/runtime/c_runtime_api.h"
#ifdef __cplusplus
extern "C" {
#endif
/* W (3x4, row-major) at offset 0, b (3) at offset 48: 60 bytes. */
__attribute__((section(".rodata.tvm")))
static const struct global_const_workspace {
  float dense_weight_let[12] __attribute__((aligned(16))); // 48 bytes at offset 0
  float bias_let[3] __attribute__((aligned(16))); // 12 bytes at offset 48
} global_const_workspace = {
  .dense_weight_let = {
    0.5f, -1.0f, 0.25f, 0.0f,
    1.0f, 1.0f, 1.0f, 1.0f,
    -0.5f, 0.5f, -1.0f, 0.75f
  },
  .bias_let = {
    0.5f, -2.0f, 0.25f
  },
};// 60 bytes of constants
/* The intermediate W·x (3 floats) lives here. */
__attribute__((section(".bss.noinit.tvm"), aligned(16)))
static uint8_t global_workspace[12];
#include <tvmgen_default.h>
TVM_DLL int32_t tvmgen_default___tvm_main__(float* x_buffer_var, float* output_buffer_var, uint8_t* global_const_workspace_0_var, uint8_t* global_workspace_1_var);
int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs, struct tvmgen_default_outputs* outputs) {
  return tvmgen_default___tvm_main__((float*)inputs->x, (float*)outputs->output, (uint8_t*)&global_const_workspace, (uint8_t*)&global_workspace);
}
#ifdef __cplusplus
}
#endif
