/* emit.c - the emitter's state: the LLVM types every emitter uses, the
 * first failure (later ones are dropped: callers stop at the first NULL),
 * and names of values, which make the IR readable and let tests find them.
 */
#include "emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void emit_vfail(fz_emit *e, const fz_plan_node *at, fz_status status,
                       const char *fmt, va_list ap) {
  if (e->failed)
    return;
  e->failed = true;
  char msg[sizeof e->err->message];
  vsnprintf(msg, sizeof msg, fmt, ap);
  e->status = status;
  fz_error_at(e->err, at ? fz_value_loc(at->value) : (fz_loc){0, 0}, status,
              "lower: %s", msg);
}

LLVMValueRef fz_emit_fail(fz_emit *e, fz_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_vfail(e, e->node, status, fmt, ap);
  va_end(ap);
  return NULL;
}

LLVMValueRef fz_emit_fail_at(fz_emit *e, int node, fz_status status,
                             const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_vfail(e, &e->plan->nodes[node], status, fmt, ap);
  va_end(ap);
  return NULL;
}

void fz_emit_init_types(fz_emit *e) {
  LLVMContextRef c = e->ctx;
  e->t_void = LLVMVoidTypeInContext(c);
  e->t_i1 = LLVMInt1TypeInContext(c);
  e->t_i8 = LLVMInt8TypeInContext(c);
  e->t_i32 = LLVMInt32TypeInContext(c);
  e->t_i64 = LLVMInt64TypeInContext(c);
  e->t_half = LLVMHalfTypeInContext(c);
  e->t_bf16 = LLVMBFloatTypeInContext(c);
  e->t_f32 = LLVMFloatTypeInContext(c);
  e->t_f64 = LLVMDoubleTypeInContext(c);
  e->t_ptr = LLVMPointerTypeInContext(c, 1);
  e->t_sptr = LLVMPointerTypeInContext(c, 3);
  e->t_idx = e->plan->index32 ? e->t_i32 : e->t_i64;
}

void fz_set_name(LLVMValueRef v, const char *fmt, ...) {
  char name[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  LLVMSetValueName2(v, name, strlen(name));
}
