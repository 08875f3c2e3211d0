/* Workspace allocation for generated code that calls TVMBackendAllocWorkspace:
 * a LIFO bump allocator over the static arena the generated Rust sizes from
 * the archive's metadata. */
#include <stdint.h>

#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/platform.h>

#include "mlf_support.h"

#ifndef TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES
#define TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES 16
#endif

static uint8_t* arena_base;
static size_t arena_size;
static size_t arena_used;
static size_t arena_peak;

void mlf_support_arena_reset(uint8_t* arena, size_t arena_len) {
  uintptr_t misalignment = (uintptr_t)arena % TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES;
  size_t skip = misalignment == 0 ? 0 : TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES - misalignment;
  arena_base = arena_len > skip ? arena + skip : NULL;
  arena_size = arena_len > skip ? arena_len - skip : 0;
  arena_used = 0;
  arena_peak = 0;
}

/* Graph modules move the arena to a region of their storage before each
 * operator: the region is free during that call only. The peak is kept. */
void mlf_support_arena_place(uint8_t* region, size_t region_len) {
  size_t peak = arena_peak;
  mlf_support_arena_reset(region, region_len);
  arena_peak = peak;
}

size_t mlf_support_workspace_peak(void) { return arena_peak; }

tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  size_t rounded = (num_bytes + TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES - 1) &
                   ~(size_t)(TVM_RUNTIME_ALLOC_ALIGNMENT_BYTES - 1);
  (void)dev;
  if (arena_base == NULL || rounded < num_bytes || rounded > arena_size - arena_used) {
    *out_ptr = NULL;
    return kTvmErrorPlatformNoMemory;
  }
  *out_ptr = arena_base + arena_used;
  arena_used += rounded;
  if (arena_used > arena_peak) arena_peak = arena_used;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  uint8_t* block = (uint8_t*)ptr;
  (void)dev;
  if (arena_base == NULL || block < arena_base || block >= arena_base + arena_used) {
    return kTvmErrorGeneric;
  }
  /* Generated code frees in reverse order: freeing a block releases all above it. */
  arena_used = (size_t)(block - arena_base);
  return kTvmErrorNoError;
}
