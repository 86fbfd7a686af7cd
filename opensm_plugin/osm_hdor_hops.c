// SPDX-License-Identifier: MIT
/*
 * osm_hdor_hops.c -- OpenSM's min-hop matrices, which OpenSM reads only for
 * its routing dumps while hdor routes: from the coordinates (a pure s = 1 KNS),
 * else by a breadth-first search over the working switch links, written
 * through the front end's sink.
 */
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

static inline void set_hop(uint8_t *row, uint8_t port, unsigned h,
			   uint8_t *best)
{
	if (h > 254)
		h = 254;
	row[port] = (uint8_t)h;
	if (h < *best)
		*best = (uint8_t)h;
}

/*
 * one row of fill_hops: switch w (coordinates cw, dimension fw, -1 for a
 * router; its switch neighbours nport/nidx) toward switch d; mm: the dimensions
 * fixed in both that differ
 */
static void hop_row(uint8_t *row, unsigned np, int w, int d, int fw, int fd,
		    const uint8_t *cd, unsigned mm, const uint8_t *nport,
		    const int *nidx, unsigned nn, const uint8_t *const *pc,
		    const int *pf)
{
	unsigned h0 = (unsigned)__builtin_popcount(mm), i;
	uint8_t best = w == d ? 0 : HDOR_NO_PATH;

	memset(row, HDOR_NO_PATH, np);
	/*
	 * like OpenSM's relaxation, the own LID also gets the ports' hop counts
	 * (there and back), with 0 as the minimum
	 */
	for (i = 0; i < nn; i++) {
		int x = nidx[i];
		unsigned h, dist;
		if (fw < 0) {
			/*
			 * neighbour: indirect switch of dimension pf[x] with
			 * W's coordinates
			 */
			h = (unsigned)__builtin_popcount(mm & ~(1u << pf[x]));
			dist = (x == d) ? 0 : 2 * h + 1 + (fd >= 0);
		} else {
			/*
			 * neighbour: router of W's line, coordinate pc[x][fw]
			 * in W's dimension
			 */
			h = h0 + (fd != fw && pc[x][fw] != cd[fw]);
			dist = 2 * h + (fd >= 0);
		}
		set_hop(row, nport[i], 1 + dist, &best);
	}
	row[0] = best;
}

/*
 * fills the hop matrices (through the sink) for every switch LID as OpenSM's
 * min-hop matrix would (every port toward a switch neighbour, the minimum in
 * port 0, 0 for the own LID); returns 0, or -1 on allocation failure (OpenSM
 * then builds the matrices).  Only for a pure s = 1 KNS (closed_form_ok): a
 * router's switch neighbours are the indirect switches of its lines and an
 * indirect switch's neighbours are the routers of its line, so per (switch,
 * target) one pass over the dimensions gives every port's count: between two
 * distinct switches, 2 * (dimensions fixed in both that differ) + (number of
 * indirect endpoints). A switch's row depends on the target only through a few
 * numbers (a router: the differing dimensions and whether the target is
 * indirect; an indirect switch: their count, the target's kind and coordinate
 * in its dimension), so rows are copied from per-switch templates: the phase
 * writes 20-24 M rows on KNS 16^3 and is bound by that.
 */
int hdor_fill_hops(hdor_pass_t *P, const struct hdor_hop_sink *sink)
{
	unsigned n = P->n, e, np_max = 1, nkeys;
	int w, d, ret = -1;
	uint32_t l;
	const uint8_t **pc = hdor_calloc(P->nsw, sizeof(*pc));
	int *pf = hdor_calloc(P->nsw, sizeof(int));
	uint8_t *nport = hdor_calloc(P->nlinks, 1);
	int *nidx = hdor_calloc(P->nlinks, sizeof(int));
	uint8_t *tmpl = NULL, *tset = NULL;
	int rkeys = n <= 8; /* a router's keys: 2^(n+1) */

	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].np > np_max)
			np_max = P->sw[w].np;
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
		hsw_t *W = &P->sw[w];
		unsigned np = W->np, nn = 0;
		const uint8_t *cw = pc[w];
		int fw = pf[w];

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
			if (!lid || lid > W->top)
				continue;
			row = sink->row(sink->arg, W->node, lid);
			if (!row)
				goto out;
			for (e = 0; e < n; e++)
				if ((int)e != fd && (int)e != fw &&
				    cw[e] != cd[e])
					mm |= 1u << e;
			/*
			 * the template's key; -1: the own row, or a router's
			 * neighbour (computed)
			 */
			if (w == d)
				key = -1;
			else if (fw < 0)
				key = !rkeys || (fd >= 0 && !mm) ?
					      -1 :
					      (int)(2 * mm + (fd >= 0));
			else if (fd == fw)
				key = __builtin_popcount(mm);
			else
				key = (int)(n + 1 +
					    (2u * __builtin_popcount(mm) +
					     (fd >= 0)) *
						    P->k +
					    cd[fw]);
			if (key < 0) {
				hop_row(row, np, w, d, fw, fd, cd, mm, nport,
					nidx, nn, pc, pf);
				continue;
			}
			if (!tset[key]) {
				hop_row(tmpl + (size_t)key * np_max, np, w, d,
					fw, fd, cd, mm, nport, nidx, nn, pc,
					pf);
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

/*
 * the closed form of fill_hops holds when every group is one switch and no
 * cable joins two routers
 */
int hdor_closed_form_ok(const hdor_pass_t *P)
{
	int g, w;
	uint32_t l;
	for (g = 0; g < P->ng; g++)
		if (P->grp[g].sn != 1)
			return 0;
	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].router >= 0)
			for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln;
			     l++)
				if (P->links[l].kind == N_SWITCH &&
				    P->sw[P->links[l].idx].router >= 0)
					return 0;
	return 1;
}

#define HDOR_BFS_HOPS_MAX_SWITCHES 16384

/* a switch graph: switch i is node[i] with LID lid[i], its links to other
 * switches are (port[j], idx[j]) for j in off[i] .. off[i+1]-1 */
typedef struct {
	int n;
	const struct hdor_node **node;
	uint16_t *lid;
	uint32_t *off;
	uint8_t *port;
	int *idx;
} hgraph_t;

/*
 * an all-pairs BFS over the switch links (n^2 bytes), then every switch's rows
 * as OpenSM's min-hop matrix would hold them; returns 0, or -1 (OpenSM builds
 * them)
 */
static int fill_hops_graph(const hgraph_t *g, const struct hdor_hop_sink *sink)
{
	size_t N = (size_t)g->n, b0, y;
	uint8_t *D = NULL;
	uint32_t *ro = NULL, *fill = NULL, m = g->off[g->n], k;
	int *ri = NULL, w, d, ret = -1;
	uint64_t *vis = NULL, *fr = NULL, *nx = NULL;
	uint32_t l;

	if (N > HDOR_BFS_HOPS_MAX_SWITCHES || !(D = malloc(N * N)) ||
	    !(ro = hdor_calloc(N + 1, sizeof(uint32_t))) ||
	    !(fill = hdor_calloc(N + 1, sizeof(uint32_t))) ||
	    !(ri = hdor_calloc(m + 1, sizeof(int))) ||
	    !(vis = malloc(N * 8 + 8)) || !(fr = malloc(N * 8 + 8)) ||
	    !(nx = malloc(N * 8 + 8)))
		goto out;
	memset(D, HDOR_NO_PATH, N * N);
	/*
	 * 64 sources at a time, bit-parallel: a bit per source in each switch's
	 * word; a level's new switches are those with a link from the frontier
	 * (the links reversed: ro/ri), as a breadth-first search per source
	 * (distances above 254: no path)
	 */
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
					D[(b0 + (unsigned)__builtin_ctzll(a)) *
						  N +
					  y] = (uint8_t)lev;
					a &= a - 1;
				}
			}
			t = fr;
			fr = nx;
			nx = t;
		}
	}
	for (w = 0; w < g->n; w++) {
		const struct hdor_node *sw = g->node[w];
		unsigned np = sw->np;

		for (d = 0; d < g->n; d++) {
			uint16_t lid = g->lid[d];
			uint8_t *row, best = w == d ? 0 : HDOR_NO_PATH;
			if (!lid || lid > sw->top)
				continue;
			row = sink->row(sink->arg, sw, lid);
			if (!row)
				goto out;
			memset(row, HDOR_NO_PATH, np);
			for (l = g->off[w]; l < g->off[w + 1]; l++) {
				if (g->port[l] >= np ||
				    D[(size_t)g->idx[l] * N + d] ==
					    HDOR_NO_PATH)
					continue;
				set_hop(row, g->port[l],
					1u + D[(size_t)g->idx[l] * N + d],
					&best);
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
	free(g->node);
	free(g->lid);
	free(g->off);
	free(g->port);
	free(g->idx);
}

/*
 * any other fabric hdor routes (s > 1, stray router-router cables):
 * fill_hops_graph
 */
int hdor_fill_hops_bfs(hdor_pass_t *P, const struct hdor_hop_sink *sink)
{
	hgraph_t g = { P->nsw, NULL, NULL, NULL, NULL, NULL };
	int w, ret = -1;
	uint32_t l, m = 0;

	g.node = hdor_calloc(P->nsw, sizeof(*g.node));
	g.lid = hdor_calloc(P->nsw, sizeof(uint16_t));
	g.off = hdor_calloc(P->nsw + 1, sizeof(uint32_t));
	g.port = hdor_calloc(P->nlinks, 1);
	g.idx = hdor_calloc(P->nlinks, sizeof(int));
	if (g.node && g.lid && g.off && g.port && g.idx) {
		for (w = 0; w < P->nsw; w++) {
			g.node[w] = P->sw[w].node;
			g.lid[w] = P->sw[w].base_lid;
			g.off[w] = m;
			for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln;
			     l++)
				if (P->links[l].kind == N_SWITCH) {
					g.port[m] = P->links[l].port;
					g.idx[m++] = P->links[l].idx;
				}
		}
		g.off[P->nsw] = m;
		ret = fill_hops_graph(&g, sink);
	}
	graph_free(&g);
	return ret;
}
/* the hop matrices of a degraded KNS: fill_hops_graph over the surviving
 * switches and working links (the exact min-hop counts OpenSM would compute);
 * 0, or -1 (OpenSM builds them) */
int hdor_deg_fill_hops(hdor_deg_t *D, const struct hdor_hop_sink *sink)
{
	const hdor_kns_t *K = D->K;
	hgraph_t g = { 0, NULL, NULL, NULL, NULL, NULL };
	int *gi = hdor_calloc(K->nn, sizeof(int)), ret = -1;
	uint32_t i, m = 0;

	g.node = hdor_calloc(K->nrow, sizeof(*g.node));
	g.lid = hdor_calloc(K->nrow, sizeof(uint16_t));
	g.off = hdor_calloc(K->nrow + 1, sizeof(uint32_t));
	g.port = hdor_calloc(K->poff[K->nn], 1);
	g.idx = hdor_calloc(K->poff[K->nn], sizeof(int));
	if (!gi || !g.node || !g.lid || !g.off || !g.port || !g.idx)
		goto out;
	for (i = 0; i < K->nn; i++)
		if (D->cur[i] && K->type[i] == N_SWITCH) {
			if (!D->cur[i]->lft)
				goto out;
			gi[i] = g.n;
			g.node[g.n] = D->cur[i];
			g.lid[g.n++] = D->cur[i]->base_lid;
		}
	for (i = 0; i < K->nn; i++) {
		unsigned p;
		if (!D->cur[i] || K->type[i] != N_SWITCH)
			continue;
		g.off[gi[i]] = m;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];
			if (y >= 0 && K->type[y] == N_SWITCH &&
			    works(D, (int)i, p)) {
				g.port[m] = (uint8_t)p;
				g.idx[m++] = gi[y];
			}
		}
	}
	g.off[g.n] = m;
	ret = fill_hops_graph(&g, sink);
out:
	free(gi);
	graph_free(&g);
	return ret;
}
