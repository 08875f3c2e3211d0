/* mlf-build's own declarations of the TVM C ABI: the DLPack tensor types generated code uses. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a tensor lives. Generated code only ever names the CPU; other values
 * travel as plain integers cast to this type. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* Kind of scalar in DLDataType.code. */
typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
} DLDataTypeCode;

/* A scalar type: kind, width in bits, vector lanes (1 for scalars). */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* A view of an n-dimensional array. strides == NULL means compact row-major;
 * the first element is at (char*)data + byte_offset. */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_DLPACK_H_ */
