// SPDX-License-Identifier: MIT
/*
 * osm_hdor_lft.c -- the forwarding tables of a complete KNS (docs/hdor.md
 * sections 4-5): distances inside groups, every switch's candidate port sets,
 * the target of every LID, the tables with their spreading, and the
 * coordinates dump opensm-hdor.dump.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm_hdor.h"

/* ------------------------------------------------------------------------ */
/* Distances inside groups and candidate sets                               */

/*
 * BFS over the switches of group g from `src` (a member router when src_hops =
 * 1: its switches of g are at 1 hop; an indirect switch of g when src_hops = 0,
 * its dist entry already 0); dist is indexed by the switches' index inside g; q
 * is scratch of nsw entries
 */
static void group_bfs(const hdor_pass_t *P, int g, const hsw_t *src,
		      unsigned src_hops, uint16_t *dist, int *q)
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

int hdor_group_distances(hdor_engine_t *ctx, hdor_pass_t *P)
{
	unsigned k = P->k;
	int g, *q = hdor_calloc(P->nsw, sizeof(int));
	if (!q)
		return hdor_decline(ctx, "out of memory");
	P->s = 1;
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		uint32_t sn = G->sn, m, j;
		G->mdist = malloc((size_t)k * sn * sizeof(uint16_t));
		G->sdist = malloc((size_t)sn * sn * sizeof(uint16_t));
		if (!G->mdist || !G->sdist) {
			free(q);
			return hdor_decline(ctx, "out of memory");
		}
		memset(G->mdist, 0xff, (size_t)k * sn * sizeof(uint16_t));
		memset(G->sdist, 0xff, (size_t)sn * sn * sizeof(uint16_t));
		/*
		 * BFS from every member (by coordinate) over the group's
		 * switches
		 */
		for (m = 0; m < k; m++) {
			uint16_t *dist = G->mdist + (size_t)m * sn;
			hsw_t *M = &P->sw[P->rt[G->mbyc[m]].sw];
			/*
			 * the member counts as a node at hop 0 that is not
			 * traversed again
			 */
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

/*
 * hops inside group G from its switch with local index j to member coordinate m
 * (mode 0) or to its switch with local index m (mode 1)
 */
static inline uint16_t gdist(const hgrp_t *G, int j, unsigned m, int mode)
{
	return mode ? G->sdist[(size_t)j * G->sn + m] :
		      G->mdist[(size_t)m * G->sn + j];
}

/*
 * W's ports into group g whose switch is `want` hops from the target (m, mode)
 * (see gdist); the smallest such distance over all of them goes to *min when
 * min is given
 */
static void ports_at(const hdor_pass_t *P, const hsw_t *W, int g, unsigned m,
		     int mode, uint16_t want, pmask_t *mask, uint16_t *min)
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

/*
 * router w's ports into group g on a shortest path to member coordinate m (mode
 * 0), or to the group's switch with local index m (mode 1)
 */
static int router_set(hdor_pass_t *P, int w, int g, unsigned m, int mode)
{
	hsw_t *W = &P->sw[w];
	uint16_t best = 0xffff;
	pmask_t mask;

	ports_at(P, W, g, m, mode, 0xffff, &mask, &best);
	memset(&mask, 0, sizeof(mask));
	if (best != 0xffff)
		ports_at(P, W, g, m, mode, best, &mask, &best);
	return hdor_intern_set(P, w, &mask);
}

/*
 * indirect switch w's ports on a shortest path inside its group to member
 * coordinate m (mode 0) or to the group's switch with local index m (mode 1, m
 * != w)
 */
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
			if (P->links[l].kind == N_SWITCH &&
			    P->links[l].idx == M)
				mask_set(&mask, P->links[l].port);
		if (!mask_empty(&mask))
			return hdor_intern_set(P, w, &mask);
	}
	dw = gdist(G, W->lidx, m, mode);
	if (dw == 0xffff || dw == 0)
		return -1;
	ports_at(P, W, g, m, mode, (uint16_t)(dw - 1), &mask, NULL);
	return hdor_intern_set(P, w, &mask);
}

int hdor_candidate_sets(hdor_engine_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n, k = P->k, e, m;
	int r, w;

	P->rset = hdor_calloc((size_t)P->nr * n * k, sizeof(int));
	P->sset = hdor_calloc((size_t)P->nsw * k, sizeof(int));
	if (!P->rset || !P->sset)
		return hdor_decline(ctx, "out of memory");
	for (r = 0; r < P->nr; r++)
		for (e = 0; e < n; e++)
			for (m = 0; m < k; m++) {
				int id = -1;
				if (m != P->coord[r * n + e]) {
					id = router_set(P, P->rt[r].sw,
							P->rg[r * n + e], m, 0);
					if (id < 0)
						return hdor_decline(
							ctx,
							"router 0x%016" PRIx64
							" '%s' has no path in dimension %u to coordinate %u",
							P->rt[r].guid,
							hdor_desc(
								P->sw[P->rt[r].sw]
									.node),
							e, m);
				}
				P->rset[((size_t)r * n + e) * k + m] = id;
			}
	for (w = 0; w < P->nsw; w++) {
		if (P->sw[w].group < 0)
			continue;
		for (m = 0; m < k; m++) {
			int id = switch_set(P, w, m, 0);
			if (id < 0)
				return hdor_decline(
					ctx,
					"switch 0x%016" PRIx64
					" '%s' has no path to the router at coordinate %u of its indirect network",
					P->sw[w].guid, hdor_desc(P->sw[w].node),
					m);
			P->sset[(size_t)w * k + m] = id;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* LID targets                                                              */

int hdor_lid_targets(hdor_engine_t *ctx, hdor_pass_t *P)
{
	const struct hdor_fabric *fab = P->fab;
	uint32_t maxlid = 0, i;
	int w;

	/*
	 * (no node: a switch of the KNS that is not there, a KNS from a file)
	 */
	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].node && P->sw[w].node->top > maxlid)
			maxlid = P->sw[w].node->top;
	P->max_lid = maxlid;
	P->lt = hdor_calloc(maxlid + 1, sizeof(*P->lt));
	if (!P->lt)
		return hdor_decline(ctx, "out of memory");
	for (i = 0; i < fab->nlp; i++) {
		const struct hdor_lport *lp = &fab->lports[i];
		uint32_t lid, hi;
		ltgt_t t;
		int v;

		if (!hdor_node_here(lp->node))
			continue;
		v = hdor_hget(P, lp->node);
		if (v < 0)
			continue;
		if (v & 1) {
			const struct hdor_node *rn =
				hdor_cable(lp->node, lp->port);
			int rv = hdor_hget(P, rn);

			if (rv < 0 || (rv & 1) || P->sw[rv >> 1].router < 0)
				return hdor_decline(
					ctx,
					"HCA port 0x%016" PRIx64
					" is not linked to a router",
					lp->guid);
			t.kind = T_ROUTER;
			t.idx = P->sw[rv >> 1].router;
			t.port = lp->node->ports[lp->port].peer_port;
		} else if (P->sw[v >> 1].router >= 0) {
			t.kind = T_ROUTER;
			t.idx = P->sw[v >> 1].router;
			t.port = 0;
		} else {
			t.kind = T_SWITCH;
			t.idx = v >> 1;
			t.port = 0;
		}
		if (!lp->lid)
			continue;
		hi = lp->lid + (1u << lp->lmc) - 1;
		for (lid = lp->lid; lid <= hi && lid <= maxlid; lid++) {
			if (P->lt[lid].kind == T_NONE)
				P->nlids++;
			P->lt[lid] = t;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The analysis: everything that can fail, before anything is written       */

int hdor_analyse(hdor_engine_t *ctx, hdor_pass_t *P)
{
	if (hdor_collect(ctx, P) || hdor_structure(ctx, P) ||
	    hdor_kns_counts(ctx, P))
		return -1;
	hdor_ph_mark(ctx, PH_IDENT);
	if (hdor_dims_and_coords(ctx, P) || hdor_group_distances(ctx, P))
		return -1;
	hdor_ph_mark(ctx, PH_COORDS);
	if (hdor_candidate_sets(ctx, P) || hdor_lid_targets(ctx, P))
		return -1;
	hdor_ph_mark(ctx, PH_SETS);
	P->ready = 1;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The forwarding tables                                                    */

/*
 * indirect switch w (group G, dimension e) toward switch D of another group G'
 * of dimension e: the member coordinate j minimising hops(w -> member j of G) +
 * hops(member j of G' -> D), the lowest j on ties (with s = 1 every j ties: j =
 * 0)
 */
static unsigned same_dim_member(const hdor_pass_t *P, int w, int D)
{
	const hgrp_t *G = &P->grp[P->sw[w].group], *H = &P->grp[P->sw[D].group];
	unsigned j, best = 0, bestv = UINT32_MAX;
	for (j = 0; j < P->k; j++) {
		unsigned v =
			(unsigned)G->mdist[(size_t)j * G->sn + P->sw[w].lidx] +
			H->mdist[(size_t)j * H->sn + P->sw[D].lidx];
		if (v < bestv) {
			bestv = v;
			best = j;
		}
	}
	return best;
}

/*
 * the LIDs route_all hands to route_switch: ck, a router's coordinates packed 8
 * bits a dimension (n <= 8; else NULL), and lk, the same by LID (its target
 * router's; 0 for other LIDs): the first differing dimension of two routers is
 * then one count of trailing zeros; fix, the LIDs (ascending) that are not a
 * router's or HCA's, and own, each router's own LIDs (CSR by router)
 */
typedef struct {
	const uint64_t *ck, *lk;
	const uint32_t *fix, *own, *own_off;
	uint32_t nfix;
	/* scratch: a row's entries of the LIDs in fix, nfix */
	uint8_t *save;
} lidsets_t;

/*
 * switch w toward LID lid: its port, -1 for a LID of no port (the entry is left
 * as OpenSM prepared it). A router switch's sets rs are by (dimension,
 * coordinate) and one holds the port of each whose set has one port (0x100
 * where it has more: a spreading counter steps); an indirect switch's sets rs
 * are by member coordinate (one unused)
 */
static inline int lft_entry(hdor_pass_t *P, int w, const int *rs,
			    const uint16_t *one, const lidsets_t *L,
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
				int id = switch_set(P, w,
						    (unsigned)P->sw[D].lidx, 1);
				return id >= 0 ? pick(P, id) : HDOR_NO_PATH;
			}
			if ((unsigned)P->grp[gd].dim != ed)
				return pick(P,
					    rs[P->gcoord[(size_t)gd * n + ed]]);
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
				e = (unsigned)__builtin_ctzll(L->ck[r] ^
							      L->lk[lid]) >>
				    3;
				i = e * k + ((L->lk[lid] >> (8 * e)) & 0xff);
				return one[i] < 0x100 ? (uint8_t)one[i] :
							pick(P, rs[i]);
			}
			tc = P->coord + (size_t)t->idx * n;
			for (e = 0; c[e] == tc[e]; e++)
				;
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
			id = router_set(P, w, g, (unsigned)P->sw[t->idx].lidx,
					1);
			return id >= 0 ? pick(P, id) : HDOR_NO_PATH;
		}
	}
	return -1;
}

/*
 * counts: scratch, 4 x 256 (four histograms: one counter incremented entry
 * after entry is a chain of dependent stores)
 */
static void route_switch(hdor_pass_t *P, int w, const lidsets_t *L,
			 uint32_t *counts)
{
	hsw_t *W = &P->sw[w];
	int r = W->router, single = L->ck != NULL, port;
	unsigned n = P->n, k = P->k, nsets = r >= 0 ? n * k : k, e, p;
	const int *rs = r >= 0 ? P->rset + (size_t)r * n * k :
				 P->sset + (size_t)w * k;
	uint32_t lid, top = W->top, j;
	uint8_t *lft = W->lft, one8[8 * 256];
	uint16_t one[HDOR_MAX_N * 256];

	if (top > P->max_lid)
		top = P->max_lid;
	for (e = 0; e < nsets; e++) {
		int id = rs[e];
		one[e] = id >= 0 && P->sets[id].np == 1 ?
				 P->pool[P->sets[id].poff] :
				 0x100;
		single &= id < 0 || P->sets[id].np == 1;
	}
	/* a set of several ports: the counters step in LID order */
	if (!single) {
		for (lid = 1; lid <= top; lid++)
			if ((port = lft_entry(P, w, rs, one, L, lid)) >= 0) {
				lft[lid] = (uint8_t)port;
				counts[(lid & 3) << 8 | (unsigned)port]++;
			}
	} else {
		/*
		 * every router's LID by a closed form, branch-free: one lookup
		 * on the first differing coordinate (a router switch) or on the
		 * coordinate in the switch's dimension (an indirect switch);
		 * the row's own LIDs and the other LIDs get a stand-in, then
		 * are done entry by entry. No set of this row steps a counter
		 * for a router's LID, so the counters step as in LID order
		 */
		const uint64_t *lk = L->lk;
		memset(one8, HDOR_NO_PATH, sizeof(one8));
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
				uint8_t q = one8[d * k +
						 ((lk[lid] >> (8 * d)) & 0xff)];
				lft[lid] = q;
				counts[(lid & 3) << 8 | q]++;
			}
			for (j = L->own_off[r];
			     j < L->own_off[r + 1] && L->own[j] <= top; j++) {
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
	/* the paths per port (OpenSM's port profiles) */
	for (p = 0; p < W->np; p++)
		W->paths[p] += counts[p] + counts[256 + p] + counts[512 + p] +
			       counts[768 + p];
	memset(counts, 0, 1024 * sizeof(*counts));
}

/* every switch's new_lft */
void hdor_route_all(hdor_pass_t *P)
{
	uint32_t counts[1024] = { 0 }, lid, nf = 0;
	lidsets_t L = { 0 };
	uint64_t *ck =
		P->n <= 8 ? hdor_calloc((size_t)P->nr + 1, sizeof(uint64_t)) :
			    NULL;
	uint64_t *lk =
		ck ? hdor_calloc((size_t)P->max_lid + 1, sizeof(uint64_t)) :
		     NULL;
	uint32_t *fix =
		lk ? hdor_calloc((size_t)P->max_lid + 1, sizeof(uint32_t)) :
		     NULL;
	uint32_t *own =
		fix ? hdor_calloc((size_t)P->max_lid + 1, sizeof(uint32_t)) :
		      NULL;
	uint32_t *own_off =
		own ? hdor_calloc((size_t)P->nr + 1, sizeof(uint32_t)) : NULL;
	uint8_t *save = own_off ? hdor_calloc((size_t)P->max_lid + 1, 1) : NULL;
	unsigned e;
	int r, w;
	/* out of memory: entry by entry, without the packed coordinates */
	if (!save) {
		void *all[] = { ck, lk, fix, own, own_off };
		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
		ck = lk = NULL;
	} else {
		for (r = 0; r < P->nr; r++)
			for (e = 0; e < P->n; e++)
				ck[r] |=
					(uint64_t)P->coord[(size_t)r * P->n + e]
					<< (8 * e);
		for (lid = 1; lid <= P->max_lid; lid++)
			if (P->lt[lid].kind == T_ROUTER) {
				lk[lid] = ck[P->lt[lid].idx];
				own_off[P->lt[lid].idx + 1]++;
			} else
				fix[nf++] = lid;
		for (r = 0; r < P->nr; r++)
			own_off[r + 1] += own_off[r];
		/* ascending within each router */
		for (lid = 1; lid <= P->max_lid; lid++)
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
		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
}

/* ------------------------------------------------------------------------ */
/* The coordinates dump (docs section 5)                                    */

void hdor_put_coords(FILE *f, const uint8_t *c, unsigned n, int skip)
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

/* opensm-hdor.dump is written to a temporary file beside it, then renamed */
FILE *hdor_dump_open(hdor_engine_t *ctx, char *tmp, size_t tmpsz)
{
	snprintf(tmp, tmpsz, "%s.tmp", ctx->opts.dump_path);
	return fopen(tmp, "w");
}

int hdor_dump_close(FILE *f, const char *tmp, const char *path)
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

int hdor_write_dump(hdor_engine_t *ctx, hdor_pass_t *P)
{
	char tmp[4200];
	FILE *f;
	int *ord, i, nind = P->nsw - P->nr, ret;
	unsigned n = P->n;

	ord = hdor_calloc((size_t)P->nsw + P->nca, sizeof(int));
	if (!ord)
		return -1;
	f = hdor_dump_open(ctx, tmp, sizeof(tmp));
	if (!f) {
		free(ord);
		return -1;
	}
	fprintf(f, "# hdor k=%u n=%u routers=%d switches=%d hcas=%d lids=%u\n",
		P->k, n, P->nr, nind, P->nca, P->nlids);
	hdor_sort_pass = P;
	/* routers */
	for (i = 0; i < P->nr; i++)
		ord[i] = P->rt[i].sw;
	qsort(ord, P->nr, sizeof(int), hdor_cmp_sw_guid);
	for (i = 0; i < P->nr; i++) {
		hsw_t *W = &P->sw[ord[i]];
		fprintf(f, "router 0x%016" PRIx64 " ", W->guid);
		hdor_put_coords(f, P->coord + (size_t)W->router * n, n, -1);
		fprintf(f, " \"%s\"\n", hdor_desc(W->node));
	}
	/* indirect switches */
	{
		int j = 0;
		for (i = 0; i < P->nsw; i++)
			if (P->sw[i].router < 0)
				ord[j++] = i;
		qsort(ord, j, sizeof(int), hdor_cmp_sw_guid);
		for (i = 0; i < nind; i++) {
			hsw_t *W = &P->sw[ord[i]];
			int dim = P->grp[W->group].dim;
			fprintf(f, "switch 0x%016" PRIx64 " dim=%d ", W->guid,
				dim);
			hdor_put_coords(f, P->gcoord + (size_t)W->group * n, n,
					dim);
			fprintf(f, " \"%s\"\n", hdor_desc(W->node));
		}
	}
	/* HCAs */
	for (i = 0; i < P->nca; i++)
		ord[i] = i;
	qsort(ord, P->nca, sizeof(int), hdor_cmp_ca_guid);
	for (i = 0; i < P->nca; i++) {
		hca_t *C = &P->ca[ord[i]];
		fprintf(f, "hca    0x%016" PRIx64 " ", C->guid);
		if (C->router >= 0)
			hdor_put_coords(f, P->coord + (size_t)C->router * n, n,
					-1);
		else
			fputs("[]", f);
		fprintf(f, " \"%s\"\n", hdor_desc(C->node));
	}
	/*
	 * spread over parallel links: routers in GUID order, dimensions
	 * ascending
	 */
	for (i = 0; i < P->nr; i++)
		ord[i] = P->rt[i].sw;
	qsort(ord, P->nr, sizeof(int), hdor_cmp_sw_guid);
	for (i = 0; i < P->nr; i++) {
		hsw_t *W = &P->sw[ord[i]];
		uint32_t hist[256], lid, top = W->top, l;
		unsigned e;
		int have = 0;
		for (e = 0; e < n; e++) {
			int g = P->rg[(size_t)W->router * n + e], np = 0,
			    first = 1;
			for (l = W->loff; l < W->loff + W->ln; l++)
				if (P->links[l].kind == N_SWITCH &&
				    P->sw[P->links[l].idx].group == g)
					np++;
			if (np < 2)
				continue;
			if (!have) {
				memset(hist, 0, sizeof(hist));
				for (lid = 1; lid <= top; lid++)
					hist[W->lft[lid]]++;
				have = 1;
			}
			fprintf(f, "spread 0x%016" PRIx64 " dim=%u ports=",
				W->guid, e);
			{
				/*
				 * ports into g, ascending (links are in port
				 * order)
				 */
				for (l = W->loff; l < W->loff + W->ln; l++)
					if (P->links[l].kind == N_SWITCH &&
					    P->sw[P->links[l].idx].group == g) {
						fprintf(f,
							first ? "%u:%u" :
								",%u:%u",
							P->links[l].port,
							hist[P->links[l].port]);
						first = 0;
					}
			}
			fputc('\n', f);
		}
	}
	ret = hdor_dump_close(f, tmp, ctx->opts.dump_path);
	free(ord);
	return ret;
}
