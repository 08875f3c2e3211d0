/* mlf-build's own definition of tvm_model_t, the model descriptor that TVM
 * main-branch builds wrote into lib0.c between May and August 2021. */
#ifndef MLF_BUILD_TVM_MODEL_H_
#define MLF_BUILD_TVM_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Define MLF_TVM_MODEL_T_DEFINED before including this header when another
 * header already provides tvm_model_t (a 2021 TVM runtime's
 * internal/aot_executor/aot_executor.h is recognised by its include guard).
 * Our own compat header of that name includes this one instead. */
#if !defined(MLF_TVM_MODEL_T_DEFINED) && \
    !defined(TVM_RUNTIME_CRT_INTERNAL_AOT_EXECUTOR_AOT_EXECUTOR_H_)
#define MLF_TVM_MODEL_T_DEFINED 1

/* A whole model behind one packed call: run_func takes the inputs then the
 * outputs, each a DLTensor* in args[i].v_handle (type code kTVMDLTensorHandle),
 * and returns 0 on success. The 2021-05-05..05-09 builds used uint32_t for the
 * two counts; the archives in the wild (2021-05-10 on) use size_t. */
typedef struct {
  size_t num_input_tensors;
  size_t num_output_tensors;
  int32_t (*run_func)(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
                      int* ret_code, void* resource_handle);
} tvm_model_t;

#endif

#ifdef __cplusplus
}
#endif

#endif /* MLF_BUILD_TVM_MODEL_H_ */
