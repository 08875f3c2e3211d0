/* QEMU TCG plugin (API v1, QEMU 7.2): counts the guest instructions executed
 * from the first time pc reaches `start` until pc first reaches `stop` after
 * it, callees included. The rig's qemu-insncount.c counts only pcs inside one
 * address range, which leaves out everything a function calls.
 * Usage: -plugin ./libinsns-in-call.so,start=0x..,stop=0x..; prints
 * "insns: N" to stderr at exit ("insns: none" if `stop` was never reached). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *, qemu_plugin_vcpu_udata_cb_t, enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One vCPU: the boards here have one core. */
static uint64_t count, start, stop, at_start, at_stop;
static int started, stopped;

static void on_start(unsigned int vcpu, void *data) {
  (void)vcpu; (void)data;
  if (!started) { started = 1; at_start = count; }
}

static void on_stop(unsigned int vcpu, void *data) {
  (void)vcpu; (void)data;
  if (started && !stopped) { stopped = 1; at_stop = count; }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  for (size_t i = 0; i < qemu_plugin_tb_n_insns(tb); i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    uint64_t pc = qemu_plugin_insn_vaddr(insn);
    /* Marks before the count, so `start` counts and `stop` does not. */
    if (pc == start) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_start, QEMU_PLUGIN_CB_NO_REGS, NULL);
    if (pc == stop) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_stop, QEMU_PLUGIN_CB_NO_REGS, NULL);
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &count, 1);
  }
}

static void at_exit(qemu_plugin_id_t id, void *data) {
  (void)id; (void)data;
  if (stopped) fprintf(stderr, "insns: %llu\n", (unsigned long long)(at_stop - at_start));
  else fprintf(stderr, "insns: none\n");
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  (void)info;
  for (int i = 0; i < argc; i++) {
    if (!strncmp(argv[i], "start=", 6)) start = strtoull(argv[i] + 6, NULL, 0);
    else if (!strncmp(argv[i], "stop=", 5)) stop = strtoull(argv[i] + 5, NULL, 0);
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}
