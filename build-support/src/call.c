/* The abort guard: TVMPlatformAbort unwinds to the guarded call instead of
 * ending the program, so the application sees an error code. */
#include <setjmp.h>

#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/platform.h>

#include "mlf_support.h"

static jmp_buf* abort_target;
static volatile int32_t abort_code;

/* Whether a run holds the workspace. One guard today, shared by every module
 * of the program; a struct so that a guard per arena can replace it. */
struct mlf_guard {
  volatile int busy;
};
static struct mlf_guard guard;

/* Cores without compare-and-swap (Armv6-M) are single-core: a plain flag does. */
static int try_enter(struct mlf_guard* taken) {
#if defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_4)
  return __sync_bool_compare_and_swap(&taken->busy, 0, 1);
#else
  if (taken->busy) return 0;
  taken->busy = 1;
  return 1;
#endif
}

static void leave(struct mlf_guard* taken) { taken->busy = 0; }

/* The body of mlf_support_step, repeated rather than called: a function that
 * calls setjmp is never inlined, and a run keeps the one frame it had. */
mlf_status_t mlf_support_call(mlf_entry_t entry, void* context, uint8_t* arena, size_t arena_len,
                              int32_t* code) {
  jmp_buf target;
  mlf_status_t status;
  if (!try_enter(&guard)) return MLF_STATUS_BUSY;
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
  leave(&guard);
  return status;
}

mlf_status_t mlf_support_enter(uint8_t* arena, size_t arena_len) {
  if (!try_enter(&guard)) return MLF_STATUS_BUSY;
  mlf_support_arena_reset(arena, arena_len);
  return MLF_STATUS_OK;
}

mlf_status_t mlf_support_step(mlf_entry_t step, void* context, int32_t* code) {
  jmp_buf target;
  mlf_status_t status;
  abort_target = &target;
  if (setjmp(target) == 0) {
    int32_t result = step(context);
    *code = result;
    status = result == 0 ? MLF_STATUS_OK : MLF_STATUS_MODEL_ERROR;
  } else {
    *code = abort_code;
    status = MLF_STATUS_ABORTED;
  }
  abort_target = NULL;
  /* A failed step ends its run: nothing after it may use the workspace. */
  if (status != MLF_STATUS_OK) leave(&guard);
  return status;
}

void mlf_support_leave(void) { leave(&guard); }

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
