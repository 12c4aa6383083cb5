/* pass.c - the table of passes, looked up by name.
 *
 * Every pass is a function over a fusion, edited in place. The table is the
 * one place a pass is registered: fz_run_pass, fuse-opt's --pass and its
 * --help all read it, so adding a pass is one row here plus its file.
 *
 * fz_run_pass verifies the fusion after the pass: a pass that leaves invalid
 * IR is a bug in the pass, and catching it at the pass boundary (as QBE and
 * MLIR do between passes) names the culprit instead of a later stage.
 */
#include "sched/pass.h"

#include <stdio.h>
#include <string.h>

static const fz_pass_info passes[] = {
    {"canonicalize", fz_pass_canonicalize,
     "fold shape-op chains, copies and literal arithmetic; cse; dead ops"},
    {"cse", fz_pass_cse, "merge equal ops (common subexpressions)"},
    {"alloc-order", fz_pass_alloc_order,
     "give undeclared results their source tensor's allocation order"},
    {"resize-pushdown", fz_pass_resize_pushdown,
     "move slice, pad and cat toward the inputs (windows of inputs)"},
    {"gather-pushdown", fz_pass_gather_pushdown,
     "compute gathered values at the gathered points, gathering inputs"},
};

int fz_pass_count(void) { return (int)(sizeof passes / sizeof passes[0]); }

const fz_pass_info *fz_pass_at(int index) {
  if (index < 0 || index >= fz_pass_count())
    return NULL;
  return &passes[index];
}

const fz_pass_info *fz_pass_find(const char *name) {
  for (int i = 0; i < fz_pass_count(); i++)
    if (strcmp(passes[i].name, name) == 0)
      return &passes[i];
  return NULL;
}

fz_status fz_run_pass(fz_fusion *fusion, const char *pass_name,
                      fz_error *err) {
  if (!fusion || !pass_name)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_run_pass: %s is NULL",
                        fusion ? "pass_name" : "fusion");
  const fz_pass_info *pass = fz_pass_find(pass_name);
  if (!pass) {
    char known[512] = "";
    for (int i = 0; i < fz_pass_count(); i++) {
      size_t len = strlen(known);
      snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
               passes[i].name);
    }
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "unknown pass '%s' (known passes: %s)", pass_name,
                        known);
  }
  fz_status st = pass->run(fusion, err);
  if (st != FZ_OK)
    return st;
  fz_error verr = {0};
  if (fz_verify(fusion, &verr) != FZ_OK)
    return fz_error_at(err, fz_error_loc(&verr), FZ_ERR_INTERNAL,
                       "pass '%s' produced invalid IR: %s", pass->name,
                       verr.message);
  return FZ_OK;
}
