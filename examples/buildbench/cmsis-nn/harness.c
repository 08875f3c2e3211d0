/* Bare-metal firmware for the plain-gcc side of insns.sh: runs
 * module `default` of an archive with one input and one output on the
 * vector INPUT_FILE, compares the output with EXPECTED_FILE, prints it through
 * semihosting and exits 0 when they are equal. */
#include <stdint.h>
#include <string.h>

#include "tvmgen_default.h"

/* The files' bytes, embedded by the assembler (paths from the command line). */
__asm__(".section .rodata.harness,\"a\"\n.balign 16\n"
        "input: .incbin \"" INPUT_FILE "\"\ninput_end:\n.balign 4\n"
        "expected: .incbin \"" EXPECTED_FILE "\"\nexpected_end:\n"
        "input_bytes: .word input_end - input\nexpected_bytes: .word expected_end - expected\n.text\n");
extern const uint8_t input[], expected[];
extern const uint32_t input_bytes, expected_bytes;

/* A writable copy: the model's input pointers are not const. */
static uint8_t input_copy[65536] __attribute__((aligned(16)));
static uint8_t output[4096] __attribute__((aligned(16)));

static int semihost(int op, const void *arg) {
  register int r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

/* To the host's stdout, as the runner writes (SYS_WRITE0 goes to QEMU's console instead). */
static void print(const char *text) {
  const uintptr_t open[3] = {(uintptr_t)":tt", 4 /* "w" */, 3};
  int handle = semihost(0x01, open); /* SYS_OPEN */
  const uintptr_t write[3] = {(uintptr_t)handle, (uintptr_t)text, strlen(text)};
  semihost(0x05, write); /* SYS_WRITE */
}

__attribute__((noreturn)) static void exit_with(int ok) {
  semihost(0x18, (const void *)(ok ? 0x20026 : 0x20023)); /* SYS_EXIT: ApplicationExit or RunTimeErrorUnknown */
  for (;;) {}
}

__attribute__((noreturn)) static void run(void) {
  if (input_bytes > sizeof input_copy || expected_bytes > sizeof output) exit_with(0);
  memcpy(input_copy, input, input_bytes);
  /* Both structs hold only `void*` members, one per tensor. */
  void *inputs[1] = {input_copy}, *outputs[1] = {output};
  int32_t status = tvmgen_default_run((struct tvmgen_default_inputs *)inputs, (struct tvmgen_default_outputs *)outputs);
  static const char digits[] = "0123456789abcdef";
  char line[2 * 4096 + 16] = "output0: ";
  char *at = line + strlen(line);
  for (uint32_t i = 0; i < expected_bytes; i++) {
    *at++ = digits[output[i] >> 4];
    *at++ = digits[output[i] & 15];
  }
  *at++ = '\n';
  *at = 0;
  print(line);
  exit_with(status == 0 && memcmp(output, expected, expected_bytes) == 0);
}

/* Start-up: .data copied, .bss zeroed, the FPU (and Helium) enabled, then run. */
extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[], __stack_top[];

__attribute__((noreturn)) void reset(void) {
  memcpy(__data_start, __data_load, (uintptr_t)__data_end - (uintptr_t)__data_start);
  memset(__bss_start, 0, (uintptr_t)__bss_end - (uintptr_t)__bss_start);
  *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20; /* CPACR: full access to CP10 and CP11 */
  __asm__ volatile("dsb\nisb");
  run();
}

__attribute__((section(".vectors"), used)) static const void *const vectors[2] = {__stack_top, (void *)reset};
