// SPDX-License-Identifier: MIT
/*
 * osm_hdor_ident.c -- a complete KNS identified (docs/hdor.md sections 1-3):
 * the pass's switches, HCAs and healthy links from the fabric model; routers,
 * groups and members; checks 1-3; dimensions breadth-first from the seed
 * router; coordinates from the hyperplanes of each dimension.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

/* ------------------------------------------------------------------------ */
/* Nodes and links                                                          */

/* the node index (fab->nn entries) and the switch and HCA arrays of a pass;
 * 0 when out of memory (the caller declines) */
int hdor_pass_alloc(hdor_pass_t *P)
{
	uint32_t i;

	P->nval = hdor_calloc(P->fab->nn, sizeof(*P->nval));
	P->sw = hdor_calloc(P->nsw, sizeof(*P->sw));
	P->ca = hdor_calloc(P->nca, sizeof(*P->ca));
	if (!P->nval || !P->sw || !P->ca)
		return 0;
	for (i = 0; i < P->fab->nn; i++)
		P->nval[i] = -1;
	return 1;
}

static int count_nodes(hdor_engine_t *ctx, hdor_pass_t *P)
{
	const struct hdor_fabric *fab = P->fab;
	uint32_t i;

	for (i = 0; i < fab->nn; i++) {
		const struct hdor_node *node = &fab->nodes[i];

		if (!hdor_node_here(node))
			continue;
		switch (node->type) {
		case HDOR_NODE_SWITCH:
			if (node->flags & HDOR_NODE_NO_SWITCH)
				return hdor_declinec(
					ctx, HD_DEVICE,
					"switch 0x%016" PRIx64
					" '%s' has no switch object",
					node->guid, hdor_desc(node));
			P->nsw++;
			break;
		case HDOR_NODE_CA:
			P->nca++;
			break;
		default:
			return hdor_declinec(
				ctx, HD_DEVICE,
				"node 0x%016" PRIx64
				" '%s' is neither a switch nor an HCA",
				node->guid, hdor_desc(node));
		}
	}
	if (!P->nsw)
		return hdor_decline(ctx, "no switches");
	return 0;
}

static void switch_links(hdor_pass_t *P, hsw_t *s)
{
	const struct hdor_node *node = s->node;
	unsigned i;

	s->loff = P->nlinks;
	for (i = 1; i < node->np; i++) {
		const struct hdor_node *r = hdor_link(node, i);
		hlink_t *lk = &P->links[P->nlinks];
		int v;

		if (!r || r == node)
			continue;
		v = hdor_hget(P, r);
		if (v < 0)
			continue;
		lk->port = (uint8_t)i;
		lk->rport = node->ports[i].peer_port;
		lk->kind = (v & 1) ? N_CA : N_SWITCH;
		lk->idx = v >> 1;
		P->nlinks++;
	}
	s->ln = P->nlinks - s->loff;
}

/* the switches and HCAs there now (in the model's order) and the healthy
 * links of every switch */
int hdor_collect(hdor_engine_t *ctx, hdor_pass_t *P)
{
	const struct hdor_fabric *fab = P->fab;
	uint32_t i, total = 0;
	int w;

	if (count_nodes(ctx, P))
		return -1;
	if (!hdor_pass_alloc(P))
		return hdor_decline(ctx, "out of memory");
	P->nsw = P->nca = 0;
	for (i = 0; i < fab->nn; i++) {
		const struct hdor_node *node = &fab->nodes[i];

		if (!hdor_node_here(node))
			continue;
		if (node->type == HDOR_NODE_SWITCH) {
			hsw_t *s = &P->sw[P->nsw];

			s->node = node;
			s->lft = node->lft;
			s->paths = node->paths;
			s->top = node->top;
			s->np = node->np;
			s->guid = node->guid;
			s->router = -1;
			s->group = -1;
			s->first_set = -1;
			s->base_lid = node->base_lid;
			hdor_hput(P, node, 2 * P->nsw);
			P->nsw++;
			total += node->np;
		} else {
			hca_t *c = &P->ca[P->nca];

			c->node = node;
			c->guid = node->guid;
			c->router = -1;
			c->port_num = 256;
			hdor_hput(P, node, 2 * P->nca + 1);
			P->nca++;
		}
	}
	P->links = hdor_calloc(total, sizeof(*P->links));
	if (!P->links)
		return hdor_decline(ctx, "out of memory");
	for (w = 0; w < P->nsw; w++)
		switch_links(P, &P->sw[w]);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Identification: routers, groups, members, checks 1-3 (docs section 1)    */

/* groups: connected components of indirect switches, their keys, their
 * switches (in the model's order) */
static int find_groups(hdor_engine_t *ctx, hdor_pass_t *P)
{
	int *stack = hdor_calloc(P->nsw, sizeof(int));
	uint32_t l;
	int w, g;

	if (!stack)
		return hdor_decline(ctx, "out of memory");
	for (w = 0; w < P->nsw; w++) {
		int sp = 0;

		if (P->sw[w].router >= 0 || P->sw[w].group >= 0)
			continue;
		g = P->ng++;
		P->sw[w].group = g;
		stack[sp++] = w;
		while (sp) {
			int x = stack[--sp];

			for (l = P->sw[x].loff; l < P->sw[x].loff + P->sw[x].ln;
			     l++) {
				hlink_t *lk = &P->links[l];

				if (lk->kind != N_SWITCH)
					continue;
				if (P->sw[lk->idx].router >= 0 ||
				    P->sw[lk->idx].group >= 0)
					continue;
				P->sw[lk->idx].group = g;
				stack[sp++] = lk->idx;
			}
		}
	}
	free(stack);
	if (!P->ng)
		return hdor_decline(ctx, "no indirect-network switches");
	P->grp = hdor_calloc(P->ng, sizeof(*P->grp));
	P->gsw = hdor_calloc(P->nsw, sizeof(int));
	if (!P->grp || !P->gsw)
		return hdor_decline(ctx, "out of memory");
	for (g = 0; g < P->ng; g++) {
		P->grp[g].key = UINT64_MAX;
		P->grp[g].dim = -1;
	}
	for (w = 0; w < P->nsw; w++) {
		g = P->sw[w].group;
		if (g < 0)
			continue;
		P->grp[g].sn++;
		if (P->sw[w].guid < P->grp[g].key)
			P->grp[g].key = P->sw[w].guid;
	}
	for (g = 0, l = 0; g < P->ng; g++) {
		P->grp[g].soff = l;
		l += P->grp[g].sn;
		P->grp[g].sn = 0;
	}
	for (w = 0; w < P->nsw; w++) {
		g = P->sw[w].group;
		if (g < 0)
			continue;
		P->sw[w].lidx = (int)P->grp[g].sn;
		P->gsw[P->grp[g].soff + P->grp[g].sn++] = w;
	}
	return 0;
}

/* router -> distinct groups, group -> members: count (pass 0), then fill
 * (pass 1); members by GUID */
static int find_members(hdor_engine_t *ctx, hdor_pass_t *P)
{
	/* the last router that saw this group, +1 */
	int *gcount = hdor_calloc(P->ng, sizeof(int));
	int g, r, pass;
	uint32_t l;

	if (!gcount)
		return hdor_decline(ctx, "out of memory");
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
			P->rgl = hdor_calloc(tot, sizeof(uint32_t));
			P->gmem = hdor_calloc(mt, sizeof(int));
			if (!P->rgl || !P->gmem) {
				free(gcount);
				return hdor_decline(ctx, "out of memory");
			}
			memset(gcount, 0, P->ng * sizeof(int));
		}
		for (r = 0; r < P->nr; r++) {
			hsw_t *s = &P->sw[P->rt[r].sw];

			for (l = s->loff; l < s->loff + s->ln; l++) {
				hlink_t *lk = &P->links[l];

				if (lk->kind != N_SWITCH)
					continue;
				g = P->sw[lk->idx].group;
				if (g < 0 || gcount[g] == r + 1)
					continue;
				gcount[g] = r + 1;
				if (pass) {
					P->rgl[P->rt[r].goff + P->rt[r].gn] =
						(uint32_t)g;
					P->gmem[P->grp[g].moff + P->grp[g].mn] =
						r;
				}
				P->rt[r].gn++;
				P->grp[g].mn++;
			}
		}
	}
	free(gcount);
	hdor_sort_pass = P;
	for (g = 0; g < P->ng; g++)
		qsort(P->gmem + P->grp[g].moff, P->grp[g].mn, sizeof(int),
		      hdor_cmp_router_guid);
	return 0;
}

/* check 1: every HCA port is linked to a router */
static int hcas_linked(hdor_engine_t *ctx, hdor_pass_t *P)
{
	const struct hdor_fabric *fab = P->fab;
	uint32_t i;

	for (i = 0; i < fab->nlp; i++) {
		const struct hdor_lport *lp = &fab->lports[i];
		const struct hdor_node *rn;
		int v, c;

		if (!hdor_node_here(lp->node) || lp->node->type != HDOR_NODE_CA)
			continue;
		v = hdor_hget(P, lp->node);
		if (v < 0 || !(v & 1))
			continue;
		c = v >> 1;
		rn = hdor_link(lp->node, lp->port);
		if (!rn || (v = hdor_hget(P, rn)) < 0 || (v & 1))
			return hdor_decline(
				ctx,
				"HCA 0x%016" PRIx64
				" '%s' port %u is not linked to a router",
				P->ca[c].guid, hdor_desc(lp->node), lp->port);
		if (lp->port < P->ca[c].port_num) {
			P->ca[c].port_num = lp->port;
			P->ca[c].router = P->sw[v >> 1].router;
		}
	}
	return 0;
}

/* the roles, groups and members of P, and check 1 */
int hdor_structure(hdor_engine_t *ctx, hdor_pass_t *P)
{
	uint32_t l;
	int w;

	/* routers: switches with a healthy link to an HCA */
	for (w = 0; w < P->nsw; w++)
		for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++)
			if (P->links[l].kind == N_CA) {
				P->sw[w].router = P->nr++;
				break;
			}
	if (!P->nr)
		return hdor_decline(
			ctx, "no router (no switch is linked to an HCA)");
	P->rt = hdor_calloc(P->nr, sizeof(*P->rt));
	if (!P->rt)
		return hdor_decline(ctx, "out of memory");
	for (w = 0; w < P->nsw; w++)
		if (P->sw[w].router >= 0) {
			P->rt[P->sw[w].router].sw = w;
			P->rt[P->sw[w].router].guid = P->sw[w].guid;
		}
	if (find_groups(ctx, P) || find_members(ctx, P))
		return -1;
	return hcas_linked(ctx, P);
}

/* checks 2-3: n, k and k^n routers */
int hdor_kns_counts(hdor_engine_t *ctx, hdor_pass_t *P)
{
	uint64_t kn = 1;
	int r, g, i, rmin = 0;

	/* check 2: every router is in the same number n >= 1 of groups */
	for (r = 1; r < P->nr; r++)
		if (P->rt[r].guid < P->rt[rmin].guid)
			rmin = r;
	P->r0 = rmin;
	P->n = P->rt[rmin].gn;
	if (P->n < 1)
		return hdor_decline(ctx,
				    "router 0x%016" PRIx64
				    " '%s' is in no indirect network",
				    P->rt[rmin].guid,
				    hdor_desc(P->sw[P->rt[rmin].sw].node));
	if (P->n > HDOR_MAX_N)
		return hdor_declinec(ctx, HD_SIZE,
				     "router 0x%016" PRIx64
				     " '%s' is in %u groups (more than %d)",
				     P->rt[rmin].guid,
				     hdor_desc(P->sw[P->rt[rmin].sw].node),
				     P->n, HDOR_MAX_N);
	for (r = 0; r < P->nr; r++)
		if (P->rt[r].gn != P->n)
			return hdor_decline(
				ctx,
				"router 0x%016" PRIx64
				" '%s' is in %u group(s), others in %u",
				P->rt[r].guid,
				hdor_desc(P->sw[P->rt[r].sw].node), P->rt[r].gn,
				P->n);

	/* check 3: every group has the same number k >= 2 of members and
	 * routers = k^n */
	P->k = P->grp[0].mn;
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];
		int w0 = P->gsw[G->soff];

		if (G->mn == P->k && G->mn >= 2)
			continue;
		return hdor_decline(ctx,
				    "indirect network of switch 0x%016" PRIx64
				    " '%s' has %u member router(s)%s%u",
				    P->sw[w0].guid, hdor_desc(P->sw[w0].node),
				    G->mn,
				    G->mn < 2 ? ", fewer than " : ", others ",
				    G->mn < 2 && G->mn == P->k ? 2 : P->k);
	}
	if (P->k > 255)
		return hdor_declinec(ctx, HD_SIZE, "k = %u is too large", P->k);
	for (i = 0; i < (int)P->n && kn <= (uint64_t)P->nr; i++)
		kn *= P->k;
	if (kn != (uint64_t)P->nr)
		return hdor_decline(ctx, "%d routers, but k^n = %u^%u", P->nr,
				    P->k, P->n);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Dimensions (breadth-first from the seed) and coordinates (docs 2-3)      */

int hdor_uf_find(int *uf, int x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

/*
 * uf: the routers joined through every group whose dimension is not d (a
 * group's dimension is dims[g], or its own .dim without dims); both coordinate
 * passes (complete, first sight) ask it
 */
void hdor_join_other_dimensions(const hdor_pass_t *P, int *uf, const int *dims,
				int d)
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
		a = hdor_uf_find(uf, P->gmem[G->moff]);
		for (j = 1; j < G->mn; j++) {
			int b = hdor_uf_find(uf, P->gmem[G->moff + j]);

			if (a != b)
				uf[b] = a;
		}
	}
}

/* group g's coordinates and its members by coordinate: -1 when its members
 * are not a line of its dimension */
static int group_line(hdor_engine_t *ctx, hdor_pass_t *P, int g)
{
	unsigned n = P->n, k = P->k, e;
	hgrp_t *G = &P->grp[g];
	int m0 = P->gmem[G->moff], i;
	uint32_t j;

	G->mbyc = hdor_calloc(k, sizeof(int));
	if (!G->mbyc)
		return hdor_decline(ctx, "out of memory");
	for (i = 0; i < (int)k; i++)
		G->mbyc[i] = -1;
	for (e = 0; e < n; e++)
		P->gcoord[g * n + e] =
			(e == (unsigned)G->dim) ? 0 : P->coord[m0 * n + e];
	for (j = 0; j < G->mn; j++) {
		int m = P->gmem[G->moff + j];
		int c = P->coord[m * n + G->dim];
		int w0 = P->gsw[G->soff];

		for (e = 0; e < n; e++)
			if (e != (unsigned)G->dim &&
			    P->coord[m * n + e] != P->gcoord[g * n + e])
				break;
		if (e < n || G->mbyc[c] >= 0)
			return hdor_decline(
				ctx,
				"members of the indirect network of switch 0x%016" PRIx64
				" '%s' do not form a line of dimension %d",
				P->sw[w0].guid, hdor_desc(P->sw[w0].node),
				G->dim);
		G->mbyc[c] = m;
	}
	return 0;
}

/*
 * with every router's coordinates (P->coord) and every group's dimension: the
 * routers are a bijection onto [0,k)^n, and each group's members are a line of
 * its dimension (coordinates P->gcoord, members by coordinate)
 */
int hdor_lines_and_points(hdor_engine_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n, k = P->k, e;
	uint8_t *seen = hdor_calloc(P->nr, 1);
	int r, g;

	if (!seen)
		return hdor_decline(ctx, "out of memory");
	/* bijection onto [0,k)^n */
	for (r = 0; r < P->nr; r++) {
		uint32_t lin = 0;

		for (e = n; e-- > 0;)
			lin = lin * k + P->coord[r * n + e];
		if (lin >= (uint32_t)P->nr || seen[lin]) {
			free(seen);
			return hdor_decline(
				ctx,
				"router 0x%016" PRIx64
				" '%s' has the coordinates of another router",
				P->rt[r].guid,
				hdor_desc(P->sw[P->rt[r].sw].node));
		}
		seen[lin] = 1;
	}
	free(seen);
	for (g = 0; g < P->ng; g++)
		if (group_line(ctx, P, g))
			return -1;
	return 0;
}

/* dimensions breadth-first from the seed r0 */
struct dims_bfs {
	int *queue, *stamp;
	uint8_t *visited;
	int st;
};

/*
 * x's dimension-e group, x a member of router rr's group of dimension d: the
 * unique group X of x, X != S, that shares a member with some group of y
 * other than T (y: the member of rr's dimension-e group T other than rr with
 * the smallest GUID); -1 (declined) when none or more qualify
 */
static int fourth_corner(hdor_engine_t *ctx, hdor_pass_t *P, struct dims_bfs *b,
			 int rr, int x, int S, unsigned e)
{
	unsigned n = P->n;
	int T = P->rg[rr * n + e], y, found = -1, nfound = 0;
	hgrp_t *GT = &P->grp[T];
	uint32_t j, zi, zj;

	y = P->gmem[GT->moff] != rr ? P->gmem[GT->moff] : P->gmem[GT->moff + 1];
	b->st++;
	for (j = 0; j < P->rt[y].gn; j++)
		if ((int)P->rgl[P->rt[y].goff + j] != T)
			b->stamp[P->rgl[P->rt[y].goff + j]] = b->st;
	for (j = 0; j < P->rt[x].gn; j++) {
		int X = (int)P->rgl[P->rt[x].goff + j], q = 0;
		hgrp_t *GX = &P->grp[X];

		if (X == S)
			continue;
		for (zi = 0; zi < GX->mn && !q; zi++) {
			int z = P->gmem[GX->moff + zi];

			for (zj = 0; zj < P->rt[z].gn; zj++)
				if (b->stamp[P->rgl[P->rt[z].goff + zj]] ==
				    b->st) {
					q = 1;
					break;
				}
		}
		if (q) {
			nfound++;
			found = X;
		}
	}
	if (nfound != 1 ||
	    (P->grp[found].dim >= 0 && P->grp[found].dim != (int)e))
		return hdor_decline(
			ctx,
			"inconsistent dimension at router 0x%016" PRIx64
			" '%s' (dimension %u: %d candidate group(s)%s)",
			P->rt[x].guid, hdor_desc(P->sw[P->rt[x].sw].node), e,
			nfound,
			nfound == 1 ? ", already in another dimension" : "");
	return found;
}

static int dims_bfs(hdor_engine_t *ctx, hdor_pass_t *P, struct dims_bfs *b)
{
	unsigned n = P->n, d, e;
	int qh = 0, qt = 0, sg[HDOR_MAX_N];
	const hrtr_t *R = &P->rt[P->r0];

	/* seed: groups of r0 sorted by key get dimensions 0..n-1 */
	for (d = 0; d < n; d++)
		sg[d] = (int)P->rgl[R->goff + d];
	hdor_sort_pass = P;
	qsort(sg, n, sizeof(int), hdor_cmp_group_key);
	for (d = 0; d < n; d++) {
		P->grp[sg[d]].dim = (int)d;
		P->rg[P->r0 * n + d] = sg[d];
	}
	b->visited[P->r0] = 1;
	b->queue[qt++] = P->r0;
	while (qh < qt) {
		int rr = b->queue[qh++];

		for (d = 0; d < n; d++) {
			int S = P->rg[rr * n + d];
			hgrp_t *GS = &P->grp[S];
			uint32_t mi;

			for (mi = 0; mi < GS->mn; mi++) {
				int x = P->gmem[GS->moff + mi];

				if (b->visited[x])
					continue;
				P->rg[x * n + d] = S;
				for (e = 0; e < n; e++) {
					int X;

					if (e == d)
						continue;
					X = fourth_corner(ctx, P, b, rr, x, S,
							  e);
					if (X < 0)
						return -1;
					P->grp[X].dim = (int)e;
					P->rg[x * n + e] = X;
				}
				b->visited[x] = 1;
				b->queue[qt++] = x;
			}
		}
	}
	return 0;
}

/* every router visited, with a group in every dimension; every group with
 * one */
static int dims_complete(hdor_engine_t *ctx, hdor_pass_t *P,
			 const uint8_t *visited)
{
	unsigned n = P->n, d;
	int r, g;

	for (r = 0; r < P->nr; r++) {
		if (!visited[r])
			return hdor_decline(
				ctx,
				"router 0x%016" PRIx64
				" '%s' is not reachable from router 0x%016" PRIx64
				" '%s'",
				P->rt[r].guid,
				hdor_desc(P->sw[P->rt[r].sw].node),
				P->rt[P->r0].guid,
				hdor_desc(P->sw[P->rt[P->r0].sw].node));
		for (d = 0; d < n; d++) {
			int G = P->rg[r * n + d];

			if (G < 0 || P->grp[G].dim != (int)d)
				return hdor_decline(
					ctx,
					"router 0x%016" PRIx64
					" '%s' has no group in dimension %u",
					P->rt[r].guid,
					hdor_desc(P->sw[P->rt[r].sw].node), d);
		}
	}
	for (g = 0; g < P->ng; g++)
		if (P->grp[g].dim < 0) {
			int w0 = P->gsw[P->grp[g].soff];

			return hdor_decline(ctx,
					    "switch 0x%016" PRIx64
					    " '%s' got no dimension",
					    P->sw[w0].guid,
					    hdor_desc(P->sw[w0].node));
		}
	return 0;
}

/* coordinates: the hyperplanes of each dimension, numbered by r0's group */
static int hyperplanes(hdor_engine_t *ctx, hdor_pass_t *P, int *uf, int *comp)
{
	unsigned n = P->n, k = P->k, d;
	int r, i;

	for (d = 0; d < n; d++) {
		int A = P->rg[P->r0 * n + d], ncomp = 0;
		hgrp_t *GA = &P->grp[A];

		for (r = 0; r < P->nr; r++)
			comp[r] = -1;
		hdor_join_other_dimensions(P, uf, NULL, (int)d);
		for (r = 0; r < P->nr; r++)
			if (hdor_uf_find(uf, r) == r)
				ncomp++;
		if (ncomp != (int)k)
			return hdor_decline(
				ctx,
				"dimension %u has %d hyperplanes, expected k = %u",
				d, ncomp, k);
		for (i = 0; i < (int)k; i++) {
			int c = hdor_uf_find(uf, P->gmem[GA->moff + i]);

			if (comp[c] >= 0)
				return hdor_decline(
					ctx,
					"routers 0x%016" PRIx64
					" and 0x%016" PRIx64
					" of dimension %u share a hyperplane",
					P->rt[P->gmem[GA->moff + comp[c]]].guid,
					P->rt[P->gmem[GA->moff + i]].guid, d);
			comp[c] = i;
		}
		for (r = 0; r < P->nr; r++)
			P->coord[r * n + d] =
				(uint8_t)comp[hdor_uf_find(uf, r)];
	}
	return 0;
}

int hdor_dims_and_coords(hdor_engine_t *ctx, hdor_pass_t *P)
{
	unsigned n = P->n;
	struct dims_bfs b = { 0 };
	int i, ret = -1, *uf = NULL, *comp = NULL;

	P->rg = hdor_calloc((size_t)P->nr * n, sizeof(int));
	P->coord = hdor_calloc((size_t)P->nr * n, 1);
	P->gcoord = hdor_calloc((size_t)P->ng * n, 1);
	b.queue = hdor_calloc(P->nr, sizeof(int));
	b.visited = hdor_calloc(P->nr, 1);
	b.stamp = hdor_calloc(P->ng, sizeof(int));
	uf = hdor_calloc(P->nr, sizeof(int));
	comp = hdor_calloc(P->nr, sizeof(int));
	if (!P->rg || !P->coord || !P->gcoord || !b.queue || !b.visited ||
	    !b.stamp || !uf || !comp) {
		hdor_decline(ctx, "out of memory");
		goto out;
	}
	for (i = 0; i < P->nr * (int)n; i++)
		P->rg[i] = -1;
	if (dims_bfs(ctx, P, &b) || dims_complete(ctx, P, b.visited) ||
	    hyperplanes(ctx, P, uf, comp))
		goto out;
	ret = hdor_lines_and_points(ctx, P);
out:
	free(b.queue);
	free(b.visited);
	free(b.stamp);
	free(uf);
	free(comp);
	return ret;
}
