#ifndef TVMGEN_DEFAULT_H_
#define TVMGEN_DEFAULT_H_
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size in bytes of input x (float32[1][4]) of module "default". */
#define TVMGEN_DEFAULT_X_SIZE 16

/* Size in bytes of output "output" (float32[1][3]) of module "default". */
#define TVMGEN_DEFAULT_OUTPUT_SIZE 12

/* Where module "default" reads its inputs. */
struct tvmgen_default_inputs {
  void* x;
};

/* Where module "default" writes its outputs. */
struct tvmgen_default_outputs {
  void* output;
};

/* Runs module "default" once; returns 0 on success. */
int32_t tvmgen_default_run(
  struct tvmgen_default_inputs* inputs,
  struct tvmgen_default_outputs* outputs
);

/* Bytes of workspace module "default" keeps in its own static array. */
#define TVMGEN_DEFAULT_WORKSPACE_SIZE 12

#ifdef __cplusplus
}
#endif

#endif /* TVMGEN_DEFAULT_H_ */
