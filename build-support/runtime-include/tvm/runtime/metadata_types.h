/* mlf-build's own declarations of the TVM C ABI: the model description returned by tvmgen_<m>_get_c_metadata. */
#ifndef TVM_RUNTIME_METADATA_TYPES_H_
#define TVM_RUNTIME_METADATA_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A named tensor: shape has num_shape entries. */
struct TVMTensorInfo {
  const char* name;
  const int64_t* shape;
  int64_t num_shape;
  DLDataType dtype;
};

/* Constant bytes placed at byte_offset in a constant pool. */
struct TVMConstantInfo {
  const char* name_hint;
  int64_t byte_offset;
  int64_t data_len;
  const void* data_bytes;
};

/* Everything the executor knows about a compiled model. */
struct TVMMetadata {
  int64_t version;
  const struct TVMTensorInfo* inputs;
  int64_t num_inputs;
  const struct TVMTensorInfo* outputs;
  int64_t num_outputs;
  const struct TVMTensorInfo* workspace_pools;
  int64_t num_workspace_pools;
  const struct TVMConstantInfo* constant_pools;
  int64_t num_constant_pools;
  const char* mod_name;
};

#ifdef __cplusplus
}
#endif

#endif /* TVM_RUNTIME_METADATA_TYPES_H_ */
