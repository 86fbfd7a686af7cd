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
 * Every pass recomputes everything from OpenSM's current subnet and frees what it allocated at
 * the end of the pass.  The fabric is fully analysed and validated before anything is written, so
 * a decline (return -1) leaves the LFTs and hop matrices clean for the next engine in
 * routing_engine.  Kept across passes (docs/hdor.md section 6): the last complete KNS routed, by
 * GUID (never an OpenSM object), so that a later pass with failed links or nodes is routed as a
 * degraded KNS; and the path-SL/SL2VL table of the last degraded pass, read by the path_sl (SA
 * threads) and update_sl2vl hooks.
 *
 * Contents (the sections below are numbered as here; "docs" is docs/hdor.md):
 *    1. types: per-pass data and the engine context
 *    2. helpers: layout guard, allocation, declines, pointer hash, sorting
 *    3. candidate port sets (interned per switch, with their spreading counters)
 *    4. nodes and links of OpenSM's subnet
 *    5. identification: routers, groups, members, checks 1-3 (docs section 1)
 *    6. dimensions and coordinates (docs sections 2-3)
 *    7. distances inside groups and candidate sets (docs section 4)
 *    8. LID targets
 *    9. the analysis: everything that can fail, before anything is written
 *   10. hop matrices: from coordinates (s = 1), else by breadth-first search
 *   11. forwarding tables (docs section 4)
 *   12. the coordinates dump (docs section 5)
 *   13. fault tolerance (docs section 6): the remembered KNS, degraded routing
 *       13.1 compare with the remembered KNS   13.2 the degraded structure and routes
 *       13.3 SLs and VLs                       13.4 dump, tables, hop matrices, the SL hooks
 *   14. the KNS without a complete sweep: hdor.conf, the remembered state, first sight
 *       14.1 a pass over a KNS from elsewhere     14.2 the file format
 *       14.3 identification at first sight        14.4 where the files are, remembering
 *   15. multicast trees: the union of hdor's routes to a root switch (docs section 8)
 *   16. engine callbacks: build_lid_matrices, ucast_build_fwd_tables, mcast_build_stree, destroy
 *   17. in-tree variant (osm_ucast_hdor_setup)
 *   18. plugin variant (the event plugin that registers the engine)
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
#include <malloc.h>
#include <sys/stat.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <complib/cl_qmap.h>
#include <opensm/osm_file_ids.h>
#ifdef HDOR_INTREE
#define FILE_ID OSM_FILE_UCAST_HDOR_C
#endif
#include <opensm/osm_opensm.h>
#include <opensm/osm_subnet.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_node.h>
#include <opensm/osm_port.h>
#include <opensm/osm_log.h>
#include <opensm/osm_mcast_mgr.h>
#include <opensm/osm_multicast.h>
#include <opensm/osm_version.h>
#ifndef HDOR_INTREE
#include <opensm/osm_event_plugin.h>
#endif

#define HDOR_NAME "hdor"
#define HDOR_DUMP_FILE "opensm-hdor.dump"
#define HDOR_MAX_N 16

/* ------------------------------------------------------------------------------------------ */
/* 1. types: per-pass data and the engine context                                             */

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
	int own_hops;		/* HOPS_*: who filled the hop matrices this pass */
	struct timespec t0;
} hdor_pass_t;

/* whose hop matrices a pass leaves in OpenSM's switches (its summary line says which) */
enum { HOPS_OPENSM, HOPS_OWN, HOPS_NONE };

typedef struct hdor_kns hdor_kns_t;
typedef struct hdor_qos hdor_qos_t;
typedef struct hdor_deg hdor_deg_t;

/* a base node's per-LID scratch in the degraded pass (section 13.2): the Dijkstra's key (bln,
 * bv), how it was reached (via, vslot, fdim), its fault-free length when fixed (fixln), the
 * memo of its fault-free route (ffs: the LID it is for; ffl, ffx), the mark of R (rst) */
typedef struct {
	int bln, bv, fdim, via, vslot, fixln, ffl, ffx, rst;
	uint32_t ffs;
	uint8_t done, fixed;
} __attribute__((aligned(64))) hnode_t;

typedef struct hdor_ctx {
	osm_opensm_t *osm;
	hdor_pass_t *pass;	/* only between build_lid_matrices and ucast_build_fwd_tables */
	hdor_deg_t *deg;	/* the same, for a degraded KNS */
	hdor_kns_t *kns;	/* the complete KNS hdor knows (kept across passes; section 14) */
	hdor_qos_t *qos;	/* path SLs and SL2VL of the last degraded pass, read by the hooks */
	hdor_qos_t *qos_old;	/* the previous one: SA threads may still be reading it */
	unsigned long passes;
	int owned_by_engine;	/* in-tree: the engine frees the context in destroy() */
	struct timespec deg_t0;	/* start of a degraded pass */
	int code;		/* HD_* of ctx->reason */
	char reason[512];
	/* section 14: the description (hdor.conf) and the remembered state, read at the first pass */
	int loaded;
	int kns_dirty;		/* ctx->kns changed: write the remembered state after this pass */
	int conf_dirty;		/* a device of hdor.conf was replaced: rewrite hdor.conf after this pass */
	char conf_path[4096];	/* the hdor.conf in use ("" none) */
	char state_path[4096];	/* the remembered state: OSM_CACHE_DIR/hdor-kns.conf */
	char conf_bad[600];	/* why hdor.conf cannot be used ("" when it can) */
	char note[512];		/* what this pass learnt about the KNS, for its summary line */
	/* where this pass's time and memory went (its summary line; docs/plugin.md "Log lines") */
	struct timespec ph_t;	/* end of the last phase */
	uint64_t ph[16];	/* us per phase (PH_*) */
	size_t mem0, mem_peak;	/* heap in use at the start of the pass, and the most seen since */
} hdor_ctx_t;

/* the phases of a pass, in the order of its summary line */
enum {
	PH_KNS,			/* the remembered KNS: state or hdor.conf read, compared, first sight */
	PH_IDENT,		/* complete: nodes and links, identification (docs section 1) */
	PH_COORDS,		/* dimensions, coordinates, in-group distances (docs sections 2-4) */
	PH_SETS,		/* candidate port sets and LID targets */
	PH_STRUCT,		/* degraded: groups and levels, the fault-free tables as the start */
	PH_AFFECTED,		/* the entries whose fault-free route touches a failure */
	PH_DETOURS,		/* their new routes (docs section 6) */
	PH_SLVL,		/* path SLs, SL2VL rows, their publication to the SA hooks */
	PH_HOPS,		/* OpenSM's hop matrices */
	PH_OSM,			/* OpenSM between the two callbacks (not hdor's) */
	PH_LFT,			/* the new LFTs written into OpenSM's switches */
	PH_DUMP,		/* opensm-hdor.dump */
	PH_STATE,		/* the KNS remembered, its state file */
	PH_N
};

/* message codes (docs/plugin.md "Log lines"): errors are logged as "ERR HDxx: ...", a decline
 * as one INFO line "hdor: declined (HDxx): <reason>; ..." */
enum {
	HD_NOMEM = 0x01,	/* out of memory (error) */
	HD_DUMP_IO = 0x02,	/* cannot write opensm-hdor.dump (error) */
	HD_STATE_IO = 0x03,	/* cannot write the remembered state or update hdor.conf (error) */
	HD_CONF_READ = 0x04,	/* cannot read hdor.conf (error) */
	HD_CONF_SYNTAX = 0x05,	/* hdor.conf is not in the format (error) */
	HD_STATE_BAD = 0x06,	/* the remembered state is unreadable: ignored (error) */
	HD_LAYOUT = 0x07,	/* built for another OpenSM structure layout (error) */
	HD_REGISTER = 0x08,	/* cannot register the engine (error) */
	HD_UCAST_CACHE = 0x09,	/* use_ucast_cache is on (error) */
	HD_NOT_KNS = 0x10,	/* not a KNS (docs sections 1-3) */
	HD_FIRST_SIGHT = 0x11,	/* degraded, and not identified at first sight (docs section 7) */
	HD_CONF_MISMATCH = 0x20,	/* the fabric is not the KNS of hdor.conf */
	HD_CONF_INVALID = 0x21,	/* hdor.conf does not describe a KNS */
	HD_SCHEME = 0x30,	/* a detour the scheme does not allow (docs section 6) */
	HD_VLS = 0x31,		/* the failures need more VLs than the ports offer */
	HD_SLS = 0x32,		/* the failures need more than 16 SLs */
	HD_MCAST = 0x40,	/* a multicast member left out of its group's tree (error) */
};

/* ------------------------------------------------------------------------------------------ */
/* 2. helpers: layout guard, allocation, declines, pointer hash, sorting                      */

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
	/* not in OpenSM's log: its structure is what does not match (ERR HD07 all the same) */
	const char *msg = "ERR HD07: hdor: refusing to run: the OpenSM structure layout does not match the "
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

/* the process's heap in use (arenas and mmapped blocks): sampled at the end of every phase, its
 * growth over the pass is the pass's peak allocation (OpenSM's other threads allocate little
 * while it routes) */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static uint64_t usec_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(t1.tv_sec - t0->tv_sec) * 1000000ULL +
	    (uint64_t)((t1.tv_nsec - t0->tv_nsec) / 1000);
}

static void ph_start(hdor_ctx_t *ctx, const struct timespec *t0)
{
	ctx->ph_t = *t0;
	memset(ctx->ph, 0, sizeof(ctx->ph));
	ctx->mem0 = ctx->mem_peak = heap_in_use();
}

/* the time since the last phase ended goes to phase id (no memory sample: cheap enough to call
 * per LID) */
static void ph_lap(hdor_ctx_t *ctx, int id)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ctx->ph[id] += (uint64_t)(t1.tv_sec - ctx->ph_t.tv_sec) * 1000000000ULL + (uint64_t)t1.tv_nsec -
	    (uint64_t)ctx->ph_t.tv_nsec;
	ctx->ph_t = t1;
}

/* phase id ends: its time, and a sample of the heap */
static void ph_mark(hdor_ctx_t *ctx, int id)
{
	size_t m = heap_in_use();
	ph_lap(ctx, id);
	if (m > ctx->mem_peak)
		ctx->mem_peak = m;
}

/* "name N us, ..." of phases from..to (those that ran: a phase of 0 ns is left out) */
static size_t ph_text(const hdor_ctx_t *ctx, char *buf, size_t sz, int from, int to, const char *hops)
{
	static const char *names[PH_N] = { "remembered KNS", "identification", "coordinates", "candidate sets",
		"structure", "affected entries", "detours", "SL/VL", "hop matrices", "OpenSM between the callbacks",
		"LFT fill", "dump", "state" };
	size_t len = 0;
	int i;
	buf[0] = '\0';
	for (i = from; i <= to && len < sz; i++) {
		if (!ctx->ph[i] && i != PH_HOPS)	/* the hop matrices always: whose they are */
			continue;
		len += (size_t)snprintf(buf + len, sz - len, "%s%s%s %" PRIu64 " us", len ? ", " : "",
					i == PH_HOPS ? hops : "", names[i], ctx->ph[i] / 1000);
	}
	return len;
}

static uint64_t ph_sum(const hdor_ctx_t *ctx, int from, int to)
{
	uint64_t t = 0;
	int i;
	for (i = from; i <= to; i++)
		t += ctx->ph[i];
	return t / 1000;
}

static const char *ndesc(osm_node_t *node)
{
	return (node && node->print_desc) ? node->print_desc : "";
}

/* the reason this pass cannot route (ctx->reason, ctx->code); returns -1.  decline() is "not a
 * KNS", or out of memory: every allocation failure says exactly "out of memory" */
static int vdecline(hdor_ctx_t *ctx, int code, const char *fmt, va_list ap)
{
	vsnprintf(ctx->reason, sizeof(ctx->reason), fmt, ap);
	ctx->code = strcmp(fmt, "out of memory") ? code : HD_NOMEM;
	return -1;
}

static int decline(hdor_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int decline(hdor_ctx_t *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdecline(ctx, HD_NOT_KNS, fmt, ap);
	va_end(ap);
	return -1;
}

static int declinec(hdor_ctx_t *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int declinec(hdor_ctx_t *ctx, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdecline(ctx, code, fmt, ap);
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
/* 3. candidate port sets (interned per switch, with their spreading counters)                */

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
/* 4. nodes and links of OpenSM's subnet                                                      */

/* the GUID hash (twice the nodes, a power of two) and the switch and HCA arrays of a pass;
 * 0 when out of memory (the caller declines) */
static int pass_alloc(hdor_pass_t *P, uint32_t nnodes)
{
	uint32_t cap = 16;

	while (cap < 2 * nnodes + 2)
		cap <<= 1;
	P->hcap = cap;
	P->hkey = xcalloc(cap, sizeof(*P->hkey));
	P->hval = xcalloc(cap, sizeof(*P->hval));
	P->sw = xcalloc(P->nsw, sizeof(*P->sw));
	P->ca = xcalloc(P->nca, sizeof(*P->ca));
	return P->hkey && P->hval && P->sw && P->ca;
}

static int collect(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	osm_subn_t *subn = &ctx->osm->subn;
	cl_qmap_t *tbl = &subn->node_guid_tbl;
	cl_map_item_t *it;
	uint32_t nnodes = (uint32_t)cl_qmap_count(tbl);
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
	if (!pass_alloc(P, nnodes))
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
/* 5. identification: routers, groups, members, checks 1-3 (docs section 1)                   */

static int structure(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	int w, g, r, pass;
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

	return 0;
}

/* checks 2-3: n, k and k^n routers */
static int kns_counts(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	int r, g, i;

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

/* the roles, groups and members of P, and checks 1-3 */
static int identify(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	return structure(ctx, P) || kns_counts(ctx, P) ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* 6. dimensions (breadth-first from the seed router) and coordinates (docs 2-3)              */

static int uf_find(int *uf, int x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

/* uf: the routers joined through every group whose dimension is not d (a group's dimension is
 * dims[g], or its own .dim without dims); both coordinate passes (complete, first sight) ask it */
static void join_other_dimensions(const hdor_pass_t *P, int *uf, const int *dims, int d)
{
	int r, g;
	uint32_t j;

	for (r = 0; r < P->nr; r++)
		uf[r] = r;
	for (g = 0; g < P->ng; g++) {
		const hgrp_t *G = &P->grp[g];
		int a;
		if ((dims ? dims[g] : G->dim) == d)
			continue;
		a = uf_find(uf, P->gmem[G->moff]);
		for (j = 1; j < G->mn; j++) {
			int b = uf_find(uf, P->gmem[G->moff + j]);
			if (a != b)
				uf[b] = a;
		}
	}
}

/* with every router's coordinates (P->coord) and every group's dimension: the routers are a
 * bijection onto [0,k)^n, and each group's members are a line of its dimension (coordinates
 * P->gcoord, members by coordinate) */
static int lines_and_points(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n, k = P->k, e;
	int r, g, i;
	uint8_t *seen = xcalloc(P->nr, 1);

	if (!seen)
		return decline(ctx, "out of memory");
	/* bijection onto [0,k)^n */
	for (r = 0; r < P->nr; r++) {
		uint32_t lin = 0;
		for (e = n; e-- > 0;)
			lin = lin * k + P->coord[r * n + e];
		if (lin >= (uint32_t)P->nr || seen[lin]) {
			free(seen);
			return decline(ctx, "router 0x%016" PRIx64 " '%s' has the coordinates of another router",
				       P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node));
		}
		seen[lin] = 1;
	}
	free(seen);
	/* group coordinates and members by coordinate */
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		int m0 = P->gmem[G->moff];
		uint32_t j;
		G->mbyc = xcalloc(k, sizeof(int));
		if (!G->mbyc)
			return decline(ctx, "out of memory");
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
				return decline(ctx, "members of the indirect network of switch 0x%016" PRIx64 " '%s' do not form a line of dimension %d",
					       P->sw[w0].guid, ndesc(P->sw[w0].node), G->dim);
			}
			G->mbyc[c] = m;
		}
	}
	return 0;
}

static int dims_and_coords(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n, k = P->k, d, e;
	int r, g, i, qh = 0, qt = 0, ret = -1;
	int *queue = NULL, *uf = NULL, *comp = NULL, *stamp = NULL;
	uint8_t *visited = NULL;
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
	if (!P->rg || !P->coord || !P->gcoord || !queue || !visited || !stamp || !uf || !comp) {
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
		for (r = 0; r < P->nr; r++)
			comp[r] = -1;
		join_other_dimensions(P, uf, NULL, (int)d);
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

	ret = lines_and_points(ctx, P);
out:
	free(queue);
	free(visited);
	free(stamp);
	free(uf);
	free(comp);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* 7. distances inside groups and candidate sets (docs section 4)                             */

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
/* 8. LID targets                                                                             */

static int lid_targets(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	cl_qmap_t *pt = &ctx->osm->subn.port_guid_tbl;
	cl_map_item_t *it;
	uint32_t maxlid = 0;
	int w;

	for (w = 0; w < P->nsw; w++)	/* (no sw: a switch of the KNS that is not there, section 14) */
		if (P->sw[w].sw && P->sw[w].sw->max_lid_ho > maxlid)
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
/* 9. the analysis: everything that can fail, before anything is written                      */

static int analyse(hdor_ctx_t *ctx, hdor_pass_t *P)
{
	if (collect(ctx, P) || identify(ctx, P))
		return -1;
	ph_mark(ctx, PH_IDENT);
	if (dims_and_coords(ctx, P) || group_distances(ctx, P))
		return -1;
	ph_mark(ctx, PH_COORDS);
	if (candidate_sets(ctx, P) || lid_targets(ctx, P))
		return -1;
	ph_mark(ctx, PH_SETS);
	P->ready = 1;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* 10. hop matrices: from coordinates (s = 1), else by breadth-first search                   */

static inline void set_hop(uint8_t *row, uint8_t port, unsigned h, uint8_t *best)
{
	if (h > 254)
		h = 254;
	row[port] = (uint8_t)h;
	if (h < *best)
		*best = (uint8_t)h;
}

/* one row of fill_hops: switch w (coordinates cw, dimension fw, -1 for a router; its switch
 * neighbours nport/nidx) toward switch d; mm: the dimensions fixed in both that differ */
static void hop_row(uint8_t *row, unsigned np, int w, int d, int fw, int fd, const uint8_t *cd,
		    unsigned mm, const uint8_t *nport, const int *nidx, unsigned nn,
		    const uint8_t *const *pc, const int *pf)
{
	unsigned h0 = (unsigned)__builtin_popcount(mm), i;
	uint8_t best = w == d ? 0 : OSM_NO_PATH;

	memset(row, OSM_NO_PATH, np);
	/* like OpenSM's relaxation, the own LID also gets the ports' hop counts (there and
	 * back), with 0 as the minimum */
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

/* fills sw->hops for every switch LID as OpenSM's min-hop matrix would (every port toward a
 * switch neighbour, the minimum in port 0, 0 for the own LID); returns 0, or -1 on allocation
 * failure (OpenSM then builds the matrices).  Only for a pure s = 1 KNS (closed_form_ok): a
 * router's switch neighbours are the indirect switches of its lines and an indirect switch's
 * neighbours are the routers of its line, so per (switch, target) one pass over the dimensions
 * gives every port's count: between two distinct switches, 2 * (dimensions fixed in both that
 * differ) + (number of indirect endpoints).
 * A switch's row depends on the target only through a few numbers (a router: the differing
 * dimensions and whether the target is indirect; an indirect switch: their count, the target's
 * kind and coordinate in its dimension), so rows are copied from per-switch templates: the
 * phase writes 20-24 M rows on KNS 16^3 and is bound by that. */
static int fill_hops(hdor_pass_t *P)
{
	unsigned n = P->n, e, np_max = 1, nkeys;
	int w, d, ret = -1;
	uint32_t l;
	const uint8_t **pc = xcalloc(P->nsw, sizeof(*pc));
	int *pf = xcalloc(P->nsw, sizeof(int));
	uint8_t *nport = xcalloc(P->nlinks, 1);
	int *nidx = xcalloc(P->nlinks, sizeof(int));
	uint8_t *tmpl = NULL, *tset = NULL;
	int rkeys = n <= 8;	/* a router's keys: 2^(n+1) */

	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].sw->num_ports > np_max)
			np_max = P->sw[w].sw->num_ports;
	nkeys = (n + 1) * (1 + 2 * P->k);
	if (rkeys && nkeys < (2u << n))
		nkeys = 2u << n;
	tmpl = malloc((size_t)nkeys * np_max);
	tset = malloc(nkeys);
	if (!pc || !pf || !nport || !nidx || !tmpl || !tset)
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
		unsigned np = sw->num_ports, nn = 0;
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
		memset(tset, 0, nkeys);
		for (d = 0; d < P->nsw; d++) {
			uint16_t lid = P->sw[d].base_lid;
			const uint8_t *cd = pc[d];
			int fd = pf[d], key;
			unsigned mm = 0;
			uint8_t *row;
			if (!lid || lid > sw->max_lid_ho)
				continue;
			row = sw->hops[lid];
			if (!row) {
				row = malloc(np);
				if (!row)
					goto out;
				sw->hops[lid] = row;
			}
			for (e = 0; e < n; e++)
				if ((int)e != fd && (int)e != fw && cw[e] != cd[e])
					mm |= 1u << e;
			/* the template's key; -1: the own row, or a router's neighbour (computed) */
			if (w == d)
				key = -1;
			else if (fw < 0)
				key = !rkeys || (fd >= 0 && !mm) ? -1 : (int)(2 * mm + (fd >= 0));
			else if (fd == fw)
				key = __builtin_popcount(mm);
			else
				key = (int)(n + 1 + (2u * __builtin_popcount(mm) + (fd >= 0)) * P->k + cd[fw]);
			if (key < 0) {
				hop_row(row, np, w, d, fw, fd, cd, mm, nport, nidx, nn, pc, pf);
				continue;
			}
			if (!tset[key]) {
				hop_row(tmpl + (size_t)key * np_max, np, w, d, fw, fd, cd, mm, nport, nidx, nn, pc, pf);
				tset[key] = 1;
			}
			memcpy(row, tmpl + (size_t)key * np_max, np);
		}
	}
	ret = 0;
out:
	free(pc);
	free(pf);
	free(nport);
	free(nidx);
	free(tmpl);
	free(tset);
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

/* a switch graph (hop matrices; multicast trees, section 15, without lid): switch i is sw[i]
 * with LID lid[i], its links to other switches are (port[j], idx[j]) for j in off[i] .. off[i+1]-1 */
typedef struct {
	int n;
	osm_switch_t **sw;
	uint16_t *lid;
	uint32_t *off;
	uint8_t *port;
	int *idx;
} hgraph_t;

/* an all-pairs BFS over the switch links (n^2 bytes), then every switch's rows as OpenSM's
 * min-hop matrix would hold them; returns 0, or -1 (OpenSM builds them) */
static int fill_hops_graph(const hgraph_t *g)
{
	size_t N = (size_t)g->n, b0, y;
	uint8_t *D = NULL;
	uint32_t *ro = NULL, *fill = NULL, m = g->off[g->n], k;
	int *ri = NULL, w, d, ret = -1;
	uint64_t *vis = NULL, *fr = NULL, *nx = NULL;
	uint32_t l;

	if (N > HDOR_BFS_HOPS_MAX_SWITCHES || !(D = malloc(N * N)) || !(ro = xcalloc(N + 1, sizeof(uint32_t))) ||
	    !(fill = xcalloc(N + 1, sizeof(uint32_t))) || !(ri = xcalloc(m + 1, sizeof(int))) ||
	    !(vis = malloc(N * 8 + 8)) || !(fr = malloc(N * 8 + 8)) || !(nx = malloc(N * 8 + 8)))
		goto out;
	memset(D, OSM_NO_PATH, N * N);
	/* 64 sources at a time, bit-parallel: a bit per source in each switch's word; a level's
	 * new switches are those with a link from the frontier (the links reversed: ro/ri), as a
	 * breadth-first search per source (distances above 254: no path) */
	for (l = 0; l < m; l++)
		ro[g->idx[l] + 1]++;
	for (y = 0; y < N; y++)
		ro[y + 1] += ro[y];
	for (w = 0; w < g->n; w++)
		for (l = g->off[w]; l < g->off[w + 1]; l++)
			ri[ro[g->idx[l]] + fill[g->idx[l]]++] = w;
	for (b0 = 0; b0 < N; b0 += 64) {
		size_t nb = N - b0 < 64 ? N - b0 : 64, s;
		unsigned lev, any = 1;
		memset(vis, 0, N * 8);
		memset(fr, 0, N * 8);
		for (s = 0; s < nb; s++) {
			fr[b0 + s] = vis[b0 + s] = 1ULL << s;
			D[(b0 + s) * N + b0 + s] = 0;
		}
		for (lev = 1; lev <= 254 && any; lev++) {
			uint64_t *t;
			any = 0;
			for (y = 0; y < N; y++) {
				uint64_t a = 0;
				for (k = ro[y]; k < ro[y + 1]; k++)
					a |= fr[ri[k]];
				a &= ~vis[y];
				nx[y] = a;
				any |= a != 0;
			}
			for (y = 0; y < N; y++) {
				uint64_t a = nx[y];
				vis[y] |= a;
				while (a) {
					D[(b0 + (unsigned)__builtin_ctzll(a)) * N + y] = (uint8_t)lev;
					a &= a - 1;
				}
			}
			t = fr;
			fr = nx;
			nx = t;
		}
	}
	for (w = 0; w < g->n; w++) {
		osm_switch_t *sw = g->sw[w];
		unsigned np = sw->num_ports;
		if (!sw->hops || sw->num_hops <= sw->max_lid_ho)
			goto out;
		for (d = 0; d < g->n; d++) {
			uint16_t lid = g->lid[d];
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
			for (l = g->off[w]; l < g->off[w + 1]; l++) {
				if (g->port[l] >= np || D[(size_t)g->idx[l] * N + d] == OSM_NO_PATH)
					continue;
				set_hop(row, g->port[l], 1u + D[(size_t)g->idx[l] * N + d], &best);
			}
			row[0] = best;
		}
	}
	ret = 0;
out:
	free(D);
	free(ro);
	free(fill);
	free(ri);
	free(vis);
	free(fr);
	free(nx);
	return ret;
}

static void graph_free(hgraph_t *g)
{
	free(g->sw);
	free(g->lid);
	free(g->off);
	free(g->port);
	free(g->idx);
}

/* any other fabric hdor routes (s > 1, stray router-router cables): fill_hops_graph */
static int fill_hops_bfs(hdor_pass_t *P)
{
	hgraph_t g = { P->nsw, NULL, NULL, NULL, NULL, NULL };
	int w, ret = -1;
	uint32_t l, m = 0;

	g.sw = xcalloc(P->nsw, sizeof(*g.sw));
	g.lid = xcalloc(P->nsw, sizeof(uint16_t));
	g.off = xcalloc(P->nsw + 1, sizeof(uint32_t));
	g.port = xcalloc(P->nlinks, 1);
	g.idx = xcalloc(P->nlinks, sizeof(int));
	if (g.sw && g.lid && g.off && g.port && g.idx) {
		for (w = 0; w < P->nsw; w++) {
			g.sw[w] = P->sw[w].sw;
			g.lid[w] = P->sw[w].base_lid;
			g.off[w] = m;
			for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
				if (P->links[l].kind == N_SWITCH) {
					g.port[m] = P->links[l].port;
					g.idx[m++] = P->links[l].idx;
				}
		}
		g.off[P->nsw] = m;
		ret = fill_hops_graph(&g);
	}
	graph_free(&g);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* 11. forwarding tables (docs section 4)                                                     */

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

/* the LIDs route_all hands to route_switch: ck, a router's coordinates packed 8 bits a dimension
 * (n <= 8; else NULL), and lk, the same by LID (its target router's; 0 for other LIDs): the
 * first differing dimension of two routers is then one count of trailing zeros; fix, the LIDs
 * (ascending) that are not a router's or HCA's, and own, each router's own LIDs (CSR by router) */
typedef struct {
	const uint64_t *ck, *lk;
	const uint32_t *fix, *own, *own_off;
	uint32_t nfix;
	uint8_t *save;		/* scratch: a row's entries of the LIDs in fix, nfix */
} lidsets_t;

/* switch w toward LID lid: its port, -1 for a LID of no port (the entry is left as OpenSM
 * prepared it). A router switch's sets rs are by (dimension, coordinate) and one holds the port
 * of each whose set has one port (0x100 where it has more: a spreading counter steps); an
 * indirect switch's sets rs are by member coordinate (one unused) */
static inline int lft_entry(hdor_pass_t *P, int w, const int *rs, const uint16_t *one, const lidsets_t *L,
			    uint32_t lid)
{
	const ltgt_t *t = &P->lt[lid];
	int r = P->sw[w].router;
	unsigned n = P->n, k = P->k, e;
	if (r < 0) {
		int g = P->sw[w].group;
		unsigned ed = (unsigned)P->grp[g].dim;
		if (t->kind == T_ROUTER)
			return pick(P, rs[P->coord[(size_t)t->idx * n + ed]]);
		if (t->kind == T_SWITCH) {
			int D = t->idx, gd = P->sw[D].group;
			if (D == w)
				return 0;
			if (gd == g) {
				int id = switch_set(P, w, (unsigned)P->sw[D].lidx, 1);
				return id >= 0 ? pick(P, id) : OSM_NO_PATH;
			}
			if ((unsigned)P->grp[gd].dim != ed)
				return pick(P, rs[P->gcoord[(size_t)gd * n + ed]]);
			return pick(P, rs[same_dim_member(P, w, D)]);
		}
	} else {
		const uint8_t *c = P->coord + (size_t)r * n;
		if (t->kind == T_ROUTER) {
			const uint8_t *tc;
			if (t->idx == r)
				return t->port;
			if (L->ck) {
				unsigned i;
				e = (unsigned)__builtin_ctzll(L->ck[r] ^ L->lk[lid]) >> 3;
				i = e * k + ((L->lk[lid] >> (8 * e)) & 0xff);
				return one[i] < 0x100 ? (uint8_t)one[i] : pick(P, rs[i]);
			}
			tc = P->coord + (size_t)t->idx * n;
			for (e = 0; c[e] == tc[e]; e++) ;
			return pick(P, rs[e * k + tc[e]]);
		}
		if (t->kind == T_SWITCH) {
			int g = P->sw[t->idx].group, id;
			unsigned dd = (unsigned)P->grp[g].dim;
			const uint8_t *f = P->gcoord + (size_t)g * n;
			for (e = 0; e < n; e++)
				if (e != dd && c[e] != f[e])
					break;
			if (e < n)
				return pick(P, rs[e * k + f[e]]);
			id = router_set(P, w, g, (unsigned)P->sw[t->idx].lidx, 1);
			return id >= 0 ? pick(P, id) : OSM_NO_PATH;
		}
	}
	return -1;
}

/* counts: scratch, 4 x 256 (four histograms: one counter incremented entry after entry is a
 * chain of dependent stores) */
static void route_switch(hdor_pass_t *P, int w, const lidsets_t *L, uint32_t *counts)
{
	hsw_t *W = &P->sw[w];
	osm_switch_t *sw = W->sw;
	int r = W->router, single = L->ck != NULL, port;
	unsigned n = P->n, k = P->k, nsets = r >= 0 ? n * k : k, e, p;
	const int *rs = r >= 0 ? P->rset + (size_t)r * n * k : P->sset + (size_t)w * k;
	uint32_t lid, top = lft_top(sw), j;
	uint8_t *lft = sw->new_lft, one8[8 * 256];
	uint16_t one[HDOR_MAX_N * 256];

	if (top > P->max_lid)
		top = P->max_lid;
	for (e = 0; e < nsets; e++) {
		int id = rs[e];
		one[e] = id >= 0 && P->sets[id].np == 1 ? P->pool[P->sets[id].poff] : 0x100;
		single &= id < 0 || P->sets[id].np == 1;
	}
	if (!single) {	/* a set of several ports: the counters step in LID order */
		for (lid = 1; lid <= top; lid++)
			if ((port = lft_entry(P, w, rs, one, L, lid)) >= 0) {
				lft[lid] = (uint8_t)port;
				counts[(lid & 3) << 8 | (unsigned)port]++;
			}
	} else {
		/* every router's LID by a closed form, branch-free: one lookup on the first differing
		 * coordinate (a router switch) or on the coordinate in the switch's dimension (an
		 * indirect switch); the row's own LIDs and the other LIDs get a stand-in, then are
		 * done entry by entry. No set of this row steps a counter for a router's LID, so the
		 * counters step as in LID order */
		const uint64_t *lk = L->lk;
		memset(one8, OSM_NO_PATH, sizeof(one8));
		for (e = 0; e < nsets; e++)
			if (one[e] < 0x100)
				one8[e] = (uint8_t)one[e];
		for (j = 0; j < L->nfix && L->fix[j] <= top; j++)
			L->save[j] = lft[L->fix[j]];
		if (r >= 0) {
			const uint64_t ckr = L->ck[r];
			for (lid = 1; lid <= top; lid++) {
				uint64_t x = (ckr ^ lk[lid]) | 1ULL << 63;
				unsigned d = (unsigned)__builtin_ctzll(x) >> 3;
				uint8_t q = one8[d * k + ((lk[lid] >> (8 * d)) & 0xff)];
				lft[lid] = q;
				counts[(lid & 3) << 8 | q]++;
			}
			for (j = L->own_off[r]; j < L->own_off[r + 1] && L->own[j] <= top; j++) {
				lid = L->own[j];
				counts[(lid & 3) << 8 | lft[lid]]--;
				lft[lid] = P->lt[lid].port;
				counts[(lid & 3) << 8 | lft[lid]]++;
			}
		} else {
			unsigned ed = (unsigned)P->grp[W->group].dim;
			for (lid = 1; lid <= top; lid++) {
				uint8_t q = one8[(lk[lid] >> (8 * ed)) & 0xff];
				lft[lid] = q;
				counts[(lid & 3) << 8 | q]++;
			}
		}
		for (j = 0; j < L->nfix && L->fix[j] <= top; j++) {
			lid = L->fix[j];
			counts[(lid & 3) << 8 | lft[lid]]--;
			if ((port = lft_entry(P, w, rs, one, L, lid)) < 0)
				lft[lid] = L->save[j];
			else {
				lft[lid] = (uint8_t)port;
				counts[(lid & 3) << 8 | (unsigned)port]++;
			}
		}
	}
	/* the port profiles count the paths (as osm_switch_count_path, once per port) */
	for (p = 0; p < sw->num_ports; p++)
		sw->p_prof[p].num_paths += counts[p] + counts[256 + p] + counts[512 + p] + counts[768 + p];
	memset(counts, 0, 1024 * sizeof(*counts));
}

static void free_all(void **p, size_t n);

/* every switch's new_lft */
static void route_all(hdor_pass_t *P)
{
	uint32_t counts[1024] = { 0 }, lid, nf = 0;
	lidsets_t L = { 0 };
	uint64_t *ck = P->n <= 8 ? xcalloc((size_t)P->nr + 1, sizeof(uint64_t)) : NULL;
	uint64_t *lk = ck ? xcalloc((size_t)P->max_lid + 1, sizeof(uint64_t)) : NULL;
	uint32_t *fix = lk ? xcalloc((size_t)P->max_lid + 1, sizeof(uint32_t)) : NULL;
	uint32_t *own = fix ? xcalloc((size_t)P->max_lid + 1, sizeof(uint32_t)) : NULL;
	uint32_t *own_off = own ? xcalloc((size_t)P->nr + 1, sizeof(uint32_t)) : NULL;
	uint8_t *save = own_off ? xcalloc((size_t)P->max_lid + 1, 1) : NULL;
	unsigned e;
	int r, w;
	if (!save) {	/* out of memory: entry by entry, without the packed coordinates */
		void *all[] = { ck, lk, fix, own, own_off };
		free_all(all, sizeof(all) / sizeof(all[0]));
		ck = lk = NULL;
	} else {
		for (r = 0; r < P->nr; r++)
			for (e = 0; e < P->n; e++)
				ck[r] |= (uint64_t)P->coord[(size_t)r * P->n + e] << (8 * e);
		for (lid = 1; lid <= P->max_lid; lid++)
			if (P->lt[lid].kind == T_ROUTER) {
				lk[lid] = ck[P->lt[lid].idx];
				own_off[P->lt[lid].idx + 1]++;
			} else
				fix[nf++] = lid;
		for (r = 0; r < P->nr; r++)
			own_off[r + 1] += own_off[r];
		for (lid = 1; lid <= P->max_lid; lid++)	/* ascending within each router */
			if (P->lt[lid].kind == T_ROUTER)
				own[own_off[P->lt[lid].idx]++] = lid;
		for (r = P->nr; r > 0; r--)
			own_off[r] = own_off[r - 1];
		own_off[0] = 0;
		L = (lidsets_t){ ck, lk, fix, own, own_off, nf, save };
	}
	for (w = 0; w < P->nsw; w++)
		route_switch(P, w, &L, counts);
	{
		void *all[] = { ck, lk, fix, own, own_off, save };
		free_all(all, sizeof(all) / sizeof(all[0]));
	}
}

/* ------------------------------------------------------------------------------------------ */
/* 12. the coordinates dump (docs section 5)                                                  */

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

/* opensm-hdor.dump is written to a temporary file in dump_files_dir, then renamed */
static FILE *dump_open(hdor_ctx_t *ctx, char *path, size_t pathsz, char *tmp, size_t tmpsz)
{
	const char *dir = ctx->osm->subn.opt.dump_files_dir;
	if (!dir || !*dir)
		dir = ".";
	snprintf(path, pathsz, "%s/%s", dir, HDOR_DUMP_FILE);
	snprintf(tmp, tmpsz, "%s.tmp", path);
	return fopen(tmp, "w");
}

static int dump_close(FILE *f, const char *tmp, const char *path)
{
	int ret = -1;
	if (fflush(f) == 0 && !ferror(f))
		ret = 0;
	if (fclose(f))
		ret = -1;
	if (!ret && rename(tmp, path))
		ret = -1;
	if (ret)
		unlink(tmp);
	return ret;
}

static int write_dump(hdor_ctx_t *ctx, hdor_pass_t *P, char *path, size_t pathsz)
{
	char tmp[4200];
	FILE *f;
	int *ord, i, nind = P->nsw - P->nr, ret;
	unsigned n = P->n;

	ord = xcalloc((size_t)P->nsw + P->nca, sizeof(int));
	if (!ord)
		return -1;
	f = dump_open(ctx, path, pathsz, tmp, sizeof(tmp));
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
	ret = dump_close(f, tmp, path);
	free(ord);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* 13. fault tolerance (docs section 6): the remembered KNS, degraded routing                 */

#define HDOR_INF (1 << 30)
#define HDOR_MAX_SLS 16
#define HDOR_MAX_HOPS 64
enum { R_ROUTER = 1, R_SWITCH = 2, R_HCA = 3 };
/* where a KNS comes from: a complete pass, hdor.conf, the remembered state, first sight */
enum { K_PASS = 0, K_CONF = 1, K_STATE = 2, K_SIGHT = 3 };
#define HDOR_PHANTOM 0xffffffff00000000ULL	/* GUIDs of devices never seen (first sight) */

/* The complete KNS hdor knows, kept in the context across sweeps: the last complete KNS it
 * routed, or the one of hdor.conf, of the remembered state, or identified at first sight
 * (section 14).  Nodes ("base nodes") are indexed by GUID order; nothing points into OpenSM's
 * objects (they are freed by the drop manager when the fabric changes).  A node's GUID orders
 * it (the rules of docs sections 2-3 and 6 that break ties by GUID); `ident` is the GUID of the
 * device at its place now: the same, unless a new device replaced it (section 14.4).  A node
 * with a GUID of HDOR_PHANTOM or above was never seen (first sight: section 14.3). */
struct hdor_kns {
	uint32_t nn;
	uint64_t *guid;
	uint64_t *ident;	/* the GUID of the device there now */
	uint32_t *isort;	/* nodes by ident, ascending (lookup, output order) */
	uint8_t *type, *role, *np;	/* N_*, R_*, ports 0..np-1 */
	char **desc;
	uint32_t *poff;		/* (node, port) slot: poff[node] + port */
	int *peer;		/* base node behind the slot, -1 */
	uint8_t *pport;
	uint16_t *plid;		/* the base LID each slot had when last seen (0: none) */
	uint8_t *plmc;
	int *dim, *grp;		/* indirect switches: dimension, group (key order); else -1 */
	uint32_t *lev;		/* indirect switches: in-group level (up/down orientation) */
	uint8_t *coord;		/* nn * n: routers, HCAs: router coordinates; switches: group's */
	unsigned k, n, s;
	int ng;
	int *gdim;
	uint32_t *gsoff;	/* group -> its switches (CSR into gsw, GUID order) */
	int *gsw;
	int nrow;
	int *row;		/* switch -> row of lft, -1 */
	uint32_t nlid;		/* LIDs 0..nlid-1 */
	int *lnode;		/* LID -> base node, -1 */
	uint8_t *lport;
	uint8_t *lft;		/* nlid * nrow: the fault-free tables (by LID: the loops go over switches);
				 * NULL when read from a file (section 14 computes them) */
	int origin;		/* K_* : where it comes from */
	int replaced;		/* some node's ident is not its GUID */
};
#define KLFT(K, r, lid) ((K)->lft[(size_t)(lid) * (K)->nrow + (r)])

/* path SLs and SL2VL rows of a degraded pass, read by the path_sl and update_sl2vl hooks */
struct hdor_qos {
	uint32_t npath;
	uint64_t *pkey;		/* dlid << 16 | slid, ascending; pairs with SL 0 are not listed */
	uint32_t nl;
	uint16_t *base;		/* LID -> the base LID of its port (routes do not depend on the SLID) */
	uint8_t *psl;
	uint32_t nrow;
	uint64_t *rkey;		/* guid-ordered switch index << 16 | in << 8 | out, ascending */
	uint8_t (*rvl)[16];
	uint64_t *rguid;	/* switch GUID of each row (for the hook: by GUID) */
	unsigned vls, maxsl;
};

typedef struct {
	int *cost;		/* per local switch of the group: links to M, HDOR_INF */
	pmask_t *cm;		/* candidate ports */
	int *icost;		/* per member slot: links from the member (entering) to M */
	pmask_t *im;
	int reach;		/* some switch of the group reaches M */
} hig_t;

typedef struct {
	pmask_t m;
	uint32_t cnt, np;	/* LIDs that took m so far; |m| */
} hcnt_t;

/* one degraded pass */
struct hdor_deg {
	hdor_kns_t *K;
	osm_node_t **cur;	/* base node -> current node, NULL when failed */
	uint8_t *ok;		/* per slot: the remembered link works */
	uint32_t nl;		/* NL = highest current LID + 1 */
	int *onode;		/* current LID owners (base node, port), -1 */
	uint8_t *oport;
	uint32_t nowned;
	uint8_t *tab;		/* nl * K->nrow: the new tables (DTAB) */
	uint8_t *aff;		/* nl * K->nrow (by LID: the loops go over switches): 0 unknown, 1 no, 2 affected */
	/* groups: components of the remembered groups' surviving switches */
	int ng;
	int *gof, *glocal;	/* base node -> component, local index */
	int *gdim;
	uint32_t *gsoff;
	int *gsw;
	uint32_t *gmoff;	/* members (GUID order) */
	int *gmem;
	uint32_t *rgoff;	/* router -> its components by (dimension, component) */
	int *rgl;
	int *rgslot;		/* the router's member slot in each of those components */
	hig_t **ig;		/* per component, per member slot */
	/* spreading counters per switch row */
	hcnt_t **cnt;
	uint32_t *ncnt, *capcnt;
	/* per LID scratch: per base node, one line (hnode_t: route_lid reads a dozen fields of
	 * a node at a time; one allocation, not twelve); and lists */
	hnode_t *nd;
	int *fixlist, *exitof, *dist, *q;
	int *exitslot;		/* the exit's member slot in its group, -1 */
	/* the live switches (index order) and this LID's affected switches: the per-LID loops
	 * go over these, not over every node */
	int *lsw, *alist, *seed;
	uint32_t nlsw, nalist, nseed;
	/* each live switch's live switch neighbours over working links, as (node, row, the
	 * neighbour's port toward it): affected_lid's reverse walk reads only these */
	uint32_t *upoff, *uprow;
	int *upx;
	uint8_t *upport;
	/* each switch's neighbour switches over its working links (switch_dist) */
	uint32_t *swoff;
	int *swnb;
	/* route_lid's groups and routers (G, R) of this LID: lists and marks */
	int *glist, *rlist, *gst, stamp;
	/* each group of G's affected members (lists in GUID order: head, tail per group; the
	 * member, its slot, the next entry) */
	int *amhead, *amtail, *amw, *amslot, *amnext;
	uint64_t *rbits;
	uint32_t ngl, nrl;
	pmask_t *cand;
	uint8_t *has;
	int dist_target;
	/* results */
	unsigned vls, vlcap;
	uint32_t detoured, extra_max;
	double extra_mean;
	hdor_qos_t *qos;
	uint32_t nrouters, nswitches, nhcas;
	uint32_t dead_nodes, dead_links;
	int own_hops;
};

static void free_all(void **p, size_t n)
{
	while (n--)
		free(p[n]);
}

#define DTAB(D, r, lid) ((D)->tab[(size_t)(lid) * (D)->K->nrow + (r)])

static void kns_free(hdor_kns_t *K)
{
	uint32_t i;
	if (!K)
		return;
	if (K->desc)
		for (i = 0; i < K->nn; i++)
			free(K->desc[i]);
	{
		void *all[] = {
			K->desc, K->guid, K->ident, K->isort, K->type, K->role, K->np, K->poff, K->peer,
			K->pport, K->plid, K->plmc, K->dim, K->grp, K->lev, K->coord, K->gdim, K->gsoff,
			K->gsw, K->row, K->lnode, K->lport, K->lft
		};
		free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(K);
}

static void qos_free(hdor_qos_t *Q)
{
	if (!Q)
		return;
	{
		void *all[] = { Q->pkey, Q->psl, Q->base, Q->rkey, Q->rvl, Q->rguid };
		free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(Q);
}

static void deg_free(hdor_deg_t *D)
{
	int g;
	uint32_t i;
	if (!D)
		return;
	if (D->ig)
		for (g = 0; g < D->ng; g++) {
			if (!D->ig[g])
				continue;
			for (i = 0; i < D->gmoff[g + 1] - D->gmoff[g]; i++) {
				free(D->ig[g][i].cost);
				free(D->ig[g][i].cm);
				free(D->ig[g][i].icost);
				free(D->ig[g][i].im);
			}
			free(D->ig[g]);
		}
	if (D->cnt && D->K)
		for (i = 0; i < (uint32_t)D->K->nrow; i++)
			free(D->cnt[i]);
	{
		void *all[] = {
			D->cnt, D->ncnt, D->capcnt, D->ig, D->cur, D->ok, D->onode, D->oport, D->tab,
			D->aff, D->gof, D->glocal, D->gdim, D->gsoff, D->gsw, D->gmoff, D->gmem,
			D->rgoff, D->rgl, D->rgslot, D->nd, D->fixlist,
			D->exitof, D->exitslot, D->dist, D->q, D->cand, D->has,
			D->lsw, D->alist, D->seed, D->glist, D->rlist, D->gst, D->rbits, D->upoff,
			D->uprow, D->upx, D->upport, D->amhead, D->amtail, D->amw, D->amslot, D->amnext,
			D->swoff, D->swnb
		};
		free_all(all, sizeof(all) / sizeof(all[0]));
	}
	qos_free(D->qos);
	free(D);
}

/* the index of key in the ascending array a[0..n-1], or -1 */
static int find_u64(const uint64_t *a, uint32_t n, uint64_t key)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < n && a[lo] == key) ? (int)lo : -1;
}

/* the node where the device with this GUID is now, or -1 */
static int kns_find(const hdor_kns_t *K, uint64_t guid)
{
	uint32_t lo = 0, hi = K->nn;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (K->ident[K->isort[mid]] < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < K->nn && K->ident[K->isort[lo]] == guid) ? (int)K->isort[lo] : -1;
}

static const hdor_kns_t *g_ident_kns;
static int cmp_ident(const void *a, const void *b)
{
	const hdor_kns_t *K = g_ident_kns;
	return cmp_u64(K->ident[*(const uint32_t *)a], K->ident[*(const uint32_t *)b]);
}

/* K->isort and K->replaced from K->ident; -1 when two nodes have the same ident */
static int kns_index(hdor_kns_t *K)
{
	uint32_t i;
	free(K->isort);
	K->isort = xcalloc(K->nn, sizeof(uint32_t));
	if (!K->isort)
		return -1;
	K->replaced = 0;
	for (i = 0; i < K->nn; i++) {
		K->isort[i] = i;
		if (K->ident[i] != K->guid[i])
			K->replaced = 1;
	}
	g_ident_kns = K;
	qsort(K->isort, K->nn, sizeof(uint32_t), cmp_ident);
	for (i = 1; i < K->nn; i++)
		if (K->ident[K->isort[i]] == K->ident[K->isort[i - 1]])
			return -1;
	return 0;
}

/* a KNS of nn nodes: its per-node arrays allocated (guid, ident, type, role, np, desc, poff,
 * dim, coord), everything else NULL; NULL out of memory */
static hdor_kns_t *kns_alloc(uint32_t nn, unsigned k, unsigned n, unsigned s, int origin)
{
	hdor_kns_t *K = xcalloc(1, sizeof(*K));
	if (!K)
		return NULL;
	K->nn = nn;
	K->k = k;
	K->n = n;
	K->s = s;
	K->origin = origin;
	K->guid = xcalloc(nn, sizeof(uint64_t));
	K->ident = xcalloc(nn, sizeof(uint64_t));
	K->type = xcalloc(nn, 1);
	K->role = xcalloc(nn, 1);
	K->np = xcalloc(nn, 1);
	K->desc = xcalloc(nn, sizeof(char *));
	K->poff = xcalloc(nn + 1, sizeof(uint32_t));
	K->dim = xcalloc(nn, sizeof(int));
	K->coord = xcalloc((size_t)nn * (n ? n : 1), 1);
	if (!K->guid || !K->ident || !K->type || !K->role || !K->np || !K->desc || !K->poff || !K->dim || !K->coord) {
		kns_free(K);
		return NULL;
	}
	return K;
}

/* the per-slot arrays of K (peer -1: not cabled) once K->poff is known; and its ident index */
static int kns_alloc_slots(hdor_kns_t *K)
{
	uint32_t i, ns = K->poff[K->nn];
	K->peer = xcalloc(ns, sizeof(int));
	K->pport = xcalloc(ns, 1);
	K->plid = xcalloc(ns, sizeof(uint16_t));
	K->plmc = xcalloc(ns, 1);
	if (!K->peer || !K->pport || !K->plid || !K->plmc || kns_index(K))
		return -1;
	for (i = 0; i < ns; i++)
		K->peer[i] = -1;
	return 0;
}


static const char *kind_word(uint8_t type)
{
	return type == N_SWITCH ? "switch" : "hca";
}

static int node_kind(osm_node_t *node)
{
	uint8_t t = osm_node_get_type(node);
	return t == IB_NODE_TYPE_SWITCH ? N_SWITCH : t == IB_NODE_TYPE_CA ? N_CA : 0;
}

typedef struct { uint64_t guid; int kind, idx; } hnode_ord_t;

static int cmp_node_ord(const void *a, const void *b)
{
	return cmp_u64(((const hnode_ord_t *)a)->guid, ((const hnode_ord_t *)b)->guid);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* 64 rows x 64 LIDs of switch-major tables (row i: src[i], LIDs l0..l0+63) into LID-major dst
 * (LID l0 + j, row i at dst[j * stride + i]), by 8 x 8-byte blocks transposed in registers: byte j
 * of x_i is (row i, LID j); swapping the 4 x 4, 2 x 2 and 1 x 1 byte blocks across the diagonal
 * makes byte i of x_j (row i, LID j) */
#define SWAP_BYTES(a, b, sh, m) do { uint64_t t_ = (((a) >> (sh)) ^ (b)) & (m); (a) ^= t_ << (sh); (b) ^= t_; } while (0)
static void transpose_tile(const uint8_t *const *src, uint32_t l0, uint8_t *dst, size_t stride)
{
	const uint64_t m4 = 0x00000000ffffffffULL, m2 = 0x0000ffff0000ffffULL, m1 = 0x00ff00ff00ff00ffULL;
	unsigned bi, bj;
	for (bi = 0; bi < 64; bi += 8) {
		const uint8_t *const *s = src + bi;
		for (bj = 0; bj < 64; bj += 8) {
			uint64_t x0, x1, x2, x3, x4, x5, x6, x7;
			uint8_t *d = dst + (size_t)bj * stride + bi;
			memcpy(&x0, s[0] + l0 + bj, 8);
			memcpy(&x1, s[1] + l0 + bj, 8);
			memcpy(&x2, s[2] + l0 + bj, 8);
			memcpy(&x3, s[3] + l0 + bj, 8);
			memcpy(&x4, s[4] + l0 + bj, 8);
			memcpy(&x5, s[5] + l0 + bj, 8);
			memcpy(&x6, s[6] + l0 + bj, 8);
			memcpy(&x7, s[7] + l0 + bj, 8);
			SWAP_BYTES(x0, x4, 32, m4);
			SWAP_BYTES(x1, x5, 32, m4);
			SWAP_BYTES(x2, x6, 32, m4);
			SWAP_BYTES(x3, x7, 32, m4);
			SWAP_BYTES(x0, x2, 16, m2);
			SWAP_BYTES(x1, x3, 16, m2);
			SWAP_BYTES(x4, x6, 16, m2);
			SWAP_BYTES(x5, x7, 16, m2);
			SWAP_BYTES(x0, x1, 8, m1);
			SWAP_BYTES(x2, x3, 8, m1);
			SWAP_BYTES(x4, x5, 8, m1);
			SWAP_BYTES(x6, x7, 8, m1);
			memcpy(d, &x0, 8);
			memcpy(d + stride, &x1, 8);
			memcpy(d + 2 * stride, &x2, 8);
			memcpy(d + 3 * stride, &x3, 8);
			memcpy(d + 4 * stride, &x4, 8);
			memcpy(d + 5 * stride, &x5, 8);
			memcpy(d + 6 * stride, &x6, 8);
			memcpy(d + 7 * stride, &x7, 8);
		}
	}
}

/* The complete KNS of pass P, whose tables are in the switches' new_lft (those that are there).
 * Kin: NULL when P was collected from OpenSM's subnet (section 4); else the KNS P was built from
 * (section 14), which gives what OpenSM does not show: the ports, descriptions, current GUIDs
 * and remembered LIDs of the nodes that are not there now. */
static hdor_kns_t *kns_remember(hdor_ctx_t *ctx, hdor_pass_t *P, const hdor_kns_t *Kin)
{
	hdor_kns_t *K = kns_alloc((uint32_t)(P->nsw + P->nca), P->k, P->n, P->s, K_PASS);
	hnode_ord_t *ord = NULL;
	int *sw2b = NULL, *ca2b = NULL, *gorder = NULL, *q = NULL, *kin = NULL;
	uint32_t i, nslots = 0, lid, l;
	int g, w, ok = 0;
	unsigned n = P->n;
	cl_qmap_t *pt = &ctx->osm->subn.port_guid_tbl;
	cl_map_item_t *it;

	if (!K)
		return NULL;
	K->ng = P->ng;
	ord = xcalloc(K->nn, sizeof(*ord));
	sw2b = xcalloc(P->nsw, sizeof(int));
	ca2b = xcalloc(P->nca, sizeof(int));
	gorder = xcalloc(P->ng, sizeof(int));
	kin = xcalloc(K->nn, sizeof(int));
	K->grp = xcalloc(K->nn, sizeof(int));
	K->lev = xcalloc(K->nn, sizeof(uint32_t));
	K->row = xcalloc(K->nn, sizeof(int));
	K->gdim = xcalloc(P->ng, sizeof(int));
	K->gsoff = xcalloc(P->ng + 1, sizeof(uint32_t));
	K->gsw = xcalloc(P->nsw, sizeof(int));
	q = xcalloc(K->nn, sizeof(int));
	if (!ord || !sw2b || !ca2b || !gorder || !kin || !K->grp || !K->lev || !K->row || !K->gdim || !K->gsoff ||
	    !K->gsw || !q)
		goto out;
	for (w = 0; w < P->nsw; w++)
		ord[w] = (hnode_ord_t){ P->sw[w].guid, N_SWITCH, w };
	for (i = 0; i < (uint32_t)P->nca; i++)
		ord[P->nsw + i] = (hnode_ord_t){ P->ca[i].guid, N_CA, (int)i };
	qsort(ord, K->nn, sizeof(*ord), cmp_node_ord);
	for (g = 0; g < P->ng; g++)
		gorder[g] = g;
	g_sort_pass = P;
	qsort(gorder, P->ng, sizeof(int), cmp_group_key);
	{
		int *grank = q;	/* scratch: group -> rank in key order */
		for (g = 0; g < P->ng; g++)
			grank[gorder[g]] = g;
		for (i = 0; i < K->nn; i++) {
			osm_node_t *node;
			const uint8_t *c = NULL;
			K->guid[i] = ord[i].guid;
			K->type[i] = (uint8_t)ord[i].kind;
			K->dim[i] = K->grp[i] = K->row[i] = -1;
			K->lev[i] = HDOR_INF;
			kin[i] = Kin ? find_u64(Kin->guid, Kin->nn, ord[i].guid) : -1;
			if (ord[i].kind == N_SWITCH) {
				hsw_t *W = &P->sw[ord[i].idx];
				sw2b[ord[i].idx] = (int)i;
				node = W->node;
				K->row[i] = K->nrow++;
				if (W->router >= 0) {
					K->role[i] = R_ROUTER;
					c = P->coord + (size_t)W->router * n;
				} else {
					K->role[i] = R_SWITCH;
					K->dim[i] = P->grp[W->group].dim;
					K->grp[i] = grank[W->group];
					c = P->gcoord + (size_t)W->group * n;
				}
			} else {
				hca_t *C = &P->ca[ord[i].idx];
				ca2b[ord[i].idx] = (int)i;
				node = C->node;
				K->role[i] = R_HCA;
				if (C->router >= 0)
					c = P->coord + (size_t)C->router * n;
			}
			if (c)
				memcpy(K->coord + (size_t)i * n, c, n);
			K->ident[i] = kin[i] >= 0 ? Kin->ident[kin[i]] : K->guid[i];
			K->np[i] = node ? osm_node_get_num_physp(node) : kin[i] >= 0 ? Kin->np[kin[i]] : 1;
			K->desc[i] = strdup(node ? ndesc(node) : kin[i] >= 0 ? Kin->desc[kin[i]] : "");
			if (!K->desc[i])
				goto out;
			K->poff[i] = nslots;
			nslots += K->np[i];
		}
		K->poff[K->nn] = nslots;
	}
	if (kns_alloc_slots(K))
		goto out;
	/* the links: those of every switch, seen from both ends (a KNS has no HCA-HCA cable) */
	for (w = 0; w < P->nsw; w++) {
		int b = sw2b[w];
		for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++) {
			const hlink_t *lk = &P->links[l];
			int y = lk->kind == N_CA ? ca2b[lk->idx] : sw2b[lk->idx];
			if (lk->port >= K->np[b] || lk->rport >= K->np[y])
				goto out;
			K->peer[K->poff[b] + lk->port] = y;
			K->pport[K->poff[b] + lk->port] = lk->rport;
			if (lk->kind == N_CA) {
				K->peer[K->poff[y] + lk->rport] = b;
				K->pport[K->poff[y] + lk->rport] = lk->port;
			}
		}
	}
	/* groups in key order, switches by GUID */
	for (g = 0, i = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[gorder[g]];
		uint32_t j;
		K->gdim[g] = G->dim;
		K->gsoff[g] = i;
		for (j = 0; j < G->sn; j++)
			K->gsw[i + j] = sw2b[P->gsw[G->soff + j]];
		qsort(K->gsw + i, G->sn, sizeof(int), cmp_int);
		i += G->sn;
	}
	K->gsoff[P->ng] = i;
	/* levels: fewest remembered in-group hops to a switch linked to a router */
	for (g = 0; g < P->ng; g++) {
		int qh = 0, qt = 0;
		for (i = K->gsoff[g]; i < K->gsoff[g + 1]; i++) {
			int x = K->gsw[i];
			unsigned p;
			for (p = 1; p < K->np[x]; p++) {
				int y = K->peer[K->poff[x] + p];
				if (y >= 0 && K->role[y] == R_ROUTER) {
					K->lev[x] = 0;
					q[qt++] = x;
					break;
				}
			}
		}
		while (qh < qt) {
			int u = q[qh++];
			unsigned p;
			for (p = 1; p < K->np[u]; p++) {
				int y = K->peer[K->poff[u] + p];
				if (y >= 0 && K->grp[y] == g && K->lev[y] == (uint32_t)HDOR_INF) {
					K->lev[y] = K->lev[u] + 1;
					q[qt++] = y;
				}
			}
		}
	}
	/* LIDs: those of now; a port that is not there keeps the LID it had while it is free */
	K->nlid = P->max_lid + 1;
	K->lnode = xcalloc(K->nlid, sizeof(int));
	K->lport = xcalloc(K->nlid, 1);
	K->lft = malloc((size_t)K->nrow * K->nlid);
	if (!K->lnode || !K->lport || !K->lft)
		goto out;
	for (lid = 0; lid < K->nlid; lid++)
		K->lnode[lid] = -1;
	for (it = cl_qmap_head(pt); it != cl_qmap_end(pt); it = cl_qmap_next(it)) {
		osm_port_t *port = (osm_port_t *)it;
		uint16_t lo, hi;
		int v, b;
		uint8_t pn;
		if (!port->p_node || !port->p_physp || (v = hget(P, port->p_node)) < 0)
			continue;
		b = (v & 1) ? ca2b[v >> 1] : sw2b[v >> 1];
		pn = osm_physp_get_port_num(port->p_physp);
		osm_port_get_lid_range_ho(port, &lo, &hi);
		if (!lo || pn >= K->np[b])
			continue;
		K->plid[K->poff[b] + pn] = lo;
		K->plmc[K->poff[b] + pn] = (uint8_t)__builtin_ctz((unsigned)(hi - lo + 1));
		for (lid = lo; lid <= hi && lid < K->nlid; lid++) {
			K->lnode[lid] = b;
			K->lport[lid] = pn;
		}
	}
	for (i = 0; Kin && i < K->nn; i++) {
		unsigned p;
		const osm_node_t *node = K->type[i] == N_SWITCH ? P->sw[ord[i].idx].node : P->ca[ord[i].idx].node;
		if (node || kin[i] < 0)
			continue;
		for (p = 0; p < K->np[i] && p < Kin->np[kin[i]]; p++) {
			uint32_t s = Kin->poff[kin[i]] + p, lo = Kin->plid[s], hi = lo + (1u << Kin->plmc[s]) - 1, free_ = 1;
			if (!lo || hi >= K->nlid)
				continue;
			for (lid = lo; lid <= hi; lid++)
				free_ &= K->lnode[lid] < 0;
			if (!free_)
				continue;
			K->plid[K->poff[i] + p] = (uint16_t)lo;
			K->plmc[K->poff[i] + p] = Kin->plmc[s];
			for (lid = lo; lid <= hi; lid++) {
				K->lnode[lid] = (int)i;
				K->lport[lid] = (uint8_t)p;
			}
		}
	}
	{
		/* a transpose (switch-major new_lft -> LID-major lft) by tiles of 64 rows x 64 LIDs,
		 * moved 8 x 8 bytes at a time (entry by entry it was 0.1-0.2 s on KNS 16^3) */
		int *wof = q, r0, r;	/* scratch: row -> switch */
		uint32_t l0;
		const uint8_t *src[64];
		for (w = 0; w < P->nsw; w++)
			wof[K->row[sw2b[w]]] = w;
		for (r0 = 0; r0 < K->nrow; r0 += 64) {
			int r1 = r0 + 64 < K->nrow ? r0 + 64 : K->nrow, whole = r1 - r0 == 64;
			uint32_t top[64];
			for (r = r0; r < r1; r++) {
				const osm_switch_t *sw = P->sw[wof[r]].sw;
				src[r - r0] = sw ? sw->new_lft : NULL;
				top[r - r0] = sw ? lft_top(sw) : 0;
				whole &= sw && top[r - r0] + 1 >= K->nlid;
			}
			for (l0 = 0; l0 < K->nlid; l0 += 64) {
				uint32_t l1 = l0 + 64 < K->nlid ? l0 + 64 : K->nlid;
				if (whole && l1 - l0 == 64)
					transpose_tile(src, l0, K->lft + (size_t)l0 * K->nrow + r0, K->nrow);
				else
					for (r = r0; r < r1; r++)
						for (lid = l0; lid < l1; lid++)
							KLFT(K, r, lid) = src[r - r0] && lid <= top[r - r0] ?
							    src[r - r0][lid] : OSM_NO_PATH;
			}
		}
		/* LIDs of no port: no route (route_switch left them as OpenSM had them) */
		for (lid = 0; lid < K->nlid; lid++)
			if (P->lt[lid].kind == T_NONE)
				memset(K->lft + (size_t)lid * K->nrow, OSM_NO_PATH, K->nrow);
	}
	ok = 1;
out:
	free(ord);
	free(sw2b);
	free(ca2b);
	free(gorder);
	free(kin);
	free(q);
	if (!ok) {
		kns_free(K);
		return NULL;
	}
	return K;
}

/* ---------------- 13.1 compare with the remembered KNS */

static inline int kpeer(const hdor_kns_t *K, int b, unsigned port)
{
	return port < K->np[b] ? K->peer[K->poff[b] + port] : -1;
}

/* the remembered link of b's port works now */
static inline int works(const hdor_deg_t *D, int b, unsigned port)
{
	return port < D->K->np[b] && D->ok[D->K->poff[b] + port];
}

/* The devices of now that are not in K: each one that stands exactly where a device of K is
 * missing -- every cable of it goes to a device of K, on the port the missing one's went to, from
 * the port the missing one used -- takes its place (docs/hdor.md section 7): K keeps the old
 * GUID as the node's place (its coordinates, its order) and knows the new one.  A device next to
 * another new one is placed once that one is.  Never a phantom's place (first sight guessed its
 * ports): that fabric is identified again.  0, or -1 (ctx->reason) when one is left unplaced. */
static int replacements(hdor_ctx_t *ctx, hdor_deg_t *D, osm_node_t **unknown, uint32_t nu, int strict)
{
	hdor_kns_t *K = D->K;
	uint32_t i, left = nu;
	int progress = 1;

	while (progress && left) {
		progress = 0;
		for (i = 0; i < nu; i++) {
			osm_node_t *x = unknown[i];
			unsigned p, np, links = 0;
			int cand = -1, ok = 1;
			if (!x)
				continue;
			np = osm_node_get_num_physp(x);
			for (p = 1; p < np && ok; p++) {
				osm_physp_t *ph = osm_node_get_physp_ptr(x, (uint8_t)p), *r;
				int yb, B;
				if (!ph || !(r = ph->p_remote_physp) || !osm_link_is_healthy(ph) || !r->p_node)
					continue;
				yb = kns_find(K, cl_ntoh64(osm_node_get_node_guid(r->p_node)));
				if (yb < 0 || D->cur[yb] != r->p_node) {
					ok = 0;	/* next to a device not placed (yet) */
					break;
				}
				B = kpeer(K, yb, osm_physp_get_port_num(r));
				if (B < 0 || K->pport[K->poff[yb] + osm_physp_get_port_num(r)] != p || (cand >= 0 && B != cand))
					ok = 0;
				cand = B;
				links++;
			}
			if (!ok || !links || D->cur[cand] || K->type[cand] != node_kind(x) || K->guid[cand] >= HDOR_PHANTOM)
				continue;
			{
				char was[40];
				uint64_t guid = cl_ntoh64(osm_node_get_node_guid(x));
				snprintf(was, sizeof(was), "0x%016" PRIx64, K->ident[cand]);
				OSM_LOG(&ctx->osm->log, OSM_LOG_INFO, "hdor: %s 0x%016" PRIx64 " '%s' takes the place of %s "
					"'%s' (the same neighbours on the same ports)\n", kind_word(K->type[cand]), guid, ndesc(x),
					was, K->desc[cand]);
				snprintf(ctx->note + strlen(ctx->note), sizeof(ctx->note) - strlen(ctx->note), "%s0x%016"
					 PRIx64 " replaces %s", ctx->note[0] ? "; " : "", guid, was);
				K->ident[cand] = guid;
				D->cur[cand] = x;
				if (kns_index(K))
					return decline(ctx, "out of memory");
				ctx->kns_dirty = 1;
				ctx->conf_dirty = K->origin == K_CONF;
			}
			unknown[i] = NULL;
			left--;
			progress = 1;
		}
	}
	for (i = 0; i < nu && strict; i++)
		if (unknown[i]) {
			int kind = node_kind(unknown[i]);
			return decline(ctx, "%s 0x%016" PRIx64 " '%s' is not in the KNS",
				       kind == N_SWITCH ? "switch" : kind == N_CA ? "hca" : "node",
				       cl_ntoh64(osm_node_get_node_guid(unknown[i])), ndesc(unknown[i]));
		}
	return 0;
}

/* 0: nothing failed (D filled unless K is the plain KNS of a complete pass); 1: a degraded KNS
 * (D filled); 2: the LIDs moved (rebuild K's tables); -1: not K (ctx->reason) */
static int deg_match(hdor_ctx_t *ctx, hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	cl_qmap_t *tbl = &ctx->osm->subn.node_guid_tbl, *pt = &ctx->osm->subn.port_guid_tbl;
	cl_map_item_t *it;
	uint32_t i, lid, maxlid = 0;
	int mismatch = 0, dead = 0;
	char why[512] = "";

	D->cur = xcalloc(K->nn, sizeof(*D->cur));
	D->ok = xcalloc(K->poff[K->nn], 1);
	D->onode = xcalloc(K->nlid, sizeof(int));
	D->oport = xcalloc(K->nlid, 1);
	if (!D->cur || !D->ok || !D->onode || !D->oport)
		return decline(ctx, "out of memory");
	{
		osm_node_t **unknown = NULL;
		uint32_t nu = 0;
		int rc = 0;
		for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
			osm_node_t *node = (osm_node_t *)it;
			uint64_t guid = cl_ntoh64(osm_node_get_node_guid(node));
			int b = kns_find(K, guid), kind = node_kind(node);
			if (b >= 0 && kind != K->type[b])
				return decline(ctx, "%s 0x%016" PRIx64 " '%s' is not in the KNS",
					       kind == N_SWITCH ? "switch" : kind == N_CA ? "hca" : "node", guid, ndesc(node));
			if (b >= 0) {
				D->cur[b] = node;
				continue;
			}
			if (nu % 64 == 0) {	/* a device not in the KNS: a replacement, or not that KNS */
				osm_node_t **nw = realloc(unknown, (nu + 64) * sizeof(*unknown));
				if (!nw) {
					free(unknown);
					return decline(ctx, "out of memory");
				}
				unknown = nw;
			}
			unknown[nu++] = node;	/* (the node table is in GUID order) */
		}
		if (nu)
			rc = replacements(ctx, D, unknown, nu, 1);
		free(unknown);
		if (rc)
			return -1;
	}
	for (i = 0; i < K->nn; i++) {
		osm_node_t *node = D->cur[i];
		unsigned p, np;
		if (!node) {
			dead = 1;
			continue;
		}
		np = osm_node_get_num_physp(node);
		for (p = 1; p < np; p++) {
			osm_physp_t *ph = osm_node_get_physp_ptr(node, (uint8_t)p), *r;
			int rb;
			uint8_t rp;
			if (!ph || !(r = ph->p_remote_physp) || !osm_link_is_healthy(ph) || !r->p_node)
				continue;
			rb = kns_find(K, cl_ntoh64(osm_node_get_node_guid(r->p_node)));
			rp = osm_physp_get_port_num(r);
			if (rb < 0 || kpeer(K, (int)i, p) != rb || K->pport[K->poff[i] + p] != rp) {
				if (!mismatch)
					snprintf(why, sizeof(why), "%s 0x%016" PRIx64 " '%s' port %u is cabled to %s 0x%016"
						 PRIx64 " '%s' port %u, not as in the KNS",
						 kind_word(K->type[i]), K->ident[i], ndesc(node), p,
						 node_kind(r->p_node) == N_SWITCH ? "switch" : "hca",
						 cl_ntoh64(osm_node_get_node_guid(r->p_node)), ndesc(r->p_node), rp);
				mismatch = 1;
				continue;
			}
			D->ok[K->poff[i] + p] = 1;
		}
	}
	for (i = 0; i < K->nn; i++) {
		unsigned p;
		if (!D->cur[i])
			D->dead_nodes++;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];
			/* each failed link once, from its lower (node, port) end */
			if (y >= 0 && !D->ok[K->poff[i] + p] &&
			    ((uint32_t)y > i || ((uint32_t)y == i && K->pport[K->poff[i] + p] > p)))
				D->dead_links++;
		}
	}
	dead = D->dead_nodes || D->dead_links;
	if (mismatch)
		return decline(ctx, "%s", why);
	if (!dead && K->origin == K_PASS && !K->replaced)
		return 0;	/* the KNS of the last complete pass, complete again: route it as such */
	for (lid = 0; lid < K->nlid; lid++)
		D->onode[lid] = -1;
	for (it = cl_qmap_head(pt); it != cl_qmap_end(pt); it = cl_qmap_next(it)) {
		osm_port_t *port = (osm_port_t *)it;
		uint16_t lo, hi;
		uint8_t pn;
		int b;
		if (!port->p_node || !port->p_physp)
			continue;
		b = kns_find(K, cl_ntoh64(osm_node_get_node_guid(port->p_node)));
		pn = osm_physp_get_port_num(port->p_physp);
		osm_port_get_lid_range_ho(port, &lo, &hi);
		for (lid = lo; lo && lid <= hi; lid++) {
			if (b < 0 || lid >= K->nlid || K->lnode[lid] != b || K->lport[lid] != pn) {
				/* the LIDs moved: the fault-free tables again, for these LIDs (section 14) */
				snprintf(ctx->note, sizeof(ctx->note), "LID %u (%s 0x%016" PRIx64 " '%s' port %u) moved",
					 lid, node_kind(port->p_node) == N_SWITCH ? "switch" : "hca",
					 cl_ntoh64(osm_node_get_node_guid(port->p_node)), ndesc(port->p_node), pn);
				return 2;
			}
			if (D->onode[lid] < 0)
				D->nowned++;
			D->onode[lid] = b;
			D->oport[lid] = pn;
			if (lid > maxlid)
				maxlid = lid;
		}
	}
	D->nl = maxlid + 1;
	return dead ? 1 : 0;
}

/* ---------------- 13.2 the degraded structure and routes */

static inline int rank_lt(const hdor_kns_t *K, int a, int b)
{
	return K->lev[a] != K->lev[b] ? K->lev[a] < K->lev[b] : a < b;
}

static const hdor_kns_t *g_rank_kns;
static int cmp_rank(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x == y ? 0 : rank_lt(g_rank_kns, x, y) ? -1 : 1;
}

/* groups (connected components of each remembered group's surviving switches over working
 * links, ordered by remembered key, then GUID), their members, each router's groups */
static int deg_structure(hdor_ctx_t *ctx, hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	uint32_t nn = K->nn, i, j, tot, *fill = NULL;
	int g, pass, *stamp = NULL, ret = -1;

	D->gof = xcalloc(nn, sizeof(int));
	D->glocal = xcalloc(nn, sizeof(int));
	D->gdim = xcalloc(K->gsoff[K->ng] + 1, sizeof(int));
	D->gsoff = xcalloc(K->gsoff[K->ng] + 2, sizeof(uint32_t));
	D->gsw = xcalloc(K->gsoff[K->ng] + 1, sizeof(int));
	D->gmoff = xcalloc(K->gsoff[K->ng] + 2, sizeof(uint32_t));
	D->rgoff = xcalloc(nn + 1, sizeof(uint32_t));
	stamp = xcalloc(nn, sizeof(int));
	if (!D->gof || !D->glocal || !D->gdim || !D->gsoff || !D->gsw || !D->gmoff || !D->rgoff || !stamp)
		goto oom;
	for (i = 0; i < nn; i++)
		D->gof[i] = D->glocal[i] = -1;
	tot = 0;
	for (g = 0; g < K->ng; g++)
		for (i = K->gsoff[g]; i < K->gsoff[g + 1]; i++) {
			int x = K->gsw[i], c = D->ng;
			uint32_t qh = tot, qt = tot;
			if (!D->cur[x] || D->gof[x] >= 0)
				continue;
			D->gof[x] = c;
			D->gsoff[c] = tot;
			D->gsw[qt++] = x;
			while (qh < qt) {
				int u = D->gsw[qh++];
				unsigned p;
				for (p = 1; p < K->np[u]; p++) {
					int y = K->peer[K->poff[u] + p];
					if (y >= 0 && K->grp[y] == g && D->cur[y] && D->gof[y] < 0 && works(D, u, p)) {
						D->gof[y] = c;
						D->gsw[qt++] = y;
					}
				}
			}
			qsort(D->gsw + tot, qt - tot, sizeof(int), cmp_int);
			for (j = tot; j < qt; j++)
				D->glocal[D->gsw[j]] = (int)(j - tot);
			D->gdim[c] = K->gdim[g];
			tot = qt;
			D->ng++;
		}
	D->gsoff[D->ng] = tot;
	/* members: routers with a working link into the component (count, then fill) */
	for (pass = 0; pass < 2; pass++) {
		if (pass) {
			D->gmem = xcalloc(D->gmoff[D->ng] + 1, sizeof(int));
			for (i = 0; i < nn; i++)
				D->rgoff[i + 1] += D->rgoff[i];
			D->rgl = xcalloc(D->rgoff[nn] + 1, sizeof(int));
			D->ig = xcalloc(D->ng + 1, sizeof(*D->ig));
			fill = xcalloc(nn, sizeof(uint32_t));
			if (!D->gmem || !D->rgl || !D->ig || !fill)
				goto oom;
			memset(stamp, 0, nn * sizeof(int));
		}
		for (g = 0; g < D->ng; g++) {
			uint32_t m = D->gmoff[g];
			for (i = D->gsoff[g]; i < D->gsoff[g + 1]; i++) {
				int x = D->gsw[i];
				unsigned p;
				for (p = 1; p < K->np[x]; p++) {
					int y = K->peer[K->poff[x] + p];
					if (y < 0 || K->role[y] != R_ROUTER || !works(D, x, p) || stamp[y] == g + 1)
						continue;
					stamp[y] = g + 1;
					if (pass) {
						D->gmem[m] = y;
						D->rgl[D->rgoff[y] + fill[y]++] = g;
					} else
						D->rgoff[y + 1]++;
					m++;
				}
			}
			if (pass)
				qsort(D->gmem + D->gmoff[g], m - D->gmoff[g], sizeof(int), cmp_int);
			else
				D->gmoff[g + 1] = m;
		}
	}
	/* a router's groups by dimension, then group order (insertion sort: n is small) */
	for (i = 0; i < nn; i++) {
		uint32_t a, b;
		for (a = D->rgoff[i] + 1; a < D->rgoff[i + 1]; a++) {
			int v = D->rgl[a];
			for (b = a; b > D->rgoff[i] && (D->gdim[D->rgl[b - 1]] > D->gdim[v] ||
			     (D->gdim[D->rgl[b - 1]] == D->gdim[v] && D->rgl[b - 1] > v)); b--)
				D->rgl[b] = D->rgl[b - 1];
			D->rgl[b] = v;
		}
	}
	/* each membership's slot (the Dijkstra of route_lid enters a group by it) */
	D->rgslot = xcalloc(D->rgoff[nn] + 1, sizeof(int));
	if (!D->rgslot)
		goto oom;
	for (g = 0; g < D->ng; g++)
		for (i = D->gmoff[g]; i < D->gmoff[g + 1]; i++) {
			int y = D->gmem[i];
			uint32_t a;
			for (a = D->rgoff[y]; a < D->rgoff[y + 1]; a++)
				if (D->rgl[a] == g)
					D->rgslot[a] = (int)(i - D->gmoff[g]);
		}
	ret = 0;
	free(stamp);
	free(fill);
	return ret;
oom:
	free(stamp);
	free(fill);
	return decline(ctx, "out of memory");
}

static inline uint8_t t0(const hdor_kns_t *K, int b, uint32_t lid)
{
	return lid < K->nlid ? KLFT(K, K->row[b], lid) : OSM_NO_PATH;
}

/* the fault-free route from switch b to LID lid uses a failed link or node (lid is owned) */
static int affected(hdor_deg_t *D, int b, uint32_t lid, int depth)
{
	const hdor_kns_t *K = D->K;
	uint8_t *a = &D->aff[(size_t)lid * K->nrow + K->row[b]], port;
	int r;
	if (*a)
		return *a == 2;
	port = t0(K, b, lid);
	if (port == OSM_NO_PATH)
		r = 1;		/* owned now, no fault-free entry */
	else if (port == 0)
		r = 0;
	else if (!works(D, b, port))
		r = 1;
	else {
		int p = kpeer(K, b, port);
		r = K->type[p] != N_SWITCH ? 0 : depth >= HDOR_MAX_HOPS ? 1 : affected(D, p, lid, depth + 1);
	}
	*a = r ? 2 : 1;
	return r;
}

/* LIST (N node indices below NN, no repeats) into index order: a bit per node in BITS, read
 * back a word at a time (cheaper than a sort of the ~10^2-10^3 entries a LID has); BITS is
 * left zero */
static void index_order(int *list, uint32_t n, uint64_t *bits, uint32_t nn)
{
	uint32_t i, wd, k = 0;

	for (i = 0; i < n; i++)
		bits[list[i] >> 6] |= 1ULL << (list[i] & 63);
	for (wd = 0; wd < (nn + 63) / 64 && k < n; wd++)
		while (bits[wd]) {
			list[k++] = (int)(wd * 64 + (unsigned)__builtin_ctzll(bits[wd]));
			bits[wd] &= bits[wd] - 1;
		}
}

/* The affected entries of one owned LID (D->alist, index order, and D->aff), found backwards
 * from the failures: the seeds are the live switches whose fault-free entry has no port or
 * leaves by a failed link; a live switch whose fault-free entry leads over a working link to an
 * affected switch is affected.  The same set as affected() entry by entry, with work
 * proportional to the affected entries and the switches with a failed link (the fault-free
 * tables use only the KNS's links and are free of loops). */
static int affected_lid(hdor_deg_t *D, uint32_t lid)
{
	const hdor_kns_t *K = D->K;
	uint8_t *arow = &D->aff[(size_t)lid * K->nrow];
	const uint8_t *trow = lid < K->nlid ? &KLFT(K, 0, lid) : NULL;
	uint32_t j, qh;
#define HDOR_AFF(b) do { arow[K->row[b]] = 2; D->alist[D->nalist++] = (b); } while (0)
	D->nalist = 0;
	if (!trow || memchr(trow, OSM_NO_PATH, K->nrow)) {
		/* owned now, no fault-free entry: affected */
		for (j = 0; j < D->nlsw; j++)
			if (!trow || trow[K->row[D->lsw[j]]] == OSM_NO_PATH)
				HDOR_AFF(D->lsw[j]);
	}
	for (j = 0; j < D->nseed; j++) {
		int b = D->seed[j];
		uint8_t port = trow ? trow[K->row[b]] : OSM_NO_PATH;
		if (port != 0 && port != OSM_NO_PATH && !works(D, b, port) && arow[K->row[b]] != 2)
			HDOR_AFF(b);
	}
	for (qh = 0; qh < D->nalist; qh++) {
		int b = D->alist[qh];
		for (j = D->upoff[b]; j < D->upoff[b + 1]; j++)
			if (arow[D->uprow[j]] == 1 && trow[D->uprow[j]] == D->upport[j])
				HDOR_AFF(D->upx[j]);
	}
#undef HDOR_AFF
	/* index order, as a scan of the live switches would give them */
	if (D->nalist > 1)
		index_order(D->alist, D->nalist, D->rbits, K->nn);
	return 0;
}

/* the fault-free route of an unaffected entry: links to the LID's port (-1: none), the first
 * router it reaches (b itself for a router), the dimension of the group it enters first; the
 * suffixes are shared, so lengths and exits are kept per switch for the current LID (D->ffs) */
static void ff_memo(hdor_deg_t *D, int b, uint32_t lid, int depth)
{
	const hdor_kns_t *K = D->K;
	uint8_t port = t0(K, b, lid);
	int p, len, ex = K->role[b] == R_ROUTER ? b : -1;
	if (D->nd[b].ffs == lid)
		return;
	if (port == 0)
		len = 0;
	else if (port == OSM_NO_PATH || (p = kpeer(K, b, port)) < 0)
		len = -1;
	else if (K->type[p] != N_SWITCH)
		len = 1;
	else if (depth >= HDOR_MAX_HOPS)
		len = -1;
	else {
		ff_memo(D, p, lid, depth + 1);
		len = D->nd[p].ffl < 0 ? -1 : D->nd[p].ffl + 1;
		if (ex < 0)
			ex = D->nd[p].ffx;
	}
	D->nd[b].ffs = lid;
	D->nd[b].ffl = len;
	D->nd[b].ffx = ex;
}

static void fault_free_route(hdor_deg_t *D, int b, uint32_t lid, int *len, int *exitr, int *dim0)
{
	const hdor_kns_t *K = D->K;
	int p0 = kpeer(K, b, t0(K, b, lid));
	*dim0 = p0 >= 0 ? K->dim[p0] : -1;
	ff_memo(D, b, lid, 0);
	*len = D->nd[b].ffl;
	*exitr = D->nd[b].ffx;
}

static int member_slot(const hdor_deg_t *D, int gi, int M)
{
	uint32_t i;
	for (i = D->gmoff[gi]; i < D->gmoff[gi + 1]; i++)
		if (D->gmem[i] == M)
			return (int)(i - D->gmoff[gi]);
	return -1;
}

/* up*-down* routes inside component gi toward its member in `slot` over the working links
 * (cached) */
static hig_t *in_group_at(hdor_deg_t *D, int gi, int slot)
{
	const hdor_kns_t *K = D->K;
	uint32_t ns = D->gsoff[gi + 1] - D->gsoff[gi], nm = D->gmoff[gi + 1] - D->gmoff[gi], i;
	const int *sw = D->gsw + D->gsoff[gi];
	int M = D->gmem[D->gmoff[gi] + slot], *ord;
	uint8_t *isdd;
	hig_t *h;

	if (!D->ig[gi] && !(D->ig[gi] = xcalloc(nm, sizeof(hig_t))))
		return NULL;
	h = &D->ig[gi][slot];
	if (h->cost)
		return h;
	h->cost = malloc(ns * sizeof(int));
	h->cm = xcalloc(ns, sizeof(pmask_t));
	h->icost = malloc(nm * sizeof(int));
	h->im = xcalloc(nm, sizeof(pmask_t));
	ord = malloc(ns * sizeof(int));
	isdd = xcalloc(ns, 1);
	if (!h->cost || !h->cm || !h->icost || !h->im || !ord || !isdd) {
		free(h->cost);
		free(h->cm);
		free(h->icost);
		free(h->im);
		memset(h, 0, sizeof(*h));
		free(ord);
		free(isdd);
		return NULL;
	}
	for (i = 0; i < ns; i++) {
		h->cost[i] = HDOR_INF;
		ord[i] = sw[i];
	}
	g_rank_kns = K;
	qsort(ord, ns, sizeof(int), cmp_rank);
	/* down-only: ascending rank */
	for (i = 0; i < ns; i++) {
		int x = ord[i], lx = D->glocal[x], best = HDOR_INF;
		unsigned p;
		for (p = 1; p < K->np[x]; p++)
			if (K->peer[K->poff[x] + p] == M && works(D, x, p))
				mask_set(&h->cm[lx], p);
		if (!mask_empty(&h->cm[lx])) {
			h->cost[lx] = 1;
			isdd[lx] = 1;
			continue;
		}
		for (p = 1; p < K->np[x]; p++) {
			int y = K->peer[K->poff[x] + p];
			if (y >= 0 && D->gof[y] == gi && isdd[D->glocal[y]] && rank_lt(K, y, x) && works(D, x, p) &&
			    h->cost[D->glocal[y]] < best)
				best = h->cost[D->glocal[y]];
		}
		if (best < HDOR_INF) {
			for (p = 1; p < K->np[x]; p++) {
				int y = K->peer[K->poff[x] + p];
				if (y >= 0 && D->gof[y] == gi && isdd[D->glocal[y]] && rank_lt(K, y, x) &&
				    works(D, x, p) && h->cost[D->glocal[y]] == best)
					mask_set(&h->cm[lx], p);
			}
			h->cost[lx] = best + 1;
			isdd[lx] = 1;
		}
	}
	/* the rest goes up: descending rank */
	for (i = ns; i-- > 0;) {
		int x = ord[i], lx = D->glocal[x], best = HDOR_INF;
		unsigned p;
		if (isdd[lx])
			continue;
		for (p = 1; p < K->np[x]; p++) {
			int y = K->peer[K->poff[x] + p];
			if (y >= 0 && D->gof[y] == gi && rank_lt(K, x, y) && works(D, x, p) &&
			    h->cost[D->glocal[y]] < best)
				best = h->cost[D->glocal[y]];
		}
		if (best < HDOR_INF) {
			for (p = 1; p < K->np[x]; p++) {
				int y = K->peer[K->poff[x] + p];
				if (y >= 0 && D->gof[y] == gi && rank_lt(K, x, y) && works(D, x, p) &&
				    h->cost[D->glocal[y]] == best)
					mask_set(&h->cm[lx], p);
			}
			h->cost[lx] = best + 1;
		}
	}
	/* members entering the group toward M */
	for (i = 0; i < nm; i++) {
		int W = D->gmem[D->gmoff[gi] + i], best = HDOR_INF;
		unsigned p;
		h->icost[i] = HDOR_INF;
		if (W == M || !D->cur[W])
			continue;
		for (p = 1; p < K->np[W]; p++) {
			int y = K->peer[K->poff[W] + p];
			if (y >= 0 && D->gof[y] == gi && works(D, W, p) && h->cost[D->glocal[y]] < best)
				best = h->cost[D->glocal[y]];
		}
		if (best == HDOR_INF)
			continue;
		for (p = 1; p < K->np[W]; p++) {
			int y = K->peer[K->poff[W] + p];
			if (y >= 0 && D->gof[y] == gi && works(D, W, p) && h->cost[D->glocal[y]] == best)
				mask_set(&h->im[i], p);
		}
		h->icost[i] = best + 1;
	}
	for (i = 0; i < ns && !h->reach; i++)
		h->reach = h->cost[i] < HDOR_INF;
	free(ord);
	free(isdd);
	return h;
}

static hig_t *in_group(hdor_deg_t *D, int gi, int M)
{
	int slot = member_slot(D, gi, M);
	return slot < 0 ? NULL : in_group_at(D, gi, slot);
}

/* hops from every surviving switch to switch `target` over the working switch links (D->dist,
 * HDOR_INF when cut off; kept for the next call with the same target) */
static void switch_dist(hdor_deg_t *D, int target)
{
	const hdor_kns_t *K = D->K;
	int qh = 0, qt = 0;
	uint32_t i;
	if (D->dist_target == target)
		return;
	for (i = 0; i < K->nn; i++)
		D->dist[i] = HDOR_INF;
	D->dist[target] = 0;
	D->q[qt++] = target;
	while (qh < qt) {
		int u = D->q[qh++];
		uint32_t a;
		for (a = D->swoff[u]; a < D->swoff[u + 1]; a++) {
			int y = D->swnb[a];
			if (D->dist[y] == HDOR_INF) {
				D->dist[y] = D->dist[u] + 1;
				D->q[qt++] = y;
			}
		}
	}
	D->dist_target = target;
}

/* the BFS rule: toward a neighbour switch one hop closer to `target` */
static void bfs_rule(hdor_deg_t *D, int target, int x)
{
	const hdor_kns_t *K = D->K;
	int r = K->row[x];
	unsigned p;
	switch_dist(D, target);
	memset(&D->cand[r], 0, sizeof(pmask_t));
	D->has[r] = 0;
	if (x == target) {
		mask_set(&D->cand[r], 0);
		D->has[r] = 1;
		return;
	}
	if (D->dist[x] == HDOR_INF)
		return;
	for (p = 1; p < K->np[x]; p++) {
		int y = K->peer[K->poff[x] + p];
		if (y >= 0 && K->type[y] == N_SWITCH && works(D, x, p) && D->dist[y] == D->dist[x] - 1)
			mask_set(&D->cand[r], p);
	}
	D->has[r] = !mask_empty(&D->cand[r]);
}

typedef struct { int ln, v, b; } hheap_t;

static inline int heap_lt(const hheap_t *a, const hheap_t *b)
{
	return a->ln != b->ln ? a->ln < b->ln : a->v != b->v ? a->v < b->v : a->b < b->b;
}

static void heap_push(hheap_t *h, int *nh, hheap_t e)
{
	int i = (*nh)++;
	while (i > 0 && heap_lt(&e, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static hheap_t heap_pop(hheap_t *h, int *nh)
{
	hheap_t top = h[0], e = h[--(*nh)];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *nh)
			break;
		if (c + 1 < *nh && heap_lt(&h[c + 1], &h[c]))
			c++;
		if (!heap_lt(&h[c], &e))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*nh)
		h[i] = e;
	return top;
}

/* the candidates (D->cand, D->has) of every affected row (D->aff) for one LID */
static int route_lid(hdor_ctx_t *ctx, hdor_deg_t *D, uint32_t lid, hheap_t *heap)
{
	const hdor_kns_t *K = D->K;
	int c = D->onode[lid], T, fin, x, nh = 0, g;
	uint32_t i, j, fcnt[HDOR_MAX_HOPS + 3], nf, fp = 0;
	int ne;

	if (K->type[c] == N_CA) {
		if (!works(D, c, D->oport[lid]))
			return 0;
		T = kpeer(K, c, D->oport[lid]);
		fin = K->pport[K->poff[c] + D->oport[lid]];
	} else if (K->role[c] == R_ROUTER) {
		T = c;
		fin = 0;
	} else {
		for (i = 0; i < D->nalist; i++)
			bfs_rule(D, c, D->alist[i]);
		return 0;
	}
	/* Only what the affected entries depend on is computed (work proportional to what the
	 * failures touch, not to the fabric): the groups of the affected switches (G); T, the
	 * affected routers, each group of G's exit when it has one (an unaffected switch's), else
	 * all its members (R).  When taken, any other router does nothing: it is fixed, so it
	 * is relaxed by no group, and each of its groups is outside G (no affected entry) or
	 * has another router as its exit.  Marks: gst[g] / rst[x] == stamp. */
	D->stamp++;
	D->ngl = D->nrl = 0;
#define HDOR_ADD_R(y) do { if (D->nd[y].rst != D->stamp) { D->nd[y].rst = D->stamp; D->rlist[D->nrl++] = (y); } } while (0)
#define HDOR_ADD_G(h) do { if (D->gst[h] != D->stamp) { D->gst[h] = D->stamp; D->glist[D->ngl++] = (h); \
	D->amhead[h] = D->amtail[h] = -1; } } while (0)
	HDOR_ADD_R(T);
	for (j = 0, ne = 0; j < D->nalist; j++) {
		int y = D->alist[j];
		uint32_t a;
		if (K->role[y] == R_ROUTER) {
			HDOR_ADD_R(y);
			for (a = D->rgoff[y]; a < D->rgoff[y + 1]; a++) {
				g = D->rgl[a];
				HDOR_ADD_G(g);
				D->amw[ne] = y;
				D->amslot[ne] = D->rgslot[a];
				D->amnext[ne] = -1;
				if (D->amtail[g] >= 0)
					D->amnext[D->amtail[g]] = ne;
				else
					D->amhead[g] = ne;
				D->amtail[g] = ne++;
			}
		} else if (D->gof[y] >= 0)
			HDOR_ADD_G(D->gof[y]);
	}
	/* exits of groups from their unaffected switches (the last one in GUID order gives it) */
	for (j = 0; j < D->ngl; j++) {
		uint32_t a;
		g = D->glist[j];
		D->exitof[g] = -1;
		for (a = D->gsoff[g]; a < D->gsoff[g + 1]; a++) {
			int len, ex, d0;
			i = (uint32_t)D->gsw[a];
			if (affected(D, (int)i, lid, 0))
				continue;
			fault_free_route(D, (int)i, lid, &len, &ex, &d0);
			D->exitof[g] = ex;
		}
		D->exitslot[g] = -1;
		if (D->exitof[g] >= 0) {
			int X = D->exitof[g];
			HDOR_ADD_R(X);
			for (a = D->rgoff[X]; a < D->rgoff[X + 1]; a++)
				if (D->rgl[a] == g) {
					hig_t *h;
					D->exitslot[g] = D->rgslot[a];
					/* what the Dijkstra will read of it, asked for now: the misses overlap */
					if (D->ig[g] && (h = &D->ig[g][D->rgslot[a]])->cost) {
						int e;
						for (e = D->amhead[g]; e >= 0; e = D->amnext[e]) {
							__builtin_prefetch(&h->icost[D->amslot[e]]);
							__builtin_prefetch(&h->im[D->amslot[e]]);
						}
					}
				}
		} else
			for (a = D->gmoff[g]; a < D->gmoff[g + 1]; a++)
				HDOR_ADD_R(D->gmem[a]);
	}
#undef HDOR_ADD_R
#undef HDOR_ADD_G
	/* GUID order, as the fabric's (node index order) */
	index_order(D->rlist, D->nrl, D->rbits, K->nn);
	for (j = 0; j < D->nrl; j++) {
		i = (uint32_t)D->rlist[j];
		D->nd[i].bln = HDOR_INF;
		D->nd[i].done = D->nd[i].fixed = 0;
		D->nd[i].via = -1;
	}
	/* unaffected entries: routers' fault-free routes */
	for (j = 0; j < D->nrl; j++) {
		int len, ex, d0;
		i = (uint32_t)D->rlist[j];
		if (affected(D, (int)i, lid, 0))
			continue;
		fault_free_route(D, (int)i, lid, &len, &ex, &d0);
		D->nd[i].fixed = 1;
		D->nd[i].fixln = len;
		D->nd[i].fdim = d0;
	}
	/* Dijkstra over routers from T: key (links, violations, GUID) */
	D->nd[T].bln = 0;
	D->nd[T].bv = 0;
	D->nd[T].fdim = -1;
	heap_push(heap, &nh, (hheap_t){ 0, 0, T });
	/* the fixed routers' keys (links, 0, GUID) never change: a counting sort by links (routers
	 * visited in GUID order) gives them in key order, and only relaxed routers use the heap */
	memset(fcnt, 0, sizeof(fcnt));
	for (j = 0; j < D->nrl; j++)
		if (D->nd[i = (uint32_t)D->rlist[j]].fixed && (int)i != T) {
			D->nd[i].bln = D->nd[i].fixln;
			D->nd[i].bv = 0;
			fcnt[D->nd[i].fixln + 2]++;	/* fixln is -1 .. HDOR_MAX_HOPS */
		}
	for (i = 1; i < HDOR_MAX_HOPS + 3; i++)
		fcnt[i] += fcnt[i - 1];
	nf = fcnt[HDOR_MAX_HOPS + 2];
	for (j = 0; j < D->nrl; j++)
		if (D->nd[i = (uint32_t)D->rlist[j]].fixed && (int)i != T)
			D->fixlist[fcnt[D->nd[i].fixln + 1]++] = (int)i;
	while (nh || fp < nf) {
		hheap_t e;
		int X;
		uint32_t a;
		if (fp < nf) {
			e = (hheap_t){ D->nd[D->fixlist[fp]].fixln, 0, D->fixlist[fp] };
			if (!nh || heap_lt(&e, &heap[0]))
				fp++;
			else
				e = heap_pop(heap, &nh);
		} else
			e = heap_pop(heap, &nh);
		X = e.b;
		if (D->nd[X].done || D->nd[X].bln != e.ln || D->nd[X].bv != e.v)
			continue;
		D->nd[X].done = 1;
		for (a = D->rgoff[X]; a < D->rgoff[X + 1]; a++) {
			int gi = D->rgl[a], e_dim = D->gdim[gi], turn;
			uint32_t m;
			hig_t *h;
			if (D->gst[gi] != D->stamp || (D->exitof[gi] >= 0 && D->exitof[gi] != X))
				continue;
			h = in_group_at(D, gi, D->rgslot[a]);
			if (!h)
				return decline(ctx, "out of memory");
			if (!h->reach)
				continue;
			D->exitof[gi] = X;
			D->exitslot[gi] = D->rgslot[a];
			turn = X != T && D->nd[X].fdim <= e_dim;
			/* the members that are not fixed: the affected ones */
			for (ne = D->amhead[gi]; ne >= 0; ne = D->amnext[ne]) {
				int W = D->amw[ne], ln, v;
				m = (uint32_t)D->amslot[ne];
				if (h->icost[m] >= HDOR_INF || D->nd[W].done)
					continue;
				ln = e.ln + h->icost[m];
				v = e.v + turn;
				if (D->nd[W].bln == HDOR_INF || ln < D->nd[W].bln || (ln == D->nd[W].bln && v < D->nd[W].bv)) {
					D->nd[W].bln = ln;
					D->nd[W].bv = v;
					D->nd[W].via = gi;
					D->nd[W].vslot = (int)m;
					D->nd[W].fdim = e_dim;
					heap_push(heap, &nh, (hheap_t){ ln, v, W });
				}
			}
		}
	}
	/* candidates of the affected rows */
	for (j = 0; j < D->nalist; j++) {
		int r;
		x = D->alist[j];
		r = K->row[x];
		memset(&D->cand[r], 0, sizeof(pmask_t));
		D->has[r] = 0;
		if (x == T) {
			mask_set(&D->cand[r], (unsigned)fin);
			D->has[r] = 1;
		} else if (K->role[x] == R_ROUTER) {
			hig_t *h;
			int gi = D->nd[x].via;
			if (!D->nd[x].done) {
				switch_dist(D, T);
				if (D->dist[x] == HDOR_INF)
					continue;	/* cut off from the destination: no entry */
				return declinec(ctx, HD_SCHEME, "router 0x%016" PRIx64 " '%s' reaches LID %u only by a route the scheme does not allow (a group connects them only down and up again)",
						K->ident[x], ndesc(D->cur[x]), lid);
			}
			h = in_group_at(D, gi, D->exitslot[gi]);	/* set with via */
			if (!h)
				return decline(ctx, "out of memory");
			D->cand[r] = h->im[D->nd[x].vslot];
			D->has[r] = !mask_empty(&D->cand[r]);
		} else {
			int gi = D->gof[x], M = D->exitof[gi];
			hig_t *h = M < 0 ? NULL : D->exitslot[gi] >= 0 ? in_group_at(D, gi, D->exitslot[gi]) : in_group(D, gi, M);
			if (h && h->cost[D->glocal[x]] < HDOR_INF) {
				D->cand[r] = h->cm[D->glocal[x]];
				D->has[r] = 1;
			} else
				D->has[r] = 2;	/* orphan: the BFS rule, below */
		}
	}
	for (j = 0; j < D->nalist; j++)
		if (D->has[K->row[D->alist[j]]] == 2)
			bfs_rule(D, T, D->alist[j]);
	return 0;
}

/* spreading: the j-th affected LID with candidate set C at switch row r takes C[j mod |C|] */
static int spread_pick(hdor_deg_t *D, int r, const pmask_t *m)
{
	uint32_t i, j, np = 0, want;
	unsigned p;
	for (i = 0; i < D->ncnt[r]; i++) {
		const pmask_t *c = &D->cnt[r][i].m;
		if (!((c->m[0] ^ m->m[0]) | (c->m[1] ^ m->m[1]) | (c->m[2] ^ m->m[2]) | (c->m[3] ^ m->m[3])))
			break;
	}
	if (i == D->ncnt[r]) {
		if (D->ncnt[r] == D->capcnt[r]) {
			uint32_t nc = D->capcnt[r] ? 2 * D->capcnt[r] : 8;
			hcnt_t *n = realloc(D->cnt[r], nc * sizeof(*n));
			if (!n)
				return -1;
			D->cnt[r] = n;
			D->capcnt[r] = nc;
		}
		D->cnt[r][i].m = *m;
		D->cnt[r][i].cnt = 0;
		for (p = 0; p < 4; p++)
			np += (uint32_t)__builtin_popcountll(m->m[p]);
		D->cnt[r][i].np = np;
		D->ncnt[r]++;
	}
	np = D->cnt[r][i].np;
	j = D->cnt[r][i].cnt++;
	want = j % np;
	/* the want-th port of the set, ascending: whole words first, then bit by bit */
	for (p = 0; p < 4; p++) {
		uint64_t x = m->m[p];
		uint32_t c;
		if (!x)
			continue;
		if (!want)
			return (int)(p * 64 + (unsigned)__builtin_ctzll(x));
		c = (uint32_t)__builtin_popcountll(x);
		if (want >= c) {
			want -= c;
			continue;
		}
		while (want--)
			x &= x - 1;
		return (int)(p * 64 + (unsigned)__builtin_ctzll(x));
	}
	return -1;
}

/* ---------------- 13.3 SLs and VLs */

/* open-addressing map (switch, in, out) -> the VL of each SL set so far: the SLs of one hop
 * share a slot, and a slot holds its key (32 bytes), so a hop's SLs cost one probe, one cache
 * line */
typedef struct {
	uint64_t key;		/* 0 = empty */
	uint16_t set;		/* bit sl: vl[sl] is set */
	uint8_t vl[16];
} hvl_t;

typedef struct {
	hvl_t *slot;
	uint32_t cap, n;
} hmap_t;

static inline uint64_t hkey(int b, unsigned pin, unsigned pout)
{
	return (1ULL << 48) | ((uint64_t)(uint32_t)b << 16) | (pin << 8) | pout;
}

static uint32_t hmap_slot(const hmap_t *m, uint64_t k)
{
	uint64_t x = k * 0x9e3779b97f4a7c15ULL;
	uint32_t h = (uint32_t)(x >> 32) & (m->cap - 1);
	while (m->slot[h].key && m->slot[h].key != k)
		h = (h + 1) & (m->cap - 1);
	return h;
}

/* a bit per SL whose VL in vl[] is v */
static inline unsigned vl_agree(const uint8_t vl[16], uint8_t v)
{
#ifdef __SSE2__
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)vl), _mm_set1_epi8((char)v)));
#else
	unsigned s, m = 0;
	for (s = 0; s < 16; s++)
		m |= (unsigned)(vl[s] == v) << s;
	return m;
#endif
}

/* room for `more` keys (the load stays at most 1/2): 0, or -1 out of memory */
static int hmap_reserve(hmap_t *m, uint32_t more)
{
	hmap_t n = { NULL, m->cap ? m->cap : 1024, 0 };
	uint32_t i;
	if (2 * (m->n + more) <= m->cap)
		return 0;
	while (2 * (m->n + more) > n.cap)
		n.cap *= 2;
	n.slot = aligned_alloc(64, (size_t)n.cap * sizeof(hvl_t));	/* two slots a cache line */
	if (!n.slot)
		return -1;
	memset(n.slot, 0, (size_t)n.cap * sizeof(hvl_t));
	for (i = 0; i < m->cap; i++)
		if (m->slot[i].key) {
			n.slot[hmap_slot(&n, m->slot[i].key)] = m->slot[i];
			n.n++;
		}
	free(m->slot);
	*m = n;
	return 0;
}

/* k's slot, taken (no SL set) when k is new; room reserved beforehand */
static uint32_t hmap_claim(hmap_t *m, uint64_t k)
{
	uint32_t h = hmap_slot(m, k);
	if (!m->slot[h].key) {
		m->slot[h].key = k;
		m->n++;
	}
	return h;
}

typedef struct { int x; uint8_t pin, pout, vl; } hhop_t;	/* vl: set by hop_vls */

/* the walk from CA base node c's port to dlid over the new tables (tab) or the fault-free ones:
 * the hops (switch, in, out) and the links; -1 when the packet is lost */
static int walk(const hdor_deg_t *D, int c, unsigned port, uint32_t dlid, int tab, hhop_t *hops, int *nh)
{
	const hdor_kns_t *K = D->K;
	int x = kpeer(K, c, port), links = 1, i;
	unsigned pin = K->pport[K->poff[c] + port];
	*nh = 0;
	for (i = 0; i < HDOR_MAX_HOPS; i++) {
		uint8_t out = tab ? (dlid < D->nl ? DTAB(D, K->row[x], dlid) : OSM_NO_PATH) : t0(K, x, dlid);
		int nx;
		if (out == OSM_NO_PATH || out == 0)
			return -1;
		hops[(*nh)++] = (hhop_t){ x, (uint8_t)pin, out, 0 };
		nx = kpeer(K, x, out);
		if (nx < 0 || (tab && !works(D, x, out)))
			return -1;
		links++;
		if (K->type[nx] != N_SWITCH)
			return links;
		pin = K->pport[K->poff[x] + out];
		x = nx;
	}
	return -1;
}

/* each hop's VL (the violations so far, at that router included: docs/hdor.md section 6);
 * returns the route's violations */
static int hop_vls(const hdor_kns_t *K, hhop_t *hops, int nh)
{
	int h, v = 0;
	for (h = 0; h < nh; h++) {
		int x = hops[h].x;
		if (K->role[x] == R_ROUTER) {
			int a = kpeer(K, x, hops[h].pin), b = kpeer(K, x, hops[h].pout);
			if (a >= 0 && b >= 0 && K->dim[a] >= 0 && K->dim[b] >= 0 && K->dim[b] <= K->dim[a])
				v++;
		}
		hops[h].vl = (uint8_t)v;
	}
	return v;
}

typedef struct { uint64_t guid; uint16_t io; uint8_t vl[16]; } hrow_t;

static int cmp_row(const void *a, const void *b)
{
	const hrow_t *x = a, *y = b;
	int c = cmp_u64(x->guid, y->guid);
	return c ? c : (x->io > y->io) - (x->io < y->io);
}

/* path SLs of every CA-to-CA pair, SL2VL entries, VLs used, extra links of detoured pairs */
static int deg_sls(hdor_ctx_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	hdor_qos_t *Q = xcalloc(1, sizeof(*Q));
	hmap_t map = { NULL, 0, 0 };
	uint32_t *src = NULL, *srow = NULL, nsrc = 0, dlid, i, cap = 0;
	hhop_t hops[HDOR_MAX_HOPS], hops0[HDOR_MAX_HOPS];
	int most = 0, ret = -1;
	double sum = 0;
	hrow_t *rows = NULL;

	if (!Q)
		return decline(ctx, "out of memory");
	D->qos = Q;
	src = xcalloc(D->nl, sizeof(uint32_t));
	srow = xcalloc(D->nl, sizeof(uint32_t));
	if (!src || !srow)
		goto oom;
	Q->nl = D->nl;
	Q->base = xcalloc(D->nl, sizeof(uint16_t));
	if (!Q->base)
		goto oom;
	for (dlid = 1; dlid < D->nl; dlid++)
		Q->base[dlid] = (uint16_t)(D->onode[dlid] >= 0 && D->onode[dlid - 1] == D->onode[dlid] &&
					   D->oport[dlid - 1] == D->oport[dlid] ? Q->base[dlid - 1] : dlid);
	/* sources: the base LIDs of linked CA ports, ascending */
	for (dlid = 1; dlid < D->nl; dlid++) {
		int c = D->onode[dlid];
		if (c >= 0 && K->type[c] == N_CA && works(D, c, D->oport[dlid]) &&
		    (dlid == 1 || D->onode[dlid - 1] != c || D->oport[dlid - 1] != D->oport[dlid])) {
			int x = kpeer(K, c, D->oport[dlid]);
			srow[nsrc] = K->type[x] == N_SWITCH ? (uint32_t)K->row[x] : UINT32_MAX;
			src[nsrc++] = dlid;
		}
	}
	/* Only the pairs whose route changed are walked: a pair is one when its source's switch has
	 * an affected entry for dlid (D->aff, complete for the live switches after the affected
	 * entries phase).  The test per pair reads one byte of dlid's row of D->aff, in the cache:
	 * the 16.7 M pairs of KNS 16^3 cost a scan, the walks follow the failures. */
	for (dlid = 1; dlid < D->nl; dlid++) {
		int dc = D->onode[dlid];
		const uint8_t *arow = &D->aff[(size_t)dlid * K->nrow];
		if (dc < 0 || K->type[dc] != N_CA || !works(D, dc, D->oport[dlid]))
			continue;
		for (i = 0; i < nsrc; i++) {
			uint32_t slid = src[i];
			int c, nh, nh0, ln, ln0, h, v = 0, same;
			unsigned p, sl;
			if (srow[i] != UINT32_MAX && arow[srow[i]] == 1)
				continue;	/* the fault-free route, intact: SL 0 */
			c = D->onode[slid];
			p = D->oport[slid];
			if (c == dc && p == D->oport[dlid])
				continue;
			if (!affected(D, kpeer(K, c, p), dlid, 0))
				continue;
			ln = walk(D, c, p, dlid, 1, hops, &nh);
			if (ln < 0)
				continue;	/* not delivered: no path SL (the verifier reports it) */
			v = hop_vls(K, hops, nh);
			if (v > most)
				most = v;
			if (v) {
				/* the lowest SL >= 1 whose entries set so far agree with every hop's VL: each
				 * hop's slot is probed once, its 16 SLs compared at a time (a bit per SL) */
				uint32_t slot[HDOR_MAX_HOPS];
				unsigned ok = 0xfffe & ((1u << HDOR_MAX_SLS) - 1);
				if (hmap_reserve(&map, (uint32_t)nh))
					goto oom;
				for (h = 0; h < nh; h++) {
					const hvl_t *e;
					slot[h] = hmap_claim(&map, hkey(hops[h].x, hops[h].pin, hops[h].pout));
					e = &map.slot[slot[h]];
					ok &= vl_agree(e->vl, hops[h].vl) | (uint16_t)~e->set;
				}
				if (!ok) {
					declinec(ctx, HD_SLS, "the failures need more than %d SLs (pair LID %u -> %u)", HDOR_MAX_SLS,
						 slid, dlid);
					goto out;
				}
				sl = (unsigned)__builtin_ctz(ok);
				for (h = 0; h < nh; h++) {
					map.slot[slot[h]].vl[sl] = hops[h].vl;
					map.slot[slot[h]].set |= (uint16_t)(1u << sl);
				}
				if (Q->npath == cap) {
					uint32_t nc = cap ? 2 * cap : 1024;
					uint64_t *nk = realloc(Q->pkey, nc * sizeof(uint64_t));
					uint8_t *ns;
					if (!nk)
						goto oom;
					Q->pkey = nk;
					ns = realloc(Q->psl, nc);
					if (!ns)
						goto oom;
					Q->psl = ns;
					cap = nc;
				}
				if (sl > Q->maxsl)
					Q->maxsl = sl;
				Q->pkey[Q->npath] = (uint64_t)dlid << 16 | slid;
				Q->psl[Q->npath++] = (uint8_t)sl;
			}
			/* the route is the fault-free one when every hop leaves as the fault-free table
			 * says (then that walk takes the same hops); else it is walked for its length */
			same = 1;
			for (h = 0; h < nh && same; h++)
				same = hops[h].pout == t0(K, hops[h].x, dlid);
			if (!same) {
				int extra;
				ln0 = walk(D, c, p, dlid, 0, hops0, &nh0);
				extra = ln - ln0;
				if (!D->detoured || extra > (int)D->extra_max)
					D->extra_max = (uint32_t)extra;
				D->detoured++;
				sum += extra;
			}
		}
	}
	D->extra_mean = D->detoured ? sum / D->detoured : 0.0;
	D->vls = (unsigned)most + 1;
	/* SL2VL rows: (switch, in, out) -> VL per SL; entries never set are VL 0 */
	rows = xcalloc(map.n + 1, sizeof(*rows));
	if (!rows)
		goto oom;
	{
		uint32_t nr = 0, j;
		for (i = 0; i < map.cap; i++) {
			uint64_t k = map.slot[i].key;
			unsigned s, any = 0;
			if (!k)
				continue;
			for (s = 0; s < 16; s++) {
				rows[nr].vl[s] = map.slot[i].set >> s & 1 ? map.slot[i].vl[s] : 0;
				any |= rows[nr].vl[s];
			}
			if (!any)
				continue;	/* VL 0 for every SL: as never set */
			rows[nr].guid = K->ident[(k >> 16) & 0xffffffffULL];
			rows[nr].io = (uint16_t)(k & 0xffff);
			nr++;
		}
		qsort(rows, nr, sizeof(*rows), cmp_row);
		for (i = 0, j = 0; i < nr; i++) {
			if (j && rows[j - 1].guid == rows[i].guid && rows[j - 1].io == rows[i].io) {
				unsigned s;
				for (s = 0; s < 16; s++)
					rows[j - 1].vl[s] |= rows[i].vl[s];
			} else
				rows[j++] = rows[i];
		}
		Q->nrow = j;
		Q->rguid = xcalloc(j + 1, sizeof(uint64_t));
		Q->rvl = xcalloc(j + 1, 16);
		if (!Q->rguid || !Q->rvl)
			goto oom;
		for (i = 0; i < j; i++) {
			Q->rguid[i] = rows[i].guid;
			memcpy(Q->rvl[i], rows[i].vl, 16);
		}
		/* rkey holds the in/out pair of each row */
		Q->rkey = xcalloc(j + 1, sizeof(uint64_t));
		if (!Q->rkey)
			goto oom;
		for (i = 0; i < j; i++)
			Q->rkey[i] = rows[i].io;
	}
	Q->vls = D->vls;
	ret = 0;
	goto out;
oom:
	decline(ctx, "out of memory");
out:
	free(src);
	free(srow);
	free(rows);
	free(map.slot);
	return ret;
}

/* the VLs the switch ports offer: the smallest PortInfo VLCap of a surviving switch's working
 * ports, capped by OpenSM's max_op_vls (VL0 .. VL0-14 -> 1, 2, 4, 8, 15) */
static unsigned ports_vlcap(hdor_ctx_t *ctx, const hdor_deg_t *D)
{
	unsigned maxop = ctx->osm->subn.opt.max_op_vls;
	static const unsigned by_cap[] = { 0, 1, 2, 4, 8, 15 };
	const hdor_kns_t *K = D->K;
	unsigned best = 15, any = 0;
	uint32_t i;
	for (i = 0; i < K->nn; i++) {
		unsigned p;
		if (!D->cur[i] || K->type[i] != N_SWITCH)
			continue;
		for (p = 1; p < K->np[i]; p++) {
			osm_physp_t *ph;
			unsigned cap;
			if (!works(D, (int)i, p) || !(ph = osm_node_get_physp_ptr(D->cur[i], (uint8_t)p)))
				continue;
			cap = ib_port_info_get_vl_cap(&ph->port_info);
			/* OpenSM sets OperVLs to at most max_op_vls, and masks SL2VL entries with it */
			if (maxop >= 1 && maxop < cap)
				cap = maxop;
			if (cap < 1 || cap > 5)
				continue;
			any = 1;
			if (by_cap[cap] < best)
				best = by_cap[cap];
		}
	}
	return any ? best : 1;
}

/* route a degraded KNS (D after deg_match) into D->tab; 0, or -1 with ctx->reason */
static int deg_route(hdor_ctx_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t nn = K->nn, lid, i;
	hheap_t *heap = NULL;
	int ret = -1;

	if (deg_structure(ctx, D))
		return -1;
	D->tab = malloc((size_t)K->nrow * D->nl);
	D->aff = malloc((size_t)K->nrow * D->nl);
	D->nd = aligned_alloc(64, (size_t)(nn + 1) * sizeof(hnode_t));
	D->fixlist = xcalloc(nn, sizeof(int));
	D->exitof = xcalloc(D->ng + 1, sizeof(int));
	D->exitslot = xcalloc(D->ng + 1, sizeof(int));
	D->dist = xcalloc(nn, sizeof(int));
	D->q = xcalloc(nn, sizeof(int));
	D->cand = xcalloc(K->nrow, sizeof(pmask_t));
	D->has = xcalloc(K->nrow, 1);
	D->cnt = xcalloc(K->nrow, sizeof(*D->cnt));
	D->ncnt = xcalloc(K->nrow, sizeof(uint32_t));
	D->capcnt = xcalloc(K->nrow, sizeof(uint32_t));
	D->lsw = xcalloc(K->nrow + 1, sizeof(int));
	D->alist = xcalloc(K->nrow + 1, sizeof(int));
	D->seed = xcalloc(K->nrow + 1, sizeof(int));
	D->glist = xcalloc(D->ng + 1, sizeof(int));
	D->gst = xcalloc(D->ng + 1, sizeof(int));
	D->rlist = xcalloc(nn + 1, sizeof(int));
	D->rbits = xcalloc(nn / 64 + 1, sizeof(uint64_t));
	D->amhead = xcalloc(D->ng + 1, sizeof(int));
	D->amtail = xcalloc(D->ng + 1, sizeof(int));
	D->amw = xcalloc(D->rgoff[nn] + 1, sizeof(int));
	D->amslot = xcalloc(D->rgoff[nn] + 1, sizeof(int));
	D->amnext = xcalloc(D->rgoff[nn] + 1, sizeof(int));
	/* each group relaxes each member once: pushes <= memberships + fixed routers + T */
	heap = xcalloc((size_t)D->rgoff[nn] + nn + 64, sizeof(*heap));
	if (!D->tab || !D->aff || !D->nd || !D->exitof || !D->exitslot ||
	    !D->fixlist || !D->dist || !D->q || !D->cand || !D->has || !D->cnt || !D->ncnt ||
	    !D->capcnt || !heap || !D->lsw || !D->alist || !D->seed ||
	    !D->glist || !D->gst || !D->rlist || !D->rbits || !D->amhead || !D->amtail || !D->amw ||
	    !D->amslot || !D->amnext) {
		decline(ctx, "out of memory");
		goto out;
	}
	memset(D->nd, 0, (size_t)(nn + 1) * sizeof(hnode_t));
	D->dist_target = -1;
	for (i = 0; i < nn; i++)
		if (D->cur[i] && K->type[i] == N_SWITCH)
			D->lsw[D->nlsw++] = (int)i;
	/* start from the fault-free tables (the same layout: one LID's row at a time); LIDs
	 * without an owner now get no entry */
	for (lid = 0; lid < D->nl; lid++)
		if (D->onode[lid] >= 0 && lid < K->nlid)
			memcpy(&DTAB(D, 0, lid), &KLFT(K, 0, lid), K->nrow);
		else
			memset(&DTAB(D, 0, lid), OSM_NO_PATH, K->nrow);
	/* every entry of a live switch starts as not affected (1); a dead switch's stays unknown */
	memset(D->aff, 1, (size_t)K->nrow * D->nl);
	for (i = 0; i < nn; i++)
		if (!D->cur[i] && K->type[i] == N_SWITCH && K->row[i] >= 0)
			for (lid = 0; lid < D->nl; lid++)
				D->aff[(size_t)lid * K->nrow + K->row[i]] = 0;
	/* the live switch neighbours (affected_lid) */
	D->upoff = xcalloc(nn + 1, sizeof(uint32_t));
	D->swoff = xcalloc(nn + 1, sizeof(uint32_t));
	D->swnb = xcalloc(K->poff[nn] + 1, sizeof(int));
	D->uprow = xcalloc(K->poff[nn] + 1, sizeof(uint32_t));
	D->upx = xcalloc(K->poff[nn] + 1, sizeof(int));
	D->upport = xcalloc(K->poff[nn] + 1, 1);
	if (!D->upoff || !D->uprow || !D->upx || !D->upport || !D->swoff || !D->swnb) {
		decline(ctx, "out of memory");
		goto out;
	}
	{
		uint32_t m = 0;
		for (i = 0; i < nn; i++) {
			unsigned p;
			D->upoff[i] = m;
			for (p = 1; D->cur[i] && K->type[i] == N_SWITCH && p < K->np[i]; p++) {
				int y = K->peer[K->poff[i] + p];
				uint8_t yp = K->pport[K->poff[i] + p];
				if (y >= 0 && K->type[y] == N_SWITCH && D->cur[y] && works(D, y, yp)) {
					D->uprow[m] = (uint32_t)K->row[y];
					D->upx[m] = y;
					D->upport[m++] = yp;
				}
			}
		}
		D->upoff[nn] = m;
		for (i = 0, m = 0; i < nn; i++) {
			unsigned p;
			D->swoff[i] = m;
			for (p = 1; K->type[i] == N_SWITCH && p < K->np[i]; p++) {
				int y = K->peer[K->poff[i] + p];
				if (y >= 0 && K->type[y] == N_SWITCH && works(D, (int)i, p))
					D->swnb[m++] = y;
			}
		}
		D->swoff[nn] = m;
	}
	/* the seeds' candidates: live switches with a failed link */
	for (i = 0; i < D->nlsw; i++) {
		int b = D->lsw[i];
		unsigned p;
		for (p = 1; p < K->np[b]; p++)
			if (K->peer[K->poff[b] + p] >= 0 && !works(D, b, p)) {
				D->seed[D->nseed++] = b;
				break;
			}
	}
	ph_mark(ctx, PH_STRUCT);
	for (lid = 1; lid < D->nl; lid++) {
		uint32_t j;
		if (D->onode[lid] < 0)
			continue;
		if (affected_lid(D, lid)) {
			decline(ctx, "out of memory");
			goto out;
		}
		for (j = 0; j < D->nalist; j++) {
			i = (uint32_t)D->alist[j];
			DTAB(D, K->row[i], lid) = OSM_NO_PATH;
			D->has[K->row[i]] = 0;
		}
		ph_lap(ctx, PH_AFFECTED);
		if (!D->nalist)
			continue;
		if (route_lid(ctx, D, lid, heap))
			goto out;
		for (j = 0; j < D->nalist; j++) {
			int r, port;
			i = (uint32_t)D->alist[j];
			r = K->row[i];
			if (D->has[r] != 1 || mask_empty(&D->cand[r]))
				continue;
			port = spread_pick(D, r, &D->cand[r]);
			if (port < 0) {
				decline(ctx, "out of memory");
				goto out;
			}
			DTAB(D, r, lid) = (uint8_t)port;
		}
		ph_lap(ctx, PH_DETOURS);
	}
	ph_mark(ctx, PH_DETOURS);
	if (D->dead_nodes || D->dead_links) {
		if (deg_sls(ctx, D))
			goto out;
	} else
		D->vls = 1;	/* nothing failed: the fault-free tables, OpenSM's SLs */
	D->vlcap = ports_vlcap(ctx, D);
	if (D->vls > D->vlcap) {
		declinec(ctx, HD_VLS, "the failures need %u VLs, the ports offer %u", D->vls, D->vlcap);
		goto out;
	}
	if (D->vls > 1 && !ctx->osm->subn.opt.qos) {
		/* the switches would keep SL2VL tables that are not hdor's: no VLs, a credit loop */
		declinec(ctx, HD_VLS, "the failures need %u VLs, and OpenSM programs hdor's SL2VL tables only with "
			 "qos TRUE (off)", D->vls);
		goto out;
	}
	ph_mark(ctx, PH_SLVL);
	for (i = 0; i < nn; i++) {
		if (!D->cur[i])
			continue;
		if (K->role[i] == R_ROUTER)
			D->nrouters++;
		else if (K->role[i] == R_SWITCH)
			D->nswitches++;
		else
			D->nhcas++;
	}
	ret = 0;
out:
	free(heap);
	return ret;
}

/* ---------------- 13.4 dump, tables, hop matrices, the SL hooks */

static int write_dump_degraded(hdor_ctx_t *ctx, hdor_deg_t *D, char *path, size_t pathsz)
{
	const hdor_kns_t *K = D->K;
	char tmp[4200];
	FILE *f;
	uint32_t i, j, lid, nr = 0, *hist;
	unsigned n = K->n, e;
	int role, ret, *rtr;

	/* the port counts of the routers with a spread line (two working links or more into one
	 * dimension), per (node, port) slot: counted a LID's row of DTAB at a time (a router's
	 * column is one entry per row: a cache miss each) */
	hist = xcalloc(K->poff[K->nn] + 1, sizeof(uint32_t));
	rtr = xcalloc(K->nrow + 1, sizeof(int));
	if (!hist || !rtr) {
		free(hist);
		free(rtr);
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < K->nn; i++) {
		unsigned p, q, spread = 0;
		if (!D->cur[i] || K->role[i] != R_ROUTER)
			continue;
		for (p = 1; p < K->np[i] && !spread; p++)
			for (q = p + 1; q < K->np[i] && !spread; q++) {
				int y = K->peer[K->poff[i] + p], z = K->peer[K->poff[i] + q];
				spread = y >= 0 && z >= 0 && K->dim[y] >= 0 && K->dim[y] == K->dim[z] && works(D, (int)i, p) &&
					 works(D, (int)i, q);
			}
		if (spread)
			rtr[nr++] = (int)i;
	}
	for (lid = 0; lid < D->nl; lid++) {
		const uint8_t *trow = &DTAB(D, 0, lid);
		for (j = 0; j < nr; j++) {
			uint8_t p = trow[K->row[rtr[j]]];
			if (p < K->np[rtr[j]])
				hist[K->poff[rtr[j]] + p]++;
		}
	}
	free(rtr);
	f = dump_open(ctx, path, pathsz, tmp, sizeof(tmp));
	if (!f) {
		free(hist);
		return -1;
	}
	fprintf(f, "# hdor k=%u n=%u routers=%u switches=%u hcas=%u lids=%u", K->k, n, D->nrouters, D->nswitches,
		D->nhcas, D->nowned);
	if (D->dead_nodes || D->dead_links)	/* a complete KNS: the header of docs section 5 */
		fprintf(f, " vls=%u detoured=%u extra_max=%u extra_mean=%.3f", D->vls, D->detoured, D->extra_max,
			D->extra_mean);
	fputc('\n', f);
	for (role = R_ROUTER; role <= R_HCA; role++)
		for (j = 0; j < K->nn; j++) {
			i = K->isort[j];	/* by the GUID of the device there */
			if (!D->cur[i] || K->role[i] != role)
				continue;
			if (role == R_ROUTER)
				fprintf(f, "router 0x%016" PRIx64 " ", K->ident[i]);
			else if (role == R_SWITCH)
				fprintf(f, "switch 0x%016" PRIx64 " dim=%d ", K->ident[i], K->dim[i]);
			else
				fprintf(f, "hca    0x%016" PRIx64 " ", K->ident[i]);
			put_coords(f, K->coord + (size_t)i * n, n, role == R_SWITCH ? K->dim[i] : -1);
			fprintf(f, " \"%s\"\n", ndesc(D->cur[i]));
		}
	for (j = 0; j < K->nn; j++) {
		i = K->isort[j];
		if (!D->cur[i] || K->role[i] != R_ROUTER)
			continue;
		for (e = 0; e < n; e++) {
			unsigned p, np = 0, first = 1;
			for (p = 1; p < K->np[i]; p++) {
				int y = K->peer[K->poff[i] + p];
				if (y >= 0 && works(D, (int)i, p) && K->dim[y] == (int)e)
					np++;
			}
			if (np < 2)
				continue;
			fprintf(f, "spread 0x%016" PRIx64 " dim=%u ports=", K->ident[i], e);
			for (p = 1; p < K->np[i]; p++) {
				int y = K->peer[K->poff[i] + p];
				if (y >= 0 && works(D, (int)i, p) && K->dim[y] == (int)e) {
					fprintf(f, first ? "%u:%u" : ",%u:%u", p, hist[K->poff[i] + p]);
					first = 0;
				}
			}
			fputc('\n', f);
		}
	}
	ret = dump_close(f, tmp, path);
	free(hist);
	return ret;
}

/* the tables of a degraded pass into OpenSM's new_lft */
static void deg_write_tables(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t i, lid, l0, r0, r, nrow = (uint32_t)K->nrow, counts[4 * 256] = { 0 };
	osm_switch_t **sw = NULL;	/* by DTAB row */
	uint32_t *top = NULL;
	unsigned p;

	sw = calloc(K->nrow + 1, sizeof(*sw));
	top = calloc(K->nrow + 1, sizeof(uint32_t));
	if (!sw || !top) {
		/* out of memory: entry by entry */
		for (i = 0; i < K->nn; i++) {
			osm_switch_t *s1;
			if (!D->cur[i] || K->type[i] != N_SWITCH || !(s1 = D->cur[i]->sw))
				continue;
			for (lid = 1; lid <= lft_top(s1) && lid < D->nl; lid++) {
				s1->new_lft[lid] = DTAB(D, K->row[i], lid);
				if (s1->new_lft[lid] != OSM_NO_PATH)
					osm_switch_count_path(s1, s1->new_lft[lid]);
			}
		}
		free(sw);
		free(top);
		return;
	}
	for (i = 0; i < K->nn; i++)
		if (D->cur[i] && K->type[i] == N_SWITCH && D->cur[i]->sw && K->row[i] >= 0) {
			r = (uint32_t)K->row[i];
			sw[r] = D->cur[i]->sw;
			top[r] = lft_top(sw[r]);
			if (top[r] >= D->nl)
				top[r] = D->nl ? D->nl - 1 : 0;
		}
	/* a transpose (LID-major DTAB -> switch-major new_lft) by tiles of 64 rows x 64 LIDs: a
	 * tile is 64 lines read and 64 written, in the L1 cache (entry by entry, or a column of
	 * all rows at a time, it is a miss per entry) */
	for (r0 = 0; r0 < nrow; r0 += 64)
		for (l0 = 1; l0 < D->nl; l0 += 64)
			for (r = r0; r < r0 + 64 && r < nrow; r++) {
				uint32_t end = l0 + 64 <= top[r] + 1 ? l0 + 64 : top[r] + 1;
				const uint8_t *src = &DTAB(D, r, 0);
				if (!sw[r])
					continue;
				for (lid = l0; lid < end; lid++)
					sw[r]->new_lft[lid] = src[(size_t)lid * nrow];
			}
	for (r = 0; r < nrow; r++) {
		if (!sw[r])
			continue;
		/* the port profiles' path counts (as osm_switch_count_path; four histograms) */
		for (lid = 1; lid <= top[r]; lid++)
			counts[(lid & 3) << 8 | sw[r]->new_lft[lid]]++;
		for (p = 0; p < sw[r]->num_ports && p < OSM_NO_PATH; p++)
			sw[r]->p_prof[p].num_paths += counts[p] + counts[256 + p] + counts[512 + p] + counts[768 + p];
		memset(counts, 0, sizeof(counts));
	}
	free(sw);
	free(top);
}

/* the hop matrices of a degraded KNS: fill_hops_graph over the surviving switches and working
 * links (the exact min-hop counts OpenSM would compute); 0, or -1 (OpenSM builds them) */
static int deg_fill_hops(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	hgraph_t g = { 0, NULL, NULL, NULL, NULL, NULL };
	int *gi = xcalloc(K->nn, sizeof(int)), ret = -1;
	uint32_t i, m = 0;

	g.sw = xcalloc(K->nrow, sizeof(*g.sw));
	g.lid = xcalloc(K->nrow, sizeof(uint16_t));
	g.off = xcalloc(K->nrow + 1, sizeof(uint32_t));
	g.port = xcalloc(K->poff[K->nn], 1);
	g.idx = xcalloc(K->poff[K->nn], sizeof(int));
	if (!gi || !g.sw || !g.lid || !g.off || !g.port || !g.idx)
		goto out;
	for (i = 0; i < K->nn; i++)
		if (D->cur[i] && K->type[i] == N_SWITCH) {
			if (!D->cur[i]->sw)
				goto out;
			gi[i] = g.n;
			g.sw[g.n] = D->cur[i]->sw;
			g.lid[g.n++] = cl_ntoh16(osm_node_get_base_lid(D->cur[i], 0));
		}
	for (i = 0; i < K->nn; i++) {
		unsigned p;
		if (!D->cur[i] || K->type[i] != N_SWITCH)
			continue;
		g.off[gi[i]] = m;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];
			if (y >= 0 && K->type[y] == N_SWITCH && works(D, (int)i, p)) {
				g.port[m] = (uint8_t)p;
				g.idx[m++] = gi[y];
			}
		}
	}
	g.off[g.n] = m;
	ret = fill_hops_graph(&g);
out:
	free(gi);
	graph_free(&g);
	return ret;
}

/* make Q (NULL on a complete KNS) what the hooks read; the SA threads may still read the
 * previous table, so it is freed one pass later */
static void qos_publish(hdor_ctx_t *ctx, hdor_qos_t *Q)
{
	hdor_qos_t *old = ctx->qos;
	qos_free(ctx->qos_old);
	ctx->qos_old = old;
	__atomic_store_n(&ctx->qos, Q, __ATOMIC_RELEASE);
}

/* path_sl: the SL of a (source, destination) pair on a degraded KNS; OpenSM's own SL otherwise */
static uint8_t hdor_path_sl(void *context, uint8_t hint, const ib_net16_t slid, const ib_net16_t dlid)
{
	hdor_ctx_t *ctx = context;
	const hdor_qos_t *Q = ctx ? __atomic_load_n(&ctx->qos, __ATOMIC_ACQUIRE) : NULL;
	uint64_t key;
	int i;
	if (!Q)
		return hint;
	key = cl_ntoh16(slid);
	if (key < Q->nl)
		key = Q->base[key];	/* every LID of the source port's LMC range: the same route */
	key |= (uint64_t)cl_ntoh16(dlid) << 16;
	i = find_u64(Q->pkey, Q->npath, key);
	return i >= 0 ? Q->psl[i] : 0;
}

/* update_sl2vl: on a degraded KNS every SL2VL table is hdor's (entries not set: VL 0) */
static void hdor_update_sl2vl(void *context, osm_physp_t *port, uint8_t in_port, uint8_t out_port,
			      ib_slvl_table_t *t)
{
	hdor_ctx_t *ctx = context;
	const hdor_qos_t *Q = ctx ? __atomic_load_n(&ctx->qos, __ATOMIC_ACQUIRE) : NULL;
	uint64_t guid;
	uint16_t io = (uint16_t)(in_port << 8 | out_port);
	uint32_t lo = 0, hi;
	unsigned sl;
	if (!Q || !port || !port->p_node)
		return;
	memset(t, 0, sizeof(*t));
	if (osm_node_get_type(port->p_node) != IB_NODE_TYPE_SWITCH)
		return;
	guid = cl_ntoh64(osm_node_get_node_guid(port->p_node));
	hi = Q->nrow;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (Q->rguid[mid] < guid || (Q->rguid[mid] == guid && Q->rkey[mid] < io))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < Q->nrow && Q->rguid[lo] == guid && Q->rkey[lo] == io)
		for (sl = 0; sl < 16; sl++)
			ib_slvl_table_set(t, (uint8_t)sl, Q->rvl[lo][sl]);
}

/* ------------------------------------------------------------------------------------------ */
/* 14. the KNS without a complete sweep: hdor.conf, the remembered state, first sight       */

/* The complete KNS can come from elsewhere than a pass that saw it complete (docs/hdor.md
 * section 7): the description hdor.conf an admin deploys (from the directory of the opensm.conf
 * OpenSM was started with, else /etc/opensm), the state this engine remembers in OpenSM's cache
 * directory, or identification at first sight, which completes a degraded fabric with
 * "phantoms" (the missing routers, switches, HCAs and cables, GUIDs from HDOR_PHANTOM up).
 * Each gives a KNS without tables; kns_build() routes it by docs section 4 for the LIDs of now,
 * and the degraded pass (section 13) then runs against it as against one a long-running hdor
 * remembers. */

#define HDOR_CONF_NAME "hdor.conf"
#define HDOR_STATE_NAME "hdor-kns.conf"
#define HDOR_CONF_DIR "/etc/opensm"

/* ---------------- 14.1 a pass over a KNS from elsewhere, and its tables */

/* index of the switch (CA) of P with this GUID: P's nodes are in GUID order when collected from
 * a KNS; -1 */
static int p_find(const hdor_pass_t *P, uint64_t guid, int ca)
{
	int lo = 0, hi = ca ? P->nca : P->nsw;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		uint64_t g = ca ? P->ca[mid].guid : P->sw[mid].guid;
		if (g < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < (ca ? P->nca : P->nsw) && (ca ? P->ca[lo].guid : P->sw[lo].guid) == guid)
		return lo;
	return -1;
}

/* section 4 for a KNS K: every node and cable of K, with OpenSM's objects for those there now
 * (the others have none); node GUIDs are K's (its order), links are K's */
static int collect_kns(hdor_ctx_t *ctx, hdor_pass_t *P, const hdor_kns_t *K)
{
	cl_qmap_t *tbl = &ctx->osm->subn.node_guid_tbl;
	uint32_t i, total = 0;
	int *map = xcalloc(K->nn, sizeof(int)), ret = -1;

	if (!map)
		return decline(ctx, "out of memory");
	for (i = 0; i < K->nn; i++) {
		if (K->type[i] == N_SWITCH) {
			P->nsw++;
			total += K->np[i];
		} else
			P->nca++;
	}
	if (!P->nsw) {
		free(map);
		return decline(ctx, "no switches");
	}
	P->links = xcalloc(total, sizeof(*P->links));
	if (!pass_alloc(P, K->nn) || !P->links) {
		decline(ctx, "out of memory");
		goto out;
	}
	P->nsw = P->nca = 0;
	for (i = 0; i < K->nn; i++) {
		osm_node_t *node = NULL;
		if (K->ident[i] < HDOR_PHANTOM) {
			cl_map_item_t *it = cl_qmap_get(tbl, cl_hton64(K->ident[i]));
			if (it != cl_qmap_end(tbl))
				node = (osm_node_t *)it;
		}
		if (node && node_kind(node) != K->type[i]) {
			declinec(ctx, HD_CONF_MISMATCH, "0x%016" PRIx64 " '%s' is a%s, the KNS has a%s there",
				 K->ident[i], ndesc(node), node_kind(node) == N_SWITCH ? " switch" : "n hca",
				 K->type[i] == N_SWITCH ? " switch" : "n hca");
			goto out;
		}
		if (K->type[i] == N_SWITCH) {
			hsw_t *s = &P->sw[P->nsw];
			if (node && (!node->sw || node->sw->p_node != node)) {
				decline(ctx, "switch 0x%016" PRIx64 " '%s' has no switch object", K->ident[i], ndesc(node));
				goto out;
			}
			s->sw = node ? node->sw : NULL;
			s->node = node;
			s->guid = K->guid[i];
			s->router = s->group = s->first_set = -1;
			s->base_lid = node ? cl_ntoh16(osm_node_get_base_lid(node, 0)) : 0;
			if (node && hput(P, node, 2 * P->nsw)) {
				decline(ctx, "duplicate node object");
				goto out;
			}
			map[i] = P->nsw++;
		} else {
			hca_t *c = &P->ca[P->nca];
			c->node = node;
			c->guid = K->guid[i];
			c->router = -1;
			c->port_num = 256;
			if (node && hput(P, node, 2 * P->nca + 1)) {
				decline(ctx, "duplicate node object");
				goto out;
			}
			map[i] = P->nca++;
		}
	}
	for (i = 0; i < K->nn; i++) {
		hsw_t *s;
		unsigned p;
		if (K->type[i] != N_SWITCH)
			continue;
		s = &P->sw[map[i]];
		s->loff = P->nlinks;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];
			if (y < 0)
				continue;
			if (s->node && p >= osm_node_get_num_physp(s->node)) {
				declinec(ctx, HD_CONF_MISMATCH, "switch 0x%016" PRIx64 " '%s' has ports 1-%u, the KNS cables its port %u",
					 K->ident[i], ndesc(s->node), osm_node_get_num_physp(s->node) - 1u, p);
				goto out;
			}
			P->links[P->nlinks].port = (uint8_t)p;
			P->links[P->nlinks].rport = K->pport[K->poff[i] + p];
			P->links[P->nlinks].kind = K->type[y];
			P->links[P->nlinks].idx = map[y];
			P->nlinks++;
		}
		s->ln = P->nlinks - s->loff;
	}
	ret = 0;
out:
	free(map);
	return ret;
}

/* docs sections 2-3 replaced by K's own dimensions and coordinates (a description's, or the ones
 * a node that was replaced kept): checked to be a KNS labelling */
static int coords_from_kns(hdor_ctx_t *ctx, hdor_pass_t *P, const hdor_kns_t *K)
{
	unsigned n = P->n, e;
	int r, g, i;

	if (P->n != K->n || P->k != K->k)
		return declinec(ctx, HD_CONF_INVALID, "its cabling is a %u-ary %u-direct KNS, its header says k=%u n=%u",
				P->k, P->n, K->k, K->n);
	P->rg = xcalloc((size_t)P->nr * n, sizeof(int));
	P->coord = xcalloc((size_t)P->nr * n, 1);
	P->gcoord = xcalloc((size_t)P->ng * n, 1);
	if (!P->rg || !P->coord || !P->gcoord)
		return decline(ctx, "out of memory");
	for (i = 0; i < P->nr * (int)n; i++)
		P->rg[i] = -1;
	for (r = 0; r < P->nr; r++) {
		int b = find_u64(K->guid, K->nn, P->rt[r].guid);
		if (b < 0 || K->role[b] != R_ROUTER)
			return declinec(ctx, HD_CONF_INVALID, "0x%016" PRIx64 " is a router (an HCA is cabled to it), not a %s",
					P->rt[r].guid, b < 0 ? "node of it" : K->role[b] == R_SWITCH ? "switch" : "router");
		memcpy(P->coord + (size_t)r * n, K->coord + (size_t)b * n, n);
	}
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		uint32_t j;
		G->dim = -1;
		for (j = 0; j < G->sn; j++) {
			hsw_t *W = &P->sw[P->gsw[G->soff + j]];
			int b = find_u64(K->guid, K->nn, W->guid);
			if (b < 0 || K->role[b] != R_SWITCH)
				return declinec(ctx, HD_CONF_INVALID, "0x%016" PRIx64 " is an indirect switch (no HCA is cabled to it), not a router",
						W->guid);
			if (G->dim >= 0 && K->dim[b] != G->dim)
				return declinec(ctx, HD_CONF_INVALID, "switches 0x%016" PRIx64 " and 0x%016" PRIx64
						" of one indirect network have dimensions %d and %d",
						P->sw[P->gsw[G->soff]].guid, W->guid, G->dim, K->dim[b]);
			G->dim = K->dim[b];
		}
	}
	for (r = 0; r < P->nr; r++) {
		uint32_t j;
		for (j = 0; j < P->rt[r].gn; j++) {
			int gg = (int)P->rgl[P->rt[r].goff + j], d = P->grp[gg].dim;
			if (P->rg[r * n + d] >= 0)
				return declinec(ctx, HD_CONF_INVALID, "router 0x%016" PRIx64 " is in two indirect networks of dimension %d",
						P->rt[r].guid, d);
			P->rg[r * n + d] = gg;
		}
	}
	if (lines_and_points(ctx, P)) {
		ctx->code = ctx->code == HD_NOMEM ? HD_NOMEM : HD_CONF_INVALID;
		return -1;
	}
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		uint32_t j;
		for (j = 0; j < G->sn; j++) {
			int b = find_u64(K->guid, K->nn, P->sw[P->gsw[G->soff + j]].guid);
			for (e = 0; e < n; e++)
				if ((int)e != G->dim && K->coord[(size_t)b * n + e] != P->gcoord[(size_t)g * n + e])
					return declinec(ctx, HD_CONF_INVALID, "switch 0x%016" PRIx64 " has the coordinates of another line of dimension %d than its routers",
							K->ident[b], G->dim);
		}
	}
	return 0;
}

/* the remembered LIDs of K's ports that are not there now, while no port of now has them: the
 * targets a long-running hdor would still count (spreading, docs section 4) */
static void kns_lids(hdor_pass_t *P, const hdor_kns_t *K)
{
	uint32_t i, lid;
	for (i = 0; i < K->nn; i++) {
		int ca = K->type[i] != N_SWITCH, x = p_find(P, K->guid[i], ca);
		unsigned p;
		if (x < 0 || (ca ? P->ca[x].node : P->sw[x].node))
			continue;
		for (p = 0; p < K->np[i]; p++) {
			uint32_t s = K->poff[i] + p, lo = K->plid[s], hi = lo + (1u << K->plmc[s]) - 1, ok = 1;
			ltgt_t t;
			if (!lo || hi > P->max_lid)
				continue;
			for (lid = lo; lid <= hi; lid++)
				ok &= P->lt[lid].kind == T_NONE;
			if (!ok)
				continue;
			if (ca) {
				int y = K->peer[s], w = y >= 0 ? p_find(P, K->guid[y], 0) : -1;
				if (w < 0 || P->sw[w].router < 0)
					continue;
				t.kind = T_ROUTER;
				t.idx = P->sw[w].router;
				t.port = K->pport[s];
			} else if (p == 0) {
				t.kind = P->sw[x].router >= 0 ? T_ROUTER : T_SWITCH;
				t.idx = P->sw[x].router >= 0 ? P->sw[x].router : x;
				t.port = 0;
			} else
				continue;
			for (lid = lo; lid <= hi; lid++) {
				P->lt[lid] = t;
				P->nlids++;
			}
		}
	}
}

/* the replacements among the devices of now (deg_match places them too; a KNS from a file must
 * know them before its tables are built around the devices of now): 0, or -1 out of memory */
static int kns_place(hdor_ctx_t *ctx)
{
	cl_qmap_t *tbl = &ctx->osm->subn.node_guid_tbl;
	cl_map_item_t *it;
	hdor_deg_t D;
	osm_node_t **unknown = NULL;
	uint32_t nu = 0;
	int rc = 0;

	memset(&D, 0, sizeof(D));
	D.K = ctx->kns;
	D.cur = xcalloc(D.K->nn, sizeof(*D.cur));
	if (!D.cur)
		return decline(ctx, "out of memory");
	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
		osm_node_t *node = (osm_node_t *)it;
		int b = kns_find(D.K, cl_ntoh64(osm_node_get_node_guid(node)));
		if (b >= 0) {
			D.cur[b] = node;
			continue;
		}
		if (nu % 64 == 0) {
			osm_node_t **nw = realloc(unknown, (nu + 64) * sizeof(*unknown));
			if (!nw) {
				rc = decline(ctx, "out of memory");
				break;
			}
			unknown = nw;
		}
		unknown[nu++] = node;
	}
	if (!rc && nu)
		rc = replacements(ctx, &D, unknown, nu, 0);
	free(unknown);
	free(D.cur);
	return rc;
}

/* a switch object of our own for the table of switch w of P that OpenSM does not have (only
 * what route_switch uses: new_lft, lft_size, max_lid_ho, num_ports, p_prof) */
static osm_switch_t *shadow_switch(const hdor_pass_t *P, const hdor_kns_t *K, int w)
{
	int b = find_u64(K->guid, K->nn, P->sw[w].guid);
	osm_switch_t *sw = xcalloc(1, sizeof(*sw));
	if (!sw || b < 0)
		return free(sw), NULL;
	sw->num_ports = K->np[b];
	sw->max_lid_ho = (uint16_t)P->max_lid;
	sw->lft_size = (uint16_t)(P->max_lid + 1);
	sw->new_lft = malloc(P->max_lid + 1);
	sw->p_prof = xcalloc(K->np[b], sizeof(*sw->p_prof));
	if (!sw->new_lft || !sw->p_prof) {
		free(sw->new_lft);
		free(sw->p_prof);
		free(sw);
		return NULL;
	}
	memset(sw->new_lft, OSM_NO_PATH, P->max_lid + 1);
	return sw;
}

/* Kin routed by docs section 4 for the LIDs of now: a KNS with its fault-free tables (of the
 * switches there now), or NULL (ctx->reason).  compute: coordinates by docs sections 2-3 (first
 * sight), else Kin's.  Leaves the switches' new_lft as OpenSM prepared them. */
static hdor_kns_t *kns_build(hdor_ctx_t *ctx, const hdor_kns_t *Kin, int compute)
{
	hdor_pass_t *P = xcalloc(1, sizeof(*P));
	hdor_kns_t *K = NULL;
	int w;

	if (!P) {
		decline(ctx, "out of memory");
		return NULL;
	}
	if (collect_kns(ctx, P, Kin) || structure(ctx, P) || kns_counts(ctx, P) ||
	    (compute ? dims_and_coords(ctx, P) : coords_from_kns(ctx, P, Kin)) ||
	    group_distances(ctx, P) || candidate_sets(ctx, P) || lid_targets(ctx, P))
		goto out;
	kns_lids(P, Kin);
	P->ready = 1;
	/* a switch that is not there gets a shadow object for its fault-free table (the detours'
	 * statistics walk it, as a long-running hdor walks the table it had) */
	for (w = 0; w < P->nsw; w++)
		if (!P->sw[w].sw && !(P->sw[w].sw = shadow_switch(P, Kin, w))) {
			decline(ctx, "out of memory");
			goto out;
		}
	route_all(P);
	K = kns_remember(ctx, P, Kin);
	if (!K)
		decline(ctx, "out of memory");
	else
		K->origin = Kin->origin;
	for (w = 0; w < P->nsw; w++) {
		osm_switch_t *sw = P->sw[w].sw;
		unsigned p;
		if (!sw || !P->sw[w].node)
			continue;
		memset(sw->new_lft, OSM_NO_PATH, lft_top(sw) + 1);
		for (p = 0; p < sw->num_ports; p++)
			osm_port_prof_construct(&sw->p_prof[p]);
	}
out:
	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].sw && !P->sw[w].node) {
			free(P->sw[w].sw->new_lft);
			free(P->sw[w].sw->p_prof);
			free(P->sw[w].sw);
			P->sw[w].sw = NULL;
		}
	pass_free(P);
	return K;
}


/* ---------------- 14.2 the file format (hdor.conf and the remembered state) */

/* One line per node, then one per cable (docs/plugin.md "hdor.conf"):
 *
 *   hdor-kns 1 k=4 n=2 s=1
 *   router 0x0002c90000000001 ports=8 [0,0] lids=0:1 "R[0,0]"
 *   switch 0x0002c90000000011 ports=8 dim=0 [0] lids=0:17 "S[0,0]"
 *   hca 0x0002c90000000021 ports=1 [0,0] lids=1:33 "H[0,0]"
 *   link 0x0002c90000000001 2 0x0002c90000000011 1
 *
 * lids= (port:base LID[/LMC],...) is optional; was=0x... names the node a device replaced (it
 * keeps that node's place and order); phantom marks a node identified at first sight. */

typedef struct {
	uint64_t ident, guid;
	uint8_t type, role, np, ncoord, phantom;
	int dim, line;
	uint8_t coord[HDOR_MAX_N];
	char *desc;
	uint16_t lid[8];	/* up to 8 ports with LIDs per node line */
	uint8_t lport[8], lmc[8], nlid;
} hfnode_t;

typedef struct {
	uint64_t a, b;
	uint8_t pa, pb;
	int line;
} hflink_t;

/* room for one more of n elements of size sz in *p (capacity *cap, doubled): 0, or -1 */
static int grow(void *pp, uint32_t n, uint32_t *cap, size_t sz)
{
	void **p = pp, *np_;
	uint32_t nc;
	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 256;
	if (!(np_ = realloc(*p, (size_t)nc * sz)))
		return -1;
	*p = np_;
	*cap = nc;
	return 0;
}

static int cmp_fnode_ident(const void *a, const void *b)
{
	return cmp_u64(((const hfnode_t *)a)->ident, ((const hfnode_t *)b)->ident);
}

static int cmp_fnode_guid(const void *a, const void *b)
{
	return cmp_u64(((const hfnode_t *)a)->guid, ((const hfnode_t *)b)->guid);
}

static int parse_u64(const char *t, uint64_t *v)
{
	char *end;
	if (!t || !*t || *t == '-')
		return -1;
	errno = 0;
	*v = strtoull(t, &end, 0);
	return (errno || *end) ? -1 : 0;
}

static int parse_uint(const char *t, unsigned max, unsigned *v)
{
	uint64_t x;
	if (parse_u64(t, &x) || x > max)
		return -1;
	*v = (unsigned)x;
	return 0;
}

/* "[a,b,c]" -> up to HDOR_MAX_N values (most significant first), their number in *nc */
static int parse_coords(const char *t, uint8_t *c, uint8_t *nc)
{
	char buf[256], *save = NULL, *tok;
	size_t len = strlen(t);
	*nc = 0;
	if (len < 2 || len >= sizeof(buf) || t[0] != '[' || t[len - 1] != ']')
		return -1;
	memcpy(buf, t + 1, len - 2);
	buf[len - 2] = '\0';
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned v;
		if (*nc >= HDOR_MAX_N || parse_uint(tok, 255, &v))
			return -1;
		c[(*nc)++] = (uint8_t)v;
	}
	return 0;
}

/* read a KNS file into *out (structure, coordinates, remembered LIDs; no tables): 0, 1 when the
 * file does not exist, -1 (ctx->reason, ctx->code HD_CONF_READ / HD_CONF_SYNTAX) */
static int kns_read(hdor_ctx_t *ctx, const char *path, int origin, hdor_kns_t **out)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, ret = -1, have_header = 0;
	unsigned k = 0, n = 0, s = 1;
	hfnode_t *nd = NULL;
	hflink_t *lk = NULL;
	uint32_t nnd = 0, cnd = 0, nlk = 0, clk = 0, i;
	hdor_kns_t *K = NULL;

	*out = NULL;
	if (!f) {
		if (errno == ENOENT)
			return 1;
		return declinec(ctx, HD_CONF_READ, "cannot read %s: %s", path, strerror(errno));
	}
#define FAIL(...) do { declinec(ctx, HD_CONF_SYNTAX, __VA_ARGS__); goto out; } while (0)
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *tok[24], *save = NULL, *q, *desc = NULL, *t;
		int nt = 0;
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if ((q = strchr(line, '"'))) {	/* the node description: to the last quote */
			char *e = strrchr(line, '"');
			if (e == q)
				FAIL("%s line %d: a description without its closing quote", path, lineno);
			*e = '\0';
			desc = q + 1;
			*q = '\0';
		}
		for (t = strtok_r(line, " \t", &save); t && nt < 24; t = strtok_r(NULL, " \t", &save)) {
			if (*t == '#')
				break;
			tok[nt++] = t;
		}
		if (!nt)
			continue;
		if (!have_header) {
			int j;
			if (strcmp(tok[0], "hdor-kns") || nt < 2 || strcmp(tok[1], "1"))
				FAIL("%s line %d: not a KNS description (it starts with \"hdor-kns 1 k=.. n=..\")", path, lineno);
			for (j = 2; j < nt; j++) {
				if (!strncmp(tok[j], "k=", 2) && !parse_uint(tok[j] + 2, 255, &k))
					continue;
				if (!strncmp(tok[j], "n=", 2) && !parse_uint(tok[j] + 2, HDOR_MAX_N, &n))
					continue;
				if (!strncmp(tok[j], "s=", 2) && !parse_uint(tok[j] + 2, 255, &s))
					continue;
				if (strchr(tok[j], '='))	/* counts, for a reader: not needed */
					continue;
				FAIL("%s line %d: unknown header field '%s'", path, lineno, tok[j]);
			}
			if (k < 2 || n < 1)
				FAIL("%s line %d: the header needs k >= 2 and n >= 1", path, lineno);
			have_header = 1;
			continue;
		}
		if (!strcmp(tok[0], "link")) {
			unsigned pa, pb;
			if (nt != 5 || desc)
				FAIL("%s line %d: a link is 'link GUID PORT GUID PORT'", path, lineno);
			if (grow(&lk, nlk, &clk, sizeof(*lk))) {
				decline(ctx, "out of memory");
				goto out;
			}
			if (parse_u64(tok[1], &lk[nlk].a) || parse_uint(tok[2], 254, &pa) || !pa ||
			    parse_u64(tok[3], &lk[nlk].b) || parse_uint(tok[4], 254, &pb) || !pb)
				FAIL("%s line %d: a link is 'link GUID PORT GUID PORT' (GUIDs 0x..., ports 1-254)", path, lineno);
			lk[nlk].pa = (uint8_t)pa;
			lk[nlk].pb = (uint8_t)pb;
			lk[nlk].line = lineno;
			nlk++;
			continue;
		}
		{
			hfnode_t *x;
			int j;
			if (strcmp(tok[0], "router") && strcmp(tok[0], "switch") && strcmp(tok[0], "hca"))
				FAIL("%s line %d: '%s' is not router, switch, hca or link", path, lineno, tok[0]);
			if (grow(&nd, nnd, &cnd, sizeof(*nd))) {
				decline(ctx, "out of memory");
				goto out;
			}
			x = &nd[nnd];
			memset(x, 0, sizeof(*x));
			x->dim = -1;
			x->line = lineno;
			x->role = tok[0][0] == 'r' ? R_ROUTER : tok[0][0] == 's' ? R_SWITCH : R_HCA;
			x->type = x->role == R_HCA ? N_CA : N_SWITCH;
			if (nt < 2 || parse_u64(tok[1], &x->ident))
				FAIL("%s line %d: a %s line starts with its GUID (0x...)", path, lineno, tok[0]);
			x->guid = x->ident;
			for (j = 2; j < nt; j++) {
				unsigned v;
				if (!strncmp(tok[j], "ports=", 6)) {
					if (parse_uint(tok[j] + 6, 254, &v) || !v)
						FAIL("%s line %d: ports= takes 1-254", path, lineno);
					x->np = (uint8_t)(v + 1);
				} else if (!strncmp(tok[j], "dim=", 4)) {
					if (parse_uint(tok[j] + 4, HDOR_MAX_N - 1, &v))
						FAIL("%s line %d: bad dim=", path, lineno);
					x->dim = (int)v;
				} else if (!strncmp(tok[j], "was=", 4)) {
					if (parse_u64(tok[j] + 4, &x->guid))
						FAIL("%s line %d: was= takes a GUID (0x...)", path, lineno);
				} else if (!strcmp(tok[j], "phantom")) {
					x->phantom = 1;
				} else if (tok[j][0] == '[') {
					if (parse_coords(tok[j], x->coord, &x->ncoord))
						FAIL("%s line %d: bad coordinates '%s'", path, lineno, tok[j]);
				} else if (!strncmp(tok[j], "lids=", 5)) {
					char *s2 = NULL, *e;
					for (e = strtok_r(tok[j] + 5, ",", &s2); e; e = strtok_r(NULL, ",", &s2)) {
						unsigned pn, lid, lmc = 0;
						char *c = strchr(e, ':'), *sl = strchr(e, '/');
						if (!c || x->nlid >= 8)
							FAIL("%s line %d: lids= takes PORT:LID[/LMC],... (at most 8)", path, lineno);
						*c = '\0';
						if (sl)
							*sl = '\0';
						if (parse_uint(e, 254, &pn) || parse_uint(c + 1, 0xbfff, &lid) || !lid ||
						    (sl && parse_uint(sl + 1, 7, &lmc)))
							FAIL("%s line %d: lids= takes PORT:LID[/LMC],... (LIDs 1-49151, LMC 0-7)", path, lineno);
						x->lport[x->nlid] = (uint8_t)pn;
						x->lid[x->nlid] = (uint16_t)lid;
						x->lmc[x->nlid++] = (uint8_t)lmc;
					}
				} else
					FAIL("%s line %d: unknown field '%s'", path, lineno, tok[j]);
			}
			if (!x->np)
				FAIL("%s line %d: ports= is missing", path, lineno);
			if (x->role == R_SWITCH ? (x->dim < 0 || x->dim >= (int)n || x->ncoord != n - 1) :
			    x->role == R_ROUTER ? x->ncoord != n : (x->ncoord && x->ncoord != n))
				FAIL("%s line %d: a %s needs %s", path, lineno, tok[0], x->role == R_SWITCH ?
				     "dim=D (D < n) and its line's n-1 coordinates" : "n coordinates");
			for (j = 0; j < x->ncoord; j++)
				if (x->coord[j] >= k)
					FAIL("%s line %d: coordinate %u is not below k = %u", path, lineno, x->coord[j], k);
			for (j = 0; j < x->nlid; j++)
				if (x->lport[j] >= x->np || (x->type == N_SWITCH && x->lport[j]))
					FAIL("%s line %d: lids= names port %u (a switch has its LID on port 0)", path, lineno, x->lport[j]);
			x->desc = strdup(desc ? desc : "");
			if (!x->desc) {
				decline(ctx, "out of memory");
				goto out;
			}
			nnd++;
		}
	}
	if (!have_header)
		FAIL("%s: empty (no \"hdor-kns 1 k=.. n=..\" line)", path);
	if (!nnd)
		FAIL("%s: no nodes", path);
	/* the nodes in order (of their GUID, or the one they replaced) */
	qsort(nd, nnd, sizeof(*nd), cmp_fnode_ident);
	for (i = 1; i < nnd; i++)
		if (nd[i].ident == nd[i - 1].ident)
			FAIL("%s line %d: GUID 0x%016" PRIx64 " is listed twice (line %d)", path, nd[i].line, nd[i].ident, nd[i - 1].line);
	K = kns_alloc(nnd, k, n, s, origin);
	if (!K) {
		decline(ctx, "out of memory");
		goto out;
	}
	/* order by the GUID that places them: a device that replaced another takes its place */
	{
		hfnode_t *byg = xcalloc(nnd, sizeof(*byg));
		if (!byg) {
			decline(ctx, "out of memory");
			goto out;
		}
		memcpy(byg, nd, nnd * sizeof(*nd));
		qsort(byg, nnd, sizeof(*byg), cmp_fnode_guid);
		for (i = 0; i < nnd; i++) {
			hfnode_t *x = &byg[i];
			unsigned e;
			if (i && x->guid == byg[i - 1].guid) {
				declinec(ctx, HD_CONF_SYNTAX, "%s line %d: two devices have the place of 0x%016" PRIx64, path, x->line, x->guid);
				free(byg);
				goto out;
			}
			K->guid[i] = x->guid;
			K->ident[i] = x->ident;
			K->type[i] = x->type;
			K->role[i] = x->role;
			K->np[i] = x->np;
			K->desc[i] = x->desc;
			x->desc = NULL;
			K->dim[i] = x->role == R_SWITCH ? x->dim : -1;
			K->poff[i + 1] = K->poff[i] + x->np;
			/* written most significant first; kept by dimension (a switch: without its own) */
			for (e = 0; e < n && x->ncoord; e++) {
				if (x->role == R_SWITCH) {
					if ((int)e != x->dim) {
						unsigned pos = (unsigned)(e < (unsigned)x->dim ? e : e - 1);
						K->coord[(size_t)i * n + e] = x->coord[n - 2 - pos];
					}
				} else
					K->coord[(size_t)i * n + e] = x->coord[n - 1 - e];
			}
		}
		/* the file's nodes stay in ident order for the links below: keep the descriptions owned
		 * by K only */
		for (i = 0; i < nnd; i++)
			nd[i].desc = NULL;
		free(byg);
	}
	if (kns_alloc_slots(K)) {
		decline(ctx, "out of memory");
		goto out;
	}
	for (i = 0; i < nnd; i++) {
		int b = kns_find(K, nd[i].ident), j;
		for (j = 0; j < nd[i].nlid; j++) {
			K->plid[K->poff[b] + nd[i].lport[j]] = nd[i].lid[j];
			K->plmc[K->poff[b] + nd[i].lport[j]] = nd[i].lmc[j];
		}
	}
	for (i = 0; i < nlk; i++) {
		int a = kns_find(K, lk[i].a), b = kns_find(K, lk[i].b);
		uint32_t sa, sb;
		if (a < 0 || b < 0)
			FAIL("%s line %d: GUID 0x%016" PRIx64 " is not a node of the file", path, lk[i].line,
			     a < 0 ? lk[i].a : lk[i].b);
		if (lk[i].pa >= K->np[a] || lk[i].pb >= K->np[b])
			FAIL("%s line %d: port %u of 0x%016" PRIx64 " is beyond its ports=", path, lk[i].line,
			     lk[i].pa >= K->np[a] ? lk[i].pa : lk[i].pb, lk[i].pa >= K->np[a] ? lk[i].a : lk[i].b);
		sa = K->poff[a] + lk[i].pa;
		sb = K->poff[b] + lk[i].pb;
		if (K->peer[sa] >= 0 || K->peer[sb] >= 0 || sa == sb)
			FAIL("%s line %d: port %u of 0x%016" PRIx64 " is cabled twice", path, lk[i].line,
			     K->peer[sa] >= 0 ? lk[i].pa : lk[i].pb, K->peer[sa] >= 0 ? lk[i].a : lk[i].b);
		K->peer[sa] = b;
		K->pport[sa] = lk[i].pb;
		K->peer[sb] = a;
		K->pport[sb] = lk[i].pa;
	}
	*out = K;
	K = NULL;
	ret = 0;
#undef FAIL
out:
	if (nd)
		for (i = 0; i < nnd; i++)
			free(nd[i].desc);
	free(nd);
	free(lk);
	free(line);
	fclose(f);
	kns_free(K);
	return ret;
}

static int cmp_slot_ident(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] != y[0] ? cmp_u64(x[0], y[0]) : cmp_u64(x[1], y[1]);
}

/* write K in the file format to path, atomically (a temporary file beside it, then rename) */
static int kns_write(const hdor_kns_t *K, const char *path, const char *comment)
{
	char tmp[4200];
	FILE *f;
	uint32_t i, nl = 0, nr = 0, ns = 0, nh = 0, nlinks = 0;
	unsigned n = K->n, role;
	uint64_t *links;
	int fd, ret = -1;

	for (i = 0; i < K->nn; i++) {
		unsigned p;
		nr += K->role[i] == R_ROUTER;
		ns += K->role[i] == R_SWITCH;
		nh += K->role[i] == R_HCA;
		for (p = 1; p < K->np[i]; p++)
			nl += K->peer[K->poff[i] + p] >= 0;
	}
	links = xcalloc((size_t)nl / 2 + 1, 2 * sizeof(uint64_t));
	if (!links)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		free(links);
		return -1;
	}
	fprintf(f, "# %s\n# format: docs/plugin.md \"hdor.conf\"; node lines by role and GUID, then one line per cable\n", comment);
	fprintf(f, "hdor-kns 1 k=%u n=%u s=%u routers=%u switches=%u hcas=%u links=%u\n", K->k, n, K->s, nr, ns, nh, nl / 2);
	for (role = R_ROUTER; role <= R_HCA; role++)
		for (i = 0; i < K->nn; i++) {
			uint32_t b = K->isort[i];
			unsigned p, first = 1;
			if (K->role[b] != role)
				continue;
			fprintf(f, "%s 0x%016" PRIx64, role == R_ROUTER ? "router" : role == R_SWITCH ? "switch" : "hca", K->ident[b]);
			if (K->ident[b] != K->guid[b])
				fprintf(f, " was=0x%016" PRIx64, K->guid[b]);
			fprintf(f, " ports=%u", K->np[b] - 1u);
			if (role == R_SWITCH)
				fprintf(f, " dim=%d", K->dim[b]);
			fputc(' ', f);
			put_coords(f, K->coord + (size_t)b * n, n, role == R_SWITCH ? K->dim[b] : -1);
			for (p = 0; p < K->np[b]; p++)
				if (K->plid[K->poff[b] + p]) {
					fprintf(f, first ? " lids=%u:%u" : ",%u:%u", p, K->plid[K->poff[b] + p]);
					if (K->plmc[K->poff[b] + p])
						fprintf(f, "/%u", K->plmc[K->poff[b] + p]);
					first = 0;
				}
			if (K->guid[b] >= HDOR_PHANTOM)
				fputs(" phantom", f);
			fprintf(f, " \"%s\"\n", K->desc[b]);
		}
	/* each cable once, from its end with the lower (GUID, port) */
	for (i = 0; i < K->nn; i++) {
		unsigned p;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];
			unsigned q = K->pport[K->poff[i] + p];
			if (y < 0 || K->ident[y] < K->ident[i] || (K->ident[y] == K->ident[i] && q < p))
				continue;
			links[2 * nlinks] = K->ident[i];
			links[2 * nlinks + 1] = (uint64_t)p << 56 | (uint64_t)(unsigned)y << 8 | q;
			nlinks++;
		}
	}
	qsort(links, nlinks, 2 * sizeof(uint64_t), cmp_slot_ident);
	for (i = 0; i < nlinks; i++) {
		uint64_t x = links[2 * i + 1];
		fprintf(f, "link 0x%016" PRIx64 " %u 0x%016" PRIx64 " %u\n", links[2 * i], (unsigned)(x >> 56),
			K->ident[(x >> 8) & 0xffffffffffULL], (unsigned)(x & 0xff));
	}
	free(links);
	if (fflush(f) == 0 && !ferror(f) && (fd = fileno(f)) >= 0 && fsync(fd) == 0)
		ret = 0;
	if (fclose(f))
		ret = -1;
	if (!ret && rename(tmp, path))
		ret = -1;
	if (ret) {
		int e = errno;
		unlink(tmp);
		errno = e;
	}
	return ret;
}


static int cmp_u64p(const void *a, const void *b)
{
	return cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

/* ---------------- 14.3 identification at first sight (docs/hdor.md section 7) */

typedef struct {
	uint64_t guid;
	uint8_t type, np;
	osm_node_t *node;	/* NULL: a phantom */
	const char *desc;
} hsnode_t;

typedef struct {
	int a, b;		/* hsnode_t indices */
	uint8_t pa, pb;
} hslink_t;

typedef struct {
	hsnode_t *nd;
	hslink_t *lk;
	uint32_t nnd, cnd, nlk, clk;
	pmask_t *used;		/* per node: ports cabled now or given to a phantom cable */
} hsight_t;

static int sight_node(hsight_t *S, uint64_t guid, uint8_t type, uint8_t np, osm_node_t *node, const char *desc)
{
	uint32_t cu = S->cnd;	/* the two arrays grow together */
	if (grow(&S->nd, S->nnd, &S->cnd, sizeof(*S->nd)) || grow(&S->used, S->nnd, &cu, sizeof(*S->used)))
		return -1;
	S->nd[S->nnd] = (hsnode_t){ guid, type, np, node, desc };
	memset(&S->used[S->nnd], 0, sizeof(pmask_t));
	return (int)S->nnd++;
}

static int sight_link(hsight_t *S, int a, unsigned pa, int b, unsigned pb)
{
	if (grow(&S->lk, S->nlk, &S->clk, sizeof(*S->lk)))
		return -1;
	S->lk[S->nlk++] = (hslink_t){ a, b, (uint8_t)pa, (uint8_t)pb };
	mask_set(&S->used[a], pa);
	mask_set(&S->used[b], pb);
	return 0;
}

/* the lowest port of node x that is not cabled (now or by a phantom cable): 0 when none */
static unsigned free_port(const hsight_t *S, int x)
{
	unsigned p;
	for (p = 1; p < S->nd[x].np; p++)
		if (!(S->used[x].m[p >> 6] & (1ULL << (p & 63))))
			return p;
	return 0;
}

/* The complete KNS that the fabric of P (collect + structure) is a degraded copy of, or NULL
 * (ctx->reason).  Phase 1 finds dimensions (classes of parallel indirect networks) and router
 * coordinates from what is there and declines unless every place is decided; phase 2 adds the
 * phantoms (missing routers with an HCA each, missing single-switch networks, missing cables)
 * and returns a KNS whose coordinates kns_build() then assigns by docs sections 2-3 (phantoms
 * have the largest GUIDs, so they decide nothing a present device could). */
static hdor_kns_t *first_sight(hdor_ctx_t *ctx, hdor_pass_t *P, unsigned *nphr, unsigned *nphs, unsigned *nphl)
{
	unsigned n = 0, k = 0, d, e, i, j;
	uint32_t l, full = 1, lines, nsw_multi = 0;
	int r, g, rs = -1, ok = 0;
	int *cnt = NULL, *stamp = NULL, *uf = NULL, *cls = NULL, *val = NULL, *pc = NULL, *pt_of = NULL;
	int *line_grp = NULL, *ph_sw = NULL, *sw_node = NULL, *ca_node = NULL, *ph_r = NULL;
	uint64_t *keys = NULL;
	pmask_t *cm = NULL;
	uint32_t nkeys = 0, ckeys = 0;
	hsight_t S = { 0 };
	hdor_kns_t *K = NULL;
	uint64_t phantom = HDOR_PHANTOM;

	*nphr = *nphs = *nphl = 0;
#define NO(...) do { declinec(ctx, HD_NOT_KNS, __VA_ARGS__); goto out; } while (0)
#define AMBIG(...) do { declinec(ctx, HD_FIRST_SIGHT, __VA_ARGS__); goto out; } while (0)
#define OOM() do { decline(ctx, "out of memory"); goto out; } while (0)
	for (r = 0; r < P->nr; r++)
		if (P->rt[r].gn > n)
			n = P->rt[r].gn;
	for (g = 0; g < P->ng; g++) {
		if (P->grp[g].mn > k)
			k = P->grp[g].mn;
		if (P->grp[g].sn > 1)
			nsw_multi = 1;
	}
	if (!P->nr || n < 1 || n > HDOR_MAX_N || k < 2 || k > 255)
		NO("no KNS shape (routers in up to %u indirect networks, networks of up to %u routers)", n, k);
	for (i = 0; i < n; i++) {
		if (full > 65536 / k)
			NO("k^n = %u^%u is beyond what first sight identifies", k, n);
		full *= k;
	}
	if ((uint32_t)P->nr > full)
		NO("%d routers, more than k^n = %u^%u", P->nr, k, n);
	for (g = 0; g < P->ng; g++)
		if (P->grp[g].mn < 2) {
			int w0 = P->gsw[P->grp[g].soff];
			NO("the indirect network of switch 0x%016" PRIx64 " '%s' has %u router(s): too few to place",
			   P->sw[w0].guid, ndesc(P->sw[w0].node), P->grp[g].mn);
		}
	/* two lines of a KNS share at most one router */
	cnt = xcalloc(P->ng, sizeof(int));
	stamp = xcalloc(P->ng, sizeof(int));
	if (!cnt || !stamp)
		OOM();
	for (g = 0; g < P->ng; g++) {
		const hgrp_t *G = &P->grp[g];
		for (j = 0; j < G->mn; j++) {
			const hrtr_t *R = &P->rt[P->gmem[G->moff + j]];
			for (l = 0; l < R->gn; l++) {
				int h = (int)P->rgl[R->goff + l];
				if (h == g)
					continue;
				if (stamp[h] != g + 1) {
					stamp[h] = g + 1;
					cnt[h] = 0;
				}
				if (++cnt[h] >= 2) {
					int a = P->gsw[G->soff], b = P->gsw[P->grp[h].soff];
					NO("the indirect networks of switches 0x%016" PRIx64 " and 0x%016" PRIx64 " share routers",
					   P->sw[a].guid, P->sw[b].guid);
				}
			}
		}
	}
	/* the seed: the router with the smallest GUID whose n networks all have k routers */
	for (r = 0; r < P->nr; r++) {
		const hrtr_t *R = &P->rt[r];
		if (R->gn != n || (rs >= 0 && P->rt[rs].guid < R->guid))
			continue;
		for (l = 0; l < R->gn && P->grp[P->rgl[R->goff + l]].mn == k; l++) ;
		if (l == R->gn)
			rs = r;
	}
	if (rs < 0)
		NO("no router has all %u of its indirect networks with %u routers", n, k);

	/* dimensions: networks G1, G2 without a common router joined by two or more networks (each
	 * meeting both) are parallel; the classes of that relation are the dimensions */
	for (g = 0; g < P->ng; g++) {
		const hgrp_t *H = &P->grp[g];
		uint32_t a, b;
		for (a = 0; a < H->mn; a++)
			for (b = a + 1; b < H->mn; b++) {
				const hrtr_t *A = &P->rt[P->gmem[H->moff + a]], *B = &P->rt[P->gmem[H->moff + b]];
				uint32_t x, y;
				for (x = 0; x < A->gn; x++)
					for (y = 0; y < B->gn; y++) {
						uint64_t g1 = P->rgl[A->goff + x], g2 = P->rgl[B->goff + y];
						if ((int)g1 == g || (int)g2 == g || g1 == g2)
							continue;
						if (nkeys == ckeys) {
							uint64_t *nk = realloc(keys, (ckeys = ckeys ? 2 * ckeys : 4096) * sizeof(*keys));
							if (!nk)
								OOM();
							keys = nk;
						}
						keys[nkeys++] = g1 < g2 ? g1 << 32 | g2 : g2 << 32 | g1;
					}
			}
	}
	uf = xcalloc(P->ng > P->nr ? P->ng : P->nr, sizeof(int));
	cls = xcalloc(P->ng, sizeof(int));
	if (!uf || !cls)
		OOM();
	for (g = 0; g < P->ng; g++)
		uf[g] = g;
	qsort(keys, nkeys, sizeof(*keys), cmp_u64p);
	for (l = 0; l < nkeys; l++) {
		uint32_t m = l;
		while (m + 1 < nkeys && keys[m + 1] == keys[l])
			m++;
		if (m > l) {
			int a = uf_find(uf, (int)(keys[l] >> 32)), b = uf_find(uf, (int)(keys[l] & 0xffffffffu));
			if (a != b)
				uf[a > b ? a : b] = a > b ? b : a;
		}
		l = m;
	}
	/* class labels: the seed's networks by key (phase 1 only: the final dimensions are docs 2) */
	{
		int sg[HDOR_MAX_N], nc = 0;
		const hrtr_t *R = &P->rt[rs];
		for (d = 0; d < n; d++)
			sg[d] = (int)P->rgl[R->goff + d];
		g_sort_pass = P;
		qsort(sg, n, sizeof(int), cmp_group_key);
		for (g = 0; g < P->ng; g++)
			cls[g] = -1;
		for (d = 0; d < n; d++) {
			int root = uf_find(uf, sg[d]);
			for (g = 0; g < P->ng; g++)
				if (uf_find(uf, g) == root) {
					if (cls[g] >= 0)
						NO("router 0x%016" PRIx64 " '%s' is in two parallel indirect networks",
						   P->rt[rs].guid, ndesc(P->sw[P->rt[rs].sw].node));
					cls[g] = (int)d;
					nc++;
				}
		}
		if (nc != P->ng) {
			for (g = 0; g < P->ng && cls[g] >= 0; g++) ;
			NO("the indirect network of switch 0x%016" PRIx64 " is parallel to none of router 0x%016" PRIx64 "'s",
			   P->sw[P->gsw[P->grp[g].soff]].guid, P->rt[rs].guid);
		}
		for (r = 0; r < P->nr; r++) {
			unsigned seen = 0;
			for (l = 0; l < P->rt[r].gn; l++) {
				unsigned bit = 1u << cls[P->rgl[P->rt[r].goff + l]];
				if (seen & bit)
					NO("router 0x%016" PRIx64 " '%s' is in two parallel indirect networks",
					   P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node));
				seen |= bit;
			}
		}
	}

	/* phase-1 coordinates: per dimension d, the routers joined through networks of the other
	 * dimensions share coordinate d; the seed's network of dimension d numbers them; a part
	 * without a router of that network takes the one value its dimension-d networks leave */
	pc = xcalloc((size_t)P->nr * n, sizeof(int));
	val = xcalloc(P->nr, sizeof(int));
	cm = xcalloc(P->nr, sizeof(pmask_t));
	if (!pc || !val || !cm)
		OOM();
	for (d = 0; d < n; d++) {
		const hgrp_t *A = NULL;
		int changed = 1, left;
		for (l = 0; l < P->rt[rs].gn; l++)
			if (cls[P->rgl[P->rt[rs].goff + l]] == (int)d)
				A = &P->grp[P->rgl[P->rt[rs].goff + l]];
		for (r = 0; r < P->nr; r++)
			val[r] = -1;
		join_other_dimensions(P, uf, cls, (int)d);
		for (j = 0; j < A->mn; j++) {
			int c = uf_find(uf, P->gmem[A->moff + j]);
			if (val[c] >= 0)
				NO("routers 0x%016" PRIx64 " and 0x%016" PRIx64 " of one indirect network share a hyperplane",
				   P->rt[P->gmem[A->moff + val[c]]].guid, P->rt[P->gmem[A->moff + j]].guid);
			val[c] = (int)j;
		}
		while (changed) {
			/* per part (its root): the values its routers' dimension-d lines have taken */
			changed = 0;
			for (r = 0; r < P->nr; r++) {
				memset(&cm[r], 0, sizeof(pmask_t));
				for (i = 0; i < k; i++)
					mask_set(&cm[r], i);
			}
			for (r = 0; r < P->nr; r++) {
				int c = uf_find(uf, r);
				if (val[c] >= 0)
					continue;
				for (l = 0; l < P->rt[r].gn; l++) {
					const hgrp_t *G = &P->grp[P->rgl[P->rt[r].goff + l]];
					if (cls[P->rgl[P->rt[r].goff + l]] != (int)d)
						continue;
					for (j = 0; j < G->mn; j++) {
						int v = val[uf_find(uf, P->gmem[G->moff + j])];
						if (v >= 0)
							cm[c].m[v >> 6] &= ~(1ULL << (v & 63));
					}
				}
			}
			for (r = 0; r < P->nr; r++) {
				unsigned nb = 0;
				if (uf_find(uf, r) != r || val[r] >= 0)
					continue;
				for (i = 0; i < k; i++)
					nb += !!(cm[r].m[i >> 6] & (1ULL << (i & 63)));
				if (nb == 0)
					NO("router 0x%016" PRIx64 " '%s' has no place left in its dimension-%u line",
					   P->rt[r].guid, ndesc(P->sw[P->rt[r].sw].node), d);
				if (nb == 1) {
					for (i = 0; !(cm[r].m[i >> 6] & (1ULL << (i & 63))); i++) ;
					val[r] = (int)i;
					changed = 1;
				}
			}
		}
		for (r = 0, left = -1; r < P->nr; r++) {
			if (val[uf_find(uf, r)] < 0 && left < 0)
				left = r;
			pc[r * n + d] = val[uf_find(uf, r)];
		}
		if (left >= 0)
			AMBIG("the place of router 0x%016" PRIx64 " '%s' is not decided by the fabric (more than one "
			   "missing device or cable could be there): give hdor the description hdor.conf",
			   P->rt[left].guid, ndesc(P->sw[P->rt[left].sw].node));
	}
	/* a KNS labelling: routers at distinct points, every network on one line */
	pt_of = xcalloc(full, sizeof(int));
	lines = full / k;
	line_grp = xcalloc((size_t)n * lines, sizeof(int));
	if (!pt_of || !line_grp)
		OOM();
	for (i = 0; i < full; i++)
		pt_of[i] = -1;
	for (i = 0; i < n * lines; i++)
		line_grp[i] = -1;
	for (r = 0; r < P->nr; r++) {
		uint32_t lin = 0;
		for (d = n; d-- > 0;)
			lin = lin * k + (uint32_t)pc[r * n + d];
		if (pt_of[lin] >= 0)
			NO("routers 0x%016" PRIx64 " and 0x%016" PRIx64 " would have the same coordinates",
			   P->rt[pt_of[lin]].guid, P->rt[r].guid);
		pt_of[lin] = r;
	}
#define LINE(c, d_) ({ uint32_t _li = 0; unsigned _e; for (_e = n; _e-- > 0;) if (_e != (d_)) _li = _li * k + (uint32_t)(c)[_e]; _li; })
	for (g = 0; g < P->ng; g++) {
		const hgrp_t *G = &P->grp[g];
		int m0 = P->gmem[G->moff];
		uint32_t li;
		d = (unsigned)cls[g];
		for (j = 0; j < G->mn; j++) {
			int m = P->gmem[G->moff + j];
			for (e = 0; e < n; e++)
				if (e != d && pc[m * n + e] != pc[m0 * n + e])
					NO("the routers of the indirect network of switch 0x%016" PRIx64 " are not on one line",
					   P->sw[P->gsw[G->soff]].guid);
		}
		li = LINE(pc + m0 * n, d);
		if (line_grp[d * lines + li] >= 0)
			AMBIG("the indirect networks of switches 0x%016" PRIx64 " and 0x%016" PRIx64 " are on one line "
			   "(a network split in two?): give hdor the description hdor.conf",
			   P->sw[P->gsw[P->grp[line_grp[d * lines + li]].soff]].guid, P->sw[P->gsw[G->soff]].guid);
		line_grp[d * lines + li] = g;
	}

	/* phase 2: the complete KNS.  Nodes there now, by GUID, then the phantoms: routers by point,
	 * single-switch networks by dimension and line, an HCA per phantom router */
	sw_node = xcalloc(P->nsw, sizeof(int));
	ca_node = xcalloc(P->nca, sizeof(int));
	ph_r = xcalloc(full, sizeof(int));
	ph_sw = xcalloc((size_t)n * lines, sizeof(int));
	if (!sw_node || !ca_node || !ph_r || !ph_sw)
		OOM();
	{
		hnode_ord_t *ord = xcalloc((size_t)P->nsw + P->nca, sizeof(*ord));
		int x;
		if (!ord)
			OOM();
		for (x = 0; x < P->nsw; x++)
			ord[x] = (hnode_ord_t){ P->sw[x].guid, N_SWITCH, x };
		for (x = 0; x < P->nca; x++)
			ord[P->nsw + x] = (hnode_ord_t){ P->ca[x].guid, N_CA, x };
		qsort(ord, (size_t)P->nsw + P->nca, sizeof(*ord), cmp_node_ord);
		for (x = 0; x < P->nsw + P->nca; x++) {
			osm_node_t *node = ord[x].kind == N_SWITCH ? P->sw[ord[x].idx].node : P->ca[ord[x].idx].node;
			int id = sight_node(&S, ord[x].guid, (uint8_t)ord[x].kind, osm_node_get_num_physp(node), node, ndesc(node));
			if (id < 0) {
				free(ord);
				OOM();
			}
			if (ord[x].kind == N_SWITCH)
				sw_node[ord[x].idx] = id;
			else
				ca_node[ord[x].idx] = id;
			/* ports cabled now (healthy or not): never given to a phantom cable */
			{
				unsigned p;
				for (p = 1; p < S.nd[id].np; p++) {
					osm_physp_t *ph = osm_node_get_physp_ptr(node, (uint8_t)p);
					if (ph && ph->p_remote_physp)
						mask_set(&S.used[id], p);
				}
			}
		}
		free(ord);
	}
	for (i = 0; i < full; i++) {
		ph_r[i] = -1;
		if (pt_of[i] < 0) {
			ph_r[i] = sight_node(&S, phantom++, N_SWITCH, (uint8_t)(n + 2), NULL, "");
			if (ph_r[i] < 0)
				OOM();
			(*nphr)++;
		}
	}
	for (i = 0; i < n * lines; i++) {
		ph_sw[i] = -1;
		if (line_grp[i] < 0) {
			if (nsw_multi)
				AMBIG("an indirect network of dimension-class %u is missing whole, and networks here have "
				   "several switches: give hdor the description hdor.conf", i / lines);
			ph_sw[i] = sight_node(&S, phantom++, N_SWITCH, (uint8_t)(k + 1), NULL, "");
			if (ph_sw[i] < 0)
				OOM();
			(*nphs)++;
		}
	}
	/* the cables there now */
	for (r = 0; r < P->nsw; r++) {
		for (l = P->sw[r].loff; l < P->sw[r].loff + P->sw[r].ln; l++) {
			const hlink_t *lk = &P->links[l];
			int a = sw_node[r], b = lk->kind == N_CA ? ca_node[lk->idx] : sw_node[lk->idx];
			if (lk->kind == N_SWITCH && (b < a || (b == a && lk->rport < lk->port)))
				continue;	/* a switch-switch cable once */
			if (sight_link(&S, a, lk->port, b, lk->rport))
				OOM();
		}
	}
	/* phantom HCAs, then the missing cables: every router on each of its lines */
	for (i = 0; i < full; i++)
		if (ph_r[i] >= 0) {
			int h = sight_node(&S, 0, N_CA, 2, NULL, "");
			if (h < 0 || sight_link(&S, ph_r[i], 1, h, 1))
				OOM();
		}
	{
		uint32_t pass_;
		for (pass_ = 0; pass_ < 2; pass_++)	/* routers there now (GUID order), then phantoms (point order) */
			for (i = 0; i < (pass_ ? full : (uint32_t)P->nr); i++) {
				int c[HDOR_MAX_N], x, rr = -1;
				uint32_t pt = i;
				if (pass_) {
					if (ph_r[i] < 0)
						continue;
					x = ph_r[i];
					for (d = 0; d < n; d++, pt /= k)
						c[d] = (int)(pt % k);
				} else {
					rr = (int)i;
					x = sw_node[P->rt[rr].sw];
					for (d = 0; d < n; d++)
						c[d] = pc[rr * n + d];
				}
				for (d = 0; d < n; d++) {
					uint32_t li = LINE(c, d);
					int G = line_grp[d * lines + li], sw, px, ps;
					if (rr >= 0 && G >= 0) {
						for (l = 0; l < P->rt[rr].gn && (int)P->rgl[P->rt[rr].goff + l] != G; l++) ;
						if (l < P->rt[rr].gn)
							continue;	/* a member already */
					}
					if (rr >= 0 && G >= 0)
						(*nphl)++;	/* (a cable to a missing network goes with it) */
					if (G < 0) {
						sw = ph_sw[d * lines + li];
						ps = c[d] + 1;
					} else {
						const hgrp_t *GG = &P->grp[G];
						if (GG->sn == 1)
							sw = sw_node[P->gsw[GG->soff]];
						else {
							/* a tree: the one switch with fewer router cables than the most */
							unsigned most = 0, cand = 0, cn;
							int pick_ = -1;
							for (j = 0; j < GG->sn; j++) {
								int w = P->gsw[GG->soff + j];
								cn = 0;
								for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
									cn += P->links[l].kind == N_SWITCH && P->sw[P->links[l].idx].router >= 0;
								if (cn > most)
									most = cn;
							}
							for (j = 0; j < GG->sn; j++) {
								int w = P->gsw[GG->soff + j];
								cn = 0;
								for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
									cn += P->links[l].kind == N_SWITCH && P->sw[P->links[l].idx].router >= 0;
								if (cn && cn < most) {
									cand++;
									pick_ = w;
								}
							}
							if (cand != 1)
								AMBIG("a router's cable into the indirect network of switch 0x%016" PRIx64
								   " is missing, and %u of its switches could take it: give hdor the "
								   "description hdor.conf", P->sw[P->gsw[GG->soff]].guid, cand);
							sw = sw_node[pick_];
						}
						ps = (int)free_port(&S, sw);
						if (!ps)
							NO("switch 0x%016" PRIx64 " has no free port for a missing cable", S.nd[sw].guid);
					}
					px = rr >= 0 ? (int)free_port(&S, x) : (int)(2 + d);
					if (!px)
						NO("router 0x%016" PRIx64 " has no free port for a missing cable", S.nd[x].guid);
					if (sight_link(&S, x, (unsigned)px, sw, (unsigned)ps))
						OOM();
				}
			}
	}
#undef LINE
	/* "a few" faults: at most an eighth of the routers, of the lines, of the routers' cables */
	if (*nphr > (full / 8 ? full / 8 : 1) || *nphs > (n * lines / 8 ? n * lines / 8 : 1) ||
	    *nphl > (n * full / 8 ? n * full / 8 : 1))
		AMBIG("%u router(s), %u indirect network(s) and %u cable(s) missing: more than first sight "
		   "completes (an eighth of each)", *nphr, *nphs, *nphl);
	/* phantom HCAs get their GUIDs last, in the order of their routers */
	for (i = 0; i < S.nnd; i++)
		if (!S.nd[i].node && S.nd[i].type == N_CA)
			S.nd[i].guid = phantom++;

	/* into a KNS (structure only; kns_build assigns coordinates) */
	K = kns_alloc(S.nnd, k, n, 1, K_SIGHT);
	if (!K)
		OOM();
	/* S's nodes are in GUID order: present ones (sorted), then phantoms (ascending) */
	for (i = 0; i < K->nn; i++) {
		K->guid[i] = K->ident[i] = S.nd[i].guid;
		K->type[i] = S.nd[i].type;
		K->np[i] = S.nd[i].np;
		K->dim[i] = -1;
		K->desc[i] = strdup(S.nd[i].desc);
		if (!K->desc[i])
			OOM();
		K->poff[i + 1] = K->poff[i] + K->np[i];
	}
	for (i = 1; i < K->nn; i++)
		if (K->guid[i] <= K->guid[i - 1])
			NO("GUID 0x%016" PRIx64 " is in the range hdor keeps for missing devices", K->guid[i - 1]);
	if (kns_alloc_slots(K))
		OOM();
	for (l = 0; l < S.nlk; l++) {
		const hslink_t *x = &S.lk[l];
		K->peer[K->poff[x->a] + x->pa] = x->b;
		K->pport[K->poff[x->a] + x->pa] = x->pb;
		K->peer[K->poff[x->b] + x->pb] = x->a;
		K->pport[K->poff[x->b] + x->pb] = x->pa;
	}
	ok = 1;
#undef NO
#undef AMBIG
#undef OOM
out:
	free(cnt);
	free(stamp);
	free(uf);
	free(cls);
	free(val);
	free(cm);
	free(pc);
	free(pt_of);
	free(line_grp);
	free(ph_sw);
	free(ph_r);
	free(sw_node);
	free(ca_node);
	free(keys);
	free(S.nd);
	free(S.lk);
	free(S.used);
	if (!ok) {
		kns_free(K);
		return NULL;
	}
	return K;
}


/* ---------------- 14.4 where the files are, reading them at start, remembering */

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* hdor.conf beside the opensm.conf OpenSM was started with (-F; OpenSM's default is
 * /etc/opensm/opensm.conf), else /etc/opensm/hdor.conf; the state in OpenSM's cache directory */
static void kns_paths(hdor_ctx_t *ctx)
{
	const char *cf = ctx->osm->subn.opt.config_file, *cache = getenv("OSM_CACHE_DIR");
	const char *slash = cf ? strrchr(cf, '/') : NULL;
	char cand[4096];

	ctx->conf_path[0] = '\0';
	if (cf && *cf) {
		if (slash)
			snprintf(cand, sizeof(cand), "%.*s/%s", (int)(slash - cf), cf, HDOR_CONF_NAME);
		else
			snprintf(cand, sizeof(cand), "%s", HDOR_CONF_NAME);
		/* (an opensm.conf itself called hdor.conf is OpenSM's, not a description) */
		if (access(cand, F_OK) == 0 && !same_file(cand, cf))
			snprintf(ctx->conf_path, sizeof(ctx->conf_path), "%s", cand);
	}
	if (!ctx->conf_path[0] && access(HDOR_CONF_DIR "/" HDOR_CONF_NAME, F_OK) == 0)
		snprintf(ctx->conf_path, sizeof(ctx->conf_path), "%s", HDOR_CONF_DIR "/" HDOR_CONF_NAME);
	if (!cache || !*cache)
		cache = OSM_DEFAULT_CACHE_DIR;
	snprintf(ctx->state_path, sizeof(ctx->state_path), "%s/%s", cache, HDOR_STATE_NAME);
}

static void log_error(hdor_ctx_t *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void log_error(hdor_ctx_t *ctx, int code, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	OSM_LOG(&ctx->osm->log, OSM_LOG_ERROR, "ERR HD%02X: hdor: %s\n", code, msg);
}

/* at the first pass: the KNS of hdor.conf, else the remembered one */
static void kns_load(hdor_ctx_t *ctx)
{
	hdor_kns_t *K = NULL;
	int rc;

	ctx->loaded = 1;
	kns_paths(ctx);
	if (ctx->conf_path[0]) {
		rc = kns_read(ctx, ctx->conf_path, K_CONF, &K);
		if (rc < 0) {
			if (ctx->code == HD_NOMEM) {
				ctx->loaded = 0;	/* try again at the next pass */
				return;
			}
			log_error(ctx, ctx->code, "%s; hdor declines until it is fixed or removed (and OpenSM restarted)",
				  ctx->reason);
			snprintf(ctx->conf_bad, sizeof(ctx->conf_bad), "%s", ctx->reason);
			return;
		}
		if (rc == 0) {
			ctx->kns = K;
			ctx->kns_dirty = 1;	/* remembered too (a restart without hdor.conf knows it) */
			OSM_LOG(&ctx->osm->log, OSM_LOG_INFO, "hdor: the KNS is described by %s: k=%u n=%u, %u devices\n",
				ctx->conf_path, K->k, K->n, K->nn);
			return;
		}
	}
	rc = kns_read(ctx, ctx->state_path, K_STATE, &K);
	if (rc < 0) {
		if (ctx->code == HD_NOMEM)
			ctx->loaded = 0;
		else
			log_error(ctx, HD_STATE_BAD, "the remembered state is ignored: %s", ctx->reason);
		return;
	}
	if (rc == 0) {
		ctx->kns = K;
		OSM_LOG(&ctx->osm->log, OSM_LOG_INFO, "hdor: remembered KNS read from %s: k=%u n=%u, %u devices\n",
			ctx->state_path, K->k, K->n, K->nn);
	}
}

/* two KNS with the same devices, cables, LIDs and coordinates (the file would not change) */
static int kns_same(const hdor_kns_t *A, const hdor_kns_t *B)
{
	uint32_t ns;
	if (!A || !B || A->nn != B->nn || A->k != B->k || A->n != B->n || A->s != B->s)
		return 0;
	ns = A->poff[A->nn];
	return ns == B->poff[B->nn] && !memcmp(A->guid, B->guid, A->nn * sizeof(uint64_t)) &&
	    !memcmp(A->ident, B->ident, A->nn * sizeof(uint64_t)) && !memcmp(A->np, B->np, A->nn) &&
	    !memcmp(A->peer, B->peer, ns * sizeof(int)) && !memcmp(A->pport, B->pport, ns) &&
	    !memcmp(A->plid, B->plid, ns * sizeof(uint16_t)) && !memcmp(A->plmc, B->plmc, ns) &&
	    !memcmp(A->coord, B->coord, (size_t)A->nn * A->n) && !memcmp(A->dim, B->dim, A->nn * sizeof(int));
}

/* the KNS hdor now knows is K (the old one is freed); remembered on disk after the pass */
static void kns_adopt(hdor_ctx_t *ctx, hdor_kns_t *K)
{
	if (ctx->kns != K) {
		if (!kns_same(ctx->kns, K))
			ctx->kns_dirty = 1;
		kns_free(ctx->kns);
		ctx->kns = K;
	}
}

/* after a pass that configured tables: write the remembered state when the KNS changed, and
 * hdor.conf when a device of it was replaced */
static void kns_persist(hdor_ctx_t *ctx)
{
	if (ctx->conf_dirty && ctx->kns && ctx->conf_path[0]) {
		ctx->conf_dirty = 0;
		if (kns_write(ctx->kns, ctx->conf_path, "the KNS for the hdor routing engine, updated by hdor after a "
			      "replacement (was= names the device a new one replaced)"))
			log_error(ctx, HD_STATE_IO, "cannot update %s: %s (hdor finds the replacement again at the next "
				  "start)", ctx->conf_path, strerror(errno));
		else
			OSM_LOG(&ctx->osm->log, OSM_LOG_INFO, "hdor: %s updated (a replaced device)\n", ctx->conf_path);
	}
	if (!ctx->kns_dirty || !ctx->kns || !ctx->state_path[0])
		return;
	ctx->kns_dirty = 0;
	if (kns_write(ctx->kns, ctx->state_path, "the KNS the hdor routing engine remembers (hdor reads it at "
		      "start when there is no hdor.conf; delete it to forget)"))
		log_error(ctx, HD_STATE_IO, "cannot write %s: %s (a restart will not know this KNS)",
			  ctx->state_path, strerror(errno));
}

/* descriptions of the phantoms of a KNS identified at first sight, by their coordinates */
static void phantom_descs(hdor_kns_t *K)
{
	uint32_t i;
	for (i = 0; i < K->nn; i++) {
		char buf[96], *c = buf;
		unsigned e, first = 1;
		if (K->guid[i] < HDOR_PHANTOM)
			continue;
		c += snprintf(c, 40, "missing %s%s", K->role[i] == R_ROUTER ? "router" : K->role[i] == R_SWITCH ?
			      "switch" : "HCA", K->role[i] == R_SWITCH ? " dim=" : " ");
		if (K->role[i] == R_SWITCH)
			c += snprintf(c, 8, "%d ", K->dim[i]);
		*c++ = '[';
		for (e = K->n; e-- > 0;) {
			if (K->role[i] == R_SWITCH && (int)e == K->dim[i])
				continue;
			c += snprintf(c, 8, first ? "%u" : ",%u", K->coord[(size_t)i * K->n + e]);
			first = 0;
		}
		*c++ = ']';
		*c = '\0';
		free(K->desc[i]);
		K->desc[i] = strdup(buf);	/* NULL (out of memory) prints as "" */
		if (!K->desc[i])
			K->desc[i] = calloc(1, 1);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* 15. multicast trees (docs/hdor.md section 8)                                               */

/* A group's spanning tree is the union of hdor's own unicast routes from its members' switches
 * to one root switch: a switch's parent is where its new LFT sends the root's LID.  So it needs
 * no hop matrices (OpenSM's min-hop tree is built on them, and on a large KNS they cost most of
 * a pass), it follows the routes' dimension order, it avoids what a degraded pass avoids, and it
 * has no cycle (the routes to one LID form a tree).  The root: the middle switch of the longest
 * shortest path between two members' switches (two breadth-first searches), moved down while it
 * has a single branch and no member port. */

typedef struct {
	osm_opensm_t *osm;
	uint16_t mlid;
	int nsw;
	osm_switch_t **sw;	/* by index (OpenSM's switch table order) */
	hgraph_t g;		/* the working links between switches that forward the MLID */
	int *by_lid;		/* switch base LID -> index, -1 */
	int *dist, *prev, *queue;
} hmc_t;

static void mc_free(hmc_t *M)
{
	void *all[] = { M->by_lid, M->dist, M->prev, M->queue };
	graph_free(&M->g);
	free_all(all, sizeof(all) / sizeof(all[0]));
}

/* switch index of the far end of switch x's port p for this group, or -1: a healthy link to a
 * switch whose multicast table holds the MLID (*rport: the port there) */
static int mc_link(const hmc_t *M, int x, unsigned p, uint8_t *rport)
{
	osm_physp_t *ph, *rp;
	osm_switch_t *y;
	int i;
	if (p == 0 || p >= M->sw[x]->num_ports)
		return -1;
	ph = osm_node_get_physp_ptr(M->sw[x]->p_node, (uint8_t)p);
	if (!ph || !osm_link_is_healthy(ph))
		return -1;
	rp = osm_physp_get_remote(ph);
	if (!rp || !rp->p_node || !(y = rp->p_node->sw))
		return -1;
	i = M->by_lid[cl_ntoh16(osm_node_get_base_lid(rp->p_node, 0))];
	if (i < 0 || M->sw[i] != y || !osm_switch_supports_mcast(y) || !y->mcast_tbl.p_mask_tbl ||
	    M->mlid > y->mcast_tbl.max_mlid_ho)
		return -1;
	if (rport)
		*rport = osm_physp_get_port_num(rp);
	return i;
}

static int mc_graph(hmc_t *M)
{
	cl_qmap_t *tbl = &M->osm->subn.sw_guid_tbl;
	cl_map_item_t *it;
	int i, n = 0;
	uint32_t e = 0;
	M->nsw = (int)cl_qmap_count(tbl);
	M->sw = M->g.sw = xcalloc((size_t)M->nsw, sizeof(*M->sw));
	M->by_lid = malloc((IB_LID_UCAST_END_HO + 1) * sizeof(int));
	M->g.off = xcalloc((size_t)M->nsw + 1, sizeof(uint32_t));
	M->dist = xcalloc((size_t)M->nsw, sizeof(int));
	M->prev = xcalloc((size_t)M->nsw, sizeof(int));
	M->queue = xcalloc((size_t)M->nsw, sizeof(int));
	if (!M->sw || !M->by_lid || !M->g.off || !M->dist || !M->prev || !M->queue)
		return -1;
	memset(M->by_lid, 0xff, (IB_LID_UCAST_END_HO + 1) * sizeof(int));
	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl) && n < M->nsw; it = cl_qmap_next(it)) {
		osm_switch_t *sw = (osm_switch_t *)it;
		uint16_t lid = cl_ntoh16(osm_node_get_base_lid(sw->p_node, 0));
		M->sw[n] = sw;
		if (lid && lid <= IB_LID_UCAST_END_HO)
			M->by_lid[lid] = n;
		n++;
	}
	M->nsw = M->g.n = n;
	for (i = 0; i < n; i++)
		e += M->sw[i]->num_ports;
	M->g.idx = xcalloc(e, sizeof(int));
	M->g.port = xcalloc(e, 1);
	if (!M->g.idx || !M->g.port)
		return -1;
	for (i = 0, e = 0; i < n; i++) {
		unsigned p;
		M->g.off[i] = e;
		for (p = 1; p < M->sw[i]->num_ports; p++) {
			int y = mc_link(M, i, p, NULL);
			if (y >= 0) {
				M->g.idx[e] = y;
				M->g.port[e++] = (uint8_t)p;
			}
		}
	}
	M->g.off[n] = e;
	return 0;
}

/* hops from src to every switch (M->dist, -1 unreached; M->prev: the switch before) */
static void mc_bfs(hmc_t *M, int src)
{
	int h = 0, t = 0, i;
	for (i = 0; i < M->nsw; i++)
		M->dist[i] = -1;
	M->dist[src] = 0;
	M->prev[src] = -1;
	M->queue[t++] = src;
	while (h < t) {
		int x = M->queue[h++];
		uint32_t a;
		for (a = M->g.off[x]; a < M->g.off[x + 1]; a++) {
			int y = M->g.idx[a];
			if (M->dist[y] < 0) {
				M->dist[y] = M->dist[x] + 1;
				M->prev[y] = x;
				M->queue[t++] = y;
			}
		}
	}
}

/* the member switch farthest from the last search's source (the first in index order of
 * equals; -1 when none is reached) */
static int mc_farthest(const hmc_t *M, const uint8_t *memb)
{
	int i, best = -1;
	for (i = 0; i < M->nsw; i++)
		if (memb[i] && M->dist[i] >= 0 && (best < 0 || M->dist[i] > M->dist[best]))
			best = i;
	return best;
}

static ib_api_status_t hdor_mcast_build_stree(void *context, osm_mgrp_box_t *mbox)
{
	hdor_ctx_t *ctx = context;
	osm_opensm_t *osm;
	hmc_t M;
	cl_qlist_t list;
	cl_qmap_t map;
	cl_list_item_t *li;
	uint8_t *memb = NULL, *on = NULL, *up = NULL, *dn = NULL, *mport = NULL;
	int *msw = NULL, *par = NULL, *seen = NULL, *path = NULL;
	unsigned nmem = 0, lost = 0, reached = 0, tree = 0, depth = 0, i;
	int root, a, b, x, ret = -1;
	uint16_t root_lid;
	struct timespec t0;

	if (!ctx || !hdor_layout_ok(ctx->osm)) {
		hdor_layout_complain();
		return IB_ERROR;
	}
	osm = ctx->osm;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(&M, 0, sizeof(M));
	M.osm = osm;
	M.mlid = mbox->mlid;
	/* an earlier engine's (OpenSM's) tree object; OpenSM has cleared this MLID's MFT entries */
	osm_purge_mtree(&osm->sm, mbox);
	if (osm_mcast_make_port_list_and_map(&list, &map, mbox)) {
		osm_mcast_drop_port_list(&list);
		log_error(ctx, HD_NOMEM, "out of memory: no spanning tree for multicast group 0x%X", mbox->mlid);
		return IB_ERROR;
	}
	if (cl_qlist_count(&list) < 2) {
		osm_mcast_drop_port_list(&list);
		return IB_SUCCESS;	/* as OpenSM: nothing to forward */
	}
	if (mc_graph(&M))
		goto out;
	memb = xcalloc((size_t)M.nsw, 1);
	on = xcalloc((size_t)M.nsw, 1);
	up = xcalloc((size_t)M.nsw, 1);
	dn = xcalloc((size_t)M.nsw, 1);
	par = xcalloc((size_t)M.nsw, sizeof(int));
	seen = xcalloc((size_t)M.nsw, sizeof(int));
	path = xcalloc((size_t)M.nsw, sizeof(int));
	msw = xcalloc(cl_qlist_count(&list), sizeof(int));
	mport = xcalloc(cl_qlist_count(&list), 1);
	if (!memb || !on || !up || !dn || !par || !seen || !path || !msw || !mport)
		goto out;
	/* each member port's switch and the port there (0: the switch itself is the member) */
	for (li = cl_qlist_head(&list); li != cl_qlist_end(&list); li = cl_qlist_next(li)) {
		osm_port_t *port = ((osm_mcast_work_obj_t *)li)->p_port;
		osm_physp_t *ph = port->p_physp, *rp;
		int s = -1;
		uint8_t pn = 0;
		if (port->p_node->sw) {
			s = M.by_lid[cl_ntoh16(osm_node_get_base_lid(port->p_node, 0))];
		} else if (ph && osm_link_is_healthy(ph) && (rp = osm_physp_get_remote(ph)) && rp->p_node->sw) {
			s = M.by_lid[cl_ntoh16(osm_node_get_base_lid(rp->p_node, 0))];
			pn = osm_physp_get_port_num(rp);
		}
		if (s < 0 || !osm_switch_supports_mcast(M.sw[s]) || !M.sw[s]->mcast_tbl.p_mask_tbl ||
		    M.mlid > M.sw[s]->mcast_tbl.max_mlid_ho) {
			log_error(ctx, HD_MCAST, "multicast group 0x%X: member port 0x%016" PRIx64
				  " is not on a switch that forwards the group", M.mlid, cl_ntoh64(port->guid));
			lost++;
			continue;
		}
		msw[nmem] = s;
		mport[nmem++] = pn;
		memb[s] = 1;
	}
	if (!nmem) {
		ret = 0;
		goto out;
	}
	/* the root: the middle of the longest shortest path between two members' switches */
	mc_bfs(&M, msw[0]);
	a = mc_farthest(&M, memb);
	mc_bfs(&M, a);
	b = mc_farthest(&M, memb);
	root = b;
	for (x = M.dist[b] / 2; x > 0; x--)
		root = M.prev[root];
	root_lid = cl_ntoh16(osm_node_get_base_lid(M.sw[root]->p_node, 0));
	/* each member switch up its route to the root, until a switch already in the tree */
	on[root] = 1;
	par[root] = -1;
	for (i = 0; i < nmem; i++) {
		int len = 0, ok = 1;
		x = msw[i];
		while (!on[x]) {
			/* (a switch OpenSM has not routed yet has no new LFT) */
			uint8_t out = M.sw[x]->new_lft ? osm_switch_get_port_by_lid(M.sw[x], root_lid, OSM_NEW_LFT) : 0,
			    rport = 0;
			int y = mc_link(&M, x, out, &rport);
			if (y < 0 || seen[x] == (int)i + 1) {
				ok = 0;	/* no route to the root, or a loop: this member stays out */
				break;
			}
			seen[x] = (int)i + 1;
			path[len++] = x;
			up[x] = out;
			dn[x] = rport;
			par[x] = y;
			x = y;
		}
		if (!ok) {
			log_error(ctx, HD_MCAST, "multicast group 0x%X: switch 0x%016" PRIx64
				  " of a member has no working route to the tree's root 0x%016" PRIx64, M.mlid,
				cl_ntoh64(osm_node_get_node_guid(M.sw[msw[i]]->p_node)),
				cl_ntoh64(osm_node_get_node_guid(M.sw[root]->p_node)));
			memb[msw[i]] = 0;
			msw[i] = -1;
			lost++;
			continue;
		}
		while (len)
			on[path[--len]] = 1;
	}
	/* the root moves down while it has a single branch and no member port */
	for (;;) {
		int kids = 0, kid = -1, y;
		if (memb[root])
			break;
		for (y = 0; y < M.nsw && kids < 2; y++)
			if (on[y] && y != root && par[y] == root) {
				kids++;
				kid = y;
			}
		if (kids != 1)
			break;
		on[root] = 0;
		root = kid;
		par[root] = -1;
	}
	/* the tables: member ports, and both ends of every tree link */
	for (i = 0; i < nmem; i++)
		if (msw[i] >= 0) {
			osm_mcast_tbl_set(&M.sw[msw[i]]->mcast_tbl, M.mlid, mport[i]);
			reached++;
		}
	for (x = 0; x < M.nsw; x++) {
		unsigned d = 0;
		int y;
		if (!on[x])
			continue;
		tree++;
		if (x == root)
			continue;
		osm_mcast_tbl_set(&M.sw[x]->mcast_tbl, M.mlid, up[x]);
		osm_mcast_tbl_set(&M.sw[par[x]]->mcast_tbl, M.mlid, dn[x]);
		for (y = x; y != root; y = par[y])
			d++;
		if (d > depth)
			depth = d;
	}
	OSM_LOG(&osm->log, OSM_LOG_VERBOSE, "hdor: multicast group 0x%X: %u member port(s), a tree of %u switch(es) "
		"rooted at 0x%016" PRIx64 ", depth %u, %" PRIu64 " us\n", M.mlid, reached, tree,
		cl_ntoh64(osm_node_get_node_guid(M.sw[root]->p_node)), depth, usec_since(&t0));
	ret = lost ? 1 : 0;
out:
	if (ret < 0)
		log_error(ctx, HD_NOMEM, "out of memory: no spanning tree for multicast group 0x%X", M.mlid);
	osm_mcast_drop_port_list(&list);
	mc_free(&M);
	free(memb);
	free(on);
	free(up);
	free(dn);
	free(par);
	free(seen);
	free(path);
	free(msw);
	free(mport);
	return ret ? IB_ERROR : IB_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* 16. engine callbacks                                                                       */


/* the fabric against the KNS hdor knows (ctx->kns; its tables built first when it came from a
 * file, again when the LIDs moved): 1 routed by the degraded pass (ctx->deg ready; also a
 * complete fabric of a KNS from elsewhere or with a replaced device: nothing failed), 0 route it
 * as a complete KNS (none known, or the one of the last complete pass complete again), -1 not
 * that KNS (ctx->reason), -2 that KNS but declined (ctx->reason) */
static int degraded_pass(hdor_ctx_t *ctx)
{
	hdor_deg_t *D = NULL;
	int m = 2, tries;

	if (!ctx->kns)
		return 0;
	for (tries = 0; tries < 2 && m == 2; tries++) {
		deg_free(D);
		D = NULL;
		if (!ctx->kns->lft || tries) {
			hdor_kns_t *K;
			if (!ctx->kns->lft && kns_place(ctx))
				return -2;
			K = kns_build(ctx, ctx->kns, 0);
			if (!K)
				return ctx->code == HD_NOMEM ? -2 : -1;
			kns_adopt(ctx, K);
			if (tries)
				snprintf(ctx->note + strlen(ctx->note), sizeof(ctx->note) - strlen(ctx->note),
					 ": the fault-free tables recomputed for the LIDs of now");
		}
		D = xcalloc(1, sizeof(*D));
		if (!D)
			return decline(ctx, "out of memory"), -2;
		D->K = ctx->kns;
		m = deg_match(ctx, D);
	}
	if (m == 2)
		m = declinec(ctx, HD_NOT_KNS, "the LIDs keep moving (%s)", ctx->note);
	if (m == 0 && ctx->kns->origin == K_PASS && !ctx->kns->replaced) {
		deg_free(D);
		return 0;
	}
	if (m < 0) {
		deg_free(D);
		return ctx->code == HD_NOMEM ? -2 : -1;
	}
	ph_mark(ctx, PH_KNS);
	if (deg_route(ctx, D)) {
		deg_free(D);
		return -2;
	}
	ctx->deg = D;
	return 1;
}

/* one INFO line: hdor declines this pass and why (an error line for out of memory) */
static void log_decline(hdor_ctx_t *ctx)
{
	if (ctx->code == HD_NOMEM)
		log_error(ctx, HD_NOMEM, "out of memory; hdor declines this pass, OpenSM falls back to the next routing engine");
	else
		OSM_LOG(&ctx->osm->log, OSM_LOG_INFO, "hdor: declined (HD%02X): %s; OpenSM falls back to the next routing engine\n",
			ctx->code ? ctx->code : HD_NOT_KNS, ctx->reason);
}

/* no KNS known fits: identify the fabric at first sight and route it against that KNS: 1, or -1
 * (ctx->reason: why not) */
static int sight_pass(hdor_ctx_t *ctx)
{
	hdor_pass_t *P = xcalloc(1, sizeof(*P));
	hdor_kns_t *Kfs = NULL, *K = NULL, *old;
	unsigned nr, ns, nl;
	int rc;

	if (!P)
		return decline(ctx, "out of memory");
	if (!collect(ctx, P) && !structure(ctx, P))
		Kfs = first_sight(ctx, P, &nr, &ns, &nl);
	pass_free(P);
	if (!Kfs)
		return -1;
	K = kns_build(ctx, Kfs, 1);
	kns_free(Kfs);
	if (!K) {
		if (ctx->code != HD_NOMEM)
			ctx->code = HD_FIRST_SIGHT;
		return -1;
	}
	phantom_descs(K);
	old = ctx->kns;
	ctx->kns = K;
	rc = degraded_pass(ctx);
	if (rc != 1) {
		ctx->kns = old;	/* keep what was known */
		kns_free(K);
		return -1;
	}
	kns_free(old);
	ctx->kns_dirty = 1;
	snprintf(ctx->note, sizeof(ctx->note), "identified at first sight: %u router(s), %u indirect switch(es), "
		 "%u router cable(s) missing", nr, ns, nl);
	return 1;
}

/* decide and analyse this pass: 1 degraded (ctx->deg), 0 complete (ctx->pass ready), -1 declined
 * (logged; OpenSM tries the next engine) */
static int prepare(hdor_ctx_t *ctx)
{
	osm_opensm_t *osm = ctx->osm;
	char why[sizeof(ctx->reason)], why2[sizeof(ctx->reason)];
	hdor_pass_t *P;
	struct timespec t0;
	int rc, origin;

	pass_free(ctx->pass);	/* never reuse anything from an earlier pass */
	ctx->pass = NULL;
	deg_free(ctx->deg);
	ctx->deg = NULL;
	ctx->passes++;
	ctx->reason[0] = '\0';
	ctx->note[0] = '\0';
	ctx->code = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ph_start(ctx, &t0);
	if (osm->subn.opt.use_ucast_cache && ctx->passes == 1)
		log_error(ctx, HD_UCAST_CACHE, "use_ucast_cache (-A) is on: after a failure OpenSM may reuse cached "
			  "tables without calling hdor (no detours, no path SLs); turn it off");
	if (!ctx->loaded)
		kns_load(ctx);
	if (ctx->conf_bad[0]) {
		declinec(ctx, HD_CONF_INVALID, "%s is not usable: %s", ctx->conf_path, ctx->conf_bad);
		log_decline(ctx);
		return -1;
	}
	origin = ctx->kns ? ctx->kns->origin : K_PASS;
	rc = degraded_pass(ctx);
	if (rc == 1) {
		ctx->deg_t0 = t0;
		if (!ctx->note[0] && ctx->kns->origin == K_SIGHT)
			snprintf(ctx->note, sizeof(ctx->note), "the KNS identified at first sight");
		else if (!ctx->note[0] && ctx->kns->origin != K_PASS)
			snprintf(ctx->note, sizeof(ctx->note), "the KNS of %.400s", ctx->kns->origin == K_CONF ?
				 ctx->conf_path : ctx->state_path);
		return 1;
	}
	if (rc == -2 || (rc == -1 && origin == K_CONF)) {
		if (rc == -1 && origin == K_CONF && ctx->code != HD_NOMEM) {
			snprintf(why, sizeof(why), "%s", ctx->reason);
			if (ctx->code == HD_CONF_INVALID)
				declinec(ctx, HD_CONF_INVALID, "%s does not describe a KNS: %s", ctx->conf_path, why);
			else
				declinec(ctx, HD_CONF_MISMATCH, "the fabric is not the KNS of %s: %s", ctx->conf_path, why);
		}
		log_decline(ctx);
		return -1;
	}
	snprintf(why, sizeof(why), "%s", rc < 0 ? ctx->reason : "");
	P = xcalloc(1, sizeof(*P));
	if (!P) {
		decline(ctx, "out of memory");
		log_decline(ctx);
		return -1;
	}
	P->t0 = t0;
	ph_mark(ctx, PH_KNS);
	if (analyse(ctx, P)) {
		pass_free(P);
		if (ctx->code == HD_NOMEM) {
			log_decline(ctx);
			return -1;
		}
		snprintf(why2, sizeof(why2), "%s", ctx->reason);
		if (sight_pass(ctx) == 1) {
			ctx->deg_t0 = t0;
			return 1;
		}
		if (ctx->code != HD_NOMEM) {
			char sight[sizeof(ctx->reason)];
			int code = ctx->code == HD_FIRST_SIGHT ? HD_FIRST_SIGHT : HD_NOT_KNS;
			snprintf(sight, sizeof(sight), "%s", ctx->reason);
			if (rc < 0)
				declinec(ctx, code, "not the remembered KNS (%s); not a complete KNS (%s); not identified at first sight (%s)",
					 why, why2, sight);
			else
				declinec(ctx, code, "%s; not identified at first sight (%s)", why2, sight);
		}
		log_decline(ctx);
		return -1;
	}
	ctx->pass = P;
	return 0;
}

/* While hdor routes, OpenSM reads the hop matrices only for its routing dumps
 * (opensm-lid-matrix.dump, opensm.fdbs: log flag 0x40): its multicast trees are hdor's (section
 * 15).  So without those dumps a pass leaves no hop-matrix row at all: on KNS 16^3 the rows are
 * 23.7 M allocations, most of a pass's time, and ~1 GiB. */
static int hops_read(osm_opensm_t *osm)
{
	return osm_log_is_active_v2(&osm->log, OSM_LOG_ROUTING, OSM_FILE_DUMP_C);
}

/* frees the hop-matrix rows an earlier pass left (OpenSM's for another engine, or hdor's with
 * the dumps on).  Whoever built them gave every switch a row toward its own LID, so when no
 * switch has that row there is nothing to free (and nothing to scan: a first pass on KNS 16^3
 * would read 350 MB of empty row pointers). */
static void hops_drop(osm_opensm_t *osm)
{
	cl_qmap_t *tbl = &osm->subn.sw_guid_tbl;
	cl_map_item_t *it;
	int any = 0;
	for (it = cl_qmap_head(tbl); it != cl_qmap_end(tbl) && !any; it = cl_qmap_next(it)) {
		osm_switch_t *sw = (osm_switch_t *)it;
		uint16_t lid = cl_ntoh16(osm_node_get_base_lid(sw->p_node, 0));
		any = sw->hops && lid < sw->num_hops && sw->hops[lid];
	}
	for (it = cl_qmap_head(tbl); any && it != cl_qmap_end(tbl); it = cl_qmap_next(it)) {
		osm_switch_t *sw = (osm_switch_t *)it;
		unsigned i;
		for (i = 0; sw->hops && i < sw->num_hops; i++) {
			free(sw->hops[i]);
			sw->hops[i] = NULL;
		}
	}
}

static int hdor_build_lid_matrices(void *context)
{
	hdor_ctx_t *ctx = context;
	osm_opensm_t *osm;
	hdor_pass_t *P;
	int rc, want;

	if (!ctx || !hdor_layout_ok(ctx->osm)) {
		hdor_layout_complain();
		return -1;
	}
	osm = ctx->osm;
	if (getenv("HDOR_OPENSM_HOPS"))
		want = HOPS_OPENSM;	/* OpenSM builds its min-hop matrices (the tests' reference) */
	else
		want = hops_read(osm) ? HOPS_OWN : HOPS_NONE;
	rc = prepare(ctx);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		/* degraded: the hop matrices over the working links (OpenSM's own when that fails) */
		hdor_deg_t *D = ctx->deg;
		int hr = want == HOPS_OWN ? deg_fill_hops(D) : 1;
		if (want == HOPS_NONE)
			hops_drop(osm);
		ph_mark(ctx, PH_HOPS);
		if (want == HOPS_NONE || hr == 0) {
			D->own_hops = want;
			return 0;
		}
		return 1;
	}
	P = ctx->pass;
	if (want == HOPS_NONE) {
		hops_drop(osm);
		ph_mark(ctx, PH_HOPS);
		P->own_hops = HOPS_NONE;
		return 0;
	}
	if (want == HOPS_OWN) {
		int closed = closed_form_ok(P);
		int hr = closed ? fill_hops(P) : fill_hops_bfs(P);
		ph_mark(ctx, PH_HOPS);
		if (hr == 0) {
			P->own_hops = HOPS_OWN;
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

/* the hop matrices' part of a summary line: whose they are */
static const char *hops_whose(int own_hops)
{
	return own_hops == HOPS_OWN ? "own " : own_hops == HOPS_NONE ? "no " : "OpenSM's ";
}

static int degraded_tables(hdor_ctx_t *ctx)
{
	osm_opensm_t *osm = ctx->osm;
	hdor_deg_t *D = ctx->deg;
	char path[4096], what[700], ana[400], rest[400];
	int failed = D->dead_links || D->dead_nodes;

	ctx->deg = NULL;
	ph_lap(ctx, PH_OSM);
	deg_write_tables(D);
	ph_mark(ctx, PH_LFT);
	qos_publish(ctx, failed ? D->qos : NULL);
	if (failed)
		D->qos = NULL;
	ph_lap(ctx, PH_SLVL);
	if (write_dump_degraded(ctx, D, path, sizeof(path)))
		log_error(ctx, HD_DUMP_IO, "cannot write %s: %s", path, strerror(errno));
	ph_mark(ctx, PH_DUMP);
	kns_persist(ctx);
	ph_mark(ctx, PH_STATE);
	ph_text(ctx, ana, sizeof(ana), PH_KNS, PH_SLVL, "");
	ph_text(ctx, rest, sizeof(rest), PH_HOPS, PH_STATE, hops_whose(D->own_hops));
	if (failed)
		snprintf(what, sizeof(what), "degraded KNS: %u failed link(s), %u failed node(s); %u VL(s) used of %u the ports offer, SLs 0-%u; %u pair(s) detoured, extra links max %u mean %.3f%s%s",
			 D->dead_links, D->dead_nodes, D->vls, D->vlcap, ctx->qos ? ctx->qos->maxsl : 0,
			 D->detoured, D->extra_max, D->extra_mean, ctx->note[0] ? "; " : "", ctx->note);
	else
		snprintf(what, sizeof(what), "complete KNS%s%s", ctx->note[0] ? ", " : "", ctx->note);
	OSM_LOG(&osm->log, OSM_LOG_INFO,
		"hdor: routed k=%u n=%u s=%u: %u switches, %u LIDs, %" PRIu64 " us (pass %lu; %s; analysis and routing %" PRIu64 " us: %s; %s; peak allocation %.1f MiB)\n",
		D->K->k, D->K->n, D->K->s, D->nrouters + D->nswitches, D->nowned, usec_since(&ctx->deg_t0),
		ctx->passes, what, ph_sum(ctx, PH_KNS, PH_SLVL), ana, rest,
		(double)(ctx->mem_peak - ctx->mem0) / 1048576.0);
	deg_free(D);
	return 0;
}

static int hdor_build_fwd_tables(void *context)
{
	hdor_ctx_t *ctx = context;
	osm_opensm_t *osm;
	hdor_pass_t *P;
	hdor_kns_t *K;
	char path[4096];

	if (!ctx || !hdor_layout_ok(ctx->osm)) {
		hdor_layout_complain();
		return -1;
	}
	osm = ctx->osm;
	if (!ctx->deg && (!ctx->pass || !ctx->pass->ready)) {
		/* build_lid_matrices did not run in this pass: analyse now */
		if (prepare(ctx) < 0)
			return -1;
	}
	if (ctx->deg)
		return degraded_tables(ctx);
	P = ctx->pass;
	ctx->pass = NULL;
	ph_lap(ctx, PH_OSM);
	route_all(P);
	ph_mark(ctx, PH_LFT);
	if (write_dump(ctx, P, path, sizeof(path)))
		log_error(ctx, HD_DUMP_IO, "cannot write %s: %s", path, strerror(errno));
	ph_mark(ctx, PH_DUMP);
	/* remember this complete KNS for the passes after a failure (docs/hdor.md section 6) */
	K = kns_remember(ctx, P, NULL);
	if (!K) {
		log_error(ctx, HD_NOMEM, "out of memory: the KNS is not remembered; a later failure will be declined");
		kns_free(ctx->kns);
		ctx->kns = NULL;
	} else
		kns_adopt(ctx, K);
	qos_publish(ctx, NULL);
	kns_persist(ctx);
	ph_mark(ctx, PH_STATE);
	{
		char ana[400], rest[400];
		ph_text(ctx, ana, sizeof(ana), PH_KNS, PH_SETS, "");
		ph_text(ctx, rest, sizeof(rest), PH_HOPS, PH_STATE, hops_whose(P->own_hops));
		OSM_LOG(&osm->log, OSM_LOG_INFO,
			"hdor: routed k=%u n=%u s=%u: %d switches, %u LIDs, %" PRIu64 " us (pass %lu; analysis %" PRIu64
			" us: %s; %s; peak allocation %.1f MiB)\n",
			P->k, P->n, P->s, P->nsw, P->nlids, usec_since(&P->t0), ctx->passes, ph_sum(ctx, PH_KNS, PH_SETS),
			ana, rest, (double)(ctx->mem_peak - ctx->mem0) / 1048576.0);
	}
	pass_free(P);
	return 0;
}

/* everything the context holds (destroy and the plugin's delete may both run) */
static void ctx_release(hdor_ctx_t *ctx)
{
	pass_free(ctx->pass);
	ctx->pass = NULL;
	deg_free(ctx->deg);
	ctx->deg = NULL;
	kns_free(ctx->kns);
	ctx->kns = NULL;
	qos_free(ctx->qos);
	ctx->qos = NULL;
	qos_free(ctx->qos_old);
	ctx->qos_old = NULL;
}

static void hdor_destroy(void *context)
{
	hdor_ctx_t *ctx = context;
	if (!ctx)
		return;
	ctx_release(ctx);
	if (ctx->owned_by_engine)
		free(ctx);
}

static void hdor_fill_engine(osm_routing_engine_t *re, hdor_ctx_t *ctx)
{
	re->context = ctx;
	re->build_lid_matrices = hdor_build_lid_matrices;
	re->ucast_build_fwd_tables = hdor_build_fwd_tables;
	re->destroy = hdor_destroy;
	/* path SLs and SL2VL tables for a degraded KNS (OpenSM's own on a complete one; OpenSM
	 * calls update_sl2vl only with `qos TRUE`) */
	re->path_sl = hdor_path_sl;
	re->update_sl2vl = hdor_update_sl2vl;
	/* multicast trees along hdor's routes (section 15): OpenSM's own need the hop matrices */
	re->mcast_build_stree = hdor_mcast_build_stree;
	/* everything else stays NULL: OpenSM's defaults (VL arbitration) */
}

#ifdef HDOR_INTREE
/* ------------------------------------------------------------------------------------------ */
/* 17. in-tree variant: listed in static_routing_modules[] of osm_opensm.c                    */

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
/* 18. plugin variant: an event plugin whose create() registers the engine                    */

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
			"ERR HD08: hdor: cannot register the routing engine (status %d)\n", (int)st);
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
	ctx_release(ctx);
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
