/* cuda.c - finds the CUDA driver at run time.
 *
 * libfz never links libcuda: the driver is opened with dlopen the first time
 * something needs the GPU, and its entry points are bound into one table
 * (fz_cuda, listed once in cuda.h). So the compiler, its tests and
 * fuse-opt run on machines without a GPU or a driver, and GPU code reports
 * FZ_ERR_NO_DEVICE there instead of failing to start.
 *
 * Loading happens once per process under pthread_once, and the outcome,
 * success or the error message, is kept: asking again is a cheap read, and
 * every caller sees the same answer. A driver is never unloaded; it may
 * have registered exit handlers and threads of its own.
 */
#include "runtime/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* POSIX guarantees that a dlsym result converts to a function pointer; we
 * copy the bytes, which ISO C leaves alone, and check the sizes agree. */
_Static_assert(sizeof(void *) == sizeof(CUresult (*)(void)),
               "function and data pointers differ in size");

static const struct {
  const char *name;
  size_t offset;
} entries[] = {
#define FZ_X_ENTRY(name, params) {#name, offsetof(fz_cuda, name)},
    FZ_CUDA_FUNCS(FZ_X_ENTRY)
#undef FZ_X_ENTRY
};

static const struct {
  const char *name;
  size_t offset;
} optional_entries[] = {
#define FZ_X_ENTRY(name, params) {#name, offsetof(fz_cuda, name)},
    FZ_CUDA_OPTIONAL_FUNCS(FZ_X_ENTRY)
#undef FZ_X_ENTRY
};

fz_status fz_cuda_bind(const char *library, fz_cuda *cu, void **handle,
                       fz_error *err) {
  memset(cu, 0, sizeof *cu);
  *handle = NULL;
  void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    return fz_error_set(err, FZ_ERR_NO_DEVICE,
                        "cannot load the CUDA driver %s (%s)", library,
                        why ? why : "no reason given");
  }
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    void *sym = dlsym(lib, entries[i].name);
    if (!sym) {
      dlclose(lib);
      memset(cu, 0, sizeof *cu);
      return fz_error_set(err, FZ_ERR_CUDA,
                          "%s has no symbol %s (the CUDA driver is too old?)",
                          library, entries[i].name);
    }
    memcpy((char *)cu + entries[i].offset, &sym, sizeof sym);
  }
  for (size_t i = 0; i < sizeof optional_entries / sizeof optional_entries[0];
       i++) {
    void *sym = dlsym(lib, optional_entries[i].name);
    if (sym)
      memcpy((char *)cu + optional_entries[i].offset, &sym, sizeof sym);
  }
  *handle = lib;
  return FZ_OK;
}

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static fz_cuda loaded;
static fz_error load_error; /* status FZ_OK when `loaded` is usable */

static void load(void) {
  void *handle;
  if (fz_cuda_bind("libcuda.so.1", &loaded, &handle, &load_error) != FZ_OK)
    return;
  CUresult r = loaded.cuInit(0);
  if (r != CUDA_SUCCESS) {
    fz_error why;
    fz_cuda_check(&loaded, r, "cuInit", &why);
    /* The stub answers every call with CUDA_ERROR_STUB_LIBRARY: it is what
     * a machine without a driver finds when the toolkit's stubs directory
     * is on the library path. */
    if (r == CUDA_ERROR_NO_DEVICE)
      fz_error_set(&load_error, FZ_ERR_NO_DEVICE, "no CUDA device (%s)",
                   why.message);
    else if (r == CUDA_ERROR_STUB_LIBRARY)
      fz_error_set(&load_error, FZ_ERR_NO_DEVICE,
                   "libcuda.so.1 is the CUDA toolkit's stub, not a driver "
                   "(%s)",
                   why.message);
    else
      load_error = why;
    return;
  }
  fz_cuda_check(&loaded, loaded.cuDriverGetVersion(&loaded.driver_version),
                "cuDriverGetVersion", &load_error);
}

fz_status fz_cuda_load(const fz_cuda **out, fz_error *err) {
  pthread_once(&load_once, load);
  if (load_error.status != FZ_OK) {
    *out = NULL;
    return fz_error_set(err, load_error.status, "%s", load_error.message);
  }
  *out = &loaded;
  return FZ_OK;
}

fz_status fz_cuda_check(const fz_cuda *cu, CUresult r, const char *what,
                        fz_error *err) {
  if (r == CUDA_SUCCESS)
    return FZ_OK;
  const char *name = NULL, *desc = NULL;
  if (!cu || !cu->cuGetErrorName || cu->cuGetErrorName(r, &name) != CUDA_SUCCESS
      || !name)
    return fz_error_set(err, FZ_ERR_CUDA, "%s: CUDA error %d", what, (int)r);
  if (!cu->cuGetErrorString || cu->cuGetErrorString(r, &desc) != CUDA_SUCCESS
      || !desc)
    return fz_error_set(err, FZ_ERR_CUDA, "%s: %s", what, name);
  return fz_error_set(err, FZ_ERR_CUDA, "%s: %s (%s)", what, name, desc);
}
