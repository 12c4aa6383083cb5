/* api.c - the public face of device memory copies and stream waits.
 *
 * memory.c and device.c keep CUdeviceptr/CUstream in their signatures,
 * types that fz.h cannot name without the driver header. An embedder
 * holds plain integers and void pointers instead, so these wrappers only
 * check their arguments (before anything touches the driver), convert and
 * forward; the driver's errors are named where they are.
 */
#include "runtime/cuda.h"

fz_status fz_device_memory_copy_from_host(fz_device *device, uint64_t dst,
                                          const void *src, size_t bytes,
                                          fz_error *err) {
  if (!device || (bytes && !src))
    return fz_error_set(err, FZ_ERR_ARGUMENT, "copy: %s is NULL",
                        device ? "the host source" : "device");
  return fz_copy_to_device(device, (CUdeviceptr)dst, src, bytes, err);
}

fz_status fz_device_memory_copy_to_host(fz_device *device, void *dst,
                                        uint64_t src, size_t bytes,
                                        fz_error *err) {
  if (!device || (bytes && !dst))
    return fz_error_set(err, FZ_ERR_ARGUMENT, "copy: %s is NULL",
                        device ? "the host destination" : "device");
  return fz_copy_to_host(device, dst, (CUdeviceptr)src, bytes, err);
}

fz_status fz_device_stream_synchronize(fz_device *device, void *stream,
                                       fz_error *err) {
  if (!device)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "stream synchronize: device is NULL");
  return fz_stream_synchronize(device, (CUstream)stream, err);
}
