/* memory.c - device memory and timing, as fz_status-returning calls.
 *
 * Thin on purpose: each wrapper makes the device current (so a caller on
 * any thread may use it), calls the driver once, and names the call in the
 * error. Running out of device memory is reported as FZ_ERR_OUT_OF_MEMORY
 * rather than FZ_ERR_CUDA, since a caller may free caches and retry.
 *
 * The timer measures GPU time between two events on one stream, which is
 * what benchmarks report; host-side launch cost is measured elsewhere with
 * a host clock.
 */
#include "runtime/cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fz_status fz_device_alloc(fz_device *device, size_t bytes, CUdeviceptr *out,
                          fz_error *err) {
  *out = 0;
  if (bytes == 0)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  if (st)
    return st;
  CUresult r = device->cu->cuMemAlloc_v2(out, bytes);
  if (r == CUDA_SUCCESS)
    return FZ_OK;
  *out = 0;
  char what[96];
  snprintf(what, sizeof what, "cuMemAlloc_v2(%zu bytes)", bytes);
  st = fz_cuda_check(device->cu, r, what, err);
  if (r != CUDA_ERROR_OUT_OF_MEMORY)
    return st;
  if (err)
    err->status = FZ_ERR_OUT_OF_MEMORY;
  return FZ_ERR_OUT_OF_MEMORY;
}

fz_status fz_device_free(fz_device *device, CUdeviceptr ptr, fz_error *err) {
  if (ptr == 0)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuMemFree_v2, ptr);
}

fz_status fz_device_memset8(fz_device *device, CUdeviceptr dst,
                            unsigned char value, size_t count, fz_error *err) {
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuMemsetD8_v2, dst, value, count);
}

fz_status fz_device_memset32(fz_device *device, CUdeviceptr dst,
                             uint32_t value, size_t count, fz_error *err) {
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuMemsetD32_v2, dst, value, count);
}

fz_status fz_copy_to_device(fz_device *device, CUdeviceptr dst,
                            const void *src, size_t bytes, fz_error *err) {
  if (bytes == 0)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuMemcpyHtoD_v2, dst, src, bytes);
}

fz_status fz_copy_to_host(fz_device *device, void *dst, CUdeviceptr src,
                          size_t bytes, fz_error *err) {
  if (bytes == 0)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuMemcpyDtoH_v2, dst, src, bytes);
}

fz_status fz_copy_device(fz_device *device, CUdeviceptr dst, CUdeviceptr src,
                         size_t bytes, fz_error *err) {
  if (bytes == 0)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuMemcpyDtoD_v2, dst, src, bytes);
}

fz_status fz_copy_device_async(fz_device *device, CUdeviceptr dst,
                               CUdeviceptr src, size_t bytes, CUstream stream,
                               fz_error *err) {
  if (bytes == 0)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  return st ? st
            : FZ_CU(device->cu, err, cuMemcpyDtoDAsync_v2, dst, src, bytes,
                    stream);
}

/* ---- timer -------------------------------------------------------------- */

/* 256 MiB: several times the L2 of any current GPU (H100 50 MB, H200
 * 60 MB, B200 126 MB), and long enough to read (~60 us at 4 TB/s) that
 * the host has enqueued the timed run before the GPU reaches it. */
#define TIMER_FLUSH_BYTES ((size_t)256 << 20)
/* The read kernel's launch: a grid-stride loop, 16 bytes a thread a trip,
 * enough blocks to keep every SM of a current GPU full. */
enum { TIMER_READ_BLOCKS = 2048, TIMER_READ_THREADS = 256 };

/* The flush: every 16-byte piece read through the L2 (ld.global.cg) and
 * folded into a value that is stored only if it is 1, which the zeroed
 * buffer never gives; the store keeps ptxas from dropping the loads.
 * Written by hand: the timer must not depend on the compiler it times. */
static const char timer_read_ptx[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry fz_timer_read(.param .u64 p_src, .param .u64 p_pieces,\n"
    "                              .param .u64 p_sink)\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .b64 %rd<9>;\n"
    "  ld.param.u64 %rd1, [p_src];\n"
    "  ld.param.u64 %rd2, [p_pieces];\n"
    "  ld.param.u64 %rd3, [p_sink];\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mov.u32 %r4, %nctaid.x;\n"
    "  mul.wide.u32 %rd4, %r1, %r2;\n"
    "  cvt.u64.u32 %rd5, %r3;\n"
    "  add.s64 %rd4, %rd4, %rd5;\n"
    "  mul.wide.u32 %rd6, %r4, %r2;\n"
    "  mov.u32 %r5, 0;\n"
    "$L_loop:\n"
    "  setp.ge.u64 %p1, %rd4, %rd2;\n"
    "  @%p1 bra $L_done;\n"
    "  shl.b64 %rd7, %rd4, 4;\n"
    "  add.s64 %rd8, %rd1, %rd7;\n"
    "  ld.global.cg.v4.u32 {%r6, %r7, %r8, %r9}, [%rd8];\n"
    "  xor.b32 %r5, %r5, %r6;\n"
    "  xor.b32 %r5, %r5, %r7;\n"
    "  xor.b32 %r5, %r5, %r8;\n"
    "  xor.b32 %r5, %r5, %r9;\n"
    "  add.s64 %rd4, %rd4, %rd6;\n"
    "  bra.uni $L_loop;\n"
    "$L_done:\n"
    "  setp.ne.u32 %p2, %r5, 1;\n"
    "  @%p2 bra $L_end;\n"
    "  st.global.u32 [%rd3], %r5;\n"
    "$L_end:\n"
    "  ret;\n"
    "}\n";

static fz_status timer_load_read(fz_timer *t, fz_error *err) {
  const fz_cuda *cu = t->device->cu;
  fz_status st;
  if ((st = fz_device_make_current(t->device, err)) ||
      (st = FZ_CU(cu, err, cuModuleLoadDataEx, &t->module, timer_read_ptx, 0,
                  NULL, NULL)))
    return st;
  return FZ_CU(cu, err, cuModuleGetFunction, &t->read, t->module,
               "fz_timer_read");
}

fz_status fz_timer_create(fz_device *device, int runs, fz_timer **out,
                          fz_error *err) {
  *out = NULL;
  fz_timer *t = calloc(1, sizeof *t);
  if (t) {
    t->start = calloc((size_t)(runs > 0 ? runs : 1), sizeof *t->start);
    t->stop = calloc((size_t)(runs > 0 ? runs : 1), sizeof *t->stop);
  }
  if (!t || !t->start || !t->stop) {
    if (t) {
      free(t->start);
      free(t->stop);
    }
    free(t);
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory creating a timer");
  }
  t->device = device;
  t->flush_bytes = TIMER_FLUSH_BYTES;
  t->flush_pieces = TIMER_FLUSH_BYTES / 16;
  const char *how = getenv("FZ_TIMER_FLUSH");
  t->write_flush = how && strcmp(how, "write") == 0;
  fz_status st = fz_device_alloc(device, TIMER_FLUSH_BYTES, &t->flush, err);
  if (!st)
    st = fz_device_memset32(device, t->flush, 0, TIMER_FLUSH_BYTES / 4, err);
  if (!st)
    st = fz_device_alloc(device, 16, &t->sink, err);
  if (!st)
    st = timer_load_read(t, err);
  for (int r = 0; r < runs && !st; r++) {
    if ((st = fz_device_make_current(device, err)) ||
        (st = FZ_CU(device->cu, err, cuEventCreate, &t->start[r],
                    CU_EVENT_DEFAULT)) ||
        (st = FZ_CU(device->cu, err, cuEventCreate, &t->stop[r],
                    CU_EVENT_DEFAULT)))
      break;
    t->runs = r + 1;
  }
  if (st) {
    fz_timer_destroy(t);
    return st;
  }
  *out = t;
  return FZ_OK;
}

void fz_timer_destroy(fz_timer *timer) {
  if (!timer)
    return;
  const fz_cuda *cu = timer->device->cu;
  if (fz_device_make_current(timer->device, NULL) == FZ_OK) {
    for (int r = 0; r < timer->runs; r++) {
      if (timer->start[r])
        cu->cuEventDestroy_v2(timer->start[r]);
      if (timer->stop[r])
        cu->cuEventDestroy_v2(timer->stop[r]);
    }
    if (timer->module)
      cu->cuModuleUnload(timer->module);
  }
  fz_device_free(timer->device, timer->flush, NULL);
  fz_device_free(timer->device, timer->sink, NULL);
  free(timer->start);
  free(timer->stop);
  free(timer);
}

void fz_timer_set_written(fz_timer *timer, size_t bytes) {
  timer->written = bytes;
}

static fz_status timer_check_run(fz_timer *timer, int run, fz_error *err) {
  if (run < 0 || run >= timer->runs)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "timer run %d out of range (the timer has %d)", run,
                        timer->runs);
  return fz_device_make_current(timer->device, err);
}

fz_status fz_timer_start(fz_timer *timer, int run, CUstream stream,
                         fz_error *err) {
  timer->stream = stream;
  const fz_cuda *cu = timer->device->cu;
  void *params[3] = {&timer->flush, &timer->flush_pieces, &timer->sink};
  size_t written = timer->written < timer->flush_bytes ? timer->written
                                                       : timer->flush_bytes;
  fz_status st = timer_check_run(timer, run, err);
  if (st)
    return st;
  if (timer->write_flush)
    st = FZ_CU(cu, err, cuMemsetD32Async, timer->flush, (unsigned)run,
               timer->flush_bytes / 4, stream);
  else if (!(st = FZ_CU(cu, err, cuLaunchKernel, timer->read,
                        TIMER_READ_BLOCKS, 1, 1, TIMER_READ_THREADS, 1, 1, 0,
                        stream, params, NULL)) &&
           written >= 4)
    /* zeros: the buffer stays what the read kernel expects */
    st = FZ_CU(cu, err, cuMemsetD32Async, timer->flush, 0, written / 4,
               stream);
  if (st)
    return st;
  return FZ_CU(timer->device->cu, err, cuEventRecord, timer->start[run],
               stream);
}

fz_status fz_timer_stop(fz_timer *timer, int run, fz_error *err) {
  fz_status st = timer_check_run(timer, run, err);
  return st ? st
            : FZ_CU(timer->device->cu, err, cuEventRecord, timer->stop[run],
                    timer->stream);
}

fz_status fz_timer_elapsed_ms(fz_timer *timer, float *ms, fz_error *err) {
  const fz_cuda *cu = timer->device->cu;
  fz_status st = fz_device_make_current(timer->device, err);
  for (int r = 0; r < timer->runs && !st; r++) {
    ms[r] = 0;
    if (!(st = FZ_CU(cu, err, cuEventSynchronize, timer->stop[r])))
      st = FZ_CU(cu, err, cuEventElapsedTime, &ms[r], timer->start[r],
                 timer->stop[r]);
  }
  return st;
}
