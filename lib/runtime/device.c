/* device.c - a CUDA device as fz sees it: its limits, read once when it is
 * opened (the schedulers ask for them on every compilation and must not pay
 * a driver call each time), its primary context, and streams on it.
 *
 * We retain the device's primary context rather than create our own: it is
 * the context the CUDA runtime, and so PyTorch, uses, so memory and streams
 * handed to fz by a framework are valid in it and no context switch
 * separates their kernels from ours.
 */
#include "runtime/cuda.h"

#include <stdio.h>
#include <stdlib.h>

static const struct {
  CUdevice_attribute attr;
  const char *name;
  size_t offset; /* of an int in fz_device_props */
} int_attrs[] = {
#define FZ_ATTR(a, field)                                                      \
  {CU_DEVICE_ATTRIBUTE_##a, #a, offsetof(fz_device_props, field)}
    FZ_ATTR(MULTIPROCESSOR_COUNT, sm_count),
    FZ_ATTR(MAX_THREADS_PER_BLOCK, max_threads_per_block),
    FZ_ATTR(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
    FZ_ATTR(WARP_SIZE, warp_size),
    FZ_ATTR(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, max_shared_per_block),
    FZ_ATTR(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, max_shared_per_sm),
    FZ_ATTR(MAX_REGISTERS_PER_BLOCK, max_registers_per_block),
    FZ_ATTR(L2_CACHE_SIZE, l2_bytes),
    FZ_ATTR(CLOCK_RATE, clock_khz),
    FZ_ATTR(MEMORY_CLOCK_RATE, memory_clock_khz),
    FZ_ATTR(GLOBAL_MEMORY_BUS_WIDTH, memory_bus_bits),
#undef FZ_ATTR
};

static fz_status get_attr(const fz_device *d, CUdevice_attribute attr,
                          const char *name, int *out, fz_error *err) {
  char what[96];
  snprintf(what, sizeof what, "cuDeviceGetAttribute(%s)", name);
  return fz_cuda_check(d->cu, d->cu->cuDeviceGetAttribute(out, attr, d->handle),
                       what, err);
}

static fz_status query_props(fz_device *d, fz_error *err) {
  const fz_cuda *cu = d->cu;
  fz_device_props *p = &d->props;
  fz_status st = FZ_CU(cu, err, cuDeviceGetName, p->name, (int)sizeof p->name,
                       d->handle);
  if (st)
    return st;
  for (size_t i = 0; i < sizeof int_attrs / sizeof int_attrs[0]; i++) {
    int *field = (int *)((char *)p + int_attrs[i].offset);
    if ((st = get_attr(d, int_attrs[i].attr, int_attrs[i].name, field, err)))
      return st;
  }
  int major, minor, coop;
  if ((st = get_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                     "COMPUTE_CAPABILITY_MAJOR", &major, err)) ||
      (st = get_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                     "COMPUTE_CAPABILITY_MINOR", &minor, err)) ||
      (st = get_attr(d, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
                     "COOPERATIVE_LAUNCH", &coop, err)))
    return st;
  p->sm = 10 * major + minor;
  p->cooperative_launch = coop != 0;
  p->driver_version = cu->driver_version;
  return FZ_CU(cu, err, cuDeviceTotalMem_v2, &p->total_memory, d->handle);
}

fz_status fz_device_open(int ordinal, fz_device **out, fz_error *err) {
  /* Arguments first: a bad call is the caller's error whether or not this
   * machine has a driver. */
  if (!out)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "fz_device_open: out is NULL");
  *out = NULL;
  if (ordinal < 0)
    return fz_error_set(err, FZ_ERR_ARGUMENT, "device ordinal %d is negative",
                        ordinal);
  const fz_cuda *cu;
  fz_status st = fz_cuda_load(&cu, err);
  if (st)
    return st;
  int count = 0;
  if ((st = FZ_CU(cu, err, cuDeviceGetCount, &count)))
    return st;
  if (ordinal >= count)
    return fz_error_set(err, FZ_ERR_NO_DEVICE,
                        "no CUDA device %d (%d device%s present)", ordinal,
                        count, count == 1 ? "" : "s");

  fz_device *d = calloc(1, sizeof *d);
  if (!d)
    return fz_error_set(err, FZ_ERR_OUT_OF_MEMORY,
                        "out of memory opening device %d", ordinal);
  d->cu = cu;
  d->props.ordinal = ordinal;
  if ((st = FZ_CU(cu, err, cuDeviceGet, &d->handle, ordinal)) ||
      (st = query_props(d, err)) ||
      (st = FZ_CU(cu, err, cuDevicePrimaryCtxRetain, &d->context, d->handle))) {
    free(d);
    return st;
  }
  *out = d;
  return FZ_OK;
}

void fz_device_close(fz_device *device) {
  if (!device)
    return;
  /* Nothing useful can be done about a failure here: the context is the
   * driver's, and its next user will hear about a broken device. */
  device->cu->cuDevicePrimaryCtxRelease_v2(device->handle);
  free(device);
}

const fz_device_props *fz_device_get_props(const fz_device *device) {
  return device ? &device->props : NULL;
}

fz_status fz_device_make_current(fz_device *device, fz_error *err) {
  CUcontext current = NULL;
  fz_status st = FZ_CU(device->cu, err, cuCtxGetCurrent, &current);
  if (st || current == device->context)
    return st;
  return FZ_CU(device->cu, err, cuCtxSetCurrent, device->context);
}

fz_status fz_device_synchronize(fz_device *device, fz_error *err) {
  fz_status st = fz_device_make_current(device, err);
  if (st)
    return st;
  return fz_cuda_check(device->cu, device->cu->cuCtxSynchronize(),
                       "cuCtxSynchronize", err);
}

fz_status fz_stream_create(fz_device *device, CUstream *out, fz_error *err) {
  *out = NULL;
  fz_status st = fz_device_make_current(device, err);
  return st ? st
            : FZ_CU(device->cu, err, cuStreamCreate, out, CU_STREAM_DEFAULT);
}

fz_status fz_stream_destroy(fz_device *device, CUstream stream,
                            fz_error *err) {
  if (!stream)
    return FZ_OK;
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuStreamDestroy_v2, stream);
}

fz_status fz_stream_synchronize(fz_device *device, CUstream stream,
                                fz_error *err) {
  fz_status st = fz_device_make_current(device, err);
  return st ? st : FZ_CU(device->cu, err, cuStreamSynchronize, stream);
}
