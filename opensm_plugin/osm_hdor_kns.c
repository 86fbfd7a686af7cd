// SPDX-License-Identifier: MIT
/*
 * osm_hdor_kns.c -- the KNS hdor remembers (docs/hdor.md section 6): the
 * complete KNS of a pass kept by GUID with its fault-free tables (nothing of
 * a front end's objects), and a later fabric compared with it: the devices
 * there, a replacement taking a missing device's place, the links that work,
 * the LIDs of now.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "osm_hdor.h"

/*
 * 64 rows x 64 LIDs of switch-major tables (row i: src[i], LIDs l0..l0+63)
 * into LID-major dst (LID l0 + j, row i at dst[j * stride + i]), by 8 x 8-byte
 * blocks transposed in registers: byte j of x_i is (row i, LID j); swapping
 * the 4 x 4, 2 x 2 and 1 x 1 byte blocks across the diagonal makes byte i of
 * x_j (row i, LID j)
 */
#define SWAP_BYTES(a, b, sh, m)                            \
	do {                                               \
		uint64_t t_ = (((a) >> (sh)) ^ (b)) & (m); \
		(a) ^= t_ << (sh);                         \
		(b) ^= t_;                                 \
	} while (0)

static void transpose_8x8(const uint8_t *const *s, uint32_t at, uint8_t *d,
			  size_t stride)
{
	const uint64_t m4 = 0x00000000ffffffffULL, m2 = 0x0000ffff0000ffffULL;
	const uint64_t m1 = 0x00ff00ff00ff00ffULL;
	uint64_t x[8];
	int i;

	for (i = 0; i < 8; i++)
		memcpy(&x[i], s[i] + at, 8);
	SWAP_BYTES(x[0], x[4], 32, m4);
	SWAP_BYTES(x[1], x[5], 32, m4);
	SWAP_BYTES(x[2], x[6], 32, m4);
	SWAP_BYTES(x[3], x[7], 32, m4);
	SWAP_BYTES(x[0], x[2], 16, m2);
	SWAP_BYTES(x[1], x[3], 16, m2);
	SWAP_BYTES(x[4], x[6], 16, m2);
	SWAP_BYTES(x[5], x[7], 16, m2);
	SWAP_BYTES(x[0], x[1], 8, m1);
	SWAP_BYTES(x[2], x[3], 8, m1);
	SWAP_BYTES(x[4], x[5], 8, m1);
	SWAP_BYTES(x[6], x[7], 8, m1);
	for (i = 0; i < 8; i++)
		memcpy(d + i * stride, &x[i], 8);
}

static void transpose_tile(const uint8_t *const *src, uint32_t l0, uint8_t *dst,
			   size_t stride)
{
	unsigned bi, bj;

	for (bi = 0; bi < 64; bi += 8)
		for (bj = 0; bj < 64; bj += 8)
			transpose_8x8(src + bi, l0 + bj,
				      dst + (size_t)bj * stride + bi, stride);
}

/* ------------------------------------------------------------------------ */
/* The KNS of a pass                                                        */

/* what kns_remember builds a KNS from */
struct remember {
	hdor_pass_t *P;
	const hdor_kns_t *Kin;
	hdor_kns_t *K;
	hnode_ord_t *ord; /* the pass's nodes by GUID */
	int *sw2b, *ca2b; /* switch, HCA -> base node */
	int *gorder; /* groups in key order */
	int *kin; /* base node -> Kin's node, -1 */
	int *q; /* scratch, nn */
};

/* the base nodes by GUID: roles, coordinates, ports, descriptions */
static int remember_nodes(struct remember *m)
{
	hdor_pass_t *P = m->P;
	const hdor_kns_t *Kin = m->Kin;
	hdor_kns_t *K = m->K;
	unsigned n = P->n;
	uint32_t i, nslots = 0;
	int *grank = m->q; /* scratch: group -> rank in key order */
	int g;

	for (g = 0; g < P->ng; g++)
		grank[m->gorder[g]] = g;
	for (i = 0; i < K->nn; i++) {
		const struct hdor_node *node;
		const uint8_t *c = NULL;
		int ki;

		K->guid[i] = m->ord[i].guid;
		K->type[i] = (uint8_t)m->ord[i].kind;
		K->dim[i] = K->grp[i] = K->row[i] = -1;
		K->lev[i] = HDOR_INF;
		ki = Kin ? hdor_find_u64(Kin->guid, Kin->nn, m->ord[i].guid) :
			   -1;
		m->kin[i] = ki;
		if (m->ord[i].kind == N_SWITCH) {
			hsw_t *W = &P->sw[m->ord[i].idx];

			m->sw2b[m->ord[i].idx] = (int)i;
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
			hca_t *C = &P->ca[m->ord[i].idx];

			m->ca2b[m->ord[i].idx] = (int)i;
			node = C->node;
			K->role[i] = R_HCA;
			if (C->router >= 0)
				c = P->coord + (size_t)C->router * n;
		}
		if (c)
			memcpy(K->coord + (size_t)i * n, c, n);
		K->ident[i] = ki >= 0 ? Kin->ident[ki] : K->guid[i];
		K->np[i] = node ? node->np : ki >= 0 ? Kin->np[ki] : 1;
		K->desc[i] = strdup(node    ? hdor_desc(node) :
				    ki >= 0 ? Kin->desc[ki] :
					      "");
		if (!K->desc[i])
			return -1;
		K->poff[i] = nslots;
		nslots += K->np[i];
	}
	K->poff[K->nn] = nslots;
	return hdor_kns_alloc_slots(K);
}

/* the links: those of every switch, seen from both ends (a KNS has no
 * HCA-HCA cable) */
static int remember_links(struct remember *m)
{
	hdor_pass_t *P = m->P;
	hdor_kns_t *K = m->K;
	uint32_t l;
	int w;

	for (w = 0; w < P->nsw; w++) {
		int b = m->sw2b[w];

		for (l = P->sw[w].loff; l < P->sw[w].loff + P->sw[w].ln; l++) {
			const hlink_t *lk = &P->links[l];
			int y = lk->kind == N_CA ? m->ca2b[lk->idx] :
						   m->sw2b[lk->idx];

			if (lk->port >= K->np[b] || lk->rport >= K->np[y])
				return -1;
			K->peer[K->poff[b] + lk->port] = y;
			K->pport[K->poff[b] + lk->port] = lk->rport;
			if (lk->kind == N_CA) {
				K->peer[K->poff[y] + lk->rport] = b;
				K->pport[K->poff[y] + lk->rport] = lk->port;
			}
		}
	}
	return 0;
}

/* groups in key order, switches by GUID; levels: fewest remembered in-group
 * hops to a switch linked to a router */
static void remember_groups(struct remember *m)
{
	hdor_pass_t *P = m->P;
	hdor_kns_t *K = m->K;
	int g, *q = m->q;
	uint32_t i, j;
	unsigned p;

	for (g = 0, i = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[m->gorder[g]];

		K->gdim[g] = G->dim;
		K->gsoff[g] = i;
		for (j = 0; j < G->sn; j++)
			K->gsw[i + j] = m->sw2b[P->gsw[G->soff + j]];
		qsort(K->gsw + i, G->sn, sizeof(int), hdor_cmp_int);
		i += G->sn;
	}
	K->gsoff[P->ng] = i;
	for (g = 0; g < P->ng; g++) {
		int qh = 0, qt = 0;

		for (i = K->gsoff[g]; i < K->gsoff[g + 1]; i++) {
			int x = K->gsw[i];

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

			for (p = 1; p < K->np[u]; p++) {
				int y = K->peer[K->poff[u] + p];

				if (y >= 0 && K->grp[y] == g &&
				    K->lev[y] == (uint32_t)HDOR_INF) {
					K->lev[y] = K->lev[u] + 1;
					q[qt++] = y;
				}
			}
		}
	}
}

/* a port of Kin that is not there keeps the LID it had while it is free */
static void remember_old_lids(struct remember *m)
{
	hdor_kns_t *K = m->K;
	const hdor_kns_t *Kin = m->Kin;
	uint32_t i, lid;
	unsigned p;

	for (i = 0; Kin && i < K->nn; i++) {
		int ki = m->kin[i], x = m->ord[i].idx;
		const struct hdor_node *node = K->type[i] == N_SWITCH ?
						       m->P->sw[x].node :
						       m->P->ca[x].node;

		if (node || ki < 0)
			continue;
		for (p = 0; p < K->np[i] && p < Kin->np[ki]; p++) {
			uint32_t s = Kin->poff[ki] + p, lo = Kin->plid[s];
			uint32_t hi = lo + (1u << Kin->plmc[s]) - 1, free_ = 1;

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
}

/* LIDs: those of now (and those remember_old_lids keeps) */
static int remember_lids(struct remember *m)
{
	hdor_pass_t *P = m->P;
	const struct hdor_fabric *fab = P->fab;
	hdor_kns_t *K = m->K;
	uint32_t i, lid;

	K->nlid = P->max_lid + 1;
	K->lnode = hdor_calloc(K->nlid, sizeof(int));
	K->lport = hdor_calloc(K->nlid, 1);
	K->lft = malloc((size_t)K->nrow * K->nlid);
	if (!K->lnode || !K->lport || !K->lft)
		return -1;
	for (lid = 0; lid < K->nlid; lid++)
		K->lnode[lid] = -1;
	for (i = 0; i < fab->nlp; i++) {
		const struct hdor_lport *lp = &fab->lports[i];
		uint32_t hi = lp->lid + (1u << lp->lmc) - 1;
		int v, b;

		if (!hdor_node_here(lp->node))
			continue;
		v = hdor_hget(P, lp->node);
		if (v < 0)
			continue;
		b = (v & 1) ? m->ca2b[v >> 1] : m->sw2b[v >> 1];
		if (!lp->lid || lp->port >= K->np[b])
			continue;
		K->plid[K->poff[b] + lp->port] = lp->lid;
		K->plmc[K->poff[b] + lp->port] = lp->lmc;
		for (lid = lp->lid; lid <= hi && lid < K->nlid; lid++) {
			K->lnode[lid] = b;
			K->lport[lid] = lp->port;
		}
	}
	remember_old_lids(m);
	return 0;
}

/*
 * the tables: a transpose (switch-major rows -> LID-major lft) by tiles of
 * 64 rows x 64 LIDs, moved 8 x 8 bytes at a time (entry by entry it was
 * 0.1-0.2 s on KNS 16^3)
 */
static void remember_tables(struct remember *m)
{
	hdor_pass_t *P = m->P;
	hdor_kns_t *K = m->K;
	int *wof = m->q, r0, r, w; /* scratch: row -> switch */
	uint32_t l0, lid, top[64];
	const uint8_t *src[64];

	for (w = 0; w < P->nsw; w++)
		wof[K->row[m->sw2b[w]]] = w;
	for (r0 = 0; r0 < K->nrow; r0 += 64) {
		int r1 = r0 + 64 < K->nrow ? r0 + 64 : K->nrow;
		int whole = r1 - r0 == 64;

		for (r = r0; r < r1; r++) {
			const hsw_t *W = &P->sw[wof[r]];

			src[r - r0] = W->lft;
			top[r - r0] = W->lft ? W->top : 0;
			whole &= W->lft && top[r - r0] + 1 >= K->nlid;
		}
		for (l0 = 0; l0 < K->nlid; l0 += 64) {
			uint32_t l1 = l0 + 64 < K->nlid ? l0 + 64 : K->nlid;

			if (whole && l1 - l0 == 64) {
				transpose_tile(src, l0,
					       K->lft + (size_t)l0 * K->nrow +
						       r0,
					       K->nrow);
				continue;
			}
			for (r = r0; r < r1; r++)
				for (lid = l0; lid < l1; lid++)
					KLFT(K, r, lid) =
						src[r - r0] && lid <= top[r -
									  r0] ?
							src[r - r0][lid] :
							HDOR_NO_PATH;
		}
	}
	/* LIDs of no port: no route (route_switch left them as prepared) */
	for (lid = 0; lid < K->nlid; lid++)
		if (P->lt[lid].kind == T_NONE)
			memset(K->lft + (size_t)lid * K->nrow, HDOR_NO_PATH,
			       K->nrow);
}

/*
 * The complete KNS of pass P, whose tables are in its switches' rows.  Kin:
 * NULL when P was collected from the fabric; else the KNS P was built from (a
 * KNS from elsewhere), which gives what the fabric does not show: the ports,
 * descriptions, current GUIDs and remembered LIDs of the nodes that are not
 * there now.
 */
hdor_kns_t *hdor_kns_remember(hdor_engine_t *ctx, hdor_pass_t *P,
			      const hdor_kns_t *Kin)
{
	struct remember m = { .P = P, .Kin = Kin };
	hdor_kns_t *K;
	uint32_t i;
	int g, w, ok = 0;

	(void)ctx;
	K = hdor_kns_alloc((uint32_t)(P->nsw + P->nca), P->k, P->n, P->s,
			   K_PASS);
	if (!K)
		return NULL;
	m.K = K;
	K->ng = P->ng;
	m.ord = hdor_calloc(K->nn, sizeof(*m.ord));
	m.sw2b = hdor_calloc(P->nsw, sizeof(int));
	m.ca2b = hdor_calloc(P->nca, sizeof(int));
	m.gorder = hdor_calloc(P->ng, sizeof(int));
	m.kin = hdor_calloc(K->nn, sizeof(int));
	m.q = hdor_calloc(K->nn, sizeof(int));
	K->grp = hdor_calloc(K->nn, sizeof(int));
	K->lev = hdor_calloc(K->nn, sizeof(uint32_t));
	K->row = hdor_calloc(K->nn, sizeof(int));
	K->gdim = hdor_calloc(P->ng, sizeof(int));
	K->gsoff = hdor_calloc(P->ng + 1, sizeof(uint32_t));
	K->gsw = hdor_calloc(P->nsw, sizeof(int));
	if (!m.ord || !m.sw2b || !m.ca2b || !m.gorder || !m.kin || !m.q ||
	    !K->grp || !K->lev || !K->row || !K->gdim || !K->gsoff || !K->gsw)
		goto out;
	for (w = 0; w < P->nsw; w++)
		m.ord[w] = (hnode_ord_t){ P->sw[w].guid, N_SWITCH, w };
	for (i = 0; i < (uint32_t)P->nca; i++)
		m.ord[P->nsw + i] =
			(hnode_ord_t){ P->ca[i].guid, N_CA, (int)i };
	qsort(m.ord, K->nn, sizeof(*m.ord), hdor_cmp_node_ord);
	for (g = 0; g < P->ng; g++)
		m.gorder[g] = g;
	hdor_sort_pass = P;
	qsort(m.gorder, P->ng, sizeof(int), hdor_cmp_group_key);
	if (remember_nodes(&m) || remember_links(&m))
		goto out;
	remember_groups(&m);
	if (remember_lids(&m))
		goto out;
	remember_tables(&m);
	ok = 1;
out : {
	void *all[] = { m.ord, m.sw2b, m.ca2b, m.gorder, m.kin, m.q };

	hdor_free_all(all, sizeof(all) / sizeof(all[0]));
}
	if (!ok) {
		hdor_kns_free(K);
		return NULL;
	}
	return K;
}

/* ------------------------------------------------------------------------ */
/* The fabric compared with the KNS hdor knows                              */

/*
 * the base node of device x of now (K->ident), or -1: the one found for it at
 * the last pass when it is the same (the model's nodes are in the same place
 * from pass to pass offline), else a search by GUID
 */
static int base_of(hdor_engine_t *ctx, const hdor_kns_t *K,
		   const struct hdor_node *x)
{
	const struct hdor_fabric *fab = ctx->fab;
	uint32_t i = (uint32_t)(x - fab->nodes);
	int b;

	if (ctx->nbidx != fab->nn) {
		free(ctx->bidx);
		ctx->bidx = malloc((fab->nn + 1) * sizeof(*ctx->bidx));
		ctx->nbidx = ctx->bidx ? fab->nn : 0;
		for (b = 0; b < (int)ctx->nbidx; b++)
			ctx->bidx[b] = -1;
	}
	if (i < ctx->nbidx) {
		b = ctx->bidx[i];
		if (b >= 0 && (uint32_t)b < K->nn && K->ident[b] == x->guid)
			return b;
	}
	b = hdor_kns_find(K, x->guid);
	if (i < ctx->nbidx)
		ctx->bidx[i] = b;
	return b;
}

/* the base node a device x of now would replace: every cable of x goes to a
 * device of K, on the port the missing one's went to; -1 none, -2 not yet
 * (next to a device not placed) */
static int replaced_node(const hdor_deg_t *D, const struct hdor_node *x)
{
	const hdor_kns_t *K = D->K;
	unsigned p, links = 0;
	int cand = -1;

	for (p = 1; p < x->np; p++) {
		const struct hdor_node *y = hdor_link(x, p);
		uint8_t yp;
		int yb, B;

		if (!y)
			continue;
		yp = x->ports[p].peer_port;
		yb = hdor_kns_find(K, y->guid);
		if (yb < 0 || D->cur[yb] != y)
			return -2;
		B = kpeer(K, yb, yp);
		if (B < 0 || K->pport[K->poff[yb] + yp] != p ||
		    (cand >= 0 && B != cand))
			return -1;
		cand = B;
		links++;
	}
	if (!links || D->cur[cand] || K->type[cand] != hdor_node_kind(x) ||
	    K->guid[cand] >= HDOR_PHANTOM)
		return -1;
	return cand;
}

/* device x takes base node b's place */
static int place(hdor_engine_t *ctx, hdor_deg_t *D, const struct hdor_node *x,
		 int b)
{
	hdor_kns_t *K = D->K;
	size_t len = strlen(ctx->note);
	char was[40];

	snprintf(was, sizeof(was), "0x%016" PRIx64, K->ident[b]);
	hdor_log(
		ctx, HDOR_LOG_INFO,
		"hdor: %s 0x%016" PRIx64
		" '%s' takes the place of %s '%s' (the same neighbours on the same ports)",
		hdor_kind_word(K->type[b]), x->guid, hdor_desc(x), was,
		K->desc[b]);
	snprintf(ctx->note + len, sizeof(ctx->note) - len,
		 "%s0x%016" PRIx64 " replaces %s", ctx->note[0] ? "; " : "",
		 x->guid, was);
	K->ident[b] = x->guid;
	D->cur[b] = x;
	if (hdor_kns_index(K))
		return hdor_decline(ctx, "out of memory");
	ctx->kns_dirty = 1;
	ctx->conf_dirty = K->origin == K_CONF;
	return 0;
}

/*
 * The devices of now that are not in K: each one that stands exactly where a
 * device of K is missing -- every cable of it goes to a device of K, on the
 * port the missing one's went to, from the port the missing one used -- takes
 * its place (docs/hdor.md section 7): K keeps the old GUID as the node's place
 * (its coordinates, its order) and knows the new one.  A device next to
 * another new one is placed once that one is.  Never a phantom's place (first
 * sight guessed its ports): that fabric is identified again.  0, or -1
 * (ctx->reason) when one is left unplaced.
 */
int hdor_replacements(hdor_engine_t *ctx, hdor_deg_t *D,
		      const struct hdor_node **unknown, uint32_t nu, int strict)
{
	uint32_t i, left = nu;
	int progress = 1;

	while (progress && left) {
		progress = 0;
		for (i = 0; i < nu; i++) {
			int b;

			if (!unknown[i])
				continue;
			b = replaced_node(D, unknown[i]);
			if (b < 0)
				continue;
			if (place(ctx, D, unknown[i], b))
				return -1;
			unknown[i] = NULL;
			left--;
			progress = 1;
		}
	}
	for (i = 0; i < nu && strict; i++)
		if (unknown[i]) {
			int kind = hdor_node_kind(unknown[i]);

			return hdor_decline(ctx,
					    "%s 0x%016" PRIx64
					    " '%s' is not in the KNS",
					    kind == N_SWITCH ? "switch" :
					    kind == N_CA     ? "hca" :
							       "node",
					    unknown[i]->guid,
					    hdor_desc(unknown[i]));
		}
	return 0;
}

/* the devices there now: in K (D->cur), or replacements; -1 (declined) */
static int match_nodes(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const struct hdor_fabric *fab = ctx->fab;
	hdor_kns_t *K = D->K;
	const struct hdor_node **unknown = NULL;
	uint32_t i, nu = 0;
	int rc = 0;

	for (i = 0; i < fab->nn; i++) {
		const struct hdor_node *node = &fab->nodes[i];
		int b, kind;

		if (!hdor_node_here(node))
			continue;
		b = base_of(ctx, K, node);
		kind = hdor_node_kind(node);
		if (b >= 0 && kind != K->type[b]) {
			free(unknown);
			return hdor_decline(ctx,
					    "%s 0x%016" PRIx64
					    " '%s' is not in the KNS",
					    kind == N_SWITCH ? "switch" :
					    kind == N_CA     ? "hca" :
							       "node",
					    node->guid, hdor_desc(node));
		}
		if (b >= 0) {
			D->cur[b] = node;
			continue;
		}
		/* a device not in the KNS: a replacement, or not that KNS */
		if (nu % 64 == 0) {
			const struct hdor_node **nw;

			nw = realloc(unknown, (nu + 64) * sizeof(*unknown));
			if (!nw) {
				free(unknown);
				return hdor_decline(ctx, "out of memory");
			}
			unknown = nw;
		}
		unknown[nu++] = node;
	}
	if (nu)
		rc = hdor_replacements(ctx, D, unknown, nu, 1);
	free(unknown);
	return rc;
}

/* the remembered links that work now (D->ok); -1 (declined) when a cable of
 * now is not one of K's */
static int match_links(hdor_engine_t *ctx, hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	int mismatch = 0;
	char why[512] = "";
	uint32_t i;
	unsigned p;

	for (i = 0; i < K->nn; i++) {
		const struct hdor_node *node = D->cur[i];

		if (!node)
			continue;
		for (p = 1; p < node->np; p++) {
			const struct hdor_node *r = hdor_link(node, p);
			uint8_t rp;
			int rb;

			if (!r)
				continue;
			/* the remembered peer, if it is r (GUIDs are unique) */
			rb = kpeer(K, (int)i, p);
			rp = node->ports[p].peer_port;
			if (rb >= 0 && K->ident[rb] == r->guid &&
			    K->pport[K->poff[i] + p] == rp) {
				D->ok[K->poff[i] + p] = 1;
				continue;
			}
			if (!mismatch)
				snprintf(
					why, sizeof(why),
					"%s 0x%016" PRIx64
					" '%s' port %u is cabled to %s 0x%016" PRIx64
					" '%s' port %u, not as in the KNS",
					hdor_kind_word(K->type[i]), K->ident[i],
					hdor_desc(node), p,
					hdor_node_kind(r) == N_SWITCH ?
						"switch" :
						"hca",
					r->guid, hdor_desc(r), rp);
			mismatch = 1;
		}
	}
	return mismatch ? hdor_decline(ctx, "%s", why) : 0;
}

static void count_failures(hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	uint32_t i;
	unsigned p;

	for (i = 0; i < K->nn; i++) {
		if (!D->cur[i])
			D->dead_nodes++;
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];

			/*
			 * each failed link once, from its lower (node, port)
			 * end
			 */
			if (y >= 0 && !D->ok[K->poff[i] + p] &&
			    ((uint32_t)y > i || ((uint32_t)y == i &&
						 K->pport[K->poff[i] + p] > p)))
				D->dead_links++;
		}
	}
}

/* the LIDs of now against K's: 0, or 2 when they moved */
static int match_lids(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const struct hdor_fabric *fab = ctx->fab;
	hdor_kns_t *K = D->K;
	uint32_t i, lid, maxlid = 0;

	for (lid = 0; lid < K->nlid; lid++)
		D->onode[lid] = -1;
	for (i = 0; i < fab->nlp; i++) {
		const struct hdor_lport *lp = &fab->lports[i];
		const struct hdor_node *node = lp->node;
		uint32_t hi = lp->lid + (1u << lp->lmc) - 1;
		uint8_t pn = lp->port;
		int b;

		if (!hdor_node_here(node))
			continue;
		b = base_of(ctx, K, node);
		for (lid = lp->lid; lp->lid && lid <= hi; lid++) {
			if (b < 0 || lid >= K->nlid || K->lnode[lid] != b ||
			    K->lport[lid] != pn) {
				/* the LIDs moved: the fault-free tables again,
				 * for these LIDs */
				snprintf(ctx->note, sizeof(ctx->note),
					 "LID %u (%s 0x%016" PRIx64
					 " '%s' port %u) moved",
					 lid,
					 hdor_node_kind(node) == N_SWITCH ?
						 "switch" :
						 "hca",
					 node->guid, hdor_desc(node), pn);
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
	return 0;
}

/* 0: nothing failed (D filled unless K is the plain KNS of a complete pass);
 * 1: a degraded KNS (D filled); 2: the LIDs moved (rebuild K's tables); -1:
 * not K (ctx->reason) */
int hdor_deg_match(hdor_engine_t *ctx, hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	int dead;

	D->cur = hdor_calloc(K->nn, sizeof(*D->cur));
	D->ok = hdor_calloc(K->poff[K->nn], 1);
	D->onode = hdor_calloc(K->nlid, sizeof(int));
	D->oport = hdor_calloc(K->nlid, 1);
	if (!D->cur || !D->ok || !D->onode || !D->oport)
		return hdor_decline(ctx, "out of memory");
	if (match_nodes(ctx, D) || match_links(ctx, D))
		return -1;
	count_failures(D);
	dead = D->dead_nodes || D->dead_links;
	/*
	 * the KNS of the last complete pass, complete again: route it as such
	 */
	if (!dead && K->origin == K_PASS && !K->replaced)
		return 0;
	if (match_lids(ctx, D))
		return 2;
	return dead ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* What the degraded passes against K keep from pass to pass                */

/* K's kept buffers, first made: the fault-free tables, nothing affected, what
 * each LID's row holds (one scan of the tables, once per KNS) */
static hdor_kept_t *kept_make(hdor_kns_t *K)
{
	size_t sz = (size_t)K->nlid * K->nrow;
	hdor_kept_t *k = hdor_calloc(1, sizeof(*k));
	uint32_t lid;
	int r;

	if (!k)
		return NULL;
	k->tab = malloc(sz + 1);
	k->aff = malloc(sz + 1);
	k->krow = hdor_calloc(K->nlid, 1);
	if (!k->tab || !k->aff || !k->krow ||
	    hdor_reserve(&k->aoff, 1, &k->capaoff, sizeof(uint32_t))) {
		hdor_kept_free(k, K->ng);
		return NULL;
	}
	k->aoff[0] = 0;
	memcpy(k->tab, K->lft, sz);
	memset(k->aff, 1, sz);
	for (lid = 0; lid < K->nlid; lid++) {
		const uint8_t *row = &KLFT(K, 0, lid);
		unsigned hole = 0, route = 0;

		for (r = 0; r < K->nrow; r++) {
			hole |= row[r] == HDOR_NO_PATH;
			route |= row[r] != HDOR_NO_PATH;
		}
		k->krow[lid] = (uint8_t)((hole ? KR_HOLE : 0) |
					 (route ? KR_ROUTE : 0));
	}
	K->kept = k;
	return k;
}

/* the last pass's changes undone: its affected entries, its rows of LIDs
 * without an owner */
static void kept_restore(const hdor_kns_t *K, hdor_kept_t *k)
{
	uint32_t a, j;

	for (a = 0; a < k->nalid; a++) {
		size_t at = (size_t)k->alid[a] * K->nrow;

		for (j = k->aoff[a]; j < k->aoff[a + 1]; j++) {
			size_t i = at + (size_t)K->row[k->ab[j]];

			k->tab[i] = K->lft[i];
			k->aff[i] = 1;
		}
	}
	for (a = 0; a < k->ngone; a++)
		memcpy(&k->tab[(size_t)k->gone[a] * K->nrow],
		       &KLFT(K, 0, k->gone[a]), K->nrow);
	k->nalid = k->nab = k->ngone = 0;
}

/*
 * the start of a degraded pass: D->tab the fault-free tables, every entry
 * not affected (D->aff 1), but the rows of LIDs without an owner now, which
 * hold no route -- K's kept buffers, the last pass's changes undone (the
 * first pass against K makes them); 0, or -1 (declined)
 */
int hdor_kept_start(hdor_engine_t *ctx, hdor_deg_t *D)
{
	hdor_kns_t *K = D->K;
	hdor_kept_t *k = K->kept;
	uint32_t lid;

	if (k && D->full) {
		/* made afresh, as every pass did before */
		hdor_kept_free(k, K->ng);
		K->kept = k = NULL;
	}
	if (!k && !(k = kept_make(K)))
		return hdor_decline(ctx, "out of memory");
	kept_restore(K, k);
	for (lid = 0; lid < K->nlid; lid++) {
		if ((lid < D->nl && D->onode[lid] >= 0) ||
		    !(k->krow[lid] & KR_ROUTE))
			continue;
		if (hdor_grow(&k->gone, k->ngone, &k->capgone,
			      sizeof(*k->gone)))
			return hdor_decline(ctx, "out of memory");
		k->gone[k->ngone++] = lid;
		memset(&k->tab[(size_t)lid * K->nrow], HDOR_NO_PATH, K->nrow);
	}
	D->tab = k->tab;
	D->aff = k->aff;
	return 0;
}

/* the affected entries of `lid` (D->alist) noted, to be undone at the next
 * pass (and written by difference); 0, or -1 out of memory */
int hdor_kept_note(hdor_deg_t *D, uint32_t lid)
{
	hdor_kept_t *k = D->K->kept;
	uint32_t j;

	if (hdor_reserve(&k->alid, k->nalid + 1, &k->capalid,
			 sizeof(uint32_t)) ||
	    hdor_reserve(&k->aoff, k->nalid + 2, &k->capaoff,
			 sizeof(uint32_t)) ||
	    hdor_reserve(&k->ab, k->nab + D->nalist, &k->capab, sizeof(int)))
		return -1;
	for (j = 0; j < D->nalist; j++)
		k->ab[k->nab++] = D->alist[j];
	k->alid[k->nalid++] = lid;
	k->aoff[k->nalid] = k->nab;
	return 0;
}
