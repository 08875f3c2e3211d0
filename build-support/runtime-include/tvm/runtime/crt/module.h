/* mlf-build's own declarations of the TVM C ABI: the system-library function registry. */
#ifndef TVM_RUNTIME_CRT_MODULE_H_
#define TVM_RUNTIME_CRT_MODULE_H_

#include <stddef.h>
#include <stdint.h>

#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Functions of a module by name. `names` starts with the function count (one
 * byte in archives before May 2022, a little-endian uint16_t after), then
 * holds each name NUL-terminated, then one more NUL; `funcs` lists the
 * functions in the same order. */
typedef struct TVMFuncRegistry {
  const char* names;
  const TVMBackendPackedCFunc* funcs;
} TVMFuncRegistry;

/* A module compiled into the firmware. */
typedef struct TVMModule {
  const TVMFuncRegistry* registry;
} TVMModule;

/* Defined by a system-lib archive's generated code: its module. */
const TVMModule* TVMSystemLibEntryPoint(void);

#ifdef __cplusplus
}
#endif

#endif /* TVM_RUNTIME_CRT_MODULE_H_ */
