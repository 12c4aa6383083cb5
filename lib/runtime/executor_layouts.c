/* executor_layouts.c - every output's layout from one binding.
 *
 * A framework that allocates a call's outputs itself (the Python package,
 * through torch.empty_strided) asks for their sizes and strides once per
 * new input signature. fz_executor_output_layout answers for one output
 * and binds the inputs' sizes each time; binding walks every value of the
 * fusion (sizes checked against int64), which costs more than the answer.
 * Here the inputs are bound once and every output is read from that
 * binding, in one call: a signature miss with several outputs pays one
 * binding and one crossing of the foreign-function boundary.
 *
 * The answers are those of fz_executor_output_layout, output by output:
 * the layout the fusion declares, else the one "alloc-order" propagated,
 * dense in that order.
 */
#include "runtime/executor.h"

#include <stdlib.h>
#include <string.h>

/* What fz_bind_inputs reads of a device tensor: dtype, rank and sizes. */
static fz_status bind_sizes(const fz_fusion *f, const fz_device_tensor *inputs,
                            int num_inputs, fz_bindings *b, fz_error *err) {
  fz_host_tensor host[64];
  if (num_inputs > 64)
    return fz_error_set(err, FZ_ERR_UNSUPPORTED, "more than 64 inputs");
  for (int i = 0; i < num_inputs; i++) {
    host[i] =
        (fz_host_tensor){.dtype = inputs[i].dtype, .rank = inputs[i].rank};
    memcpy(host[i].sizes, inputs[i].sizes, sizeof host[i].sizes);
  }
  return fz_bind_inputs(f, host, num_inputs, b, err);
}

fz_status fz_executor_output_layouts(fz_executor *ex,
                                     const fz_device_tensor *inputs,
                                     int num_inputs, fz_device_tensor *outputs,
                                     int num_outputs, fz_error *err) {
  if (!ex || !outputs || (num_inputs > 0 && !inputs))
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_output_layouts: %s is NULL",
                        !ex        ? "the executor"
                        : !outputs ? "outputs"
                                   : "inputs");
  const fz_fusion *f = ex->fusion;
  if (num_outputs != f->num_outputs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fusion @%s has %d outputs but was given %d", f->name,
                        f->num_outputs, num_outputs);
  fz_bindings b = {0};
  fz_status st = bind_sizes(f, inputs, num_inputs, &b, err);
  if (st != FZ_OK)
    return st;
  /* Written only once every output has its sizes: a failure leaves
   * outputs[] as it was. */
  int64_t(*sizes)[FZ_MAX_RANK] = malloc(sizeof *sizes * (size_t)num_outputs);
  if (!sizes && num_outputs > 0) {
    fz_bindings_free(&b);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "sizes of %d outputs",
                        num_outputs);
  }
  for (int i = 0; i < num_outputs && st == FZ_OK; i++)
    st = fz_output_sizes(f, i, &b, sizes[i], err);
  fz_bindings_free(&b);
  for (int i = 0; i < num_outputs && st == FZ_OK; i++) {
    const fz_type *t = &f->outputs[i]->type;
    fz_device_tensor *out = &outputs[i];
    *out = (fz_device_tensor){.dtype = t->dtype, .rank = t->rank};
    memcpy(out->sizes, sizes[i], sizeof(int64_t) * (size_t)t->rank);
    fz_type_dense_strides(t, sizes[i], out->strides);
  }
  free(sizes);
  return st;
}
