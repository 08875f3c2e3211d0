/* mlf-build's platform layer: runs a model under an abort guard with a static
 * workspace arena, and routes TVM's logging to a hook the application sets. */
#ifndef MLF_SUPPORT_H_
#define MLF_SUPPORT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How a guarded call ended. A fixed-width integer, not an enum: enum sizes
 * differ between Arm EABI variants, and Rust must agree with every one. */
typedef int32_t mlf_status_t;
#define MLF_STATUS_OK 0
/** The model returned a non-zero code (stored in *code). */
#define MLF_STATUS_MODEL_ERROR 1
/** TVMPlatformAbort was called (its tvm_crt_error_t stored in *code). */
#define MLF_STATUS_ABORTED 2
/** Another guarded call is running: the workspace is shared and static. */
#define MLF_STATUS_BUSY 3
/** A step of a stepped run ran and more remain (mlf_<m>_step). */
#define MLF_STATUS_MORE 4
/** mlf_<m>_step was called with no run of the module started. */
#define MLF_STATUS_IDLE 5

typedef int32_t (*mlf_entry_t)(void* context);
typedef void (*mlf_log_hook_t)(const char* message, size_t length);

/** Calls entry(context) with TVMBackendAllocWorkspace served from
 * [arena, arena + arena_len) (NULL/0 when the model allocates nothing). */
mlf_status_t mlf_support_call(mlf_entry_t entry, void* context, uint8_t* arena, size_t arena_len,
                              int32_t* code);

/** A stepped run, as mlf_support_call is split for a glue's mlf_<m>_start,
 * _step and _cancel. Takes the guard and resets the arena: BUSY while
 * another run holds it, else OK and the caller owns it until it leaves. */
mlf_status_t mlf_support_enter(uint8_t* arena, size_t arena_len);

/** One step of a run entered: step(context) under the abort guard. OK, or
 * MODEL_ERROR / ABORTED (code as for mlf_support_call), after which the guard
 * is already left. */
mlf_status_t mlf_support_step(mlf_entry_t step, void* context, int32_t* code);

/** Releases the guard mlf_support_enter took: after the last step or to cancel. */
void mlf_support_leave(void);

/** Most workspace bytes in use at once during the last guarded call. */
size_t mlf_support_workspace_peak(void);

/** Sends every TVMLogf line to hook (NULL: drop them). */
void mlf_support_set_log_hook(mlf_log_hook_t hook);

/* Shared between the support objects, not for applications. */
void mlf_support_arena_reset(uint8_t* arena, size_t arena_len);
void mlf_support_arena_place(uint8_t* region, size_t region_len);
void mlf_support_emit_log(const char* message, size_t length);

#ifdef __cplusplus
}
#endif

#endif /* MLF_SUPPORT_H_ */
