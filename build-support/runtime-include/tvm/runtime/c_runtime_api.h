/* mlf-build's own declarations of the TVM C ABI: values, type codes and the calls generated code makes. */
#ifndef TVM_RUNTIME_C_RUNTIME_API_H_
#define TVM_RUNTIME_C_RUNTIME_API_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

/* Marks the functions generated code exports. Firmware links statically, so
 * nothing more than default visibility is wanted (and nothing at all where
 * the attribute is unknown or ignored with a warning). */
#ifndef TVM_DLL
#if (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32) && !defined(__CYGWIN__)
#define TVM_DLL __attribute__((visibility("default")))
#else
#define TVM_DLL
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef int64_t tvm_index_t;

/* What a TVMValue holds, passed alongside it in the type_codes array. */
typedef enum {
  kTVMArgInt = 0,
  kTVMArgFloat = 2,
  kTVMOpaqueHandle = 3,
  kTVMNullptr = 4,
  kTVMDataType = 5,
  kDLDevice = 6,
  kTVMDLTensorHandle = 7,
  kTVMObjectHandle = 8,
  kTVMModuleHandle = 9,
  kTVMPackedFuncHandle = 10,
  kTVMStr = 11,
  kTVMBytes = 12,
  kTVMNDArrayHandle = 13,
  kTVMObjectRValueRefArg = 14,
  kTVMArgBool = 15,
} TVMArgTypeCode;

/* One argument or return value of a packed function. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

typedef DLTensor* TVMArrayHandle;
typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef void* TVMRetValueHandle;
typedef void* TVMStreamHandle;
typedef void* TVMObjectHandle;

/* Records the message of the error a call is about to report. */
TVM_DLL void TVMAPISetLastError(const char* msg);

/* Makes f callable by name; generated system-lib code registers its functions
 * through this. Returns 0 on success. */
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);

#ifdef __cplusplus
}
#endif

#endif /* TVM_RUNTIME_C_RUNTIME_API_H_ */
