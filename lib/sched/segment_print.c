/* segment_print.c - the text of a segmentation (fuse-opt --emit=segments):
 * per segment its scheduler, ops, inputs and outputs named as the parent
 * prints them, with where each buffer lives; then the notes on why larger
 * merges were rejected.
 */
#include "sched/segment.h"

#include "sched/segment_extract.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_LISTED = 16 }; /* ops listed per segment */

static void put_ref(fz_buf *b, fz_buffer_ref r) {
  if (r.kind == FZ_BUFFER_OUTPUT)
    fz_buf_printf(b, " (output %d)", r.index);
  else if (r.kind == FZ_BUFFER_INTERMEDIATE)
    fz_buf_printf(b, " (intermediate %d)", r.index);
}

void fz_segmentation_print_kernels(const fz_segmentation *s,
                                   const char *const *kernel_names,
                                   fz_buf *b) {
  fz_buf_printf(b, "segments @%s: %d\n", s->parent->name, s->num_segments);
  for (int k = 0; k < s->num_segments; k++) {
    const fz_segment *seg = &s->segments[k];
    const fz_fusion *f = seg->fusion;
    /* A segment copied out has every value named (name_like_printer);
     * only a parent scheduled whole needs the printer's numbers. */
    int *numbers = seg->owned ? NULL : fz_print_value_numbers(f);
    fz_buf_printf(b, "  segment %d: %d ops, scheduler %s", k, f->num_ops,
                  seg->scheduler ? seg->scheduler : "?");
    if (kernel_names && kernel_names[k])
      fz_buf_printf(b, ", kernel %s", kernel_names[k]);
    fz_buf_puts(b, "\n    ops");
    for (int i = 0; i < f->num_ops && i < MAX_LISTED; i++) {
      fz_buf_puts(b, " ");
      fz_print_value_label(b, f->ops[i]->result, numbers);
    }
    if (f->num_ops > MAX_LISTED)
      fz_buf_printf(b, " ... (+%d)", f->num_ops - MAX_LISTED);
    fz_buf_puts(b, "\n    in");
    for (int i = 0; i < f->num_inputs; i++) {
      fz_buf_puts(b, i ? ", " : " ");
      fz_print_value_label(b, f->inputs[i], numbers);
      put_ref(b, seg->inputs[i]);
    }
    fz_buf_puts(b, "\n    out");
    for (int i = 0; i < f->num_outputs; i++) {
      fz_buf_puts(b, i ? ", " : " ");
      fz_print_value_label(b, f->outputs[i], numbers);
      put_ref(b, seg->outputs[i]);
    }
    fz_buf_puts(b, "\n");
    free(numbers);
  }
  for (const char *line = s->notes; line && *line;) {
    const char *end = strchr(line, '\n');
    int len = end ? (int)(end - line) : (int)strlen(line);
    fz_buf_printf(b, "  rejected: %.*s\n", len, line);
    line += len + (end != NULL);
  }
}

void fz_segmentation_print(const fz_segmentation *s, fz_buf *b) {
  fz_segmentation_print_kernels(s, NULL, b);
}
