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

/* The parameters are judged, and handed to the driver, as one copy of ours
 * (another thread could change the caller's in between); what the driver
 * writes back (the node's address) is copied out. gs_mode() first, always:
 * it resolves the driver a pass-through needs. */
GS_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                          CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  gs_mode();
  if (!p) return gs_real.cuGraphAddMemAllocNode(node, g, deps, ndeps, p);
  CUDA_MEM_ALLOC_NODE_PARAMS asked = *p;
  if (refused(&asked)) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = gs_real.cuGraphAddMemAllocNode(node, g, deps, ndeps, &asked);
  if (r == CUDA_SUCCESS) p->dptr = asked.dptr;
  return r;
}

static int refused_node(const CUgraphNodeParams *p) {
  return p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && refused(&p->alloc);
}

/* cuGraphAddNode's two versions, as cuGraphAddMemAllocNode: `call_` hands
 * the driver `asked_`, our copy, whose writes are copied out. */
#define ADD_NODE_WRAPPER(p, passed_through, call_)                                                  \
  do {                                                                                             \
    gs_mode();                                                                                     \
    if (!(p)) return passed_through;                                                               \
    CUgraphNodeParams asked_ = *(p);                                                               \
    if (refused_node(&asked_)) return CUDA_ERROR_NOT_SUPPORTED;                                    \
    CUresult r_ = call_;                                                                           \
    if (r_ == CUDA_SUCCESS) *(p) = asked_;                                                         \
    return r_;                                                                                     \
  } while (0)

GS_EXPORT CUresult cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                  CUgraphNodeParams *p) {
  ADD_NODE_WRAPPER(p, gs_real.cuGraphAddNode(node, g, deps, ndeps, p),
                   gs_real.cuGraphAddNode(node, g, deps, ndeps, &asked_));
}

GS_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                     const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p) {
  ADD_NODE_WRAPPER(p, gs_real.cuGraphAddNode_v2(node, g, deps, edges, ndeps, p),
                   gs_real.cuGraphAddNode_v2(node, g, deps, edges, ndeps, &asked_));
}
