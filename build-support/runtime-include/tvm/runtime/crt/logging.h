/* mlf-build's own declarations of the TVM C ABI: the logging hook of the standalone C runtime. */
#ifndef TVM_RUNTIME_CRT_LOGGING_H_
#define TVM_RUNTIME_CRT_LOGGING_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* printf-style message from the runtime; the application decides where it goes. */
#if defined(__GNUC__) || defined(__clang__)
void TVMLogf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#else
void TVMLogf(const char* fmt, ...);
#endif

#ifdef __cplusplus
}
#endif

#endif /* TVM_RUNTIME_CRT_LOGGING_H_ */
