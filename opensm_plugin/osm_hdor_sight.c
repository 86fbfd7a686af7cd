// SPDX-License-Identifier: MIT
/*
 * osm_hdor_sight.c -- a degraded fabric identified at first sight
 * (docs/hdor.md section 7).  Phase 1 finds dimensions (classes of parallel
 * indirect networks) and router coordinates from what is there and declines
 * unless every place is decided; phase 2 adds the phantoms (missing routers
 * with an HCA each, missing single-switch networks, missing cables) and
 * returns a KNS whose coordinates kns_build() then assigns by docs sections
 * 2-3 (phantoms have the largest GUIDs, so they decide nothing a present
 * device could).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

typedef struct {
	uint64_t guid;
	uint8_t type, np;
	const struct hdor_node *node; /* NULL: a phantom */
	const char *desc;
} hsnode_t;

typedef struct {
	int a, b; /* hsnode_t indices */
	uint8_t pa, pb;
} hslink_t;

/* what first sight works out */
struct sight {
	hdor_engine_t *ctx;
	hdor_pass_t *P;
	unsigned n, k;
	uint32_t full, lines; /* k^n points, k^(n-1) lines a dimension */
	int nsw_multi; /* some network has several switches */
	int rs; /* the seed router */
	int *cls; /* network -> its dimension (class) */
	int *pc; /* router -> its coordinates (phase 1) */
	int *pt_of; /* point -> router, -1 */
	int *line_grp; /* (dimension, line) -> network, -1 */
	/* phase 2: the complete KNS's nodes and cables */
	hsnode_t *nd;
	hslink_t *lk;
	uint32_t nnd, cnd, nlk, clk;
	pmask_t *used; /* per node: ports cabled now or by a phantom */
	int *sw_node, *ca_node; /* the pass's switches, HCAs -> nodes */
	/* phantom router of a point, switch of a line */
	int *ph_r, *ph_sw;
	uint64_t phantom; /* the next phantom GUID */
	unsigned nphr, nphs, nphl;
};

#define NO(S, ...) hdor_declinec((S)->ctx, HD_NOT_KNS, __VA_ARGS__)
#define AMBIG(S, ...) hdor_declinec((S)->ctx, HD_FIRST_SIGHT, __VA_ARGS__)
#define SIZE(S, ...) hdor_declinec((S)->ctx, HD_SIZE, __VA_ARGS__)
#define OOM(S) hdor_decline((S)->ctx, "out of memory")

static int sight_node(struct sight *S, uint64_t guid, uint8_t type, uint8_t np,
		      const struct hdor_node *node, const char *desc)
{
	uint32_t cu = S->cnd; /* the two arrays grow together */

	if (hdor_grow(&S->nd, S->nnd, &S->cnd, sizeof(*S->nd)) ||
	    hdor_grow(&S->used, S->nnd, &cu, sizeof(*S->used)))
		return -1;
	S->nd[S->nnd] = (hsnode_t){ guid, type, np, node, desc };
	memset(&S->used[S->nnd], 0, sizeof(pmask_t));
	return (int)S->nnd++;
}

static int sight_link(struct sight *S, int a, unsigned pa, int b, unsigned pb)
{
	if (hdor_grow(&S->lk, S->nlk, &S->clk, sizeof(*S->lk)))
		return -1;
	S->lk[S->nlk++] = (hslink_t){ a, b, (uint8_t)pa, (uint8_t)pb };
	mask_set(&S->used[a], pa);
	mask_set(&S->used[b], pb);
	return 0;
}

/* the lowest port of node x that is not cabled (now or by a phantom cable): 0
 * when none */
static unsigned free_port(const struct sight *S, int x)
{
	unsigned p;

	for (p = 1; p < S->nd[x].np; p++)
		if (!(S->used[x].m[p >> 6] & (1ULL << (p & 63))))
			return p;
	return 0;
}

/* the index of the line of dimension d through the point with coordinates c
 * (c[d] left out) */
static uint32_t line_of(const int *c, unsigned d, unsigned n, unsigned k)
{
	uint32_t li = 0;
	unsigned e;

	for (e = n; e-- > 0;)
		if (e != d)
			li = li * k + (uint32_t)c[e];
	return li;
}

/* ------------------------------------------------------------------------ */
/* Phase 1: the shape, the dimensions, the coordinates                      */

/* n, k; every network with two routers or more */
static int sight_shape(struct sight *S)
{
	hdor_pass_t *P = S->P;
	unsigned i;
	int r, g;

	S->full = 1;
	for (r = 0; r < P->nr; r++)
		if (P->rt[r].gn > S->n)
			S->n = P->rt[r].gn;
	for (g = 0; g < P->ng; g++) {
		if (P->grp[g].mn > S->k)
			S->k = P->grp[g].mn;
		if (P->grp[g].sn > 1)
			S->nsw_multi = 1;
	}
	if (S->n > HDOR_MAX_N || S->k > 255)
		return SIZE(
			S,
			"no KNS shape (routers in up to %u indirect networks, networks of up to %u routers)",
			S->n, S->k);
	if (!P->nr || S->n < 1 || S->k < 2)
		return NO(
			S,
			"no KNS shape (routers in up to %u indirect networks, networks of up to %u routers)",
			S->n, S->k);
	for (i = 0; i < S->n; i++) {
		if (S->full > 65536 / S->k)
			return SIZE(
				S,
				"k^n = %u^%u is beyond what first sight identifies",
				S->k, S->n);
		S->full *= S->k;
	}
	S->lines = S->full / S->k;
	if ((uint32_t)P->nr > S->full)
		return NO(S, "%d routers, more than k^n = %u^%u", P->nr, S->k,
			  S->n);
	for (g = 0; g < P->ng; g++)
		if (P->grp[g].mn < 2) {
			int w0 = P->gsw[P->grp[g].soff];

			return NO(S,
				  "the indirect network of switch 0x%016" PRIx64
				  " '%s' has %u router(s): too few to place",
				  P->sw[w0].guid, hdor_desc(P->sw[w0].node),
				  P->grp[g].mn);
		}
	return 0;
}

/* two lines of a KNS share at most one router; the seed: the router with the
 * smallest GUID whose n networks all have k routers */
static int sight_seed(struct sight *S)
{
	hdor_pass_t *P = S->P;
	int *cnt = hdor_calloc(P->ng, sizeof(int));
	int *stamp = hdor_calloc(P->ng, sizeof(int));
	uint32_t j, l;
	int g, r, ret = -1;

	if (!cnt || !stamp) {
		OOM(S);
		goto out;
	}
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
				if (++cnt[h] < 2)
					continue;
				NO(S,
				   "the indirect networks of switches 0x%016" PRIx64
				   " and 0x%016" PRIx64 " share routers",
				   P->sw[P->gsw[G->soff]].guid,
				   P->sw[P->gsw[P->grp[h].soff]].guid);
				goto out;
			}
		}
	}
	S->rs = -1;
	for (r = 0; r < P->nr; r++) {
		const hrtr_t *R = &P->rt[r];

		if (R->gn != S->n ||
		    (S->rs >= 0 && P->rt[S->rs].guid < R->guid))
			continue;
		for (l = 0; l < R->gn && P->grp[P->rgl[R->goff + l]].mn == S->k;
		     l++)
			;
		if (l == R->gn)
			S->rs = r;
	}
	if (S->rs < 0) {
		NO(S,
		   "no router has all %u of its indirect networks with %u routers",
		   S->n, S->k);
		goto out;
	}
	ret = 0;
out:
	free(cnt);
	free(stamp);
	return ret;
}

/* networks G1, G2 without a common router joined by two or more networks
 * (each meeting both) are parallel: joined in uf */
static int sight_parallel(struct sight *S, int *uf)
{
	hdor_pass_t *P = S->P;
	uint64_t *keys = NULL;
	uint32_t nkeys = 0, ckeys = 0, a, b, x, y, l;
	int g;

	for (g = 0; g < P->ng; g++) {
		const hgrp_t *H = &P->grp[g];

		for (a = 0; a < H->mn; a++)
			for (b = a + 1; b < H->mn; b++) {
				const hrtr_t *A = &P->rt[P->gmem[H->moff + a]];
				const hrtr_t *B = &P->rt[P->gmem[H->moff + b]];

				for (x = 0; x < A->gn; x++)
					for (y = 0; y < B->gn; y++) {
						uint64_t g1 =
							P->rgl[A->goff + x];
						uint64_t g2 =
							P->rgl[B->goff + y];

						if ((int)g1 == g ||
						    (int)g2 == g || g1 == g2)
							continue;
						if (hdor_grow(&keys, nkeys,
							      &ckeys,
							      sizeof(*keys))) {
							free(keys);
							return OOM(S);
						}
						keys[nkeys++] =
							g1 < g2 ?
								g1 << 32 | g2 :
								g2 << 32 | g1;
					}
			}
	}
	for (g = 0; g < P->ng; g++)
		uf[g] = g;
	qsort(keys, nkeys, sizeof(*keys), hdor_cmp_u64p);
	for (l = 0; l < nkeys; l++) {
		uint32_t m = l;

		while (m + 1 < nkeys && keys[m + 1] == keys[l])
			m++;
		if (m > l) {
			int ga = hdor_uf_find(uf, (int)(keys[l] >> 32));
			int gb = hdor_uf_find(uf, (int)(keys[l] & 0xffffffffu));

			if (ga != gb)
				uf[ga > gb ? ga : gb] = ga > gb ? gb : ga;
		}
		l = m;
	}
	free(keys);
	return 0;
}

/* the classes of parallel networks are the dimensions, labelled by the
 * seed's networks by key (phase 1 only: the final dimensions are docs 2) */
static int sight_classes(struct sight *S, int *uf)
{
	hdor_pass_t *P = S->P;
	const hrtr_t *R = &P->rt[S->rs];
	int sg[HDOR_MAX_N], nc = 0, g, r;
	unsigned d;
	uint32_t l;

	for (d = 0; d < S->n; d++)
		sg[d] = (int)P->rgl[R->goff + d];
	hdor_sort_pass = P;
	qsort(sg, S->n, sizeof(int), hdor_cmp_group_key);
	for (g = 0; g < P->ng; g++)
		S->cls[g] = -1;
	for (d = 0; d < S->n; d++) {
		int root = hdor_uf_find(uf, sg[d]);

		for (g = 0; g < P->ng; g++) {
			if (hdor_uf_find(uf, g) != root)
				continue;
			if (S->cls[g] >= 0)
				return NO(
					S,
					"router 0x%016" PRIx64
					" '%s' is in two parallel indirect networks",
					P->rt[S->rs].guid,
					hdor_desc(P->sw[P->rt[S->rs].sw].node));
			S->cls[g] = (int)d;
			nc++;
		}
	}
	if (nc != P->ng) {
		for (g = 0; g < P->ng && S->cls[g] >= 0; g++)
			;
		return NO(S,
			  "the indirect network of switch 0x%016" PRIx64
			  " is parallel to none of router 0x%016" PRIx64 "'s",
			  P->sw[P->gsw[P->grp[g].soff]].guid,
			  P->rt[S->rs].guid);
	}
	for (r = 0; r < P->nr; r++) {
		unsigned seen = 0;

		for (l = 0; l < P->rt[r].gn; l++) {
			unsigned bit = 1u << S->cls[P->rgl[P->rt[r].goff + l]];

			if (seen & bit)
				return NO(
					S,
					"router 0x%016" PRIx64
					" '%s' is in two parallel indirect networks",
					P->rt[r].guid,
					hdor_desc(P->sw[P->rt[r].sw].node));
			seen |= bit;
		}
	}
	return 0;
}

/* per part (its root) without a value: the values its routers' dimension-d
 * lines have not taken (cm); then each part left with one takes it; 1 when
 * one did, -1 (declined) when a part has none left */
static int eliminate(struct sight *S, int *uf, int *val, pmask_t *cm,
		     unsigned d)
{
	hdor_pass_t *P = S->P;
	int r, changed = 0;
	unsigned i;
	uint32_t l, j;

	for (r = 0; r < P->nr; r++) {
		memset(&cm[r], 0, sizeof(pmask_t));
		for (i = 0; i < S->k; i++)
			mask_set(&cm[r], i);
	}
	for (r = 0; r < P->nr; r++) {
		int c = hdor_uf_find(uf, r);

		if (val[c] >= 0)
			continue;
		for (l = 0; l < P->rt[r].gn; l++) {
			const hgrp_t *G = &P->grp[P->rgl[P->rt[r].goff + l]];

			if (S->cls[P->rgl[P->rt[r].goff + l]] != (int)d)
				continue;
			for (j = 0; j < G->mn; j++) {
				int v = val[hdor_uf_find(uf,
							 P->gmem[G->moff + j])];

				if (v >= 0)
					cm[c].m[v >> 6] &= ~(1ULL << (v & 63));
			}
		}
	}
	for (r = 0; r < P->nr; r++) {
		unsigned nb = 0;

		if (hdor_uf_find(uf, r) != r || val[r] >= 0)
			continue;
		for (i = 0; i < S->k; i++)
			nb += !!(cm[r].m[i >> 6] & (1ULL << (i & 63)));
		if (nb == 0)
			return NO(
				S,
				"router 0x%016" PRIx64
				" '%s' has no place left in its dimension-%u line",
				P->rt[r].guid,
				hdor_desc(P->sw[P->rt[r].sw].node), d);
		if (nb == 1) {
			for (i = 0; !(cm[r].m[i >> 6] & (1ULL << (i & 63)));
			     i++)
				;
			val[r] = (int)i;
			changed = 1;
		}
	}
	return changed;
}

/*
 * phase-1 coordinates in dimension d: the routers joined through networks of
 * the other dimensions share coordinate d; the seed's network of dimension d
 * numbers them; a part without a router of that network takes the one value
 * its dimension-d networks leave
 */
static int sight_coord(struct sight *S, int *uf, int *val, pmask_t *cm,
		       unsigned d)
{
	hdor_pass_t *P = S->P;
	const hgrp_t *A = NULL;
	int r, rc, left = -1;
	uint32_t l, j;

	for (l = 0; l < P->rt[S->rs].gn; l++)
		if (S->cls[P->rgl[P->rt[S->rs].goff + l]] == (int)d)
			A = &P->grp[P->rgl[P->rt[S->rs].goff + l]];
	for (r = 0; r < P->nr; r++)
		val[r] = -1;
	hdor_join_other_dimensions(P, uf, S->cls, (int)d);
	for (j = 0; j < A->mn; j++) {
		int c = hdor_uf_find(uf, P->gmem[A->moff + j]);

		if (val[c] >= 0)
			return NO(S,
				  "routers 0x%016" PRIx64 " and 0x%016" PRIx64
				  " of one indirect network share a hyperplane",
				  P->rt[P->gmem[A->moff + val[c]]].guid,
				  P->rt[P->gmem[A->moff + j]].guid);
		val[c] = (int)j;
	}
	while ((rc = eliminate(S, uf, val, cm, d)) > 0)
		;
	if (rc < 0)
		return -1;
	for (r = 0; r < P->nr; r++) {
		if (val[hdor_uf_find(uf, r)] < 0 && left < 0)
			left = r;
		S->pc[r * S->n + d] = val[hdor_uf_find(uf, r)];
	}
	if (left >= 0)
		return AMBIG(
			S,
			"the place of router 0x%016" PRIx64
			" '%s' is not decided by the fabric (more than one missing device or cable could be there): give hdor the description hdor.conf",
			P->rt[left].guid,
			hdor_desc(P->sw[P->rt[left].sw].node));
	return 0;
}

/* a KNS labelling: routers at distinct points, every network on one line */
static int sight_labelling(struct sight *S)
{
	hdor_pass_t *P = S->P;
	unsigned n = S->n, k = S->k, d, e;
	uint32_t i, j;
	int r, g;

	for (i = 0; i < S->full; i++)
		S->pt_of[i] = -1;
	for (i = 0; i < n * S->lines; i++)
		S->line_grp[i] = -1;
	for (r = 0; r < P->nr; r++) {
		uint32_t lin = 0;

		for (d = n; d-- > 0;)
			lin = lin * k + (uint32_t)S->pc[r * n + d];
		if (S->pt_of[lin] >= 0)
			return NO(S,
				  "routers 0x%016" PRIx64 " and 0x%016" PRIx64
				  " would have the same coordinates",
				  P->rt[S->pt_of[lin]].guid, P->rt[r].guid);
		S->pt_of[lin] = r;
	}
	for (g = 0; g < P->ng; g++) {
		const hgrp_t *G = &P->grp[g];
		int m0 = P->gmem[G->moff], *lg;

		d = (unsigned)S->cls[g];
		for (j = 0; j < G->mn; j++) {
			int m = P->gmem[G->moff + j];

			for (e = 0; e < n; e++)
				if (e != d &&
				    S->pc[m * n + e] != S->pc[m0 * n + e])
					return NO(
						S,
						"the routers of the indirect network of switch 0x%016" PRIx64
						" are not on one line",
						P->sw[P->gsw[G->soff]].guid);
		}
		lg = &S->line_grp[d * S->lines +
				  line_of(S->pc + m0 * n, d, n, k)];
		if (*lg >= 0)
			return AMBIG(
				S,
				"the indirect networks of switches 0x%016" PRIx64
				" and 0x%016" PRIx64
				" are on one line (a network split in two?): give hdor the description hdor.conf",
				P->sw[P->gsw[P->grp[*lg].soff]].guid,
				P->sw[P->gsw[G->soff]].guid);
		*lg = g;
	}
	return 0;
}

/* dimensions and phase-1 coordinates */
static int sight_phase1(struct sight *S)
{
	hdor_pass_t *P = S->P;
	int *uf, *val, ret = -1;
	pmask_t *cm;
	unsigned d;

	uf = hdor_calloc(P->ng > P->nr ? P->ng : P->nr, sizeof(int));
	val = hdor_calloc(P->nr, sizeof(int));
	cm = hdor_calloc(P->nr, sizeof(pmask_t));
	S->cls = hdor_calloc(P->ng, sizeof(int));
	S->pc = hdor_calloc((size_t)P->nr * S->n, sizeof(int));
	if (!uf || !val || !cm || !S->cls || !S->pc) {
		OOM(S);
		goto out;
	}
	if (sight_parallel(S, uf) || sight_classes(S, uf))
		goto out;
	for (d = 0; d < S->n; d++)
		if (sight_coord(S, uf, val, cm, d))
			goto out;
	S->pt_of = hdor_calloc(S->full, sizeof(int));
	S->line_grp = hdor_calloc((size_t)S->n * S->lines, sizeof(int));
	if (!S->pt_of || !S->line_grp) {
		OOM(S);
		goto out;
	}
	ret = sight_labelling(S);
out:
	free(uf);
	free(val);
	free(cm);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* Phase 2: the complete KNS, with phantoms for what is missing             */

/* a port of a node there now cabled (healthy or not) */
static int cabled_now(const struct hdor_node *x, unsigned p)
{
	const struct hdor_port *ph = &x->ports[p];

	return (ph->flags & HDOR_PORT_LINKED) &&
	       (!ph->peer || hdor_node_here(ph->peer));
}

/* the nodes there now, by GUID, with the ports they have cabled (never given
 * to a phantom cable) */
static int sight_present(struct sight *S)
{
	hdor_pass_t *P = S->P;
	hnode_ord_t *ord = hdor_calloc((size_t)P->nsw + P->nca, sizeof(*ord));
	int x;
	unsigned p;

	if (!ord)
		return OOM(S);
	for (x = 0; x < P->nsw; x++)
		ord[x] = (hnode_ord_t){ P->sw[x].guid, N_SWITCH, x };
	for (x = 0; x < P->nca; x++)
		ord[P->nsw + x] = (hnode_ord_t){ P->ca[x].guid, N_CA, x };
	qsort(ord, (size_t)P->nsw + P->nca, sizeof(*ord), hdor_cmp_node_ord);
	for (x = 0; x < P->nsw + P->nca; x++) {
		const struct hdor_node *node = ord[x].kind == N_SWITCH ?
						       P->sw[ord[x].idx].node :
						       P->ca[ord[x].idx].node;
		int id = sight_node(S, ord[x].guid, (uint8_t)ord[x].kind,
				    node->np, node, hdor_desc(node));

		if (id < 0) {
			free(ord);
			return OOM(S);
		}
		if (ord[x].kind == N_SWITCH)
			S->sw_node[ord[x].idx] = id;
		else
			S->ca_node[ord[x].idx] = id;
		for (p = 1; p < S->nd[id].np; p++)
			if (cabled_now(node, p))
				mask_set(&S->used[id], p);
	}
	free(ord);
	return 0;
}

/* the phantom routers (by point) and single-switch networks (by dimension and
 * line) */
static int sight_phantoms(struct sight *S)
{
	uint32_t i;

	for (i = 0; i < S->full; i++) {
		S->ph_r[i] = -1;
		if (S->pt_of[i] >= 0)
			continue;
		S->ph_r[i] = sight_node(S, S->phantom++, N_SWITCH,
					(uint8_t)(S->n + 2), NULL, "");
		if (S->ph_r[i] < 0)
			return OOM(S);
		S->nphr++;
	}
	for (i = 0; i < S->n * S->lines; i++) {
		S->ph_sw[i] = -1;
		if (S->line_grp[i] >= 0)
			continue;
		if (S->nsw_multi)
			return AMBIG(
				S,
				"an indirect network of dimension-class %u is missing whole, and networks here have several switches: give hdor the description hdor.conf",
				i / S->lines);
		S->ph_sw[i] = sight_node(S, S->phantom++, N_SWITCH,
					 (uint8_t)(S->k + 1), NULL, "");
		if (S->ph_sw[i] < 0)
			return OOM(S);
		S->nphs++;
	}
	return 0;
}

/* the cables there now, then a phantom HCA on port 1 of each phantom
 * router */
static int sight_cables(struct sight *S)
{
	hdor_pass_t *P = S->P;
	uint32_t l, i;
	int r;

	for (r = 0; r < P->nsw; r++)
		for (l = P->sw[r].loff; l < P->sw[r].loff + P->sw[r].ln; l++) {
			const hlink_t *lk = &P->links[l];
			int a = S->sw_node[r];
			int b = lk->kind == N_CA ? S->ca_node[lk->idx] :
						   S->sw_node[lk->idx];

			/* a switch-switch cable once */
			if (lk->kind == N_SWITCH &&
			    (b < a || (b == a && lk->rport < lk->port)))
				continue;
			if (sight_link(S, a, lk->port, b, lk->rport))
				return OOM(S);
		}
	for (i = 0; i < S->full; i++) {
		int h;

		if (S->ph_r[i] < 0)
			continue;
		h = sight_node(S, 0, N_CA, 2, NULL, "");
		if (h < 0 || sight_link(S, S->ph_r[i], 1, h, 1))
			return OOM(S);
	}
	return 0;
}

/* the switches of network w's tree with router cables */
static unsigned router_cables(const hdor_pass_t *P, int w)
{
	unsigned cn = 0;
	uint32_t l;

	for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
		cn += P->links[l].kind == N_SWITCH &&
		      P->sw[P->links[l].idx].router >= 0;
	return cn;
}

/* the switch of network G (a tree) that takes a missing router cable: the one
 * with fewer router cables than the most; -1 (declined) when not one */
static int tree_switch(struct sight *S, const hgrp_t *G)
{
	hdor_pass_t *P = S->P;
	unsigned most = 0, cand = 0, cn;
	int pick_ = -1;
	uint32_t j;

	for (j = 0; j < G->sn; j++) {
		cn = router_cables(P, P->gsw[G->soff + j]);
		if (cn > most)
			most = cn;
	}
	for (j = 0; j < G->sn; j++) {
		int w = P->gsw[G->soff + j];

		cn = router_cables(P, w);
		if (cn && cn < most) {
			cand++;
			pick_ = w;
		}
	}
	if (cand != 1)
		return AMBIG(
			S,
			"a router's cable into the indirect network of switch 0x%016" PRIx64
			" is missing, and %u of its switches could take it: give hdor the description hdor.conf",
			P->sw[P->gsw[G->soff]].guid, cand);
	return S->sw_node[pick_];
}

/* the cable of router x (pass router rr, -1: a phantom; coordinates c) into
 * its line of dimension d when it is missing */
static int sight_cable(struct sight *S, int x, int rr, const int *c, unsigned d)
{
	hdor_pass_t *P = S->P;
	uint32_t li = line_of(c, d, S->n, S->k), l;
	int G = S->line_grp[d * S->lines + li], sw, px, ps;

	if (rr >= 0 && G >= 0) {
		for (l = 0;
		     l < P->rt[rr].gn && (int)P->rgl[P->rt[rr].goff + l] != G;
		     l++)
			;
		if (l < P->rt[rr].gn)
			return 0; /* a member already */
		/* (a cable to a missing network goes with it) */
		S->nphl++;
	}
	if (G < 0) {
		sw = S->ph_sw[d * S->lines + li];
		ps = c[d] + 1;
	} else {
		const hgrp_t *GG = &P->grp[G];

		sw = GG->sn == 1 ? S->sw_node[P->gsw[GG->soff]] :
				   tree_switch(S, GG);
		if (sw < 0)
			return -1;
		ps = (int)free_port(S, sw);
		if (!ps)
			return SIZE(S,
				    "switch 0x%016" PRIx64
				    " has no free port for a missing cable",
				    S->nd[sw].guid);
	}
	px = rr >= 0 ? (int)free_port(S, x) : (int)(2 + d);
	if (!px)
		return SIZE(S,
			    "router 0x%016" PRIx64
			    " has no free port for a missing cable",
			    S->nd[x].guid);
	if (sight_link(S, x, (unsigned)px, sw, (unsigned)ps))
		return OOM(S);
	return 0;
}

/* the missing cables: every router on each of its lines, routers there now
 * (GUID order), then phantoms (point order) */
static int sight_missing(struct sight *S)
{
	hdor_pass_t *P = S->P;
	int c[HDOR_MAX_N];
	unsigned d;
	uint32_t i;

	for (i = 0; i < (uint32_t)P->nr; i++) {
		int x = S->sw_node[P->rt[i].sw];

		for (d = 0; d < S->n; d++)
			c[d] = S->pc[i * S->n + d];
		for (d = 0; d < S->n; d++)
			if (sight_cable(S, x, (int)i, c, d))
				return -1;
	}
	for (i = 0; i < S->full; i++) {
		uint32_t pt = i;

		if (S->ph_r[i] < 0)
			continue;
		for (d = 0; d < S->n; d++, pt /= S->k)
			c[d] = (int)(pt % S->k);
		for (d = 0; d < S->n; d++)
			if (sight_cable(S, S->ph_r[i], -1, c, d))
				return -1;
	}
	return 0;
}

/* into a KNS (structure only; kns_build assigns coordinates): S's nodes are
 * in GUID order, present ones (sorted), then phantoms (ascending) */
static hdor_kns_t *sight_kns(struct sight *S)
{
	hdor_kns_t *K = hdor_kns_alloc(S->nnd, S->k, S->n, 1, K_SIGHT);
	uint32_t i, l;

	if (!K) {
		OOM(S);
		return NULL;
	}
	for (i = 0; i < K->nn; i++) {
		K->guid[i] = K->ident[i] = S->nd[i].guid;
		K->type[i] = S->nd[i].type;
		K->np[i] = S->nd[i].np;
		K->dim[i] = -1;
		K->desc[i] = strdup(S->nd[i].desc);
		if (!K->desc[i])
			goto oom;
		K->poff[i + 1] = K->poff[i] + K->np[i];
	}
	for (i = 1; i < K->nn; i++)
		if (K->guid[i] <= K->guid[i - 1]) {
			NO(S,
			   "GUID 0x%016" PRIx64
			   " is in the range hdor keeps for missing devices",
			   K->guid[i - 1]);
			hdor_kns_free(K);
			return NULL;
		}
	if (hdor_kns_alloc_slots(K))
		goto oom;
	for (l = 0; l < S->nlk; l++) {
		const hslink_t *x = &S->lk[l];

		K->peer[K->poff[x->a] + x->pa] = x->b;
		K->pport[K->poff[x->a] + x->pa] = x->pb;
		K->peer[K->poff[x->b] + x->pb] = x->a;
		K->pport[K->poff[x->b] + x->pb] = x->pa;
	}
	return K;
oom:
	OOM(S);
	hdor_kns_free(K);
	return NULL;
}

static hdor_kns_t *sight_phase2(struct sight *S)
{
	hdor_pass_t *P = S->P;
	uint32_t i, full = S->full, nl = S->n * S->lines;

	S->sw_node = hdor_calloc(P->nsw, sizeof(int));
	S->ca_node = hdor_calloc(P->nca, sizeof(int));
	S->ph_r = hdor_calloc(full, sizeof(int));
	S->ph_sw = hdor_calloc(nl, sizeof(int));
	if (!S->sw_node || !S->ca_node || !S->ph_r || !S->ph_sw) {
		OOM(S);
		return NULL;
	}
	if (sight_present(S) || sight_phantoms(S) || sight_cables(S) ||
	    sight_missing(S))
		return NULL;
	/* "a few" faults: at most an eighth of the routers, of the lines, of
	 * the routers' cables */
	if (S->nphr > (full / 8 ? full / 8 : 1) ||
	    S->nphs > (nl / 8 ? nl / 8 : 1) ||
	    S->nphl > (S->n * full / 8 ? S->n * full / 8 : 1)) {
		AMBIG(S,
		      "%u router(s), %u indirect network(s) and %u cable(s) missing: more than first sight completes (an eighth of each)",
		      S->nphr, S->nphs, S->nphl);
		return NULL;
	}
	/* phantom HCAs get their GUIDs last, in the order of their routers */
	for (i = 0; i < S->nnd; i++)
		if (!S->nd[i].node && S->nd[i].type == N_CA)
			S->nd[i].guid = S->phantom++;
	return sight_kns(S);
}

/*
 * The complete KNS that the fabric of P (collect + structure) is a degraded
 * copy of, or NULL (ctx->reason); the phantom routers, switches and router
 * cables it added.
 */
hdor_kns_t *hdor_first_sight(hdor_engine_t *ctx, hdor_pass_t *P, unsigned *nphr,
			     unsigned *nphs, unsigned *nphl)
{
	struct sight S;
	hdor_kns_t *K = NULL;

	memset(&S, 0, sizeof(S));
	S.ctx = ctx;
	S.P = P;
	S.phantom = HDOR_PHANTOM;
	if (!sight_shape(&S) && !sight_seed(&S) && !sight_phase1(&S))
		K = sight_phase2(&S);
	*nphr = S.nphr;
	*nphs = S.nphs;
	*nphl = S.nphl;
	{
		void *all[] = { S.cls,	   S.pc,   S.pt_of, S.line_grp,
				S.nd,	   S.lk,   S.used,  S.sw_node,
				S.ca_node, S.ph_r, S.ph_sw };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	return K;
}

/* descriptions of the phantoms of a KNS identified at first sight, by their
 * coordinates */
void hdor_phantom_descs(hdor_kns_t *K)
{
	uint32_t i;

	for (i = 0; i < K->nn; i++) {
		char buf[96], *c = buf;
		unsigned e, first = 1;

		if (K->guid[i] < HDOR_PHANTOM)
			continue;
		c += snprintf(c, 40, "missing %s%s",
			      K->role[i] == R_ROUTER ? "router" :
			      K->role[i] == R_SWITCH ? "switch" :
						       "HCA",
			      K->role[i] == R_SWITCH ? " dim=" : " ");
		if (K->role[i] == R_SWITCH)
			c += snprintf(c, 8, "%d ", K->dim[i]);
		*c++ = '[';
		for (e = K->n; e-- > 0;) {
			if (K->role[i] == R_SWITCH && (int)e == K->dim[i])
				continue;
			c += snprintf(c, 8, first ? "%u" : ",%u",
				      K->coord[(size_t)i * K->n + e]);
			first = 0;
		}
		*c++ = ']';
		*c = '\0';
		free(K->desc[i]);
		/* NULL (out of memory) prints as "" */
		K->desc[i] = strdup(buf);
		if (!K->desc[i])
			K->desc[i] = calloc(1, 1);
	}
}
