/* interp.h - private to the reference interpreter (lib/ir/interp*.c).
 *
 * interp_scalar.c holds what one element means: rounding to each dtype,
 * conversions, and the math of every pointwise op. interp_bind.c binds
 * symbols from input sizes and checks arguments. interp_rows.c moves
 * elements: views, loop nests, and loading/storing rows with dtype
 * conversion. interp_ops.c says what each op does to views (rand and
 * randn: interp_random.c, from philox.c); interp.c
 * allocates buffers and runs the ops in order.
 */
#ifndef FZ_IR_INTERP_H
#define FZ_IR_INTERP_H

#include "fz/ir.h"

/* ---- interp_scalar.c ----------------------------------------------------- */

/* An integer converted to a float dtype, rounded once (to nearest even), as
 * cvt.rn does: no double rounding through f64 for |v| >= 2^53. */
double fz_interp_int_to_float(int64_t v, fz_dtype dtype);
/* A float converted to an integer dtype or bool: truncation toward zero,
 * saturation to the dtype's range, NaN -> 0 (cvt.rzi.sat); bool is != 0. */
int64_t fz_interp_float_to_int(double v, fz_dtype dtype);
/* An integer narrowed to an integer dtype (two's complement wrap) or bool. */
int64_t fz_interp_wrap_int(int64_t v, fz_dtype dtype);
/* Pointwise math on operands already converted to the compute dtype. The
 * float form returns an unrounded double (comparisons give 0 or 1). */
double fz_interp_float_op(fz_opcode code, double a, double b, double c);
int64_t fz_interp_int_op(fz_opcode code, int64_t a, int64_t b, int64_t c);
/* bitwise_left_shift / bitwise_right_shift of a by n in integer dtype d,
 * as PyTorch's CUDA kernels define them for every count: a left shift by
 * n < 0 or n >= the width is 0, a right shift by such an n (or width - 1)
 * leaves only the sign (0 or -1). */
int64_t fz_interp_shift(fz_opcode code, int64_t a, int64_t n, fz_dtype d);

/* ---- interp_bind.c ------------------------------------------------------- */

/* Sizes of v's axes under the bindings; fails if a symbol is unbound. */
fz_status fz_interp_value_sizes(const fz_fusion *f, const fz_value *v,
                                const fz_bindings *b, int64_t *sizes,
                                fz_error *err);
/* Checks outputs against the fusion's (dtype, rank, sizes) and that every
 * tensor with elements has data, before anything is written. */
fz_status fz_interp_check_args(const fz_fusion *f, const fz_bindings *b,
                               const fz_host_tensor *inputs, int num_inputs,
                               const fz_host_tensor *outputs, int num_outputs,
                               fz_error *err);

/* ---- interp_rows.c: views, loop nests, rows ------------------------------ */

/* A dense buffer shared by views, freed with its last reference. Elements
 * are fz_scalar: .f for float dtypes, .i for integers and bool. */
typedef struct fz_ibuf {
  fz_scalar *data;
  int refs;
} fz_ibuf;

typedef enum fz_istorage {
  FZ_IST_DENSE,  /* an fz_ibuf */
  FZ_IST_HOST,   /* caller memory in the dtype's own representation */
  FZ_IST_SCALAR, /* one inline value (a literal) */
} fz_istorage;

/* A value's elements: storage plus sizes and strides in elements. */
typedef struct fz_iview {
  bool live;
  fz_istorage st;
  fz_dtype dtype;
  void *data;     /* DENSE: buf->data; HOST: the caller's pointer */
  int64_t offset; /* element offset of index (0, ..., 0) */
  int rank;
  int64_t sizes[FZ_MAX_RANK];
  int64_t strides[FZ_MAX_RANK];
  fz_scalar scalar; /* SCALAR */
  fz_ibuf *buf;     /* DENSE: one reference held by this view */
} fz_iview;

/* Elements a loop body handles at once; rows are cut into chunks of it. */
#define FZ_INTERP_CHUNK 256
#define FZ_IMAX_TENSORS 4

/* A loop nest over one shape, walking up to FZ_IMAX_TENSORS tensors, each
 * with its own base offset and strides. */
typedef struct fz_loop_nest {
  int rank, n;
  int64_t sizes[FZ_MAX_RANK];
  int64_t base[FZ_IMAX_TENSORS];
  int64_t strides[FZ_IMAX_TENSORS][FZ_MAX_RANK];
} fz_loop_nest;

/* Walks a loop nest one chunk (at most FZ_INTERP_CHUNK elements of the
 * innermost axis) at a time: off[k] is tensor k's offset of the chunk's
 * first element, step[k] its stride along the chunk, len its length. */
typedef struct fz_chunk_cursor {
  const fz_loop_nest *l;
  int64_t idx[FZ_MAX_RANK];
  int64_t row[FZ_IMAX_TENSORS]; /* offsets of the current row's start */
  int64_t rows_left, col, len;
  int64_t off[FZ_IMAX_TENSORS], step[FZ_IMAX_TENSORS];
} fz_chunk_cursor;

void fz_loop_nest_init(fz_loop_nest *l, int rank, const int64_t *sizes);
int fz_loop_nest_add(fz_loop_nest *l, int64_t base, const int64_t *strides);
/* Reorders the axes so that tensor `guide` (or none, if < 0) is walked in
 * memory order, drops size-1 axes and merges axes that are contiguous in
 * every tensor. Iteration order is all that changes. */
void fz_loop_nest_optimize(fz_loop_nest *l, int guide);
void fz_chunk_cursor_start(fz_chunk_cursor *c, const fz_loop_nest *l);
bool fz_chunk_cursor_next(fz_chunk_cursor *c);

/* The axis order (outermost first) that walks a tensor with these strides
 * in memory order: by decreasing |stride|, ties in logical order. */
void fz_imemory_order(int rank, const int64_t *strides, int *order);
/* Converts n values in place from dtype `from` (or its class) to `to`,
 * with the interpreter's conversion rules (round, saturate, wrap). */
void fz_iconvert(fz_scalar *x, int64_t n, fz_dtype from, fz_dtype to);
/* n elements of v at off, off+step, ... converted to dtype `to`. */
void fz_iload(const fz_iview *v, int64_t off, int64_t step, int64_t n,
              fz_dtype to, fz_scalar *out);
/* Converts vals (in place) from dtype `from` to v's dtype and stores them
 * at off, off+step, ... of v (DENSE or HOST). */
void fz_istore(fz_iview *v, int64_t off, int64_t step, int64_t n,
               fz_scalar *vals, fz_dtype from);
/* Copies every element of src into dst, a view of the same sizes, in the
 * exact dtype (values unchanged where dst's dtype holds them). */
void fz_icopy(const fz_iview *src, fz_iview *dst);

/* The dtype a row is loaded as to see its values unchanged. */
static inline fz_dtype fz_iexact_dtype(fz_dtype d) {
  return fz_dtype_is_float(d) ? FZ_F64 : FZ_I64;
}
/* Element count of a view (checked against overflow when it was made). */
int64_t fz_iview_count(const fz_iview *v);

/* ---- interp.c: the run's state, and buffers ------------------------------ */

typedef struct fz_interp {
  const fz_fusion *f;
  const fz_bindings *b;
  fz_iview *views; /* by value id */
  int *last_use;   /* by value id: index of the last op that reads it */
  /* The outputs each value is written to, without a scan of all outputs
   * per op: first_output by value id (-1: none), next_output by output
   * index (-1: the last for its value). */
  int *first_output;
  int *next_output;
  fz_error *err;
} fz_interp;

/* Fails with FZ_ERR_INVALID naming the op's result, "%r = add: ...", at
 * the op's location. */
fz_status fz_interp_invalid(fz_interp *in, const fz_op *op, const char *fmt,
                            ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Dense strides for sizes laid out in `order` (outermost first; NULL for
 * row-major). */
void fz_interp_dense_strides(int rank, const int64_t *sizes, const int *order,
                             int64_t *strides);
/* A new dense view of value v laid out in `order` (NULL: row-major),
 * backed by `count` elements (v's own element count when count < 0).
 * FZ_ERR_ARGUMENT when the count overflows int64 (fz_bind_inputs refuses
 * such sizes first), FZ_ERR_OUT_OF_MEMORY when it is too large for the
 * interpreter or malloc fails. */
fz_status fz_interp_new_dense(fz_interp *in, const fz_value *v,
                              const int *order, int64_t count, fz_iview *out);
/* The view of an operand; a literal becomes a scalar view in *tmp. */
const fz_iview *fz_interp_operand(fz_interp *in, const fz_value *v,
                                  fz_iview *tmp);

/* ---- interp_argreduce.c --------------------------------------------------- */

/* argmax / argmin of src into the dense i64 view res: reduced[d] marks the
 * reduced axes of src, out_strides[d] is res's stride for src axis d (0
 * when reduced). The position is row-major over the reduced axes in
 * logical order; ties and NaN go to the first position. FZ_ERR_OUT_OF_MEMORY
 * when the scratch of running values cannot be allocated. */
fz_status fz_interp_arg_reduce(fz_opcode code, const fz_iview *src,
                               const bool *reduced, const int64_t *out_strides,
                               fz_iview *res, fz_error *err);

/* ---- interp_ops.c -------------------------------------------------------- */

/* Evaluates op into *res (its operands' views are live). */
fz_status fz_interp_eval_op(fz_interp *in, const fz_op *op, fz_iview *res);

/* ---- interp_moments.c ---------------------------------------------------- */

/* var or mean of src over its `reduced` axes into the dense result res
 * (out_strides: res's stride per source axis, 0 for the reduced ones). */
fz_status fz_interp_moments(fz_interp *in, const fz_op *op, const fz_iview *src,
                            const bool *reduced, const int64_t *out_strides,
                            fz_iview *res);
/* ---- interp_random.c ----------------------------------------------------- */

/* rand or randn into a new row-major *res (philox.c). */
fz_status fz_interp_eval_random(fz_interp *in, const fz_op *op,
                                fz_iview *res);
/* ---- interp_gather.c ----------------------------------------------------- */

/* gather and index_select into *res; an index outside [0, extent) of the
 * data axis is FZ_ERR_INVALID "gather: index 17 is out of range [0, 16)
 * of axis 1 of %x", as PyTorch refuses it (negative indices too). */
fz_status fz_interp_eval_gather(fz_interp *in, const fz_op *op, fz_iview *res);
/* ---- interp_resize.c ----------------------------------------------------- */

/* Evaluates a slice, pad or cat into *res. */
fz_status fz_interp_eval_resize(fz_interp *in, const fz_op *op,
                                fz_iview *res);

#endif
