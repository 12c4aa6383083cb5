/* fake_cuda.h - a CUDA driver that is not there, for running the executor
 * on a machine without a GPU: the executor tests, which check what the
 * executor asks of the driver, and bench/miss_cpu, which times the host
 * work of a call.
 *
 * Every entry point succeeds at once. Handles and device addresses are
 * made up (a bump allocator hands out addresses with no memory behind
 * them), the loaded PTX is only scanned for its pointer parameters, and
 * the attribute and occupancy queries answer from fake_cuda below. What a
 * test checks (launch grids and parameters, memsets, refusals) it records
 * in entry points of its own, set over the table fake_cuda_init fills.
 *
 * Driver entry points take no user pointer, so the state is one global:
 * fake_cuda_init resets it, once per test case.
 */
#ifndef FZ_TEST_FAKE_CUDA_H
#define FZ_TEST_FAKE_CUDA_H

#include "fz/fz.h"
/* lib/ is private to libfz; the fake stands behind the device's function
 * table. */
#include "runtime/cuda.h"

typedef struct fake_cuda_state {
  CUcontext current;        /* cuCtxGetCurrent answers it */
  CUdeviceptr next_address; /* where the next cuMemAlloc_v2 lands */
  int allocs, frees;        /* cuMemAlloc_v2, cuMemFree_v2 calls */
  CUstream capturing;       /* the stream reported as being captured */
  int num_params;           /* .param .u64 lines of the last PTX loaded */
  int num_regs;             /* CU_FUNC_ATTRIBUTE_NUM_REGS answers it */
  int blocks_per_sm; /* cuOccupancyMaxActiveBlocksPerMultiprocessor too */
} fake_cuda_state;

extern fake_cuda_state fake_cuda;

/* Resets fake_cuda (addresses from 0x100000, 32 registers, 2 blocks an
 * SM, no capture) and fills *cu: error names, contexts, allocation and
 * memsets, the capture query, modules and functions, function
 * attributes, a cuLaunchKernel that does nothing, and the per-SM
 * occupancy query. The other entries are NULL: cooperative and cluster
 * launches and the cluster occupancy query are the caller's to add. */
void fake_cuda_init(fz_cuda *cu);

/* A device behind cu with an H200's properties (sm_90, 132 SMs, 227 KiB
 * of shared memory a block, 60 MiB of L2). */
fz_device fake_cuda_device(const fz_cuda *cu);

/* Runs FZ_TEST_ROWS_AND_COLUMNS (test_fusions.h) on ex at M x N, its
 * input and outputs dense at made-up addresses. */
fz_status fake_cuda_run_rows_and_columns(fz_executor *ex, int64_t m,
                                         int64_t n, fz_error *err);

#endif
