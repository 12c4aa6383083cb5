/* gather_check.c - reporting the bad indices a gather kernel met.
 *
 * A kernel with gathered loads never reads outside a tensor: a lane whose
 * index is out of range reads at 0 and the first such lane of any launch
 * writes its access's site and the index into the executor's error word
 * (lib/lower/gather.c). The caller learns of it without a synchronization
 * per call: after the launches of a call that read gathers, the word is
 * copied into pinned host memory behind an event on the call's stream,
 * and the next call reads that copy if the event has completed (else a
 * later one does); fz_executor_check synchronizes the stream and reads
 * the word itself. Reporting clears the word, so one bad index is one
 * error.
 */
#include "runtime/executor.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static fz_status setup(fz_executor *ex, fz_error *err) {
  gather_errors *g = &ex->gather;
  if (g->word)
    return FZ_OK;
  const fz_cuda *cu = ex->device->cu;
  fz_status st = fz_device_alloc(ex->device, 2 * sizeof(int64_t), &g->word,
                                 err);
  if (st == FZ_OK)
    st = fz_device_memset8(ex->device, g->word, 0, 2 * sizeof(int64_t), err);
  void *host = NULL;
  if (st == FZ_OK)
    st = FZ_CU(cu, err, cuMemAllocHost_v2, &host, 2 * sizeof(int64_t));
  g->host = host;
  if (st == FZ_OK) {
    memset(g->host, 0, 2 * sizeof(int64_t));
    st = FZ_CU(cu, err, cuEventCreate, &g->copied, 0x2 /* disable timing */);
  }
  if (st != FZ_OK)
    fz_gather_free(ex);
  return st;
}

fz_status fz_gather_register(fz_executor *ex, segment_launch *s,
                             fz_error *err) {
  const fz_plan *p = s->plan;
  if (!fz_plan_has_gather(p))
    return FZ_OK;
  fz_status st = setup(ex, err);
  if (st != FZ_OK)
    return st;
  gather_errors *g = &ex->gather;
  for (int i = 0; i < p->num_nodes; i++) {
    const fz_plan_node *n = &p->nodes[i];
    if (n->kind != FZ_NODE_GATHER)
      continue;
    const fz_plan_access *a = &p->accesses[n->access];
    gather_site *site = fz_arena_alloc(ex->arena, sizeof *site);
    char label[64];
    snprintf(site->op, sizeof site->op, "%s = %s",
             fz_value_label(n->value, label, sizeof label),
             n->value->def ? fz_op_table[n->value->def->code].name : "gather");
    fz_value_label(p->fusion->inputs[a->io], site->data, sizeof site->data);
    site->axis = a->gather_axis;
    site->extent = a->gather_extent;
    fz_arena_push(ex->arena, (void ***)&g->sites, &g->num_sites,
                  &g->cap_sites, site);
    s->scalars[fz_plan_gather_param(p, n->access) + 2] = g->num_sites;
  }
  return FZ_OK;
}

fz_status fz_gather_after_launches(fz_executor *ex, const signature_entry *e,
                                   CUstream stream, fz_error *err) {
  gather_errors *g = &ex->gather;
  if (!e->has_gather || !g->word)
    return FZ_OK;
  const fz_cuda *cu = ex->device->cu;
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  fz_status st = FZ_CU(cu, err, cuStreamIsCapturing, stream, &capturing);
  if (st != FZ_OK || capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    return st; /* a graph's replays are checked by fz_executor_check */
  if ((st = FZ_CU(cu, err, cuMemcpyDtoHAsync_v2, g->host, g->word,
                  2 * sizeof(int64_t), stream)) != FZ_OK ||
      (st = FZ_CU(cu, err, cuEventRecord, g->copied, stream)) != FZ_OK)
    return st;
  g->pending = true;
  return FZ_OK;
}

/* The error for the word's contents (site, index), and the word cleared. */
static fz_status report(fz_executor *ex, int64_t site, int64_t index,
                        fz_error *err) {
  gather_errors *g = &ex->gather;
  fz_status st = fz_device_memset8(ex->device, g->word, 0,
                                   2 * sizeof(int64_t), err);
  g->host[0] = g->host[1] = 0;
  if (st != FZ_OK)
    return st;
  if (site < 1 || site > g->num_sites)
    return fz_error_set(err, FZ_ERR_INTERNAL,
                        "a gather kernel reported site %" PRId64
                        " of %d (index %" PRId64 ")",
                        site, g->num_sites, index);
  const gather_site *s = g->sites[site - 1];
  return fz_error_set(err, FZ_ERR_INVALID,
                      "%s: index %" PRId64 " is out of range [0, %" PRId64
                      ") of axis %d of %s",
                      s->op, index, s->extent, s->axis, s->data);
}

fz_status fz_gather_poll(fz_executor *ex, fz_error *err) {
  gather_errors *g = &ex->gather;
  if (!g->pending)
    return FZ_OK;
  CUresult r = ex->device->cu->cuEventQuery(g->copied);
  if (r == CUDA_ERROR_NOT_READY)
    return FZ_OK;
  g->pending = false;
  fz_status st = fz_cuda_check(ex->device->cu, r, "cuEventQuery", err);
  if (st != FZ_OK || g->host[0] == 0)
    return st;
  return report(ex, g->host[0], g->host[1], err);
}

fz_status fz_executor_check(fz_executor *ex, void *stream, fz_error *err) {
  if (!ex)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "fz_executor_check: the executor is NULL");
  gather_errors *g = &ex->gather;
  if (!g->word)
    return FZ_OK; /* no plan with gathers ran */
  fz_status st = fz_device_make_current(ex->device, err);
  if (st == FZ_OK)
    st = fz_stream_synchronize(ex->device, (CUstream)stream, err);
  int64_t word[2] = {0, 0};
  if (st == FZ_OK)
    st = FZ_CU(ex->device->cu, err, cuMemcpyDtoH_v2, word, g->word,
               sizeof word);
  if (st != FZ_OK)
    return st;
  g->pending = false;
  if (word[0] == 0)
    return FZ_OK;
  return report(ex, word[0], word[1], err);
}

void fz_gather_free(fz_executor *ex) {
  gather_errors *g = &ex->gather;
  const fz_cuda *cu = ex->device ? ex->device->cu : NULL;
  if (g->copied && cu)
    cu->cuEventDestroy_v2(g->copied);
  if (g->host && cu)
    cu->cuMemFreeHost(g->host);
  if (g->word)
    fz_device_free(ex->device, g->word, NULL);
  g->copied = NULL;
  g->host = NULL;
  g->word = 0;
  g->pending = false;
}
