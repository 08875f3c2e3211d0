/* mlf-build's own declarations of the TVM C ABI: the platform hooks the application provides. */
#ifndef TVM_RUNTIME_CRT_PLATFORM_H_
#define TVM_RUNTIME_CRT_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called on an unrecoverable error; must not return. */
#if defined(__cplusplus) && __cplusplus >= 201103L
[[noreturn]] void TVMPlatformAbort(tvm_crt_error_t code);
#elif defined(__GNUC__) || defined(__clang__)
void __attribute__((noreturn)) TVMPlatformAbort(tvm_crt_error_t code);
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Noreturn void TVMPlatformAbort(tvm_crt_error_t code);
#else
void TVMPlatformAbort(tvm_crt_error_t code);
#endif

/* Stores in *out_ptr a block of num_bytes for dev; kTvmErrorPlatformNoMemory when there is none. */
tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr);

/* Releases a block from TVMPlatformMemoryAllocate. */
tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev);

#ifdef __cplusplus
}
#endif

#endif /* TVM_RUNTIME_CRT_PLATFORM_H_ */
