/* TVM's backend API for archives that carry no runtime/: workspace requests
 * go to the platform allocator (arena.c); everything else runs inline. */
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/platform.h>

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint) {
  DLDevice device = {(DLDeviceType)device_type, device_id};
  void* block = NULL;
  (void)dtype_code_hint;
  (void)dtype_bits_hint;
  if (nbytes > (uint64_t)(size_t)-1) return NULL;
  if (TVMPlatformMemoryAllocate((size_t)nbytes, device, &block) != kTvmErrorNoError) return NULL;
  return block;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  DLDevice device = {(DLDeviceType)device_type, device_id};
  return TVMPlatformMemoryFree(ptr, device) == kTvmErrorNoError ? 0 : -1;
}

int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  TVMParallelGroupEnv env = {NULL, 1};
  (void)num_task;
  return flambda(0, &env, cdata);
}

int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) {
  (void)name;
  (void)ptr;
  return 0;
}

void TVMAPISetLastError(const char* msg) { (void)msg; }
