/* TVMLogf for the runtime sources: formats into a bounded buffer and hands
 * the line to the application's hook. It formats by itself: newlib's printf
 * family links malloc and so needs _sbrk, which bare-metal firmware lacks. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <tvm/runtime/crt/logging.h>

#include "mlf_support.h"

/* Logging is rare and off the inference path: compiled for size (half the
 * code of -O3), which also compiles a third faster. */
#if defined(__GNUC__)
#define MLF_COLD __attribute__((cold))
#else
#define MLF_COLD
#endif

static mlf_log_hook_t log_hook;

void mlf_support_set_log_hook(mlf_log_hook_t hook) { log_hook = hook; }

void mlf_support_emit_log(const char* message, size_t length) {
  if (log_hook != NULL) log_hook(message, length);
}

/* A bounded line being written; characters past the end are dropped. */
struct line {
  char text[256];
  size_t length;
};

MLF_COLD static void put(struct line* line, char c) {
  if (line->length < sizeof line->text - 1) line->text[line->length++] = c;
}

MLF_COLD static void put_unsigned(struct line* line, unsigned long long value, unsigned base) {
  char digits[24];
  size_t count = 0;
  do {
    digits[count++] = "0123456789abcdef"[value % base];
    value /= base;
  } while (value != 0 && count < sizeof digits);
  while (count > 0) put(line, digits[--count]);
}

/* %d %i %u %x %X %p %c %s %% with h/l/ll/z/j length modifiers; flags and
 * widths are skipped; anything else (floats) is written as `?`. */
MLF_COLD void TVMLogf(const char* format, ...) {
  struct line line;
  va_list args;
  const char* at;
  if (log_hook == NULL) return;
  line.length = 0;
  va_start(args, format);
  for (at = format; *at != '\0'; at++) {
    int longs = 0, size_t_arg = 0;
    if (*at != '%') {
      put(&line, *at);
      continue;
    }
    at++;
    while (*at == '-' || *at == '+' || *at == ' ' || *at == '#' || *at == '0' || (*at >= '1' && *at <= '9') || *at == '.') at++;
    for (;; at++) {
      if (*at == 'l') longs++;
      else if (*at == 'z' || *at == 'j' || *at == 't') size_t_arg = 1;
      else if (*at != 'h') break;
    }
    switch (*at) {
      case 'd':
      case 'i': {
        long long value = longs >= 2 ? va_arg(args, long long) : longs == 1 ? va_arg(args, long) : size_t_arg ? (long long)va_arg(args, ptrdiff_t) : va_arg(args, int);
        if (value < 0) put(&line, '-');
        put_unsigned(&line, value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value, 10);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        unsigned long long value = longs >= 2 ? va_arg(args, unsigned long long) : longs == 1 ? va_arg(args, unsigned long) : size_t_arg ? va_arg(args, size_t) : va_arg(args, unsigned);
        put_unsigned(&line, value, *at == 'u' ? 10 : 16);
        break;
      }
      case 'p':
        put(&line, '0');
        put(&line, 'x');
        put_unsigned(&line, (uintptr_t)va_arg(args, void*), 16);
        break;
      case 'c':
        put(&line, (char)va_arg(args, int));
        break;
      case 's': {
        const char* text = va_arg(args, const char*);
        if (text == NULL) text = "(null)";
        while (*text != '\0') put(&line, *text++);
        break;
      }
      case '%':
        put(&line, '%');
        break;
      case '\0':
        at--;
        break;
      default:
        /* A conversion this formatter does not do: its argument cannot be skipped safely. */
        put(&line, '?');
        va_end(args);
        line.text[line.length] = '\0';
        mlf_support_emit_log(line.text, line.length);
        return;
    }
  }
  va_end(args);
  line.text[line.length] = '\0';
  mlf_support_emit_log(line.text, line.length);
}
