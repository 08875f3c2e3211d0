/* mlf-build's own declarations of the TVM C ABI: the backend services generated operators call. */
#ifndef TVM_RUNTIME_C_BACKEND_API_H_
#define TVM_RUNTIME_C_BACKEND_API_H_

#include <stddef.h>
#include <stdint.h>

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Signature of every generated operator and of the packed entry points:
 * arguments, their type codes, their count, then the return slot, its type
 * code and an opaque handle. Returns 0 on success. */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/* Looks up a function that the module itself does not define. */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name,
                                     TVMFunctionHandle* out);

/* Registers a symbol of a system library. Returns 0 on success. */
TVM_DLL int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);

/* Temporary storage for one operator; NULL when it cannot be had. The hints
 * describe the element type and do not change the size. */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);

/* Gives back storage from TVMBackendAllocWorkspace, newest first. Returns 0 on success. */
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

/* What a parallel task learns about its group. */
typedef struct {
  void* sync_handle;
  int32_t num_task;
} TVMParallelGroupEnv;

/* Body of a parallel loop, called once per task. Returns 0 on success. */
typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/* Runs flambda for tasks 0 .. num_task-1 (a single task is allowed). */
TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);

/* Waits for every task of the group. */
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);

#ifdef __cplusplus
}
#endif

#endif /* TVM_RUNTIME_C_BACKEND_API_H_ */
