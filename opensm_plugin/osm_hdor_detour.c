// SPDX-License-Identifier: MIT
/*
 * osm_hdor_detour.c -- a degraded KNS routed (docs/hdor.md section 6): the
 * groups over the working links, the entries whose fault-free route touches a
 * failure (found backwards from the failed links), and for each destination a
 * shortest-path search over the routers those entries involve, with section
 * 6's tie-breaks; unaffected entries keep their fault-free ports.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

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

/*
 * groups (connected components of each remembered group's surviving switches
 * over working links, ordered by remembered key, then GUID), their members,
 * each router's groups
 */
static int deg_structure(hdor_engine_t *ctx, hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	uint32_t nn = K->nn, i, j, tot, *fill = NULL;
	int g, pass, *stamp = NULL, ret = -1;

	D->gof = hdor_calloc(nn, sizeof(int));
	D->glocal = hdor_calloc(nn, sizeof(int));
	D->gdim = hdor_calloc(K->gsoff[K->ng] + 1, sizeof(int));
	D->gsoff = hdor_calloc(K->gsoff[K->ng] + 2, sizeof(uint32_t));
	D->gsw = hdor_calloc(K->gsoff[K->ng] + 1, sizeof(int));
	D->gmoff = hdor_calloc(K->gsoff[K->ng] + 2, sizeof(uint32_t));
	D->rgoff = hdor_calloc(nn + 1, sizeof(uint32_t));
	stamp = hdor_calloc(nn, sizeof(int));
	if (!D->gof || !D->glocal || !D->gdim || !D->gsoff || !D->gsw ||
	    !D->gmoff || !D->rgoff || !stamp)
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
					if (y >= 0 && K->grp[y] == g &&
					    D->cur[y] && D->gof[y] < 0 &&
					    works(D, u, p)) {
						D->gof[y] = c;
						D->gsw[qt++] = y;
					}
				}
			}
			qsort(D->gsw + tot, qt - tot, sizeof(int),
			      hdor_cmp_int);
			for (j = tot; j < qt; j++)
				D->glocal[D->gsw[j]] = (int)(j - tot);
			D->gdim[c] = K->gdim[g];
			tot = qt;
			D->ng++;
		}
	D->gsoff[D->ng] = tot;
	/*
	 * members: routers with a working link into the component (count, then
	 * fill)
	 */
	for (pass = 0; pass < 2; pass++) {
		if (pass) {
			D->gmem = hdor_calloc(D->gmoff[D->ng] + 1, sizeof(int));
			for (i = 0; i < nn; i++)
				D->rgoff[i + 1] += D->rgoff[i];
			D->rgl = hdor_calloc(D->rgoff[nn] + 1, sizeof(int));
			D->ig = hdor_calloc(D->ng + 1, sizeof(*D->ig));
			fill = hdor_calloc(nn, sizeof(uint32_t));
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
					if (y < 0 || K->role[y] != R_ROUTER ||
					    !works(D, x, p) ||
					    stamp[y] == g + 1)
						continue;
					stamp[y] = g + 1;
					if (pass) {
						D->gmem[m] = y;
						D->rgl[D->rgoff[y] + fill[y]++] =
							g;
					} else
						D->rgoff[y + 1]++;
					m++;
				}
			}
			if (pass)
				qsort(D->gmem + D->gmoff[g], m - D->gmoff[g],
				      sizeof(int), hdor_cmp_int);
			else
				D->gmoff[g + 1] = m;
		}
	}
	/*
	 * a router's groups by dimension, then group order (insertion sort: n
	 * is small)
	 */
	for (i = 0; i < nn; i++) {
		uint32_t a, b;
		for (a = D->rgoff[i] + 1; a < D->rgoff[i + 1]; a++) {
			int v = D->rgl[a];
			for (b = a; b > D->rgoff[i] &&
				    (D->gdim[D->rgl[b - 1]] > D->gdim[v] ||
				     (D->gdim[D->rgl[b - 1]] == D->gdim[v] &&
				      D->rgl[b - 1] > v));
			     b--)
				D->rgl[b] = D->rgl[b - 1];
			D->rgl[b] = v;
		}
	}
	/*
	 * each membership's slot (the Dijkstra of route_lid enters a group by
	 * it)
	 */
	D->rgslot = hdor_calloc(D->rgoff[nn] + 1, sizeof(int));
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
	return hdor_decline(ctx, "out of memory");
}
/*
 * the fault-free route from switch b to LID lid uses a failed link or node (lid
 * is owned)
 */
int hdor_affected(hdor_deg_t *D, int b, uint32_t lid, int depth)
{
	const hdor_kns_t *K = D->K;
	uint8_t *a = &D->aff[(size_t)lid * K->nrow + K->row[b]], port;
	int r;
	if (*a)
		return *a == 2;
	port = t0(K, b, lid);
	if (port == HDOR_NO_PATH)
		r = 1; /* owned now, no fault-free entry */
	else if (port == 0)
		r = 0;
	else if (!works(D, b, port))
		r = 1;
	else {
		int p = kpeer(K, b, port);
		r = K->type[p] != N_SWITCH ?
			    0 :
		    depth >= HDOR_MAX_HOPS ?
			    1 :
			    hdor_affected(D, p, lid, depth + 1);
	}
	*a = r ? 2 : 1;
	return r;
}

/*
 * LIST (N node indices below NN, no repeats) into index order: a bit per node
 * in BITS, read back a word at a time (cheaper than a sort of the ~10^2-10^3
 * entries a LID has); BITS is left zero
 */
static void index_order(int *list, uint32_t n, uint64_t *bits, uint32_t nn)
{
	uint32_t i, wd, k = 0;

	for (i = 0; i < n; i++)
		bits[list[i] >> 6] |= 1ULL << (list[i] & 63);
	for (wd = 0; wd < (nn + 63) / 64 && k < n; wd++)
		while (bits[wd]) {
			list[k++] = (int)(wd * 64 +
					  (unsigned)__builtin_ctzll(bits[wd]));
			bits[wd] &= bits[wd] - 1;
		}
}

/*
 * The affected entries of one owned LID (D->alist, index order, and D->aff),
 * found backwards from the failures: the seeds are the live switches whose
 * fault-free entry has no port or leaves by a failed link; a live switch whose
 * fault-free entry leads over a working link to an affected switch is affected.
 * The same set as hdor_affected() entry by entry, with work proportional to the
 * affected entries and the switches with a failed link (the fault-free tables
 * use only the KNS's links and are free of loops).
 */
static int affected_lid(hdor_deg_t *D, uint32_t lid)
{
	const hdor_kns_t *K = D->K;
	uint8_t *arow = &D->aff[(size_t)lid * K->nrow];
	const uint8_t *trow = &KLFT(K, 0, lid);
	uint32_t j, qh;
#define HDOR_AFF(b)                          \
	do {                                 \
		arow[K->row[b]] = 2;         \
		D->alist[D->nalist++] = (b); \
	} while (0)
	D->nalist = 0;
	if (D->K->kept->krow[lid] & KR_HOLE) {
		/* owned now, no fault-free entry: affected */
		for (j = 0; j < D->nlsw; j++)
			if (trow[K->row[D->lsw[j]]] == HDOR_NO_PATH)
				HDOR_AFF(D->lsw[j]);
	}
	for (j = 0; j < D->nseed; j++) {
		int b = D->seed[j];
		uint8_t port = trow[K->row[b]];
		if (port != 0 && port != HDOR_NO_PATH && !works(D, b, port) &&
		    arow[K->row[b]] != 2)
			HDOR_AFF(b);
	}
	for (qh = 0; qh < D->nalist; qh++) {
		int b = D->alist[qh];
		for (j = D->upoff[b]; j < D->upoff[b + 1]; j++)
			if (arow[D->uprow[j]] == 1 &&
			    trow[D->uprow[j]] == D->upport[j])
				HDOR_AFF(D->upx[j]);
	}
#undef HDOR_AFF
	/* index order, as a scan of the live switches would give them */
	if (D->nalist > 1)
		index_order(D->alist, D->nalist, D->rbits, K->nn);
	return 0;
}

/*
 * the fault-free route of an unaffected entry: links to the LID's port (-1:
 * none), the first router it reaches (b itself for a router), the dimension of
 * the group it enters first; the suffixes are shared, so lengths and exits are
 * kept per switch for the current LID (D->ffs)
 */
static void ff_memo(hdor_deg_t *D, int b, uint32_t lid, int depth)
{
	const hdor_kns_t *K = D->K;
	uint8_t port = t0(K, b, lid);
	int p, len, ex = K->role[b] == R_ROUTER ? b : -1;
	if (D->nd[b].ffs == lid)
		return;
	if (port == 0)
		len = 0;
	else if (port == HDOR_NO_PATH || (p = kpeer(K, b, port)) < 0)
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

static void fault_free_route(hdor_deg_t *D, int b, uint32_t lid, int *len,
			     int *exitr, int *dim0)
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

/*
 * up*-down* routes inside component gi toward its member in `slot` over the
 * working links (cached)
 */
static hig_t *in_group_at(hdor_deg_t *D, int gi, int slot)
{
	const hdor_kns_t *K = D->K;
	uint32_t ns = D->gsoff[gi + 1] - D->gsoff[gi],
		 nm = D->gmoff[gi + 1] - D->gmoff[gi], i;
	const int *sw = D->gsw + D->gsoff[gi];
	int M = D->gmem[D->gmoff[gi] + slot], *ord;
	uint8_t *isdd;
	hig_t *h;

	if (!D->ig[gi] && !(D->ig[gi] = hdor_calloc(nm, sizeof(hig_t))))
		return NULL;
	h = &D->ig[gi][slot];
	if (h->cost)
		return h;
	h->cost = malloc(ns * sizeof(int));
	h->cm = hdor_calloc(ns, sizeof(pmask_t));
	h->icost = malloc(nm * sizeof(int));
	h->im = hdor_calloc(nm, sizeof(pmask_t));
	ord = malloc(ns * sizeof(int));
	isdd = hdor_calloc(ns, 1);
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
			if (y >= 0 && D->gof[y] == gi && isdd[D->glocal[y]] &&
			    rank_lt(K, y, x) && works(D, x, p) &&
			    h->cost[D->glocal[y]] < best)
				best = h->cost[D->glocal[y]];
		}
		if (best < HDOR_INF) {
			for (p = 1; p < K->np[x]; p++) {
				int y = K->peer[K->poff[x] + p];
				if (y >= 0 && D->gof[y] == gi &&
				    isdd[D->glocal[y]] && rank_lt(K, y, x) &&
				    works(D, x, p) &&
				    h->cost[D->glocal[y]] == best)
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
			if (y >= 0 && D->gof[y] == gi && rank_lt(K, x, y) &&
			    works(D, x, p) && h->cost[D->glocal[y]] < best)
				best = h->cost[D->glocal[y]];
		}
		if (best < HDOR_INF) {
			for (p = 1; p < K->np[x]; p++) {
				int y = K->peer[K->poff[x] + p];
				if (y >= 0 && D->gof[y] == gi &&
				    rank_lt(K, x, y) && works(D, x, p) &&
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
			if (y >= 0 && D->gof[y] == gi && works(D, W, p) &&
			    h->cost[D->glocal[y]] < best)
				best = h->cost[D->glocal[y]];
		}
		if (best == HDOR_INF)
			continue;
		for (p = 1; p < K->np[W]; p++) {
			int y = K->peer[K->poff[W] + p];
			if (y >= 0 && D->gof[y] == gi && works(D, W, p) &&
			    h->cost[D->glocal[y]] == best)
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

/*
 * hops to switch `target` over the working switch links (D->dist by switch
 * row, HDOR_INF when cut off), by a breadth-first search that goes only as
 * far as switch x needs: x's distance d and every switch's of d - 1 or less
 * are exact when it stops (those of d - 1 are set as the last of d - 2 are
 * expanded); the search resumes there for the next call with that target
 */
static void switch_dist(hdor_deg_t *D, int target, int x)
{
	const hdor_kns_t *K = D->K;
	int rx = K->row[x], r;

	if (D->dist_target != target) {
		for (r = 0; r < K->nrow; r++)
			D->dist[r] = HDOR_INF;
		D->dist[K->row[target]] = 0;
		D->q[0] = K->row[target];
		D->qh = 0;
		D->qt = 1;
		D->dist_target = target;
	}
	while (D->qh < D->qt) {
		int u = D->q[D->qh], du = D->dist[u] + 1;
		uint32_t a;

		if (D->dist[rx] != HDOR_INF && du + 1 > D->dist[rx])
			break;
		D->qh++;
		for (a = D->swoff[u]; a < D->swoff[u + 1]; a++) {
			int y = D->swnb[a];

			if (D->dist[y] == HDOR_INF) {
				D->dist[y] = du;
				D->q[D->qt++] = y;
			}
		}
	}
}

/* the BFS rule: toward a neighbour switch one hop closer to `target` */
static void bfs_rule(hdor_deg_t *D, int target, int x)
{
	const hdor_kns_t *K = D->K;
	int r = K->row[x];
	unsigned p;
	switch_dist(D, target, x);
	memset(&D->cand[r], 0, sizeof(pmask_t));
	D->has[r] = 0;
	if (x == target) {
		mask_set(&D->cand[r], 0);
		D->has[r] = 1;
		return;
	}
	if (D->dist[r] == HDOR_INF)
		return;
	for (p = 1; p < K->np[x]; p++) {
		int y = K->peer[K->poff[x] + p];
		if (y >= 0 && K->type[y] == N_SWITCH && works(D, x, p) &&
		    D->dist[K->row[y]] == D->dist[r] - 1)
			mask_set(&D->cand[r], p);
	}
	D->has[r] = !mask_empty(&D->cand[r]);
}

typedef struct {
	int ln, v, b;
} hheap_t;

static inline int heap_lt(const hheap_t *a, const hheap_t *b)
{
	return a->ln != b->ln ? a->ln < b->ln :
	       a->v != b->v   ? a->v < b->v :
				a->b < b->b;
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

/*
 * The groups (G) and routers (R) a LID's search needs -- work proportional to
 * what the failures touch, not to the fabric: the groups of the affected
 * switches (G); T, the affected routers, each group of G's exit when it has
 * one (an unaffected switch's), else all its members (R).  When taken, any
 * other router does nothing: it is fixed, so it is relaxed by no group, and
 * each of its groups is outside G (no affected entry) or has another router as
 * its exit.  Marks: gst[g] / rst[x] == stamp.
 */
#define HDOR_ADD_R(y)                             \
	do {                                      \
		if (D->nd[y].rst != D->stamp) {   \
			D->nd[y].rst = D->stamp;  \
			D->rlist[D->nrl++] = (y); \
		}                                 \
	} while (0)
#define HDOR_ADD_G(h)                                     \
	do {                                              \
		if (D->gst[h] != D->stamp) {              \
			D->gst[h] = D->stamp;             \
			D->glist[D->ngl++] = (h);         \
			D->amhead[h] = D->amtail[h] = -1; \
		}                                         \
	} while (0)

/* G, and each group of G's affected members (in GUID order) */
static void lid_groups(hdor_deg_t *D, int T)
{
	const hdor_kns_t *K = D->K;
	uint32_t j, a;
	int ne = 0, g;

	D->stamp++;
	D->ngl = D->nrl = 0;
	HDOR_ADD_R(T);
	for (j = 0; j < D->nalist; j++) {
		int y = D->alist[j];

		if (K->role[y] != R_ROUTER) {
			if (D->gof[y] >= 0)
				HDOR_ADD_G(D->gof[y]);
			continue;
		}
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
	}
}

/* what the search will read of group g's exit X, asked for now: the cache
 * misses overlap */
static void prefetch_exit(hdor_deg_t *D, int g, int slot)
{
	hig_t *h;
	int e;

	if (!D->ig[g] || !(h = &D->ig[g][slot])->cost)
		return;
	for (e = D->amhead[g]; e >= 0; e = D->amnext[e]) {
		__builtin_prefetch(&h->icost[D->amslot[e]]);
		__builtin_prefetch(&h->im[D->amslot[e]]);
	}
}

/* the exits of G's groups from their unaffected switches (the last one in
 * GUID order gives it), and R */
static void lid_exits(hdor_deg_t *D, uint32_t lid)
{
	const hdor_kns_t *K = D->K;
	uint32_t j, a;
	int g;

	for (j = 0; j < D->ngl; j++) {
		g = D->glist[j];
		D->exitof[g] = -1;
		for (a = D->gsoff[g]; a < D->gsoff[g + 1]; a++) {
			int len, ex, d0, i = D->gsw[a];

			if (hdor_affected(D, i, lid, 0))
				continue;
			fault_free_route(D, i, lid, &len, &ex, &d0);
			D->exitof[g] = ex;
		}
		D->exitslot[g] = -1;
		if (D->exitof[g] < 0) {
			for (a = D->gmoff[g]; a < D->gmoff[g + 1]; a++)
				HDOR_ADD_R(D->gmem[a]);
			continue;
		}
		HDOR_ADD_R(D->exitof[g]);
		for (a = D->rgoff[D->exitof[g]]; a < D->rgoff[D->exitof[g] + 1];
		     a++)
			if (D->rgl[a] == g) {
				D->exitslot[g] = D->rgslot[a];
				prefetch_exit(D, g, D->rgslot[a]);
			}
	}
	/* GUID order, as the fabric's (node index order) */
	index_order(D->rlist, D->nrl, D->rbits, K->nn);
}
#undef HDOR_ADD_R
#undef HDOR_ADD_G

/* R's search state; the unaffected routers are fixed on their fault-free
 * routes, listed by their length (a counting sort: routers visited in GUID
 * order give them in key order) in D->fixlist; returns how many */
static uint32_t lid_fixed(hdor_deg_t *D, uint32_t lid, int T)
{
	uint32_t j, i, fcnt[HDOR_MAX_HOPS + 3];

	for (j = 0; j < D->nrl; j++) {
		i = (uint32_t)D->rlist[j];
		D->nd[i].bln = HDOR_INF;
		D->nd[i].done = D->nd[i].fixed = 0;
		D->nd[i].via = -1;
	}
	for (j = 0; j < D->nrl; j++) {
		int len, ex, d0;

		i = (uint32_t)D->rlist[j];
		if (hdor_affected(D, (int)i, lid, 0))
			continue;
		fault_free_route(D, (int)i, lid, &len, &ex, &d0);
		D->nd[i].fixed = 1;
		D->nd[i].fixln = len;
		D->nd[i].fdim = d0;
	}
	memset(fcnt, 0, sizeof(fcnt));
	for (j = 0; j < D->nrl; j++) {
		i = (uint32_t)D->rlist[j];
		if (!D->nd[i].fixed || (int)i == T)
			continue;
		D->nd[i].bln = D->nd[i].fixln;
		D->nd[i].bv = 0;
		fcnt[D->nd[i].fixln + 2]++; /* fixln is -1 .. HDOR_MAX_HOPS */
	}
	for (i = 1; i < HDOR_MAX_HOPS + 3; i++)
		fcnt[i] += fcnt[i - 1];
	for (j = 0; j < D->nrl; j++) {
		i = (uint32_t)D->rlist[j];
		if (D->nd[i].fixed && (int)i != T)
			D->fixlist[fcnt[D->nd[i].fixln + 1]++] = (int)i;
	}
	return fcnt[HDOR_MAX_HOPS + 2];
}

/* router X, taken with key e, relaxes the affected members of each of its
 * groups in G (as the group's exit); -1 out of memory */
static int relax(hdor_engine_t *ctx, hdor_deg_t *D, hheap_t e, int T,
		 hheap_t *heap, int *nh)
{
	int X = e.b, ne;
	uint32_t a, m;

	for (a = D->rgoff[X]; a < D->rgoff[X + 1]; a++) {
		int gi = D->rgl[a], e_dim = D->gdim[gi], turn;
		hig_t *h;

		if (D->gst[gi] != D->stamp ||
		    (D->exitof[gi] >= 0 && D->exitof[gi] != X))
			continue;
		h = in_group_at(D, gi, D->rgslot[a]);
		if (!h)
			return hdor_decline(ctx, "out of memory");
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
			if (D->nd[W].bln != HDOR_INF &&
			    (ln > D->nd[W].bln ||
			     (ln == D->nd[W].bln && v >= D->nd[W].bv)))
				continue;
			D->nd[W].bln = ln;
			D->nd[W].bv = v;
			D->nd[W].via = gi;
			D->nd[W].vslot = (int)m;
			D->nd[W].fdim = e_dim;
			heap_push(heap, nh, (hheap_t){ ln, v, W });
		}
	}
	return 0;
}

/* the search over routers from T: key (links, violations, GUID); the fixed
 * routers' keys (links, 0, GUID) never change, so only relaxed routers use
 * the heap */
static int lid_search(hdor_engine_t *ctx, hdor_deg_t *D, uint32_t lid, int T,
		      hheap_t *heap)
{
	uint32_t nf, fp = 0;
	int nh = 0;

	nf = lid_fixed(D, lid, T);
	D->nd[T].bln = 0;
	D->nd[T].bv = 0;
	D->nd[T].fdim = -1;
	heap_push(heap, &nh, (hheap_t){ 0, 0, T });
	while (nh || fp < nf) {
		hheap_t e;
		int X;

		if (fp < nf) {
			e = (hheap_t){ D->nd[D->fixlist[fp]].fixln, 0,
				       D->fixlist[fp] };
			if (!nh || heap_lt(&e, &heap[0]))
				fp++;
			else
				e = heap_pop(heap, &nh);
		} else {
			e = heap_pop(heap, &nh);
		}
		X = e.b;
		if (D->nd[X].done || D->nd[X].bln != e.ln || D->nd[X].bv != e.v)
			continue;
		D->nd[X].done = 1;
		if (relax(ctx, D, e, T, heap, &nh))
			return -1;
	}
	return 0;
}

/* the candidates of affected row x (a router or an indirect switch) */
static int row_candidates(hdor_engine_t *ctx, hdor_deg_t *D, uint32_t lid,
			  int x, int T, int fin)
{
	const hdor_kns_t *K = D->K;
	int r = K->row[x];
	hig_t *h;

	memset(&D->cand[r], 0, sizeof(pmask_t));
	D->has[r] = 0;
	if (x == T) {
		mask_set(&D->cand[r], (unsigned)fin);
		D->has[r] = 1;
	} else if (K->role[x] == R_ROUTER) {
		int gi = D->nd[x].via;

		if (!D->nd[x].done) {
			switch_dist(D, T, x);
			if (D->dist[r] == HDOR_INF)
				/* cut off from the destination: no entry */
				return 0;
			return hdor_declinec(
				ctx, HD_SCHEME,
				"router 0x%016" PRIx64
				" '%s' reaches LID %u only by a route the scheme does not allow (a group connects them only down and up again)",
				K->ident[x], hdor_desc(D->cur[x]), lid);
		}
		h = in_group_at(D, gi, D->exitslot[gi]); /* set with via */
		if (!h)
			return hdor_decline(ctx, "out of memory");
		D->cand[r] = h->im[D->nd[x].vslot];
		D->has[r] = !mask_empty(&D->cand[r]);
	} else {
		int gi = D->gof[x], M = D->exitof[gi];

		h = M < 0		 ? NULL :
		    D->exitslot[gi] >= 0 ? in_group_at(D, gi, D->exitslot[gi]) :
					   in_group(D, gi, M);
		if (h && h->cost[D->glocal[x]] < HDOR_INF) {
			D->cand[r] = h->cm[D->glocal[x]];
			D->has[r] = 1;
		} else {
			D->has[r] = 2; /* orphan: the BFS rule, below */
		}
	}
	return 0;
}

/* the candidates (D->cand, D->has) of every affected row (D->aff) for one
 * LID */
static int route_lid(hdor_engine_t *ctx, hdor_deg_t *D, uint32_t lid,
		     hheap_t *heap)
{
	const hdor_kns_t *K = D->K;
	int c = D->onode[lid], T, fin;
	uint32_t j;

	if (K->type[c] == N_CA) {
		if (!works(D, c, D->oport[lid]))
			return 0;
		T = kpeer(K, c, D->oport[lid]);
		fin = K->pport[K->poff[c] + D->oport[lid]];
	} else if (K->role[c] == R_ROUTER) {
		T = c;
		fin = 0;
	} else {
		for (j = 0; j < D->nalist; j++)
			bfs_rule(D, c, D->alist[j]);
		return 0;
	}
	lid_groups(D, T);
	lid_exits(D, lid);
	if (lid_search(ctx, D, lid, T, heap))
		return -1;
	for (j = 0; j < D->nalist; j++)
		if (row_candidates(ctx, D, lid, D->alist[j], T, fin))
			return -1;
	for (j = 0; j < D->nalist; j++)
		if (D->has[K->row[D->alist[j]]] == 2)
			bfs_rule(D, T, D->alist[j]);
	return 0;
}

/*
 * spreading: the j-th affected LID with candidate set C at switch row r takes
 * C[j mod |C|]
 */
static int spread_pick(hdor_deg_t *D, int r, const pmask_t *m)
{
	uint32_t i, j, np = 0, want;
	unsigned p;
	for (i = 0; i < D->ncnt[r]; i++) {
		const pmask_t *c = &D->cnt[r][i].m;
		if (!((c->m[0] ^ m->m[0]) | (c->m[1] ^ m->m[1]) |
		      (c->m[2] ^ m->m[2]) | (c->m[3] ^ m->m[3])))
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
	/*
	 * the want-th port of the set, ascending: whole words first, then bit
	 * by bit
	 */
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
/* ------------------------------------------------------------------------ */
/* The degraded pass                                                        */

static int deg_alloc(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t nn = K->nn;

	D->clist = hdor_calloc(D->nl, sizeof(uint32_t));
	D->nd = aligned_alloc(64, (size_t)(nn + 1) * sizeof(hnode_t));
	D->fixlist = hdor_calloc(nn, sizeof(int));
	D->exitof = hdor_calloc(D->ng + 1, sizeof(int));
	D->exitslot = hdor_calloc(D->ng + 1, sizeof(int));
	D->dist = hdor_calloc(K->nrow, sizeof(int));
	D->q = hdor_calloc(nn, sizeof(int));
	D->cand = hdor_calloc(K->nrow, sizeof(pmask_t));
	D->has = hdor_calloc(K->nrow, 1);
	D->cnt = hdor_calloc(K->nrow, sizeof(*D->cnt));
	D->ncnt = hdor_calloc(K->nrow, sizeof(uint32_t));
	D->capcnt = hdor_calloc(K->nrow, sizeof(uint32_t));
	D->lsw = hdor_calloc(K->nrow + 1, sizeof(int));
	D->alist = hdor_calloc(K->nrow + 1, sizeof(int));
	D->seed = hdor_calloc(K->nrow + 1, sizeof(int));
	D->glist = hdor_calloc(D->ng + 1, sizeof(int));
	D->gst = hdor_calloc(D->ng + 1, sizeof(int));
	D->rlist = hdor_calloc(nn + 1, sizeof(int));
	D->rbits = hdor_calloc(nn / 64 + 1, sizeof(uint64_t));
	D->amhead = hdor_calloc(D->ng + 1, sizeof(int));
	D->amtail = hdor_calloc(D->ng + 1, sizeof(int));
	D->amw = hdor_calloc(D->rgoff[nn] + 1, sizeof(int));
	D->amslot = hdor_calloc(D->rgoff[nn] + 1, sizeof(int));
	D->amnext = hdor_calloc(D->rgoff[nn] + 1, sizeof(int));
	D->upoff = hdor_calloc(nn + 1, sizeof(uint32_t));
	D->swoff = hdor_calloc((size_t)K->nrow + 1, sizeof(uint32_t));
	D->swnb = hdor_calloc(K->poff[nn] + 1, sizeof(int));
	D->uprow = hdor_calloc(K->poff[nn] + 1, sizeof(uint32_t));
	D->upx = hdor_calloc(K->poff[nn] + 1, sizeof(int));
	D->upport = hdor_calloc(K->poff[nn] + 1, 1);
	if (!D->clist || !D->nd || !D->exitof || !D->exitslot || !D->fixlist ||
	    !D->dist || !D->q || !D->cand || !D->has || !D->cnt || !D->ncnt ||
	    !D->capcnt || !D->lsw || !D->alist || !D->seed || !D->glist ||
	    !D->gst || !D->rlist || !D->rbits || !D->amhead || !D->amtail ||
	    !D->amw || !D->amslot || !D->amnext || !D->upoff || !D->uprow ||
	    !D->upx || !D->upport || !D->swoff || !D->swnb)
		return -1;
	return 0;
}

/* the start: the fault-free tables, LIDs without an owner now without an
 * entry, every entry not affected (K's kept buffers: hdor_kept_start; a dead
 * switch's entries are never read) */
static int deg_start(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t nn = K->nn, i;

	memset(D->nd, 0, (size_t)(nn + 1) * sizeof(hnode_t));
	D->dist_target = -1;
	for (i = 0; i < nn; i++)
		if (D->cur[i] && K->type[i] == N_SWITCH)
			D->lsw[D->nlsw++] = (int)i;
	return hdor_kept_start(ctx, D);
}

/* a component that is a remembered group intact: all its switches, every
 * link at them working (seen from both ends) */
static int group_intact(const hdor_deg_t *D, int c)
{
	const hdor_kns_t *K = D->K;
	int g = K->grp[D->gsw[D->gsoff[c]]];
	uint32_t i;
	unsigned p;

	if (D->gsoff[c + 1] - D->gsoff[c] != K->gsoff[g + 1] - K->gsoff[g])
		return 0;
	for (i = D->gsoff[c]; i < D->gsoff[c + 1]; i++) {
		int x = D->gsw[i];

		for (p = 1; p < K->np[x]; p++) {
			int y = K->peer[K->poff[x] + p];

			if (y >= 0 && (!works(D, x, p) ||
				       !works(D, y, K->pport[K->poff[x] + p])))
				return 0;
		}
	}
	return 1;
}

/* the intact groups take their routes inside the group from K's kept ones
 * (made at the first pass that needs them); 0, or -1 out of memory */
static int deg_kept_groups(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	hdor_kept_t *k = K->kept;
	int c, g;

	D->igkept = hdor_calloc(D->ng + 1, 1);
	if (!D->igkept)
		return -1;
	if (!k->kig) {
		k->kig = hdor_calloc(K->ng + 1, sizeof(*k->kig));
		k->kign = hdor_calloc(K->ng + 1, sizeof(*k->kign));
		if (!k->kig || !k->kign)
			return -1;
	}
	for (c = 0; c < D->ng; c++) {
		uint32_t nm = D->gmoff[c + 1] - D->gmoff[c];

		g = K->grp[D->gsw[D->gsoff[c]]];
		if (!group_intact(D, c))
			continue;
		if (!k->kig[g]) {
			k->kig[g] = hdor_calloc(nm, sizeof(hig_t));
			if (!k->kig[g])
				return -1;
			k->kign[g] = nm;
		}
		D->ig[c] = k->kig[g];
		D->igkept[c] = 1;
	}
	return 0;
}

/* each live switch's live switch neighbours (affected_lid), each switch's
 * neighbour switches over working links (switch_dist), and the seeds: the
 * live switches with a failed link */
static void deg_neighbours(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t nn = K->nn, i, m = 0;
	unsigned p;

	for (i = 0; i < nn; i++) {
		D->upoff[i] = m;
		for (p = 1; D->cur[i] && K->type[i] == N_SWITCH && p < K->np[i];
		     p++) {
			int y = K->peer[K->poff[i] + p];
			uint8_t yp = K->pport[K->poff[i] + p];

			if (y >= 0 && K->type[y] == N_SWITCH && D->cur[y] &&
			    works(D, y, yp)) {
				D->uprow[m] = (uint32_t)K->row[y];
				D->upx[m] = y;
				D->upport[m++] = yp;
			}
		}
	}
	D->upoff[nn] = m;
	/* (by switch row: the rows ascend with the base nodes, kns_remember) */
	for (i = 0, m = 0; i < nn; i++) {
		if (K->type[i] != N_SWITCH || K->row[i] < 0)
			continue;
		D->swoff[K->row[i]] = m;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];

			if (y >= 0 && K->type[y] == N_SWITCH &&
			    works(D, (int)i, p))
				D->swnb[m++] = K->row[y];
		}
		D->swoff[K->row[i] + 1] = m;
	}
	for (i = 0; i < D->nlsw; i++) {
		int b = D->lsw[i];

		for (p = 1; p < K->np[b]; p++)
			if (K->peer[K->poff[b] + p] >= 0 && !works(D, b, p)) {
				D->seed[D->nseed++] = b;
				break;
			}
	}
}

/* a seed's columns of the fault-free tables are read one by one (a miss
 * each); with more seeds than this every owned LID is looked at instead */
#define HDOR_SEED_COLUMNS 64

/*
 * The owned LIDs that may have an affected entry (D->clist, ascending): those
 * whose fault-free row has a switch without a route, and those a seed's
 * fault-free entry sends over a link that failed -- the start of every
 * affected route (affected_lid).  Work proportional to the seeds, not to the
 * LIDs times the switches.  0, or -1 out of memory.
 */
static int lid_candidates(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	const uint8_t *krow = K->kept->krow;
	uint32_t lid, j, w, nw = D->nl / 64 + 1;
	uint64_t *bits = hdor_calloc(nw, sizeof(uint64_t));
	pmask_t bad;
	unsigned p;

	if (!bits)
		return -1;
	for (lid = 1; lid < D->nl; lid++)
		if (D->full || D->nseed > HDOR_SEED_COLUMNS ||
		    (krow[lid] & KR_HOLE))
			bits[lid >> 6] |= 1ULL << (lid & 63);
	for (j = 0; j < D->nseed && D->nseed <= HDOR_SEED_COLUMNS; j++) {
		int b = D->seed[j];
		const uint8_t *col = &KLFT(K, K->row[b], 0);

		memset(&bad, 0, sizeof(bad));
		for (p = 1; p < HDOR_NO_PATH; p++)
			if (!works(D, b, p))
				mask_set(&bad, p);
		for (lid = 1; lid < D->nl; lid++) {
			uint8_t port = col[(size_t)lid * K->nrow];

			if (bad.m[port >> 6] >> (port & 63) & 1)
				bits[lid >> 6] |= 1ULL << (lid & 63);
		}
	}
	D->nclist = 0;
	for (w = 0; w < nw; w++)
		while (bits[w]) {
			lid = w * 64 + (uint32_t)__builtin_ctzll(bits[w]);
			bits[w] &= bits[w] - 1;
			if (D->onode[lid] >= 0)
				D->clist[D->nclist++] = lid;
		}
	free(bits);
	return 0;
}

/* every owned LID that may have one: its affected entries (noted in K's kept
 * buffers), their new routes */
static int deg_lids(hdor_engine_t *ctx, hdor_deg_t *D, hheap_t *heap)
{
	const hdor_kns_t *K = D->K;
	uint32_t lid, i, j, c;

	if (lid_candidates(D))
		return hdor_decline(ctx, "out of memory");
	for (c = 0; c < D->nclist; c++) {
		lid = D->clist[c];
		affected_lid(D, lid);
		if (D->nalist && hdor_kept_note(D, lid))
			return hdor_decline(ctx, "out of memory");
		for (j = 0; j < D->nalist; j++) {
			i = (uint32_t)D->alist[j];
			DTAB(D, K->row[i], lid) = HDOR_NO_PATH;
			D->has[K->row[i]] = 0;
		}
		hdor_ph_lap(ctx, PH_AFFECTED);
		if (!D->nalist)
			continue;
		if (route_lid(ctx, D, lid, heap))
			return -1;
		for (j = 0; j < D->nalist; j++) {
			int r = K->row[D->alist[j]], port;

			if (D->has[r] != 1 || mask_empty(&D->cand[r]))
				continue;
			port = spread_pick(D, r, &D->cand[r]);
			if (port < 0)
				return hdor_decline(ctx, "out of memory");
			DTAB(D, r, lid) = (uint8_t)port;
		}
		hdor_ph_lap(ctx, PH_DETOURS);
	}
	return 0;
}

/* the VLs the failures need against those the ports offer */
static int deg_vls(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t i;

	if (D->dead_nodes || D->dead_links) {
		if (hdor_deg_sls(ctx, D))
			return -1;
	} else {
		/* nothing failed: the fault-free tables, OpenSM's SLs */
		D->vls = 1;
	}
	D->vlcap = hdor_ports_vlcap(ctx, D);
	if (D->vls > D->vlcap)
		return hdor_declinec(
			ctx, HD_VLS,
			"the failures need %u VLs, the ports offer %u", D->vls,
			D->vlcap);
	/* the switches would keep SL2VL tables that are not hdor's: no VLs, a
	 * credit loop */
	if (D->vls > 1 && !ctx->opts.qos)
		return hdor_declinec(
			ctx, HD_VLS_QOS,
			"the failures need %u VLs, and OpenSM programs hdor's SL2VL tables only with qos TRUE (off)",
			D->vls);
	hdor_ph_mark(ctx, PH_SLVL);
	for (i = 0; i < K->nn; i++) {
		if (!D->cur[i])
			continue;
		if (K->role[i] == R_ROUTER)
			D->nrouters++;
		else if (K->role[i] == R_SWITCH)
			D->nswitches++;
		else
			D->nhcas++;
	}
	return 0;
}

/* route a degraded KNS (D after deg_match) into D->tab; 0, or -1 with
 * ctx->reason */
int hdor_deg_route(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	hheap_t *heap = NULL;
	int ret = -1;

	D->full = ctx->opts.degraded_full;
	if (deg_structure(ctx, D))
		return -1;
	/* each group relaxes each member once: pushes <= memberships + fixed
	 * routers + T */
	heap = hdor_calloc((size_t)D->rgoff[K->nn] + K->nn + 64, sizeof(*heap));
	if (!heap || deg_alloc(D)) {
		hdor_decline(ctx, "out of memory");
		goto out;
	}
	if (deg_start(ctx, D))
		goto out;
	if (deg_kept_groups(D)) {
		hdor_decline(ctx, "out of memory");
		goto out;
	}
	deg_neighbours(D);
	hdor_ph_mark(ctx, PH_STRUCT);
	if (deg_lids(ctx, D, heap))
		goto out;
	hdor_ph_mark(ctx, PH_DETOURS);
	ret = deg_vls(ctx, D);
out:
	free(heap);
	return ret;
}
