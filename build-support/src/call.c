/* The abort guard: TVMPlatformAbort unwinds to the guarded call instead of
 * ending the program, so the application sees an error code. */
#include <setjmp.h>

#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/platform.h>

#include "mlf_support.h"

static jmp_buf* abort_target;
static volatile int32_t abort_code;
static volatile int busy;

/* Cores without compare-and-swap (Armv6-M) are single-core: a plain flag does. */
static int try_enter(void) {
#if defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_4)
  return __sync_bool_compare_and_swap(&busy, 0, 1);
#else
  if (busy) return 0;
  busy = 1;
  return 1;
#endif
}

mlf_status_t mlf_support_call(mlf_entry_t entry, void* context, uint8_t* arena, size_t arena_len,
                              int32_t* code) {
  jmp_buf target;
  mlf_status_t status;
  if (!try_enter()) return MLF_STATUS_BUSY;
  mlf_support_arena_reset(arena, arena_len);
  abort_target = &target;
  if (setjmp(target) == 0) {
    int32_t result = entry(context);
    *code = result;
    status = result == 0 ? MLF_STATUS_OK : MLF_STATUS_MODEL_ERROR;
  } else {
    *code = abort_code;
    status = MLF_STATUS_ABORTED;
  }
  abort_target = NULL;
  busy = 0;
  return status;
}

void TVMPlatformAbort(tvm_crt_error_t error) {
  abort_code = (int32_t)error;
  if (abort_target != NULL) longjmp(*abort_target, 1);
  /* Outside a guarded call there is nothing to return to; trapping needs no C
   * library (abort() drags in newlib's signal stubs on bare metal). */
  __builtin_trap();
}

/* assert() in an archive's runtime calls __assert_func on newlib and picolibc,
 * whose own prints to stderr and so needs syscalls bare metal lacks: a failed
 * check aborts the guarded call instead, as TVMPlatformAbort does. */
#if !defined(__linux__) && !defined(__APPLE__) && !defined(_WIN32)
void __assert_func(const char* file, int line, const char* function, const char* expression);
void __assert_func(const char* file, int line, const char* function, const char* expression) {
  (void)file;
  (void)line;
  (void)function;
  (void)expression;
  TVMPlatformAbort(kTvmErrorPlatformCheckFailure);
}
#endif
