/* QEMU TCG plugin (API v1, QEMU 7.2): counts the guest instructions of every
 * call of the functions whose entries it is given, callees included, as
 * tests/corpus_qemu.rs checks the firmware's own profile against it.
 *
 * API v1 reads no registers, so a call's window is found from the blocks
 * QEMU translates: a call (bl, blx, jal, jalr) ends its block, so the block
 * run just before an entry ends at the return address; the window closes
 * when a block starts there again. Windows nest (a listed function called
 * inside another's window opens one of its own). Instructions are counted
 * one by one, as they run: a block QEMU leaves early (a device access under
 * -icount ends it and runs again from there) counts only what ran.
 *
 * Usage: -plugin ./libcall-windows.so,entry=0x..,entry=0x..  (Thumb bit cleared)
 * Prints at exit, to stderr, one line per call in the order calls returned:
 * "window 0x<entry> <opened> <closed>", the instructions run before the call's
 * first one and before the one it returned to; a window never closed is
 * printed as "window 0x<entry> <opened> open". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, qemu_plugin_vcpu_udata_cb_t, enum qemu_plugin_cb_flags, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* A translated block: where it starts and where the instruction after its last one is. */
struct block {
  uint64_t start, end;
};

/* An open window: the function's entry, where it returns to, the count when it opened. */
struct window {
  uint64_t entry, back, opened;
};

enum { MAX_ENTRIES = 1024, MAX_DEPTH = 64 };
static uint64_t entries[MAX_ENTRIES];
static size_t n_entries;
/* One vCPU: the boards here have one core. */
static struct window open[MAX_DEPTH];
static size_t depth;
static uint64_t previous_end, count;
static char *report;
static size_t report_len, report_cap;

static void note(const char *line) {
  size_t len = strlen(line);
  if (report_len + len + 1 > report_cap) {
    report_cap = (report_cap + len + 1) * 2;
    report = realloc(report, report_cap);
    if (!report) abort();
  }
  memcpy(report + report_len, line, len + 1);
  report_len += len;
}

static int is_entry(uint64_t pc) {
  for (size_t i = 0; i < n_entries; i++)
    if (entries[i] == pc) return 1;
  return 0;
}

static void on_block(unsigned int vcpu, void *data) {
  (void)vcpu;
  const struct block *block = data;
  /* Back in a caller: its callee's window closes, with any opened inside it
   * that it reached by a tail call (a `b`, which returns for it). */
  size_t back = depth;
  while (back > 0 && block->start != open[back - 1].back) back--;
  while (back > 0 && depth >= back) {
    char line[96];
    depth--;
    snprintf(line, sizeof line, "window 0x%llx %llu %llu\n", (unsigned long long)open[depth].entry,
             (unsigned long long)open[depth].opened, (unsigned long long)count);
    note(line);
  }
  if (is_entry(block->start)) {
    if (depth == MAX_DEPTH) abort();
    open[depth++] = (struct window){block->start, previous_end, count};
  }
  previous_end = block->end;
}

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  if (n == 0) return;
  struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
  /* Kept for the run: QEMU may run the block until it exits. */
  struct block *block = malloc(sizeof *block);
  if (!block) abort();
  *block = (struct block){qemu_plugin_tb_vaddr(tb), qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last)};
  /* Runs before the block's first instruction counts. */
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, block);
  for (size_t i = 0; i < n; i++)
    qemu_plugin_register_vcpu_insn_exec_inline(qemu_plugin_tb_get_insn(tb, i), QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
}

static void at_exit(qemu_plugin_id_t id, void *data) {
  (void)id;
  (void)data;
  if (report) fputs(report, stderr);
  for (size_t i = 0; i < depth; i++)
    fprintf(stderr, "window 0x%llx %llu open\n", (unsigned long long)open[i].entry, (unsigned long long)open[i].opened);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                                               char **argv) {
  (void)info;
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "entry=", 6) != 0 || n_entries == MAX_ENTRIES) {
      fprintf(stderr, "call-windows: unexpected argument %s (entry=0x.., at most %d)\n", argv[i], MAX_ENTRIES);
      return 1;
    }
    entries[n_entries++] = strtoull(argv[i] + 6, NULL, 0);
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}
