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
 * 60 MB, B200 126 MB), and long enough to write (~60 us at 4 TB/s) that
 * the host has enqueued the timed run before the GPU reaches it. */
#define TIMER_FLUSH_BYTES ((size_t)256 << 20)

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
  t->flush_words = TIMER_FLUSH_BYTES / 4;
  fz_status st = fz_device_alloc(device, TIMER_FLUSH_BYTES, &t->flush, err);
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
  }
  fz_device_free(timer->device, timer->flush, NULL);
  free(timer->start);
  free(timer->stop);
  free(timer);
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
  fz_status st;
  if ((st = timer_check_run(timer, run, err)) ||
      (st = FZ_CU(timer->device->cu, err, cuMemsetD32Async, timer->flush,
                  (unsigned)run, timer->flush_words, stream)))
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
