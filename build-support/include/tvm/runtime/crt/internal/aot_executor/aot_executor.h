/* mlf-build's own stand-in for a TVM header removed in August 2021: archives
 * with a legacy tvm_model_t descriptor include it from their lib0.c. All they
 * need is the descriptor type and the runtime's C types. */
#ifndef MLF_BUILD_COMPAT_AOT_EXECUTOR_H_
#define MLF_BUILD_COMPAT_AOT_EXECUTOR_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>

#include "tvm_model.h"

/* Those lib0.c files point run_func at a function declared with void*
 * parameters: the same calling convention, but a pointer-type mismatch that
 * gcc 14 rejects by default. Only these files include this header, so keep
 * that one diagnostic a warning for them. (clang cannot build them at all:
 * they declare a function with an untyped parameter list.) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic warning "-Wincompatible-pointer-types"
/* They also declare the model function with parameter names but no types
 * (`int32_t f(arg0, arg1);`), which gcc 14 rejects by default too. */
#if __GNUC__ >= 14
#pragma GCC diagnostic warning "-Wdeclaration-missing-parameter-type"
#endif
#endif

#endif /* MLF_BUILD_COMPAT_AOT_EXECUTOR_H_ */
