/*
 * hdor.c -- the Hybrid-DOR ("hdor") unicast routing engine for KNS (k-ary n-direct s-indirect)
 * InfiniBand fabrics, for OpenSM 3.3.23.
 *
 * The algorithm is specified in docs/hdor.md (every tie-break); ibtool/routing/hdor.py is a
 * Python reference implementation of the same text and a test compares the tables entry by entry.
 *
 * One source file, two variants:
 *   - plugin (default): built against Debian's libopensm-dev as libhdor.so; the event plugin's
 *     create() registers the external routing engine "hdor" (opensm.conf: event_plugin_name hdor).
 *   - in-tree (HDOR_INTREE, defined by the in-tree wrapper opensm/osm_ucast_hdor.c): a built-in
 *     engine, osm_ucast_hdor_setup() is listed in static_routing_modules[].
 *
 * Every pass recomputes everything from OpenSM's current subnet (nothing is cached across passes)
 * and frees what it allocated at the end of the pass.  The fabric is fully analysed and validated
 * before anything is written, so a decline (return -1) leaves the LFTs and hop matrices clean for
 * the next engine in routing_engine.
 */
#include <opensm/osm_config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <inttypes.h>
#include <errno.h>
#include <time.h>
#include <syslog.h>
#include <stdarg.h>
#include <unistd.h>

#include <complib/cl_qmap.h>
#ifdef HDOR_INTREE
#include <opensm/osm_file_ids.h>
#define FILE_ID OSM_FILE_UCAST_HDOR_C
#endif
#include <opensm/osm_opensm.h>
#include <opensm/osm_subnet.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_node.h>
#include <opensm/osm_port.h>
#include <opensm/osm_log.h>
#include <opensm/osm_version.h>
#ifndef HDOR_INTREE
#include <opensm/osm_event_plugin.h>
#endif

#define HDOR_NAME "hdor"
#define HDOR_DUMP_FILE "opensm-hdor.dump"
#define HDOR_MAX_N 16

/* ------------------------------------------------------------------------------------------ */
/* per-pass data                                                                              */

enum { N_SWITCH = 1, N_CA = 2 };
enum { T_NONE = 0, T_ROUTER = 1, T_SWITCH = 2 };

typedef struct { uint64_t m[4]; } pmask_t;	/* a set of ports 0..255 */

typedef struct {
	uint8_t port;		/* local port */
	uint8_t kind;		/* N_SWITCH / N_CA */
	uint8_t rport;		/* remote port */
	int idx;		/* remote switch index or CA node index */
} hlink_t;

typedef struct {
	osm_switch_t *sw;
	osm_node_t *node;
	uint64_t guid;
	int router;		/* router index, -1 for an indirect switch */
	int group;		/* group index of an indirect switch, -1 for a router */
	int lidx;		/* index inside its group */
	uint16_t base_lid;
	uint32_t loff, ln;	/* healthy links */
	int first_set;		/* chain of this switch's candidate sets */
} hsw_t;

typedef struct {
	osm_node_t *node;
	uint64_t guid;
	int router;		/* router of its lowest linked port */
	int port_num;
} hca_t;

typedef struct {
	int sw;
	uint64_t guid;
	uint32_t goff, gn;	/* distinct groups (CSR into rgl) */
} hrtr_t;

typedef struct {
	uint64_t key;
	int dim;
	uint32_t soff, sn;	/* switches (CSR into gsw) */
	uint32_t moff, mn;	/* members sorted by GUID (CSR into gmem) */
	int *mbyc;		/* k: member router index by coordinate in dim */
	uint16_t *mdist;	/* k * sn: hops from switch j to member m (by coordinate) */
	uint16_t *sdist;	/* sn * sn: switch-to-switch hops inside the group */
} hgrp_t;

typedef struct {
	pmask_t mask;
	uint32_t poff;		/* ports in pool */
	uint16_t np;
	uint32_t cnt;		/* spreading counter */
	int next;		/* next set of the same switch */
} hset_t;

typedef struct {
	uint8_t kind;		/* T_* */
	uint8_t port;		/* T_ROUTER: egress port at the target router */
	int idx;		/* T_ROUTER: router index; T_SWITCH: switch index */
} ltgt_t;

typedef struct hdor_pass {
	/* nodes */
	int nsw, nca, nr, ng;
	hsw_t *sw;
	hca_t *ca;
	hlink_t *links;
	uint32_t nlinks;
	hrtr_t *rt;
	uint32_t *rgl;		/* router -> groups */
	hgrp_t *grp;
	int *gsw, *gmem;
	/* pointer hash: osm_node_t* -> (kind, index) */
	uint32_t hcap;
	osm_node_t **hkey;
	int *hval;
	/* KNS parameters */
	unsigned k, n, s;
	int r0;
	int *rg;		/* nr * n: group by dimension */
	uint8_t *coord;		/* nr * n */
	uint8_t *gcoord;	/* ng * n (the group's own dimension entry is 0) */
	/* routing */
	int *rset;		/* nr * n * k */
	int *sset;		/* nsw * k (indirect switches only) */
	hset_t *sets;
	uint32_t nsets, capsets;
	uint8_t *pool;
	uint32_t npool, cappool;
	ltgt_t *lt;
	uint32_t max_lid, nlids;
	int ready;		/* analysis done, tables may be written */
	int own_hops;		/* this pass filled the hop matrices itself */
	struct timespec t0;
	uint64_t us_analysis, us_hops, us_tables, us_dump;
} hdor_pass_t;

typedef struct hdor_ctx {
	osm_opensm_t *osm;
	hdor_pass_t *pass;	/* only between build_lid_matrices and ucast_build_fwd_tables */
	unsigned long passes;
	int owned_by_engine;	/* in-tree: the engine frees the context in destroy() */
	char reason[512];
} hdor_ctx_t;

/* ------------------------------------------------------------------------------------------ */
/* helpers                                                                                    */

static int hdor_layout_ok(osm_opensm_t *osm)
{
	/* The osm_version strcmp does not catch a plugin built with a different struct layout
	 * (e.g. osm_config.h included late, ENABLE_OSM_PERF_MGR mismatch): check back-pointers. */
	return osm && osm->subn.p_osm == osm && osm->sm.p_subn == &osm->subn &&
	    osm->sm.p_log == &osm->log && osm->sm.ucast_mgr.p_subn == &osm->subn &&
	    osm->sm.ucast_mgr.p_log == &osm->log;
}

static void hdor_layout_complain(void)
{
	const char *msg = "hdor: refusing to run: the OpenSM structure layout does not match the "
	    "headers libhdor.so was built with (rebuild it against this OpenSM's libopensm-dev)";
	fprintf(stderr, "%s\n", msg);
	syslog(LOG_ERR, "%s", msg);
}

static void *xcalloc(size_t n, size_t sz)
{
	if (!n)
		n = 1;
	return calloc(n, sz);
}

static const char *ndesc(osm_node_t *node)
{
	return (node && node->print_desc) ? node->print_desc : "";
}

static int decline(hdor_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int decline(hdor_ctx_t *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->reason, sizeof(ctx->reason), fmt, ap);
	va_end(ap);
	return -1;
}

static uint32_t ptr_hash(const void *p, uint32_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (uint32_t)x & (cap - 1);
}

static int hput(hdor_pass_t *P, osm_node_t *node, int val)
{
	uint32_t h = ptr_hash(node, P->hcap);
	while (P->hkey[h]) {
		if (P->hkey[h] == node)
			return -1;
		h = (h + 1) & (P->hcap - 1);
	}
	P->hkey[h] = node;
	P->hval[h] = val;
	return 0;
}

/* value: switch index * 2 (even) or CA index * 2 + 1 (odd); -1 if unknown */
static int hget(const hdor_pass_t *P, const osm_node_t *node)
{
	uint32_t h = ptr_hash(node, P->hcap);
	while (P->hkey[h]) {
		if (P->hkey[h] == node)
			return P->hval[h];
		h = (h + 1) & (P->hcap - 1);
	}
	return -1;
}

static void pass_free(hdor_pass_t *P)
{
	int g;
	if (!P)
		return;
	if (P->grp)
		for (g = 0; g < P->ng; g++) {
			free(P->grp[g].mbyc);
			free(P->grp[g].mdist);
			free(P->grp[g].sdist);
		}
	free(P->sw);
	free(P->ca);
	free(P->links);
	free(P->rt);
	free(P->rgl);
	free(P->grp);
	free(P->gsw);
	free(P->gmem);
	free(P->hkey);
	free(P->hval);
	free(P->rg);
	free(P->coord);
	free(P->gcoord);
	free(P->rset);
	free(P->sset);
	free(P->sets);
	free(P->pool);
	free(P->lt);
	free(P);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* sorting helpers (qsort with a pass pointer via a file-static: the engine runs under
 * OpenSM's exclusive lock, one pass at a time) */
static const hdor_pass_t *g_sort_pass;

/* comparators of indices into one of the pass's arrays, by a 64-bit key */
#define HDOR_CMP(name, array, key)						\
static int name(const void *a, const void *b)					\
{										\
	const hdor_pass_t *P = g_sort_pass;					\
	return cmp_u64(P->array[*(const int *)a].key, P->array[*(const int *)b].key); \
}
HDOR_CMP(cmp_router_guid, rt, guid)
HDOR_CMP(cmp_group_key, grp, key)
HDOR_CMP(cmp_sw_guid, sw, guid)
HDOR_CMP(cmp_ca_guid, ca, guid)

/* ------------------------------------------------------------------------------------------ */
/* candidate sets                                                                             */

static void mask_set(pmask_t *m, unsigned p)
{
	m->m[p >> 6] |= 1ULL << (p & 63);
}

static int mask_empty(const pmask_t *m)
{
	return !(m->m[0] | m->m[1] | m->m[2] | m->m[3]);
}

/* intern a port set for switch w; returns the set id or -1 (out of memory / empty set) */
static int intern_set(hdor_pass_t *P, int w, const pmask_t *m)
{
	int id;
	unsigned p, np = 0;
	hset_t *s;

	if (mask_empty(m))
		return -1;
	for (id = P->sw[w].first_set; id >= 0; id = P->sets[id].next)
		if (!memcmp(&P->sets[id].mask, m, sizeof(*m)))
			return id;
	if (P->nsets == P->capsets) {
		uint32_t nc = P->capsets ? P->capsets * 2 : 1024;
		hset_t *ns = realloc(P->sets, nc * sizeof(*ns));
		if (!ns)
			return -1;
		P->sets = ns;
		P->capsets = nc;
	}
	for (p = 0; p < 256; p++)
		if (m->m[p >> 6] & (1ULL << (p & 63)))
			np++;
	if (P->npool + np > P->cappool) {
		uint32_t nc = P->cappool ? P->cappool : 4096;
		uint8_t *npl;
		while (P->npool + np > nc)
			nc *= 2;
		npl = realloc(P->pool, nc);
		if (!npl)
			return -1;
		P->pool = npl;
		P->cappool = nc;
	}
	id = (int)P->nsets++;
	s = &P->sets[id];
	s->mask = *m;
	s->poff = P->npool;
	s->np = (uint16_t)np;
	s->cnt = 0;
	for (p = 0; p < 256; p++)	/* ascending port number */
		if (m->m[p >> 6] & (1ULL << (p & 63)))
			P->pool[P->npool++] = (uint8_t)p;
	s->next = P->sw[w].first_set;
	P->sw[w].first_set = id;
	return id;
}

static inline uint8_t pick(hdor_pass_t *P, int id)
{
	hset_t *s = &P->sets[id];
	if (s->np == 1)
		return P->pool[s->poff];
	return P->pool[s->poff + (s->cnt++ % s->np)];
}

/* ------------------------------------------------------------------------------------------ */
/* 1. nodes and links                                                                         */

static int collect(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	osm_subn_t *subn = &ctx->osm->subn;
	cl_qmap_t *tbl = &subn->node_guid_tbl;
	cl_map_item_t *it;
	uint32_t nnodes = (uint32_t)cl_qmap_count(tbl), cap = 16;
	int i, w;

	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
		osm_node_t *node = (osm_node_t *)it;
		switch (osm_node_get_type(node)) {
		case IB_NODE_TYPE_SWITCH:
			if (!node->sw || node->sw->p_node != node)
				return decline(ctx, "switch 0x%016" PRIx64 " '%s' has no switch object",
					       cl_ntoh64(osm_node_get_node_guid(node)), ndesc(node));
			P->nsw++;
			break;
		case IB_NODE_TYPE_CA:
			P->nca++;
			break;
		default:
			return decline(ctx, "node 0x%016" PRIx64 " '%s' is neither a switch nor an HCA",
				       cl_ntoh64(osm_node_get_node_guid(node)), ndesc(node));
		}
	}
	if (!P->nsw)
		return decline(ctx, "no switches");
	while (cap < 2 * nnodes + 2)
		cap <<= 1;
	P->hcap = cap;
	P->hkey = xcalloc(cap, sizeof(*P->hkey));
	P->hval = xcalloc(cap, sizeof(*P->hval));
	P->sw = xcalloc(P->nsw, sizeof(*P->sw));
	P->ca = xcalloc(P->nca, sizeof(*P->ca));
	if (!P->hkey || !P->hval || !P->sw || !P->ca)
		return decline(ctx, "out of memory");

	P->nsw = P->nca = 0;
	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
		osm_node_t *node = (osm_node_t *)it;
		if (osm_node_get_type(node) == IB_NODE_TYPE_SWITCH) {
			hsw_t *s = &P->sw[P->nsw];
			s->sw = node->sw;
			s->node = node;
			s->guid = cl_ntoh64(osm_node_get_node_guid(node));
			s->router = -1;
			s->group = -1;
			s->first_set = -1;
			s->base_lid = cl_ntoh16(osm_node_get_base_lid(node, 0));
			if (hput(P, node, 2 * P->nsw))
				return decline(ctx, "duplicate node object");
			P->nsw++;
		} else {
			hca_t *c = &P->ca[P->nca];
			c->node = node;
			c->guid = cl_ntoh64(osm_node_get_node_guid(node));
			c->router = -1;
			c->port_num = 256;
			if (hput(P, node, 2 * P->nca + 1))
				return decline(ctx, "duplicate node object");
			P->nca++;
		}
	}

	/* healthy links of every switch */
	{
		uint32_t total = 0;
		for (w = 0; w < P->nsw; w++)
			total += osm_node_get_num_physp(P->sw[w].node);
		P->links = xcalloc(total, sizeof(*P->links));
		if (!P->links)
			return decline(ctx, "out of memory");
	}
	for (w = 0; w < P->nsw; w++) {
		hsw_t *s = &P->sw[w];
		uint8_t np = osm_node_get_num_physp(s->node);
		s->loff = P->nlinks;
		for (i = 1; i < np; i++) {
			osm_physp_t *p = osm_node_get_physp_ptr(s->node, (uint8_t)i), *r;
			int v;
			if (!p || !p->p_remote_physp || !osm_link_is_healthy(p))
				continue;
			r = p->p_remote_physp;
			if (!r->p_node || r->p_node == s->node)
				continue;
			v = hget(P, r->p_node);
			if (v < 0)
				continue;
			P->links[P->nlinks].port = (uint8_t)i;
			P->links[P->nlinks].rport = osm_physp_get_port_num(r);
			P->links[P->nlinks].kind = (v & 1) ? N_CA : N_SWITCH;
			P->links[P->nlinks].idx = v >> 1;
			P->nlinks++;
		}
		s->ln = P->nlinks - s->loff;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* 2. identification: routers, groups, members, checks 1-3                                    */

static int identify(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	int w, g, r, i, pass;
	uint32_t l;
	int *stack, *gcount;

	/* routers: switches with a healthy link to an HCA */
	for (w = 0; w < P->nsw; w++)
		for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
			if (P->links[l].kind == N_CA) {
				P->sw[w].router = P->nr++;
				break;
			}
	if (!P->nr)
		return decline(ctx, "no router (no switch is linked to an HCA)");
	P->rt = xcalloc(P->nr, sizeof(*P->rt));
	if (!P->rt)
		return decline(ctx, "out of memory");
	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].router >= 0) {
			P->rt[P->sw[w].router].sw = w;
			P->rt[P->sw[w].router].guid = P->sw[w].guid;
		}

	/* groups: connected components of indirect switches */
	stack = xcalloc(P->nsw, sizeof(int));
	if (!stack)
		return decline(ctx, "out of memory");
	for (w = 0; w < P->nsw; w++) {
		int sp = 0;
		if (P->sw[w].router >= 0 || P->sw[w].group >= 0)
			continue;
		g = P->ng++;
		P->sw[w].group = g;
		stack[sp++] = w;
		while (sp) {
			int x = stack[--sp];
			for (l = P->sw[x].loff; l < P->sw[x].loff + P->sw[x].ln; l++) {
				hlink_t *lk = &P->links[l];
				if (lk->kind != N_SWITCH)
					continue;
				if (P->sw[lk->idx].router >= 0 || P->sw[lk->idx].group >= 0)
					continue;
				P->sw[lk->idx].group = g;
				stack[sp++] = lk->idx;
			}
		}
	}
	free(stack);
	if (!P->ng)
		return decline(ctx, "no indirect-network switches");
	P->grp = xcalloc(P->ng, sizeof(*P->grp));
	P->gsw = xcalloc(P->nsw, sizeof(int));
	if (!P->grp || !P->gsw)
		return decline(ctx, "out of memory");
	for (g = 0; g < P->ng; g++) {
		P->grp[g].key = UINT64_MAX;
		P->grp[g].dim = -1;
	}
	for (w = 0; w < P->nsw; w++)
		if ((g = P->sw[w].group) >= 0) {
			P->grp[g].sn++;
			if (P->sw[w].guid < P->grp[g].key)
				P->grp[g].key = P->sw[w].guid;
		}
	for (g = 0, l = 0; g < P->ng; g++) {
		P->grp[g].soff = l;
		l += P->grp[g].sn;
		P->grp[g].sn = 0;
	}
	for (w = 0; w < P->nsw; w++)	/* switches of a group in GUID order of the node table */
		if ((g = P->sw[w].group) >= 0) {
			P->sw[w].lidx = (int)P->grp[g].sn;
			P->gsw[P->grp[g].soff + P->grp[g].sn++] = w;
		}

	/* router -> distinct groups, group -> members: count (pass 0), then fill (pass 1) */
	gcount = xcalloc(P->ng, sizeof(int));	/* last router that saw this group, +1 */
	if (!gcount)
		return decline(ctx, "out of memory");
	for (pass = 0; pass < 2; pass++) {
		if (pass) {
			uint32_t tot = 0, mt = 0;
			for (r = 0; r < P->nr; r++) {
				P->rt[r].goff = tot;
				tot += P->rt[r].gn;
				P->rt[r].gn = 0;
			}
			for (g = 0; g < P->ng; g++) {
				P->grp[g].moff = mt;
				mt += P->grp[g].mn;
				P->grp[g].mn = 0;
			}
			P->rgl = xcalloc(tot, sizeof(uint32_t));
			P->gmem = xcalloc(mt, sizeof(int));
			if (!P->rgl || !P->gmem) {
				free(gcount);
				return decline(ctx, "out of memory");
			}
			memset(gcount, 0, P->ng * sizeof(int));
		}
		for (r = 0; r < P->nr; r++) {
			hsw_t *s = &P->sw[P->rt[r].sw];
			for (l = s->loff; l < s->loff + s->ln; l++) {
				hlink_t *lk = &P->links[l];
				if (lk->kind != N_SWITCH || (g = P->sw[lk->idx].group) < 0 || gcount[g] == r + 1)
					continue;
				gcount[g] = r + 1;
				if (pass) {
					P->rgl[P->rt[r].goff + P->rt[r].gn] = (uint32_t)g;
					P->gmem[P->grp[g].moff + P->grp[g].mn] = r;
				}
				P->rt[r].gn++;
				P->grp[g].mn++;
			}
		}
	}
	free(gcount);
	g_sort_pass = P;
	for (g = 0; g < P->ng; g++)
		qsort(P->gmem + P->grp[g].moff, P->grp[g].mn, sizeof(int), cmp_router_guid);

	/* check 1: every HCA port is linked to a router */
	{
		cl_qmap_t *pt = &ctx->osm->subn.port_guid_tbl;
		cl_map_item_t *it;
		for (it = cl_qmap_head(pt); it != cl_qmap_end(pt); it = cl_qmap_next(it)) {
			osm_port_t *port = (osm_port_t *)it;
			osm_physp_t *p = port->p_physp, *rp;
			int v, c;
			if (!port->p_node || osm_node_get_type(port->p_node) != IB_NODE_TYPE_CA)
				continue;
			v = hget(P, port->p_node);
			if (v < 0 || !(v & 1))
				continue;
			c = v >> 1;
			rp = p ? p->p_remote_physp : NULL;
			if (!p || !rp || !osm_link_is_healthy(p) || !rp->p_node ||
			    (v = hget(P, rp->p_node)) < 0 || (v & 1))
				return decline(ctx, "HCA 0x%016" PRIx64 " '%s' port %u is not linked to a router",
					       P->ca[c].guid, ndesc(port->p_node),
					       p ? osm_physp_get_port_num(p) : 0);
			if (osm_physp_get_port_num(p) < P->ca[c].port_num) {
				P->ca[c].port_num = osm_physp_get_port_num(p);
				P->ca[c].router = P->sw[v >> 1].router;
			}
		}
	}

	/* check 2: every router is in the same number n >= 1 of groups */
	{
		int rmin = 0;
		for (r = 1; r < P->nr; r++)
			if (P->rt[r].guid < P->rt[rmin].guid)
				rmin = r;
		P->r0 = rmin;
		P->n = P->rt[rmin].gn;
		if (P->n < 1)
			return decline(ctx, "router 0x%016" PRIx64 " '%s' is in no indirect network",
				       P->rt[rmin].guid, ndesc(P->sw[P->rt[rmin].sw].node));
		if (P->n > HDOR_MAX_N)
			return decline(ctx, "router 0x%016" PRIx64 " '%s' is in %u groups (more than %d)",
				       P->rt[rmin].guid, ndesc(P->sw[P->rt[rmin].sw].node), P->n, HDOR_MAX_N);
		for (r = 0; r < P->nr; r++)
			if (P->rt[r].gn != P->n)
				return decline(ctx, "router 0x%016" PRIx64 " '%s' is in %u group(s), others in %u",
					       P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node), P->rt[r].gn, P->n);
	}

	/* check 3: every group has the same number k >= 2 of members and routers = k^n */
	{
		uint64_t kn = 1;
		P->k = P->grp[0].mn;
		for (g = 0; g < P->ng; g++) {
			hgrp_t *G = &P->grp[g];
			if (G->mn != P->k || G->mn < 2) {
				int w0 = P->gsw[G->soff];
				return decline(ctx, "indirect network of switch 0x%016" PRIx64 " '%s' has %u member router(s)%s%u",
					       P->sw[w0].guid, ndesc(P->sw[w0].node), G->mn,
					       G->mn < 2 ? ", fewer than " : ", others ", G->mn < 2 && G->mn == P->k ? 2 : P->k);
			}
		}
		if (P->k > 255)
			return decline(ctx, "k = %u is too large", P->k);
		for (i = 0; i < (int)P->n && kn <= (uint64_t)P->nr; i++)
			kn *= P->k;
		if (kn != (uint64_t)P->nr)
			return decline(ctx, "%d routers, but k^n = %u^%u", P->nr, P->k, P->n);
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* 3. dimensions (breadth-first from the seed router) and coordinates                         */

static int uf_find(int *uf, int x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

static int dims_and_coords(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n, k = P->k, d, e;
	int r, g, i, qh = 0, qt = 0, ret = -1;
	int *queue = NULL, *uf = NULL, *comp = NULL, *stamp = NULL;
	uint8_t *visited = NULL, *seen = NULL;
	int st = 0;
	const hrtr_t *R;

	P->rg = xcalloc((size_t)P->nr * n, sizeof(int));
	P->coord = xcalloc((size_t)P->nr * n, 1);
	P->gcoord = xcalloc((size_t)P->ng * n, 1);
	queue = xcalloc(P->nr, sizeof(int));
	visited = xcalloc(P->nr, 1);
	stamp = xcalloc(P->ng, sizeof(int));
	uf = xcalloc(P->nr, sizeof(int));
	comp = xcalloc(P->nr, sizeof(int));
	seen = xcalloc(P->nr, 1);
	if (!P->rg || !P->coord || !P->gcoord || !queue || !visited || !stamp || !uf || !comp || !seen) {
		decline(ctx, "out of memory");
		goto out;
	}
	for (i = 0; i < P->nr * (int)n; i++)
		P->rg[i] = -1;

	/* seed: groups of r0 sorted by key get dimensions 0..n-1 */
	{
		int sg[HDOR_MAX_N];
		R = &P->rt[P->r0];
		for (d = 0; d < n; d++)
			sg[d] = (int)P->rgl[R->goff + d];
		g_sort_pass = P;
		qsort(sg, n, sizeof(int), cmp_group_key);
		for (d = 0; d < n; d++) {
			P->grp[sg[d]].dim = (int)d;
			P->rg[P->r0 * n + d] = sg[d];
		}
	}
	visited[P->r0] = 1;
	queue[qt++] = P->r0;
	while (qh < qt) {
		int rr = queue[qh++];
		for (d = 0; d < n; d++) {
			int S = P->rg[rr * n + d];
			hgrp_t *GS = &P->grp[S];
			uint32_t mi;
			for (mi = 0; mi < GS->mn; mi++) {
				int x = P->gmem[GS->moff + mi];
				if (visited[x])
					continue;
				P->rg[x * n + d] = S;
				for (e = 0; e < n; e++) {
					int T, y, found = -1, nfound = 0;
					hgrp_t *GT;
					uint32_t j;
					if (e == d)
						continue;
					T = P->rg[rr * n + e];
					GT = &P->grp[T];
					y = P->gmem[GT->moff] != rr ? P->gmem[GT->moff] : P->gmem[GT->moff + 1];
					st++;
					for (j = 0; j < P->rt[y].gn; j++)
						if ((int)P->rgl[P->rt[y].goff + j] != T)
							stamp[P->rgl[P->rt[y].goff + j]] = st;
					for (j = 0; j < P->rt[x].gn; j++) {
						int X = (int)P->rgl[P->rt[x].goff + j], q = 0;
						hgrp_t *GX = &P->grp[X];
						uint32_t zi, zj;
						if (X == S)
							continue;
						for (zi = 0; zi < GX->mn && !q; zi++) {
							int z = P->gmem[GX->moff + zi];
							for (zj = 0; zj < P->rt[z].gn; zj++)
								if (stamp[P->rgl[P->rt[z].goff + zj]] == st) {
									q = 1;
									break;
								}
						}
						if (q) {
							nfound++;
							found = X;
						}
					}
					if (nfound != 1 || (P->grp[found].dim >= 0 && P->grp[found].dim != (int)e)) {
						decline(ctx, "inconsistent dimension at router 0x%016" PRIx64 " '%s' (dimension %u: %d candidate group(s)%s)",
							P->rt[x].guid, ndesc(P->sw[P->rt[x].sw].node), e, nfound,
							nfound == 1 ? ", already in another dimension" : "");
						goto out;
					}
					P->grp[found].dim = (int)e;
					P->rg[x * n + e] = found;
				}
				visited[x] = 1;
				queue[qt++] = x;
			}
		}
	}
	for (r = 0; r < P->nr; r++) {
		if (!visited[r]) {
			decline(ctx, "router 0x%016" PRIx64 " '%s' is not reachable from router 0x%016" PRIx64 " '%s'",
				P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node),
				P->rt[P->r0].guid, ndesc(P->sw[P->rt[P->r0].sw].node));
			goto out;
		}
		for (d = 0; d < n; d++) {
			int G = P->rg[r * n + d];
			if (G < 0 || P->grp[G].dim != (int)d) {
				decline(ctx, "router 0x%016" PRIx64 " '%s' has no group in dimension %u",
					P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node), d);
				goto out;
			}
		}
	}
	for (g = 0; g < P->ng; g++)
		if (P->grp[g].dim < 0) {
			int w0 = P->gsw[P->grp[g].soff];
			decline(ctx, "switch 0x%016" PRIx64 " '%s' got no dimension",
				P->sw[w0].guid, ndesc(P->sw[w0].node));
			goto out;
		}

	/* coordinates: hyperplanes of each dimension */
	for (d = 0; d < n; d++) {
		int A = P->rg[P->r0 * n + d], ncomp = 0;
		hgrp_t *GA = &P->grp[A];
		for (r = 0; r < P->nr; r++) {
			uf[r] = r;
			comp[r] = -1;
		}
		for (g = 0; g < P->ng; g++) {
			hgrp_t *G = &P->grp[g];
			uint32_t j;
			int a;
			if (G->dim == (int)d)
				continue;
			a = uf_find(uf, P->gmem[G->moff]);
			for (j = 1; j < G->mn; j++) {
				int b = uf_find(uf, P->gmem[G->moff + j]);
				if (a != b)
					uf[b] = a;
			}
		}
		for (r = 0; r < P->nr; r++)
			if (uf_find(uf, r) == r)
				ncomp++;
		if (ncomp != (int)k) {
			decline(ctx, "dimension %u has %d hyperplanes, expected k = %u", d, ncomp, k);
			goto out;
		}
		for (i = 0; i < (int)k; i++) {
			int c = uf_find(uf, P->gmem[GA->moff + i]);
			if (comp[c] >= 0) {
				decline(ctx, "routers 0x%016" PRIx64 " and 0x%016" PRIx64 " of dimension %u share a hyperplane",
					P->rt[P->gmem[GA->moff + comp[c]]].guid, P->rt[P->gmem[GA->moff + i]].guid, d);
				goto out;
			}
			comp[c] = i;
		}
		for (r = 0; r < P->nr; r++)
			P->coord[r * n + d] = (uint8_t)comp[uf_find(uf, r)];
	}

	/* bijection onto [0,k)^n */
	for (r = 0; r < P->nr; r++) {
		uint32_t lin = 0;
		for (d = n; d-- > 0;)
			lin = lin * k + P->coord[r * n + d];
		if (seen[lin]) {
			decline(ctx, "router 0x%016" PRIx64 " '%s' has the coordinates of another router",
				P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node));
			goto out;
		}
		seen[lin] = 1;
	}

	/* group coordinates and members by coordinate */
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		int m0 = P->gmem[G->moff];
		uint32_t j;
		G->mbyc = xcalloc(k, sizeof(int));
		if (!G->mbyc) {
			decline(ctx, "out of memory");
			goto out;
		}
		for (i = 0; i < (int)k; i++)
			G->mbyc[i] = -1;
		for (e = 0; e < n; e++)
			P->gcoord[g * n + e] = (e == (unsigned)G->dim) ? 0 : P->coord[m0 * n + e];
		for (j = 0; j < G->mn; j++) {
			int m = P->gmem[G->moff + j];
			int c = P->coord[m * n + G->dim];
			for (e = 0; e < n; e++)
				if (e != (unsigned)G->dim && P->coord[m * n + e] != P->gcoord[g * n + e])
					break;
			if (e < n || G->mbyc[c] >= 0) {
				int w0 = P->gsw[G->soff];
				decline(ctx, "members of the indirect network of switch 0x%016" PRIx64 " '%s' do not form a line of dimension %d",
					P->sw[w0].guid, ndesc(P->sw[w0].node), G->dim);
				goto out;
			}
			G->mbyc[c] = m;
		}
	}
	ret = 0;
out:
	free(queue);
	free(visited);
	free(stamp);
	free(uf);
	free(comp);
	free(seen);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* 4. distances inside groups and candidate sets                                              */

/* BFS over the switches of group g from `src` (a member router when src_hops = 1: its switches
 * of g are at 1 hop; an indirect switch of g when src_hops = 0, its dist entry already 0);
 * dist is indexed by the switches' index inside g; q is scratch of nsw entries */
static void group_bfs(const hdor_pass_t *P, int g, const hsw_t *src, unsigned src_hops,
		      uint16_t *dist, int *q)
{
	int qh = 0, qt = 0;
	uint32_t l;
	const hsw_t *x = src;
	uint16_t dx = (uint16_t)(src_hops ? 0 : dist[src->lidx]);

	for (;;) {
		for (l = x->loff; l < x->loff + x->ln; l++) {
			const hlink_t *lk = &P->links[l];
			if (lk->kind == N_SWITCH && P->sw[lk->idx].group == g &&
			    dist[P->sw[lk->idx].lidx] == 0xffff) {
				dist[P->sw[lk->idx].lidx] = (uint16_t)(dx + 1);
				q[qt++] = lk->idx;
			}
		}
		if (qh == qt)
			break;
		x = &P->sw[q[qh++]];
		dx = dist[x->lidx];
	}
}

static int group_distances(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	unsigned k = P->k;
	int g, *q = xcalloc(P->nsw, sizeof(int));
	if (!q)
		return decline(ctx, "out of memory");
	P->s = 1;
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		uint32_t sn = G->sn, m, j;
		G->mdist = malloc((size_t)k * sn * sizeof(uint16_t));
		G->sdist = malloc((size_t)sn * sn * sizeof(uint16_t));
		if (!G->mdist || !G->sdist) {
			free(q);
			return decline(ctx, "out of memory");
		}
		memset(G->mdist, 0xff, (size_t)k * sn * sizeof(uint16_t));
		memset(G->sdist, 0xff, (size_t)sn * sn * sizeof(uint16_t));
		/* BFS from every member (by coordinate) over the group's switches */
		for (m = 0; m < k; m++) {
			uint16_t *dist = G->mdist + (size_t)m * sn;
			hsw_t *M = &P->sw[P->rt[G->mbyc[m]].sw];
			/* the member counts as a node at hop 0 that is not traversed again */
			group_bfs(P, g, M, 1, dist, q);
		}
		/* stages: the farthest switch from the members */
		for (j = 0; j < sn; j++) {
			uint16_t best = 0xffff;
			for (m = 0; m < k; m++)
				if (G->mdist[(size_t)m * sn + j] < best)
					best = G->mdist[(size_t)m * sn + j];
			if (best != 0xffff && best > P->s)
				P->s = best;
		}
		/* switch-to-switch */
		for (j = 0; j < sn; j++) {
			uint16_t *dist = G->sdist + (size_t)j * sn;
			int x = P->gsw[G->soff + j];
			dist[j] = 0;
			group_bfs(P, g, &P->sw[x], 0, dist, q);
		}
	}
	free(q);
	return 0;
}

/* hops inside group G from its switch with local index j to member coordinate m (mode 0) or to
 * its switch with local index m (mode 1) */
static inline uint16_t gdist(const hgrp_t *G, int j, unsigned m, int mode)
{
	return mode ? G->sdist[(size_t)j * G->sn + m] : G->mdist[(size_t)m * G->sn + j];
}

/* W's ports into group g whose switch is `want` hops from the target (m, mode) (see gdist); the
 * smallest such distance over all of them goes to *min when min is given */
static void ports_at(const hdor_pass_t *P, const hsw_t *W, int g, unsigned m, int mode,
		     uint16_t want, pmask_t *mask, uint16_t *min)
{
	const hgrp_t *G = &P->grp[g];
	uint32_t l;
	for (l = W->loff; l < W->loff + W->ln; l++) {
		const hlink_t *lk = &P->links[l];
		uint16_t dd;
		if (lk->kind != N_SWITCH || P->sw[lk->idx].group != g)
			continue;
		dd = gdist(G, P->sw[lk->idx].lidx, m, mode);
		if (dd == want)
			mask_set(mask, lk->port);
		if (min && dd < *min)
			*min = dd;
	}
}

/* router w's ports into group g on a shortest path to member coordinate m (mode 0), or to the
 * group's switch with local index m (mode 1) */
static int router_set(hdor_pass_t *P, int w, int g, unsigned m, int mode)
{
	hsw_t *W = &P->sw[w];
	uint16_t best = 0xffff;
	pmask_t mask;

	ports_at(P, W, g, m, mode, 0xffff, &mask, &best);
	memset(&mask, 0, sizeof(mask));
	if (best != 0xffff)
		ports_at(P, W, g, m, mode, best, &mask, &best);
	return intern_set(P, w, &mask);
}

/* indirect switch w's ports on a shortest path inside its group to member coordinate m
 * (mode 0) or to the group's switch with local index m (mode 1, m != w) */
static int switch_set(hdor_pass_t *P, int w, unsigned m, int mode)
{
	hsw_t *W = &P->sw[w];
	int g = W->group;
	hgrp_t *G = &P->grp[g];
	pmask_t mask;
	uint32_t l;
	uint16_t dw;

	memset(&mask, 0, sizeof(mask));
	if (!mode) {
		int M = P->rt[G->mbyc[m]].sw;
		for (l = W->loff; l < W->loff + W->ln; l++)
			if (P->links[l].kind == N_SWITCH && P->links[l].idx == M)
				mask_set(&mask, P->links[l].port);
		if (!mask_empty(&mask))
			return intern_set(P, w, &mask);
	}
	dw = gdist(G, W->lidx, m, mode);
	if (dw == 0xffff || dw == 0)
		return -1;
	ports_at(P, W, g, m, mode, (uint16_t)(dw - 1), &mask, NULL);
	return intern_set(P, w, &mask);
}

static int candidate_sets(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n, k = P->k, e, m;
	int r, w;

	P->rset = xcalloc((size_t)P->nr * n * k, sizeof(int));
	P->sset = xcalloc((size_t)P->nsw * k, sizeof(int));
	if (!P->rset || !P->sset)
		return decline(ctx, "out of memory");
	for (r = 0; r < P->nr; r++)
		for (e = 0; e < n; e++)
			for (m = 0; m < k; m++) {
				int id = -1;
				if (m != P->coord[r * n + e]) {
					id = router_set(P, P->rt[r].sw, P->rg[r * n + e], m, 0);
					if (id < 0)
						return decline(ctx, "router 0x%016" PRIx64 " '%s' has no path in dimension %u to coordinate %u",
							       P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node), e, m);
				}
				P->rset[((size_t)r * n + e) * k + m] = id;
			}
	for (w = 0; w < P->nsw; w++) {
		if (P->sw[w].group < 0)
			continue;
		for (m = 0; m < k; m++) {
			int id = switch_set(P, w, m, 0);
			if (id < 0)
				return decline(ctx, "switch 0x%016" PRIx64 " '%s' has no path to the router at coordinate %u of its indirect network",
					       P->sw[w].guid, ndesc(P->sw[w].node), m);
			P->sset[(size_t)w * k + m] = id;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* 5. LID targets                                                                             */

static int lid_targets(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	cl_qmap_t *pt = &ctx->osm->subn.port_guid_tbl;
	cl_map_item_t *it;
	uint32_t maxlid = 0;
	int w;

	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].sw->max_lid_ho > maxlid)
			maxlid = P->sw[w].sw->max_lid_ho;
	P->max_lid = maxlid;
	P->lt = xcalloc(maxlid + 1, sizeof(*P->lt));
	if (!P->lt)
		return decline(ctx, "out of memory");
	for (it = cl_qmap_head(pt); it != cl_qmap_end(pt); it = cl_qmap_next(it)) {
		osm_port_t *port = (osm_port_t *)it;
		uint16_t lo, hi;
		uint32_t lid;
		ltgt_t t;
		int v;
		if (!port->p_node || !port->p_physp)
			continue;
		v = hget(P, port->p_node);
		if (v < 0)
			continue;
		if (v & 1) {
			osm_physp_t *rp = port->p_physp->p_remote_physp;
			int rv = rp ? hget(P, rp->p_node) : -1;
			if (rv < 0 || (rv & 1) || P->sw[rv >> 1].router < 0)
				return decline(ctx, "HCA port 0x%016" PRIx64 " is not linked to a router",
					       cl_ntoh64(osm_port_get_guid(port)));
			t.kind = T_ROUTER;
			t.idx = P->sw[rv >> 1].router;
			t.port = osm_physp_get_port_num(rp);
		} else if (P->sw[v >> 1].router >= 0) {
			t.kind = T_ROUTER;
			t.idx = P->sw[v >> 1].router;
			t.port = 0;
		} else {
			t.kind = T_SWITCH;
			t.idx = v >> 1;
			t.port = 0;
		}
		osm_port_get_lid_range_ho(port, &lo, &hi);
		if (!lo)
			continue;
		for (lid = lo; lid <= hi && lid <= maxlid; lid++) {
			if (P->lt[lid].kind == T_NONE)
				P->nlids++;
			P->lt[lid] = t;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the analysis: everything that can fail, before anything is written                         */

static int analyse(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	if (collect(ctx, P) || identify(ctx, P) || dims_and_coords(ctx, P) ||
	    group_distances(ctx, P) || candidate_sets(ctx, P) || lid_targets(ctx, P))
		return -1;
	P->ready = 1;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* hop matrices from coordinates (s = 1): the exact switch-to-switch hop counts               */

static inline void set_hop(uint8_t *row, uint8_t port, unsigned h, uint8_t *best)
{
	if (h > 254)
		h = 254;
	row[port] = (uint8_t)h;
	if (h < *best)
		*best = (uint8_t)h;
}

/* fills sw->hops for every switch LID as OpenSM's min-hop matrix would (every port toward a
 * switch neighbour, the minimum in port 0, 0 for the own LID); returns 0, or -1 on allocation
 * failure (OpenSM then builds the matrices).  Only for a pure s = 1 KNS (closed_form_ok): a
 * router's switch neighbours are the indirect switches of its lines and an indirect switch's
 * neighbours are the routers of its line, so per (switch, target) one pass over the dimensions
 * gives every port's count: between two distinct switches, 2 * (dimensions fixed in both that
 * differ) + (number of indirect endpoints). */
static int fill_hops(hdor_pass_t *P)
{
	unsigned n = P->n, e;
	int w, d, ret = -1;
	uint32_t l;
	const uint8_t **pc = xcalloc(P->nsw, sizeof(*pc));
	int *pf = xcalloc(P->nsw, sizeof(int));
	uint8_t *nport = xcalloc(P->nlinks, 1);
	int *nidx = xcalloc(P->nlinks, sizeof(int));

	if (!pc || !pf || !nport || !nidx)
		goto out;
	for (w = 0; w < P->nsw; w++) {
		if (P->sw[w].router >= 0) {
			pc[w] = P->coord + (size_t)P->sw[w].router * n;
			pf[w] = -1;
		} else {
			pc[w] = P->gcoord + (size_t)P->sw[w].group * n;
			pf[w] = P->grp[P->sw[w].group].dim;
		}
	}
	for (w = 0; w < P->nsw; w++) {
		osm_switch_t *sw = P->sw[w].sw;
		hsw_t *W = &P->sw[w];
		unsigned np = sw->num_ports, nn = 0, i;
		const uint8_t *cw = pc[w];
		int fw = pf[w];
		if (!sw->hops || sw->num_hops <= sw->max_lid_ho)
			goto out;
		for (l = W->loff; l < W->loff + W->ln; l++) {
			hlink_t *lk = &P->links[l];
			if (lk->kind != N_SWITCH || lk->port >= np)
				continue;
			nport[nn] = lk->port;
			nidx[nn++] = lk->idx;
		}
		for (d = 0; d < P->nsw; d++) {
			uint16_t lid = P->sw[d].base_lid;
			const uint8_t *cd = pc[d];
			int fd = pf[d];
			unsigned mm = 0, h0;
			uint8_t *row, best;
			if (!lid || lid > sw->max_lid_ho)
				continue;
			row = sw->hops[lid];
			if (!row) {
				row = malloc(np);
				if (!row)
					goto out;
				sw->hops[lid] = row;
			}
			memset(row, OSM_NO_PATH, np);
			/* like OpenSM's relaxation, the own LID also gets the ports' hop counts
			 * (there and back), with 0 as the minimum */
			best = w == d ? 0 : OSM_NO_PATH;
			for (e = 0; e < n; e++)
				if ((int)e != fd && (int)e != fw && cw[e] != cd[e])
					mm |= 1u << e;
			h0 = (unsigned)__builtin_popcount(mm);
			for (i = 0; i < nn; i++) {
				int x = nidx[i];
				unsigned h, dist;
				if (fw < 0) {
					/* neighbour: indirect switch of dimension pf[x] with W's coordinates */
					h = (unsigned)__builtin_popcount(mm & ~(1u << pf[x]));
					dist = (x == d) ? 0 : 2 * h + 1 + (fd >= 0);
				} else {
					/* neighbour: router of W's line, coordinate pc[x][fw] in W's dimension */
					h = h0 + (fd != fw && pc[x][fw] != cd[fw]);
					dist = 2 * h + (fd >= 0);
				}
				set_hop(row, nport[i], 1 + dist, &best);
			}
			row[0] = best;
		}
	}
	ret = 0;
out:
	free(pc);
	free(pf);
	free(nport);
	free(nidx);
	return ret;
}

/* the closed form of fill_hops holds when every group is one switch and no cable joins two
 * routers */
static int closed_form_ok(const hdor_pass_t *P)
{
	int g, w;
	uint32_t l;
	for (g = 0; g < P->ng; g++)
		if (P->grp[g].sn != 1)
			return 0;
	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].router >= 0)
			for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
				if (P->links[l].kind == N_SWITCH && P->sw[P->links[l].idx].router >= 0)
					return 0;
	return 1;
}

#define HDOR_BFS_HOPS_MAX_SWITCHES 16384

/* any other fabric hdor routes (s > 1, stray router-router cables): an all-pairs BFS over the
 * switch links (nsw^2 bytes), then the same rows; returns 0, or -1 (OpenSM builds them) */
static int fill_hops_bfs(hdor_pass_t *P)
{
	size_t N = (size_t)P->nsw;
	uint8_t *D = NULL;
	int *q = NULL, w, d, ret = -1;
	uint32_t l;

	if (N > HDOR_BFS_HOPS_MAX_SWITCHES || !(D = malloc(N * N)) || !(q = malloc(N * sizeof(int))))
		goto out;
	memset(D, OSM_NO_PATH, N * N);
	for (w = 0; w < P->nsw; w++) {
		uint8_t *row = D + (size_t)w * N;
		int qh = 0, qt = 0;
		row[w] = 0;
		q[qt++] = w;
		while (qh < qt) {
			int x = q[qh++];
			for (l = P->sw[x].loff; l < P->sw[x].loff + P->sw[x].ln; l++) {
				const hlink_t *lk = &P->links[l];
				if (lk->kind == N_SWITCH && row[lk->idx] == OSM_NO_PATH && row[x] < 254) {
					row[lk->idx] = (uint8_t)(row[x] + 1);
					q[qt++] = lk->idx;
				}
			}
		}
	}
	for (w = 0; w < P->nsw; w++) {
		osm_switch_t *sw = P->sw[w].sw;
		hsw_t *W = &P->sw[w];
		unsigned np = sw->num_ports;
		if (!sw->hops || sw->num_hops <= sw->max_lid_ho)
			goto out;
		for (d = 0; d < P->nsw; d++) {
			uint16_t lid = P->sw[d].base_lid;
			uint8_t *row, best = w == d ? 0 : OSM_NO_PATH;
			if (!lid || lid > sw->max_lid_ho)
				continue;
			row = sw->hops[lid];
			if (!row) {
				if (!(row = malloc(np)))
					goto out;
				sw->hops[lid] = row;
			}
			memset(row, OSM_NO_PATH, np);
			for (l = W->loff; l < W->loff + W->ln; l++) {
				const hlink_t *lk = &P->links[l];
				if (lk->kind != N_SWITCH || lk->port >= np ||
				    D[(size_t)lk->idx * N + d] == OSM_NO_PATH)
					continue;
				set_hop(row, lk->port, 1u + D[(size_t)lk->idx * N + d], &best);
			}
			row[0] = best;
		}
	}
	ret = 0;
out:
	free(D);
	free(q);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* forwarding tables                                                                          */

/* the highest LID of sw's new_lft that may be written: max_lid_ho, within lft_size */
static uint32_t lft_top(const osm_switch_t *sw)
{
	uint32_t top = sw->max_lid_ho;
	if (top >= sw->lft_size)
		top = sw->lft_size ? (uint32_t)sw->lft_size - 1 : 0;
	return top;
}

/* indirect switch w (group G, dimension e) toward switch D of another group G' of dimension e:
 * the member coordinate j minimising hops(w -> member j of G) + hops(member j of G' -> D), the
 * lowest j on ties (with s = 1 every j ties: j = 0) */
static unsigned same_dim_member(const hdor_pass_t *P, int w, int D)
{
	const hgrp_t *G = &P->grp[P->sw[w].group], *H = &P->grp[P->sw[D].group];
	unsigned j, best = 0, bestv = UINT32_MAX;
	for (j = 0; j < P->k; j++) {
		unsigned v = (unsigned)G->mdist[(size_t)j * G->sn + P->sw[w].lidx] +
		    H->mdist[(size_t)j * H->sn + P->sw[D].lidx];
		if (v < bestv) {
			bestv = v;
			best = j;
		}
	}
	return best;
}

static void route_switch(hdor_pass_t *P, int w)
{
	hsw_t *W = &P->sw[w];
	osm_switch_t *sw = W->sw;
	unsigned n = P->n, k = P->k, e;
	uint32_t lid, top = lft_top(sw);
	uint8_t *lft = sw->new_lft;

	if (top > P->max_lid)
		top = P->max_lid;

	if (W->router >= 0) {
		int r = W->router;
		const uint8_t *c = P->coord + (size_t)r * n;
		const int *rs = P->rset + (size_t)r * n * k;
		for (lid = 1; lid <= top; lid++) {
			const ltgt_t *t = &P->lt[lid];
			uint8_t port;
			if (t->kind == T_ROUTER) {
				const uint8_t *tc;
				if (t->idx == r)
					port = t->port;
				else {
					tc = P->coord + (size_t)t->idx * n;
					for (e = 0; c[e] == tc[e]; e++) ;
					port = pick(P, rs[e * k + tc[e]]);
				}
			} else if (t->kind == T_SWITCH) {
				int g = P->sw[t->idx].group;
				unsigned dd = (unsigned)P->grp[g].dim;
				const uint8_t *f = P->gcoord + (size_t)g * n;
				for (e = 0; e < n; e++)
					if (e != dd && c[e] != f[e])
						break;
				if (e < n)
					port = pick(P, rs[e * k + f[e]]);
				else {
					int id = router_set(P, w, g, (unsigned)P->sw[t->idx].lidx, 1);
					port = id >= 0 ? pick(P, id) : OSM_NO_PATH;
				}
			} else
				continue;
			lft[lid] = port;
			if (port != OSM_NO_PATH)
				osm_switch_count_path(sw, port);
		}
	} else {
		int g = W->group;
		unsigned ed = (unsigned)P->grp[g].dim;
		const int *ss = P->sset + (size_t)w * k;
		for (lid = 1; lid <= top; lid++) {
			const ltgt_t *t = &P->lt[lid];
			uint8_t port;
			if (t->kind == T_ROUTER)
				port = pick(P, ss[P->coord[(size_t)t->idx * n + ed]]);
			else if (t->kind == T_SWITCH) {
				int D = t->idx, gd = P->sw[D].group;
				if (D == w)
					port = 0;
				else if (gd == g) {
					int id = switch_set(P, w, (unsigned)P->sw[D].lidx, 1);
					port = id >= 0 ? pick(P, id) : OSM_NO_PATH;
				} else if ((unsigned)P->grp[gd].dim != ed)
					port = pick(P, ss[P->gcoord[(size_t)gd * n + ed]]);
				else
					port = pick(P, ss[same_dim_member(P, w, D)]);
			} else
				continue;
			lft[lid] = port;
			if (port != OSM_NO_PATH)
				osm_switch_count_path(sw, port);
		}
	}
}

/* ------------------------------------------------------------------------------------------ */
/* the coordinates dump                                                                       */

static void put_coords(FILE *f, const uint8_t *c, unsigned n, int skip)
{
	unsigned e, first = 1;
	fputc('[', f);
	for (e = n; e-- > 0;) {
		if ((int)e == skip)
			continue;
		fprintf(f, first ? "%u" : ",%u", c[e]);
		first = 0;
	}
	fputc(']', f);
}

static int write_dump(hdor_ctx_t *ctx, hdor_pass_t *P, char *path, size_t pathsz)
{
	const char *dir = ctx->osm->subn.opt.dump_files_dir;
	char tmp[4200];
	FILE *f;
	int *ord, i, nind = P->nsw - P->nr, ret = -1;
	unsigned n = P->n;

	if (!dir || !*dir)
		dir = ".";
	snprintf(path, pathsz, "%s/%s", dir, HDOR_DUMP_FILE);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ord = xcalloc((size_t)P->nsw + P->nca, sizeof(int));
	if (!ord)
		return -1;
	f = fopen(tmp, "w");
	if (!f) {
		free(ord);
		return -1;
	}
	fprintf(f, "# hdor k=%u n=%u routers=%d switches=%d hcas=%d lids=%u\n",
		P->k, n, P->nr, nind, P->nca, P->nlids);
	g_sort_pass = P;
	/* routers */
	for (i = 0; i < P->nr; i++)
		ord[i] = P->rt[i].sw;
	qsort(ord, P->nr, sizeof(int), cmp_sw_guid);
	for (i = 0; i < P->nr; i++) {
		hsw_t *W = &P->sw[ord[i]];
		fprintf(f, "router 0x%016" PRIx64 " ", W->guid);
		put_coords(f, P->coord + (size_t)W->router * n, n, -1);
		fprintf(f, " \"%s\"\n", ndesc(W->node));
	}
	/* indirect switches */
	{
		int j = 0;
		for (i = 0; i < P->nsw; i++)
			if (P->sw[i].router < 0)
				ord[j++] = i;
		qsort(ord, j, sizeof(int), cmp_sw_guid);
		for (i = 0; i < nind; i++) {
			hsw_t *W = &P->sw[ord[i]];
			int dim = P->grp[W->group].dim;
			fprintf(f, "switch 0x%016" PRIx64 " dim=%d ", W->guid, dim);
			put_coords(f, P->gcoord + (size_t)W->group * n, n, dim);
			fprintf(f, " \"%s\"\n", ndesc(W->node));
		}
	}
	/* HCAs */
	for (i = 0; i < P->nca; i++)
		ord[i] = i;
	qsort(ord, P->nca, sizeof(int), cmp_ca_guid);
	for (i = 0; i < P->nca; i++) {
		hca_t *C = &P->ca[ord[i]];
		fprintf(f, "hca    0x%016" PRIx64 " ", C->guid);
		if (C->router >= 0)
			put_coords(f, P->coord + (size_t)C->router * n, n, -1);
		else
			fputs("[]", f);
		fprintf(f, " \"%s\"\n", ndesc(C->node));
	}
	/* spread over parallel links: routers in GUID order, dimensions ascending */
	for (i = 0; i < P->nr; i++)
		ord[i] = P->rt[i].sw;
	qsort(ord, P->nr, sizeof(int), cmp_sw_guid);
	for (i = 0; i < P->nr; i++) {
		hsw_t *W = &P->sw[ord[i]];
		osm_switch_t *sw = W->sw;
		uint32_t hist[256], lid, top = lft_top(sw), l;
		unsigned e;
		int have = 0;
		for (e = 0; e < n; e++) {
			int g = P->rg[(size_t)W->router * n + e], np = 0, first = 1;
			for (l = W->loff; l < W->loff + W->ln; l++)
				if (P->links[l].kind == N_SWITCH && P->sw[P->links[l].idx].group == g)
					np++;
			if (np < 2)
				continue;
			if (!have) {
				memset(hist, 0, sizeof(hist));
				for (lid = 1; lid <= top; lid++)
					hist[sw->new_lft[lid]]++;
				have = 1;
			}
			fprintf(f, "spread 0x%016" PRIx64 " dim=%u ports=", W->guid, e);
			{
				/* ports into g, ascending (links are in port order) */
				for (l = W->loff; l < W->loff + W->ln; l++)
					if (P->links[l].kind == N_SWITCH && P->sw[P->links[l].idx].group == g) {
						fprintf(f, first ? "%u:%u" : ",%u:%u", P->links[l].port,
							hist[P->links[l].port]);
						first = 0;
					}
			}
			fputc('\n', f);
		}
	}
	if (fflush(f) == 0 && !ferror(f))
		ret = 0;
	if (fclose(f))
		ret = -1;
	if (!ret && rename(tmp, path))
		ret = -1;
	if (ret)
		unlink(tmp);
	free(ord);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* engine callbacks                                                                           */

static uint64_t usec_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(t1.tv_sec - t0->tv_sec) * 1000000ULL +
	    (uint64_t)((t1.tv_nsec - t0->tv_nsec) / 1000);
}

static int hdor_build_lid_matrices(void *context)
{
	hdor_ctx_t *ctx = context;
	osm_opensm_t *osm;
	hdor_pass_t *P;

	if (!ctx || !hdor_layout_ok(ctx->osm)) {
		hdor_layout_complain();
		return -1;
	}
	osm = ctx->osm;
	pass_free(ctx->pass);	/* never reuse anything from an earlier pass */
	ctx->pass = NULL;
	ctx->passes++;
	ctx->reason[0] = '\0';
	P = xcalloc(1, sizeof(*P));
	if (!P) {
		OSM_LOG(&osm->log, OSM_LOG_ERROR, "hdor: out of memory\n");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &P->t0);
	if (analyse(ctx, P)) {
		OSM_LOG(&osm->log, OSM_LOG_ERROR, "hdor: not a KNS fabric: %s\n", ctx->reason);
		pass_free(P);
		return -1;
	}
	P->us_analysis = usec_since(&P->t0);
	ctx->pass = P;
	if (!getenv("HDOR_OPENSM_HOPS")) {
		int closed = closed_form_ok(P);
		int rc = closed ? fill_hops(P) : fill_hops_bfs(P);
		P->us_hops = usec_since(&P->t0) - P->us_analysis;
		if (rc == 0) {
			P->own_hops = 1;
			OSM_LOG(&osm->log, OSM_LOG_VERBOSE,
				"hdor: hop matrices of %d switches filled %s\n", P->nsw,
				closed ? "from coordinates" : "by breadth-first search");
			return 0;
		}
		OSM_LOG(&osm->log, OSM_LOG_INFO,
			"hdor: hop matrices left to OpenSM (%d switches)\n", P->nsw);
		/* rows written so far hold exact minimal counts; OpenSM's relaxation only lowers */
		return 1;
	}
	return 1;		/* OpenSM builds its min-hop matrices */
}

static int hdor_build_fwd_tables(void *context)
{
	hdor_ctx_t *ctx = context;
	osm_opensm_t *osm;
	hdor_pass_t *P;
	char path[4096];
	int w;

	if (!ctx || !hdor_layout_ok(ctx->osm)) {
		hdor_layout_complain();
		return -1;
	}
	osm = ctx->osm;
	P = ctx->pass;
	ctx->pass = NULL;
	if (!P || !P->ready) {
		/* build_lid_matrices did not run in this pass: analyse now */
		pass_free(P);
		P = xcalloc(1, sizeof(*P));
		if (!P)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &P->t0);
		ctx->passes++;
		if (analyse(ctx, P)) {
			OSM_LOG(&osm->log, OSM_LOG_ERROR, "hdor: not a KNS fabric: %s\n", ctx->reason);
			pass_free(P);
			return -1;
		}
	}
	{
		uint64_t t = usec_since(&P->t0);
		for (w = 0; w < P->nsw; w++)
			route_switch(P, w);
		P->us_tables = usec_since(&P->t0) - t;
		t += P->us_tables;
		if (write_dump(ctx, P, path, sizeof(path)))
			OSM_LOG(&osm->log, OSM_LOG_ERROR, "hdor: cannot write %s: %s\n", path, strerror(errno));
		P->us_dump = usec_since(&P->t0) - t;
	}
	OSM_LOG(&osm->log, OSM_LOG_INFO,
		"hdor: routed k=%u n=%u s=%u: %d switches, %u LIDs, %" PRIu64 " us (pass %lu; analysis %" PRIu64
		" us, %s hop matrices %" PRIu64 " us, tables %" PRIu64 " us, dump %" PRIu64 " us)\n",
		P->k, P->n, P->s, P->nsw, P->nlids, usec_since(&P->t0), ctx->passes, P->us_analysis,
		P->own_hops ? "own" : "OpenSM's", P->us_hops, P->us_tables, P->us_dump);
	pass_free(P);
	return 0;
}

static void hdor_destroy(void *context)
{
	hdor_ctx_t *ctx = context;
	if (!ctx)
		return;
	pass_free(ctx->pass);
	ctx->pass = NULL;
	if (ctx->owned_by_engine)
		free(ctx);
}

static void hdor_fill_engine(osm_routing_engine_t *re, hdor_ctx_t *ctx)
{
	re->context = ctx;
	re->build_lid_matrices = hdor_build_lid_matrices;
	re->ucast_build_fwd_tables = hdor_build_fwd_tables;
	re->destroy = hdor_destroy;
	/* everything else stays NULL: OpenSM's defaults (multicast spanning tree on the hop
	 * matrices, SL from QoS) */
}

#ifdef HDOR_INTREE
/* ------------------------------------------------------------------------------------------ */
/* in-tree variant: listed in static_routing_modules[] of osm_opensm.c                        */

int osm_ucast_hdor_setup(struct osm_routing_engine *re, osm_opensm_t *osm);
int osm_ucast_hdor_setup(struct osm_routing_engine *re, osm_opensm_t *osm)
{
	hdor_ctx_t *ctx;
	if (!hdor_layout_ok(osm)) {
		hdor_layout_complain();
		return -1;
	}
	ctx = xcalloc(1, sizeof(*ctx));
	if (!ctx)
		return -1;
	ctx->osm = osm;
	ctx->owned_by_engine = 1;
	hdor_fill_engine(re, ctx);
	OSM_LOG(&osm->log, OSM_LOG_VERBOSE, "hdor: built-in engine set up\n");
	return 0;
}

#else
/* ------------------------------------------------------------------------------------------ */
/* plugin variant: an event plugin whose create() registers the external routing engine       */

static int hdor_setup(osm_routing_engine_t *re, osm_opensm_t *osm)
{
	hdor_ctx_t *ctx = re->context;
	if (!ctx || ctx->osm != osm || !hdor_layout_ok(osm)) {
		hdor_layout_complain();
		return -1;
	}
	hdor_fill_engine(re, ctx);
	OSM_LOG(&osm->log, OSM_LOG_VERBOSE, "hdor: engine '%s' type %d set up\n", re->name, re->type);
	return 0;
}

static void *hdor_create(osm_opensm_t *osm)
{
	external_routing_engine_module_t mod;
	hdor_ctx_t *ctx;
	cl_status_t st;

	if (!hdor_layout_ok(osm)) {
		hdor_layout_complain();
		return NULL;
	}
	ctx = xcalloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->osm = osm;
	mod.name = HDOR_NAME;
	mod.setup = hdor_setup;
	mod.context = ctx;
	st = osm_register_external_routing_engine(osm, &mod, ctx);
	if (st != CL_SUCCESS) {
		OSM_LOG(&osm->log, OSM_LOG_ERROR,
			"hdor: cannot register the routing engine (status %d)\n", (int)st);
		free(ctx);
		return NULL;
	}
	OSM_LOG(&osm->log, OSM_LOG_INFO,
		"hdor: registered external routing engine 'hdor' (built against %s)\n", OSM_VERSION);
	return ctx;
}

static void hdor_delete(void *plugin_data)
{
	hdor_ctx_t *ctx = plugin_data;
	if (!ctx)
		return;
	pass_free(ctx->pass);
	free(ctx);
}

static void hdor_report(void *plugin_data, osm_epi_event_id_t event_id, void *event_data)
{
	(void)plugin_data;
	(void)event_id;
	(void)event_data;
}

osm_event_plugin_t osm_event_plugin = {
	OSM_VERSION,
	hdor_create,
	hdor_delete,
	hdor_report
};
#endif
