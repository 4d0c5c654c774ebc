/* Graph memory: an allocation node takes device memory at every launch of
 * its graph, from a pool the driver keeps for graphs, with no call the
 * interposer sees at that moment. It cannot be charged, so on a GPU with a
 * memory limit such nodes are refused (CUDA_ERROR_NOT_SUPPORTED) where they are made:
 * cuGraphAddMemAllocNode, cuGraphAddNode (both versions), and stream capture
 * (memory.c). Their parameters cannot be changed afterwards (the driver
 * supports no cuGraphNodeSetParams for them), so no other way in remains.
 */
#define _GNU_SOURCE
#include "internal.h"

static int refused(const CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  if (gs_mode() != GS_ENFORCE || !p) return 0;
  const CUmemLocation *where = &p->poolProps.location;
  const struct gs_dev *d = where->type == CU_MEM_LOCATION_TYPE_DEVICE ? gs_ordinal_dev(where->id) : NULL;
  if (!d || d->mem_limit == GS_NO_LIMIT) return 0;
  GS_LOG("graph allocation node on device %d refused: graph memory is not accounted", where->id);
  return 1;
}

/* gs_mode() first, always: it resolves the driver a pass-through needs. */
static int refused_node(const CUgraphNodeParams *p) {
  return gs_mode() == GS_ENFORCE && p && p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && refused(&p->alloc);
}

GS_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                          CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  if (refused(p)) return CUDA_ERROR_NOT_SUPPORTED;
  return gs_real.cuGraphAddMemAllocNode(node, g, deps, ndeps, p);
}

GS_EXPORT CUresult cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                  CUgraphNodeParams *p) {
  if (refused_node(p)) return CUDA_ERROR_NOT_SUPPORTED;
  return gs_real.cuGraphAddNode(node, g, deps, ndeps, p);
}

GS_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                     const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p) {
  if (refused_node(p)) return CUDA_ERROR_NOT_SUPPORTED;
  return gs_real.cuGraphAddNode_v2(node, g, deps, edges, ndeps, p);
}
