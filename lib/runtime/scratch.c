/* scratch.c - the memory a call needs besides the caller's tensors.
 *
 * A signature's scratch layout (intermediates, workspaces, counters) is
 * fixed when it is prepared; this file decides where the bytes come from
 * on each call. Two ways, because two kinds of caller exist:
 *
 * - The built-in allocator, for C users and tools: one block per
 *   signature and stream, allocated with cuMemAlloc on the first call on
 *   that stream and kept until the signature is evicted. Later calls only
 *   launch. Counters are zeroed once, in stream order, and the kernels
 *   leave them zero. A block per stream is what makes one executor safe
 *   on two streams at once: each stream's kernels have their own
 *   partials and counters.
 * - The caller's allocator (fz_executor_set_allocator), for frameworks
 *   that own the GPU's memory (PyTorch's caching allocator): memory is
 *   taken per call and given back in stream order right after the
 *   launches are queued, so it shows in the framework's statistics, is
 *   reused by the framework, and is captured correctly into CUDA graphs.
 *   Fresh memory has garbage counters, so they are zeroed on the stream
 *   each call (one cuMemsetD8Async, which capture records as a node).
 */
#include "runtime/executor.h"

#include <stdlib.h>

fz_status fz_stream_check_not_capturing(fz_device *device, CUstream stream,
                                        const char *what, fz_error *err) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  fz_status st = FZ_CU(device->cu, err, cuStreamIsCapturing, stream, &status);
  if (st != FZ_OK)
    return st;
  if (status == CU_STREAM_CAPTURE_STATUS_NONE)
    return FZ_OK;
  return fz_error_set(err, FZ_ERR_ARGUMENT,
                      "%s while the stream is being captured into a CUDA "
                      "graph: run this call once before capturing (a first "
                      "call compiles and allocates, which capture forbids)",
                      what);
}

static fz_status zero_counters(fz_executor *ex, const signature_entry *e,
                               CUstream stream, CUdeviceptr base,
                               fz_error *err) {
  size_t n = e->scratch_bytes - e->counters_begin;
  if (n == 0)
    return FZ_OK;
  return FZ_CU(ex->device->cu, err, cuMemsetD8Async, base + e->counters_begin,
               0, n, stream);
}

static fz_status from_allocator(fz_executor *ex, signature_entry *e,
                                CUstream stream, CUdeviceptr *base,
                                fz_error *err) {
  uint64_t p = 0;
  if (ex->allocator.alloc(ex->allocator.user, e->scratch_bytes, stream, &p) !=
          0 ||
      p == 0)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "the executor's allocator could not give %zu bytes "
                        "of scratch memory for @%s",
                        e->scratch_bytes, ex->fusion->name);
  if (p % 256 != 0) {
    ex->allocator.free(ex->allocator.user, p, e->scratch_bytes, stream);
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "the executor's allocator returned 0x%llx, which is "
                        "not 256-byte aligned",
                        (unsigned long long)p);
  }
  fz_status st = zero_counters(ex, e, stream, p, err);
  if (st != FZ_OK) {
    ex->allocator.free(ex->allocator.user, p, e->scratch_bytes, stream);
    return st;
  }
  *base = p;
  return FZ_OK;
}

static fz_status from_blocks(fz_executor *ex, signature_entry *e,
                             CUstream stream, CUdeviceptr *base,
                             fz_error *err) {
  for (scratch_block *b = e->blocks; b; b = b->next)
    if (b->stream == stream) {
      *base = b->base;
      return FZ_OK;
    }
  fz_status st = fz_stream_check_not_capturing(
      ex->device, stream, "a first call on this stream", err);
  if (st != FZ_OK)
    return st;
  scratch_block *b = calloc(1, sizeof *b);
  if (!b)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY, "out of host memory");
  if ((st = fz_device_alloc(ex->device, e->scratch_bytes, &b->base, err)) !=
          FZ_OK ||
      (st = zero_counters(ex, e, stream, b->base, err)) != FZ_OK) {
    fz_device_free(ex->device, b->base, NULL);
    free(b);
    return st;
  }
  b->stream = stream;
  b->next = e->blocks;
  e->blocks = b;
  *base = b->base;
  return FZ_OK;
}

fz_status fz_scratch_acquire(fz_executor *ex, signature_entry *e,
                             CUstream stream, CUdeviceptr *base,
                             fz_error *err) {
  *base = 0;
  if (e->scratch_bytes == 0)
    return FZ_OK;
  return ex->has_allocator ? from_allocator(ex, e, stream, base, err)
                           : from_blocks(ex, e, stream, base, err);
}

void fz_scratch_release(fz_executor *ex, signature_entry *e, CUstream stream,
                        CUdeviceptr base) {
  if (base && ex->has_allocator)
    ex->allocator.free(ex->allocator.user, base, e->scratch_bytes, stream);
}

void fz_scratch_free_blocks(fz_executor *ex, signature_entry *e) {
  scratch_block *b = e->blocks;
  while (b) {
    scratch_block *next = b->next;
    fz_device_free(ex->device, b->base, NULL);
    free(b);
    b = next;
  }
  e->blocks = NULL;
}
