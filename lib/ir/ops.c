/* ops.c - the op table, expanded from ops.def. */
#include "fz/ir.h"

#include <string.h>

const fz_op_info fz_op_table[FZ_NUM_OPCODES] = {
#define FZ_OP(e, name, kind, arity, flags) {name, kind, arity, flags},
#include "fz/ops.def"
#undef FZ_OP
};

int fz_opcode_from_name(const char *name, size_t length) {
  for (int i = 0; i < FZ_NUM_OPCODES; i++) {
    const char *n = fz_op_table[i].name;
    if (strlen(n) == length && memcmp(n, name, length) == 0)
      return i;
  }
  return -1;
}
