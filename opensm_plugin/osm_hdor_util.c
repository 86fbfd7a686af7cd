// SPDX-License-Identifier: MIT
/*
 * osm_hdor_util.c -- hdor's helpers: the fabric model's GUID index,
 * allocation, the phases of a pass (time and memory), declines and log lines,
 * sorting, candidate port sets, and the arrays of a KNS.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

/* ------------------------------------------------------------------------ */
/* The fabric model                                                         */

static const struct hdor_fabric *sort_fab;

static int cmp_node_guid(const void *a, const void *b)
{
	const struct hdor_node *x = &sort_fab->nodes[*(const uint32_t *)a];
	const struct hdor_node *y = &sort_fab->nodes[*(const uint32_t *)b];

	return hdor_cmp_u64(x->guid, y->guid);
}

/* fab->by_guid (every node, ascending GUID): 0, or -1 out of memory */
int hdor_fabric_index(struct hdor_fabric *fab)
{
	uint32_t i;

	free(fab->by_guid);
	fab->by_guid = hdor_calloc(fab->nn, sizeof(uint32_t));
	if (!fab->by_guid)
		return -1;
	for (i = 0; i < fab->nn; i++)
		fab->by_guid[i] = i;
	sort_fab = fab;
	qsort(fab->by_guid, fab->nn, sizeof(uint32_t), cmp_node_guid);
	return 0;
}

/* the node of the model with this GUID (there now or not), or NULL */
struct hdor_node *hdor_fabric_node(const struct hdor_fabric *fab, uint64_t guid)
{
	uint32_t lo = 0, hi = fab->nn;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (fab->nodes[fab->by_guid[mid]].guid < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < fab->nn && fab->nodes[fab->by_guid[lo]].guid == guid)
		return &fab->nodes[fab->by_guid[lo]];
	return NULL;
}

/* the node there now with this GUID, or NULL */
struct hdor_node *hdor_fabric_find(const struct hdor_fabric *fab, uint64_t guid)
{
	struct hdor_node *x = hdor_fabric_node(fab, guid);

	return hdor_node_here(x) ? x : NULL;
}

/* ------------------------------------------------------------------------ */
/* Allocation, the phases of a pass                                         */

void *hdor_calloc(size_t n, size_t sz)
{
	if (!n)
		n = 1;
	return calloc(n, sz);
}

void hdor_free_all(void **p, size_t n)
{
	while (n--)
		free(p[n]);
}

/*
 * the process's heap in use (arenas and mmapped blocks): sampled at the end
 * of every phase, its growth over the pass is the pass's peak allocation
 * (OpenSM's other threads allocate little while it routes)
 */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

uint64_t hdor_usec_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (uint64_t)(t1.tv_sec - t0->tv_sec) * 1000000ULL +
	       (uint64_t)((t1.tv_nsec - t0->tv_nsec) / 1000);
}

void hdor_ph_start(hdor_engine_t *ctx, const struct timespec *t0)
{
	ctx->ph_t = *t0;
	memset(ctx->ph, 0, sizeof(ctx->ph));
	ctx->mem0 = ctx->mem_peak = heap_in_use();
}

/* the time since the last phase ended goes to phase id (no memory sample:
 * cheap enough to call per LID) */
void hdor_ph_lap(hdor_engine_t *ctx, int id)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	ctx->ph[id] +=
		(uint64_t)(t1.tv_sec - ctx->ph_t.tv_sec) * 1000000000ULL +
		(uint64_t)t1.tv_nsec - (uint64_t)ctx->ph_t.tv_nsec;
	ctx->ph_t = t1;
}

/* phase id ends: its time, and a sample of the heap */
void hdor_ph_mark(hdor_engine_t *ctx, int id)
{
	size_t m = heap_in_use();

	hdor_ph_lap(ctx, id);
	if (m > ctx->mem_peak)
		ctx->mem_peak = m;
}

/* "name N us, ..." of phases from..to (those that ran: a phase of 0 ns is
 * left out) */
size_t hdor_ph_text(const hdor_engine_t *ctx, char *buf, size_t sz, int from,
		    int to, const char *hops)
{
	static const char *const names[PH_N] = {
		"remembered KNS", "identification",
		"coordinates",	  "candidate sets",
		"structure",	  "affected entries",
		"detours",	  "SL/VL",
		"hop matrices",	  "OpenSM between the callbacks",
		"LFT fill",	  "dump",
		"state"
	};
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = from; i <= to && len < sz; i++) {
		/* the hop matrices always: whose they are */
		if (!ctx->ph[i] && i != PH_HOPS)
			continue;
		len += (size_t)snprintf(buf + len, sz - len,
					"%s%s%s %" PRIu64 " us",
					len ? ", " : "",
					i == PH_HOPS ? hops : "", names[i],
					ctx->ph[i] / 1000);
	}
	return len;
}

uint64_t hdor_ph_sum(const hdor_engine_t *ctx, int from, int to)
{
	uint64_t t = 0;
	int i;

	for (i = from; i <= to; i++)
		t += ctx->ph[i];
	return t / 1000;
}

/* ------------------------------------------------------------------------ */
/* Declines and log lines                                                   */

const char *hdor_desc(const struct hdor_node *node)
{
	return (node && node->desc) ? node->desc : "";
}

/*
 * the reason this pass cannot route (ctx->reason, ctx->code); returns -1.
 * hdor_decline() is "not a KNS", or out of memory: every allocation failure
 * says exactly "out of memory"
 */
static int vdecline(hdor_engine_t *ctx, int code, const char *fmt, va_list ap)
{
	vsnprintf(ctx->reason, sizeof(ctx->reason), fmt, ap);
	ctx->code = strcmp(fmt, "out of memory") ? code : HD_NOMEM;
	return -1;
}

int hdor_decline(hdor_engine_t *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdecline(ctx, HD_NOT_KNS, fmt, ap);
	va_end(ap);
	return -1;
}

int hdor_declinec(hdor_engine_t *ctx, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vdecline(ctx, code, fmt, ap);
	va_end(ap);
	return -1;
}

void hdor_log(hdor_engine_t *ctx, int level, const char *fmt, ...)
{
	char msg[1400];
	va_list ap;

	if (!ctx->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctx->log(ctx->log_arg, level, msg);
}

void hdor_log_error(hdor_engine_t *ctx, int code, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hdor_log(ctx, HDOR_LOG_ERROR, "ERR HD%02X: hdor: %s", code, msg);
}

/* ------------------------------------------------------------------------ */
/* A pass's nodes and its sorting helpers                                   */

/* value: switch index * 2 (even) or CA index * 2 + 1 (odd); -1 if unknown */
int hdor_hput(hdor_pass_t *P, const struct hdor_node *node, int val)
{
	int *v = &P->nval[node - P->fab->nodes];

	if (*v >= 0)
		return -1;
	*v = val;
	return 0;
}

int hdor_hget(const hdor_pass_t *P, const struct hdor_node *node)
{
	if (!node)
		return -1;
	return P->nval[node - P->fab->nodes];
}

void hdor_pass_free(hdor_pass_t *P)
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
	{
		void *all[] = { P->sw,	 P->ca,	     P->links,	      P->rt,
				P->rgl,	 P->grp,     P->gsw,	      P->gmem,
				P->nval, P->rg,	     P->coord,	      P->gcoord,
				P->rset, P->sset,    P->sets,	      P->pool,
				P->lt,	 P->scratch, P->scratch_paths };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(P);
}

int hdor_cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

int hdor_cmp_u64p(const void *a, const void *b)
{
	return hdor_cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

int hdor_cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int hdor_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * sorting helpers (qsort with a pass pointer via a file-static: the engine
 * runs under OpenSM's exclusive lock, one pass at a time)
 */
const hdor_pass_t *hdor_sort_pass;

/* comparators of indices into one of the pass's arrays, by a 64-bit key */
#define HDOR_CMP(name, array, key)                                  \
	int name(const void *a, const void *b)                      \
	{                                                           \
		const hdor_pass_t *P = hdor_sort_pass;              \
		return hdor_cmp_u64(P->array[*(const int *)a].key,  \
				    P->array[*(const int *)b].key); \
	}
HDOR_CMP(hdor_cmp_router_guid, rt, guid)
HDOR_CMP(hdor_cmp_group_key, grp, key)
HDOR_CMP(hdor_cmp_sw_guid, sw, guid)
HDOR_CMP(hdor_cmp_ca_guid, ca, guid)

int hdor_cmp_node_ord(const void *a, const void *b)
{
	return hdor_cmp_u64(((const hnode_ord_t *)a)->guid,
			    ((const hnode_ord_t *)b)->guid);
}

const char *hdor_kind_word(uint8_t type)
{
	return type == N_SWITCH ? "switch" : "hca";
}

int hdor_node_kind(const struct hdor_node *node)
{
	return node->type == HDOR_NODE_SWITCH ? N_SWITCH :
	       node->type == HDOR_NODE_CA     ? N_CA :
						0;
}

/* room for one more of n elements of size sz in *p (capacity *cap,
 * doubled): 0, or -1 */
int hdor_grow(void *pp, uint32_t n, uint32_t *cap, size_t sz)
{
	return hdor_reserve(pp, n + 1, cap, sz);
}

/* room for `need` elements of size sz in *pp (capacity *cap, doubled as
 * needed): 0, or -1 out of memory (*pp unchanged) */
int hdor_reserve(void *pp, uint32_t need, uint32_t *cap, size_t sz)
{
	void **p = pp, *np_;
	uint32_t nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? 2 * *cap : 256;
	while (nc < need)
		nc *= 2;
	np_ = realloc(*p, (size_t)nc * sz);
	if (!np_)
		return -1;
	*p = np_;
	*cap = nc;
	return 0;
}

/* the index of key in the ascending array a[0..n-1], or -1 */
int hdor_find_u64(const uint64_t *a, uint32_t n, uint64_t key)
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

/* ------------------------------------------------------------------------ */
/* Candidate port sets, interned per switch with their spreading counters  */

/* intern a port set for switch w; returns the set id or -1 (out of memory /
 * empty set) */
int hdor_intern_set(hdor_pass_t *P, int w, const pmask_t *m)
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
	for (p = 0; p < 256; p++) /* ascending port number */
		if (m->m[p >> 6] & (1ULL << (p & 63)))
			P->pool[P->npool++] = (uint8_t)p;
	s->next = P->sw[w].first_set;
	P->sw[w].first_set = id;
	return id;
}

/* ------------------------------------------------------------------------ */
/* The arrays of a KNS, a degraded pass, its path SLs                      */

void hdor_kns_free(hdor_kns_t *K)
{
	uint32_t i;

	if (!K)
		return;
	hdor_kept_free(K->kept, K->ng);
	if (K->desc)
		for (i = 0; i < K->nn; i++)
			free(K->desc[i]);
	{
		void *all[] = { K->desc,  K->guid,  K->ident, K->isort,
				K->type,  K->role,  K->np,    K->poff,
				K->peer,  K->pport, K->plid,  K->plmc,
				K->dim,	  K->grp,   K->lev,   K->coord,
				K->gdim,  K->gsoff, K->gsw,   K->row,
				K->lnode, K->lport, K->lft };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(K);
}

void hdor_kept_free(hdor_kept_t *k, int ng)
{
	int g;

	if (!k)
		return;
	for (g = 0; k->kig && g < ng; g++)
		hdor_hig_free(k->kig[g], k->kign[g]);
	free(k->kig);
	free(k->kign);
	{
		void *all[] = { k->tab,	 k->aff, k->krow, k->alid,
				k->aoff, k->ab,	 k->gone };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(k);
}

void hdor_qos_free(hdor_qos_t *Q)
{
	if (!Q)
		return;
	{
		void *all[] = { Q->pkey, Q->psl,   Q->base, Q->rkey,
				Q->rvl,	 Q->rguid, Q->lost };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(Q);
}

/* a group's routes toward its n members, and the array */
void hdor_hig_free(hig_t *h, uint32_t n)
{
	uint32_t i;

	for (i = 0; h && i < n; i++) {
		free(h[i].cost);
		free(h[i].cm);
		free(h[i].icost);
		free(h[i].im);
	}
	free(h);
}

static void deg_free_groups(hdor_deg_t *D)
{
	int g;

	if (!D->ig)
		return;
	for (g = 0; g < D->ng; g++)
		if (!D->igkept || !D->igkept[g])
			hdor_hig_free(D->ig[g], D->gmoff[g + 1] - D->gmoff[g]);
}

void hdor_deg_free(hdor_deg_t *D)
{
	uint32_t i;

	if (!D)
		return;
	deg_free_groups(D);
	if (D->cnt && D->K)
		for (i = 0; i < (uint32_t)D->K->nrow; i++)
			free(D->cnt[i]);
	{
		void *all[] = { D->igkept, D->cnt,     D->ncnt,	  D->capcnt,
				D->ig,	   D->cur,     D->ok,	  D->onode,
				D->oport,  D->clist,   D->gof,	  D->glocal,
				D->gdim,   D->gsoff,   D->gsw,	  D->gmoff,
				D->gmem,   D->rgoff,   D->rgl,	  D->rgslot,
				D->nd,	   D->fixlist, D->exitof, D->exitslot,
				D->dist,   D->q,       D->cand,	  D->has,
				D->lsw,	   D->alist,   D->seed,	  D->glist,
				D->rlist,  D->gst,     D->rbits,  D->upoff,
				D->uprow,  D->upx,     D->upport, D->amhead,
				D->amtail, D->amw,     D->amslot, D->amnext,
				D->swoff,  D->swnb };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	hdor_qos_free(D->qos);
	free(D);
}

/* the node where the device with this GUID is now, or -1 */
int hdor_kns_find(const hdor_kns_t *K, uint64_t guid)
{
	uint32_t lo = 0, hi = K->nn;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (K->ident[K->isort[mid]] < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < K->nn && K->ident[K->isort[lo]] == guid)
		return (int)K->isort[lo];
	return -1;
}

static const hdor_kns_t *ident_kns;

static int cmp_ident(const void *a, const void *b)
{
	const hdor_kns_t *K = ident_kns;

	return hdor_cmp_u64(K->ident[*(const uint32_t *)a],
			    K->ident[*(const uint32_t *)b]);
}

/* K->isort and K->replaced from K->ident; -1 when two nodes have the same
 * ident */
int hdor_kns_index(hdor_kns_t *K)
{
	uint32_t i;

	free(K->isort);
	K->isort = hdor_calloc(K->nn, sizeof(uint32_t));
	if (!K->isort)
		return -1;
	K->replaced = 0;
	for (i = 0; i < K->nn; i++) {
		K->isort[i] = i;
		if (K->ident[i] != K->guid[i])
			K->replaced = 1;
	}
	ident_kns = K;
	qsort(K->isort, K->nn, sizeof(uint32_t), cmp_ident);
	for (i = 1; i < K->nn; i++)
		if (K->ident[K->isort[i]] == K->ident[K->isort[i - 1]])
			return -1;
	return 0;
}

/* a KNS of nn nodes: its per-node arrays allocated (guid, ident, type, role,
 * np, desc, poff, dim, coord), everything else NULL; NULL out of memory */
hdor_kns_t *hdor_kns_alloc(uint32_t nn, unsigned k, unsigned n, unsigned s,
			   int origin)
{
	static uint64_t serials;
	hdor_kns_t *K = hdor_calloc(1, sizeof(*K));

	if (!K)
		return NULL;
	K->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	K->nn = nn;
	K->k = k;
	K->n = n;
	K->s = s;
	K->origin = origin;
	K->guid = hdor_calloc(nn, sizeof(uint64_t));
	K->ident = hdor_calloc(nn, sizeof(uint64_t));
	K->type = hdor_calloc(nn, 1);
	K->role = hdor_calloc(nn, 1);
	K->np = hdor_calloc(nn, 1);
	K->desc = hdor_calloc(nn, sizeof(char *));
	K->poff = hdor_calloc(nn + 1, sizeof(uint32_t));
	K->dim = hdor_calloc(nn, sizeof(int));
	K->coord = hdor_calloc((size_t)nn * (n ? n : 1), 1);
	if (!K->guid || !K->ident || !K->type || !K->role || !K->np ||
	    !K->desc || !K->poff || !K->dim || !K->coord) {
		hdor_kns_free(K);
		return NULL;
	}
	return K;
}

/* the per-slot arrays of K (peer -1: not cabled) once K->poff is known; and
 * its ident index */
int hdor_kns_alloc_slots(hdor_kns_t *K)
{
	uint32_t i, ns = K->poff[K->nn];

	K->peer = hdor_calloc(ns, sizeof(int));
	K->pport = hdor_calloc(ns, 1);
	K->plid = hdor_calloc(ns, sizeof(uint16_t));
	K->plmc = hdor_calloc(ns, 1);
	if (!K->peer || !K->pport || !K->plid || !K->plmc || hdor_kns_index(K))
		return -1;
	for (i = 0; i < ns; i++)
		K->peer[i] = -1;
	return 0;
}
