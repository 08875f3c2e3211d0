/* TVMLogf for the runtime sources: formats into a bounded buffer and hands
 * the line to the application's hook. Its own object file, so firmware that
 * never logs does not link vsnprintf. */
#include <stdarg.h>
#include <stdio.h>

#include <tvm/runtime/crt/logging.h>

#include "mlf_support.h"

static mlf_log_hook_t log_hook;

void mlf_support_set_log_hook(mlf_log_hook_t hook) { log_hook = hook; }

void mlf_support_emit_log(const char* message, size_t length) {
  if (log_hook != NULL) log_hook(message, length);
}

void TVMLogf(const char* format, ...) {
  char line[256];
  va_list args;
  int length;
  if (log_hook == NULL) return;
  va_start(args, format);
  length = vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (length < 0) return;
  mlf_support_emit_log(line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
}
