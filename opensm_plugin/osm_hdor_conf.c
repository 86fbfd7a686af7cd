// SPDX-License-Identifier: MIT
/*
 * osm_hdor_conf.c -- the KNS from elsewhere than a complete sweep
 * (docs/hdor.md section 7): a description (hdor.conf) an admin deploys, the
 * state this engine remembers, or first sight's completion of a degraded
 * fabric with "phantoms".  Each gives a KNS without tables; kns_build() routes
 * it by docs section 4 for the LIDs of now, and the degraded pass then runs
 * against it as against one a long-running hdor remembers.  Also the file
 * format both files share (docs/plugin.md "hdor.conf").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm_hdor.h"

/* ------------------------------------------------------------------------ */
/* A pass over a KNS from elsewhere, and its tables                         */

/* index of the switch (CA) of P with this GUID: P's nodes are in GUID order
 * when collected from a KNS; -1 */
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
	if (lo < (ca ? P->nca : P->nsw) &&
	    (ca ? P->ca[lo].guid : P->sw[lo].guid) == guid)
		return lo;
	return -1;
}

/* K's node i as a switch or HCA of P, with the node there now (NULL: none) */
static int kns_node(hdor_engine_t *ctx, hdor_pass_t *P, const hdor_kns_t *K,
		    uint32_t i, int *map)
{
	const struct hdor_node *node = NULL;

	if (K->ident[i] < HDOR_PHANTOM)
		node = hdor_fabric_find(ctx->fab, K->ident[i]);
	if (node && hdor_node_kind(node) != K->type[i])
		return hdor_declinec(
			ctx, HD_CONF_MISMATCH,
			"0x%016" PRIx64 " '%s' is a%s, the KNS has a%s there",
			K->ident[i], hdor_desc(node),
			hdor_node_kind(node) == N_SWITCH ? " switch" : "n hca",
			K->type[i] == N_SWITCH ? " switch" : "n hca");
	if (K->type[i] == N_SWITCH) {
		hsw_t *s = &P->sw[P->nsw];

		if (node && (node->flags & HDOR_NODE_NO_SWITCH))
			return hdor_declinec(ctx, HD_DEVICE,
					     "switch 0x%016" PRIx64
					     " '%s' has no switch object",
					     K->ident[i], hdor_desc(node));
		s->node = node;
		s->lft = node ? node->lft : NULL;
		s->paths = node ? node->paths : NULL;
		s->top = node ? node->top : 0;
		s->np = node ? node->np : K->np[i];
		s->guid = K->guid[i];
		s->router = s->group = s->first_set = -1;
		s->base_lid = node ? node->base_lid : 0;
		if (node)
			hdor_hput(P, node, 2 * P->nsw);
		map[i] = P->nsw++;
	} else {
		hca_t *c = &P->ca[P->nca];

		c->node = node;
		c->guid = K->guid[i];
		c->router = -1;
		c->port_num = 256;
		if (node)
			hdor_hput(P, node, 2 * P->nca + 1);
		map[i] = P->nca++;
	}
	return 0;
}

/* K's cables of its switch i */
static int kns_links(hdor_engine_t *ctx, hdor_pass_t *P, const hdor_kns_t *K,
		     uint32_t i, const int *map)
{
	hsw_t *s = &P->sw[map[i]];
	unsigned p;

	s->loff = P->nlinks;
	for (p = 1; p < K->np[i]; p++) {
		int y = K->peer[K->poff[i] + p];

		if (y < 0)
			continue;
		if (s->node && p >= s->node->np)
			return hdor_declinec(
				ctx, HD_CONF_MISMATCH,
				"switch 0x%016" PRIx64
				" '%s' has ports 1-%u, the KNS cables its port %u",
				K->ident[i], hdor_desc(s->node),
				s->node->np - 1u, p);
		P->links[P->nlinks].port = (uint8_t)p;
		P->links[P->nlinks].rport = K->pport[K->poff[i] + p];
		P->links[P->nlinks].kind = K->type[y];
		P->links[P->nlinks].idx = map[y];
		P->nlinks++;
	}
	s->ln = P->nlinks - s->loff;
	return 0;
}

/* section 4 for a KNS K: every node and cable of K, with the nodes there now
 * (the others have none); node GUIDs are K's (its order), links are K's */
static int collect_kns(hdor_engine_t *ctx, hdor_pass_t *P, const hdor_kns_t *K)
{
	uint32_t i, total = 0;
	int *map = hdor_calloc(K->nn, sizeof(int)), ret = -1;

	if (!map)
		return hdor_decline(ctx, "out of memory");
	for (i = 0; i < K->nn; i++) {
		if (K->type[i] == N_SWITCH) {
			P->nsw++;
			total += K->np[i];
		} else {
			P->nca++;
		}
	}
	if (!P->nsw) {
		free(map);
		return hdor_decline(ctx, "no switches");
	}
	P->links = hdor_calloc(total, sizeof(*P->links));
	if (!hdor_pass_alloc(P) || !P->links) {
		hdor_decline(ctx, "out of memory");
		goto out;
	}
	P->nsw = P->nca = 0;
	for (i = 0; i < K->nn; i++)
		if (kns_node(ctx, P, K, i, map))
			goto out;
	for (i = 0; i < K->nn; i++)
		if (K->type[i] == N_SWITCH && kns_links(ctx, P, K, i, map))
			goto out;
	ret = 0;
out:
	free(map);
	return ret;
}

/* routers and switches of P labelled as K labels them */
static int coords_of(hdor_engine_t *ctx, hdor_pass_t *P, const hdor_kns_t *K)
{
	unsigned n = P->n;
	uint32_t j;
	int r, g;

	for (r = 0; r < P->nr; r++) {
		int b = hdor_find_u64(K->guid, K->nn, P->rt[r].guid);

		if (b < 0 || K->role[b] != R_ROUTER)
			return hdor_declinec(
				ctx, HD_CONF_INVALID,
				"0x%016" PRIx64
				" is a router (an HCA is cabled to it), not a %s",
				P->rt[r].guid,
				b < 0		       ? "node of it" :
				K->role[b] == R_SWITCH ? "switch" :
							 "router");
		memcpy(P->coord + (size_t)r * n, K->coord + (size_t)b * n, n);
	}
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];

		G->dim = -1;
		for (j = 0; j < G->sn; j++) {
			hsw_t *W = &P->sw[P->gsw[G->soff + j]];
			int b = hdor_find_u64(K->guid, K->nn, W->guid);

			if (b < 0 || K->role[b] != R_SWITCH)
				return hdor_declinec(
					ctx, HD_CONF_INVALID,
					"0x%016" PRIx64
					" is an indirect switch (no HCA is cabled to it), not a router",
					W->guid);
			if (G->dim >= 0 && K->dim[b] != G->dim)
				return hdor_declinec(
					ctx, HD_CONF_INVALID,
					"switches 0x%016" PRIx64
					" and 0x%016" PRIx64
					" of one indirect network have dimensions %d and %d",
					P->sw[P->gsw[G->soff]].guid, W->guid,
					G->dim, K->dim[b]);
			G->dim = K->dim[b];
		}
	}
	for (r = 0; r < P->nr; r++)
		for (j = 0; j < P->rt[r].gn; j++) {
			int gg = (int)P->rgl[P->rt[r].goff + j],
			    d = P->grp[gg].dim;

			if (P->rg[r * n + d] >= 0)
				return hdor_declinec(
					ctx, HD_CONF_INVALID,
					"router 0x%016" PRIx64
					" is in two indirect networks of dimension %d",
					P->rt[r].guid, d);
			P->rg[r * n + d] = gg;
		}
	return 0;
}

/* docs sections 2-3 replaced by K's own dimensions and coordinates (a
 * description's, or the ones a node that was replaced kept): checked to be a
 * KNS labelling */
static int coords_from_kns(hdor_engine_t *ctx, hdor_pass_t *P,
			   const hdor_kns_t *K)
{
	unsigned n = P->n, e;
	uint32_t j;
	int g, i;

	if (P->n != K->n || P->k != K->k)
		return hdor_declinec(
			ctx, HD_CONF_INVALID,
			"its cabling is a %u-ary %u-direct KNS, its header says k=%u n=%u",
			P->k, P->n, K->k, K->n);
	P->rg = hdor_calloc((size_t)P->nr * n, sizeof(int));
	P->coord = hdor_calloc((size_t)P->nr * n, 1);
	P->gcoord = hdor_calloc((size_t)P->ng * n, 1);
	if (!P->rg || !P->coord || !P->gcoord)
		return hdor_decline(ctx, "out of memory");
	for (i = 0; i < P->nr * (int)n; i++)
		P->rg[i] = -1;
	if (coords_of(ctx, P, K))
		return -1;
	if (hdor_lines_and_points(ctx, P)) {
		ctx->code = ctx->code == HD_NOMEM ? HD_NOMEM : HD_CONF_INVALID;
		return -1;
	}
	for (g = 0; g < P->ng; g++) {
		hgrp_t *G = &P->grp[g];

		for (j = 0; j < G->sn; j++) {
			int b = hdor_find_u64(K->guid, K->nn,
					      P->sw[P->gsw[G->soff + j]].guid);

			for (e = 0; e < n; e++)
				if ((int)e != G->dim &&
				    K->coord[(size_t)b * n + e] !=
					    P->gcoord[(size_t)g * n + e])
					return hdor_declinec(
						ctx, HD_CONF_INVALID,
						"switch 0x%016" PRIx64
						" has the coordinates of another line of dimension %d than its routers",
						K->ident[b], G->dim);
		}
	}
	return 0;
}

/* the target of LIDs remembered on K's slot s (node i, port p) */
static int old_target(const hdor_pass_t *P, const hdor_kns_t *K, uint32_t i,
		      unsigned p, int x, ltgt_t *t)
{
	uint32_t s = K->poff[i] + p;

	if (K->type[i] != N_SWITCH) {
		int y = K->peer[s], w = y >= 0 ? p_find(P, K->guid[y], 0) : -1;

		if (w < 0 || P->sw[w].router < 0)
			return -1;
		t->kind = T_ROUTER;
		t->idx = P->sw[w].router;
		t->port = K->pport[s];
		return 0;
	}
	if (p != 0)
		return -1;
	t->kind = P->sw[x].router >= 0 ? T_ROUTER : T_SWITCH;
	t->idx = P->sw[x].router >= 0 ? P->sw[x].router : x;
	t->port = 0;
	return 0;
}

/* the remembered LIDs of K's ports that are not there now, while no port of
 * now has them: the targets a long-running hdor would still count
 * (spreading, docs section 4) */
static void kns_lids(hdor_pass_t *P, const hdor_kns_t *K)
{
	uint32_t i, lid;
	unsigned p;

	for (i = 0; i < K->nn; i++) {
		int ca = K->type[i] != N_SWITCH, x = p_find(P, K->guid[i], ca);

		if (x < 0 || (ca ? P->ca[x].node : P->sw[x].node))
			continue;
		for (p = 0; p < K->np[i]; p++) {
			uint32_t s = K->poff[i] + p, lo = K->plid[s];
			uint32_t hi = lo + (1u << K->plmc[s]) - 1, ok = 1;
			ltgt_t t;

			if (!lo || hi > P->max_lid)
				continue;
			for (lid = lo; lid <= hi; lid++)
				ok &= P->lt[lid].kind == T_NONE;
			if (!ok || old_target(P, K, i, p, x, &t))
				continue;
			for (lid = lo; lid <= hi; lid++) {
				P->lt[lid] = t;
				P->nlids++;
			}
		}
	}
}

/* the replacements among the devices of now (deg_match places them too; a KNS
 * from a file must know them before its tables are built around the devices
 * of now): 0, or -1 out of memory */
int hdor_kns_place(hdor_engine_t *ctx)
{
	const struct hdor_fabric *fab = ctx->fab;
	const struct hdor_node **unknown = NULL;
	hdor_deg_t D;
	uint32_t i, nu = 0;
	int rc = 0;

	memset(&D, 0, sizeof(D));
	D.K = ctx->kns;
	D.cur = hdor_calloc(D.K->nn, sizeof(*D.cur));
	if (!D.cur)
		return hdor_decline(ctx, "out of memory");
	for (i = 0; i < fab->nn; i++) {
		const struct hdor_node *node = &fab->nodes[i];
		int b;

		if (!hdor_node_here(node))
			continue;
		b = hdor_kns_find(D.K, node->guid);
		if (b >= 0) {
			D.cur[b] = node;
			continue;
		}
		if (nu % 64 == 0) {
			const struct hdor_node **nw;

			nw = realloc(unknown, (nu + 64) * sizeof(*unknown));
			if (!nw) {
				rc = hdor_decline(ctx, "out of memory");
				break;
			}
			unknown = nw;
		}
		unknown[nu++] = node;
	}
	if (!rc && nu)
		rc = hdor_replacements(ctx, &D, unknown, nu, 0);
	free(unknown);
	free(D.cur);
	return rc;
}

/* a table of our own for each switch of P that is not there (the detours'
 * statistics walk it, as a long-running hdor walks the table it had) */
static int shadow_tables(hdor_pass_t *P, const hdor_kns_t *K)
{
	size_t row = (size_t)P->max_lid + 1;
	int w, nabs = 0, a = 0;

	for (w = 0; w < P->nsw; w++)
		nabs += !P->sw[w].node;
	if (!nabs)
		return 0;
	P->scratch = malloc(row * nabs);
	P->scratch_paths = hdor_calloc((size_t)nabs * 256, sizeof(uint32_t));
	if (!P->scratch || !P->scratch_paths)
		return -1;
	memset(P->scratch, HDOR_NO_PATH, row * nabs);
	for (w = 0; w < P->nsw; w++) {
		hsw_t *W = &P->sw[w];
		int b;

		if (W->node)
			continue;
		b = hdor_find_u64(K->guid, K->nn, W->guid);
		if (b < 0)
			return -1;
		W->np = K->np[b];
		W->top = P->max_lid;
		W->lft = P->scratch + row * a;
		W->paths = P->scratch_paths + (size_t)256 * a;
		a++;
	}
	return 0;
}

/* the tables of the switches there now as they were prepared */
static void reset_tables(hdor_pass_t *P)
{
	int w;

	for (w = 0; w < P->nsw; w++) {
		hsw_t *W = &P->sw[w];

		if (!W->node || !W->lft)
			continue;
		memset(W->lft, HDOR_NO_PATH, W->top + 1);
		memset(W->paths, 0, W->np * sizeof(*W->paths));
	}
}

/*
 * Kin routed by docs section 4 for the LIDs of now: a KNS with its fault-free
 * tables (of the switches there now), or NULL (ctx->reason).  compute:
 * coordinates by docs sections 2-3 (first sight), else Kin's.  Leaves the
 * switches' tables as they were prepared.
 */
hdor_kns_t *hdor_kns_build(hdor_engine_t *ctx, const hdor_kns_t *Kin,
			   int compute)
{
	hdor_pass_t *P = hdor_calloc(1, sizeof(*P));
	hdor_kns_t *K = NULL;

	if (!P) {
		hdor_decline(ctx, "out of memory");
		return NULL;
	}
	P->fab = ctx->fab;
	if (collect_kns(ctx, P, Kin) || hdor_structure(ctx, P) ||
	    hdor_kns_counts(ctx, P) ||
	    (compute ? hdor_dims_and_coords(ctx, P) :
		       coords_from_kns(ctx, P, Kin)) ||
	    hdor_group_distances(ctx, P) || hdor_candidate_sets(ctx, P) ||
	    hdor_lid_targets(ctx, P))
		goto out;
	kns_lids(P, Kin);
	P->ready = 1;
	if (shadow_tables(P, Kin)) {
		hdor_decline(ctx, "out of memory");
		goto out;
	}
	hdor_route_all(P);
	K = hdor_kns_remember(ctx, P, Kin);
	if (!K)
		hdor_decline(ctx, "out of memory");
	else
		K->origin = Kin->origin;
	reset_tables(P);
out:
	hdor_pass_free(P);
	return K;
}

/* ------------------------------------------------------------------------ */
/* The file format (hdor.conf and the remembered state)                     */

/*
 * One line per node, then one per cable (docs/plugin.md "hdor.conf"):
 *
 *   hdor-kns 1 k=4 n=2 s=1
 *   router 0x0002c90000000001 ports=8 [0,0] lids=0:1 "R[0,0]"
 *   switch 0x0002c90000000011 ports=8 dim=0 [0] lids=0:17 "S[0,0]"
 *   hca 0x0002c90000000021 ports=1 [0,0] lids=1:33 "H[0,0]"
 *   link 0x0002c90000000001 2 0x0002c90000000011 1
 *
 * lids= (port:base LID[/LMC],...) is optional; was=0x... names the node a
 * device replaced (it keeps that node's place and order); phantom marks a node
 * identified at first sight.
 */

typedef struct {
	uint64_t ident, guid;
	uint8_t type, role, np, ncoord, phantom;
	int dim, line;
	uint8_t coord[HDOR_MAX_N];
	char *desc;
	uint16_t lid[8]; /* up to 8 ports with LIDs per node line */
	uint8_t lport[8], lmc[8], nlid;
} hfnode_t;

typedef struct {
	uint64_t a, b;
	uint8_t pa, pb;
	int line;
} hflink_t;

/* a file being read */
struct reader {
	hdor_engine_t *ctx;
	const char *path;
	int lineno, have_header;
	unsigned k, n, s;
	hfnode_t *nd;
	hflink_t *lk;
	uint32_t nnd, cnd, nlk, clk;
};

#define SYNTAX(r, fmt, ...)                                                    \
	hdor_declinec((r)->ctx, HD_CONF_SYNTAX, "%s line %d: " fmt, (r)->path, \
		      (r)->lineno, ##__VA_ARGS__)

static int cmp_fnode_ident(const void *a, const void *b)
{
	return hdor_cmp_u64(((const hfnode_t *)a)->ident,
			    ((const hfnode_t *)b)->ident);
}

static int cmp_fnode_guid(const void *a, const void *b)
{
	return hdor_cmp_u64(((const hfnode_t *)a)->guid,
			    ((const hfnode_t *)b)->guid);
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

/* "[a,b,c]" -> up to HDOR_MAX_N values (most significant first), their
 * number in *nc */
static int parse_coords(const char *t, uint8_t *c, uint8_t *nc)
{
	char buf[256], *save = NULL, *tok;
	size_t len = strlen(t);

	*nc = 0;
	if (len < 2 || len >= sizeof(buf) || t[0] != '[' || t[len - 1] != ']')
		return -1;
	memcpy(buf, t + 1, len - 2);
	buf[len - 2] = '\0';
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned v;

		if (*nc >= HDOR_MAX_N || parse_uint(tok, 255, &v))
			return -1;
		c[(*nc)++] = (uint8_t)v;
	}
	return 0;
}

static int read_header(struct reader *r, char **tok, int nt)
{
	int j;

	if (strcmp(tok[0], "hdor-kns") || nt < 2 || strcmp(tok[1], "1"))
		return SYNTAX(
			r,
			"not a KNS description (it starts with \"hdor-kns 1 k=.. n=..\")");
	for (j = 2; j < nt; j++) {
		if (!strncmp(tok[j], "k=", 2) &&
		    !parse_uint(tok[j] + 2, 255, &r->k))
			continue;
		if (!strncmp(tok[j], "n=", 2) &&
		    !parse_uint(tok[j] + 2, HDOR_MAX_N, &r->n))
			continue;
		if (!strncmp(tok[j], "s=", 2) &&
		    !parse_uint(tok[j] + 2, 255, &r->s))
			continue;
		if (strchr(tok[j], '=')) /* counts, for a reader: not needed */
			continue;
		return SYNTAX(r, "unknown header field '%s'", tok[j]);
	}
	if (r->k < 2 || r->n < 1)
		return SYNTAX(r, "the header needs k >= 2 and n >= 1");
	r->have_header = 1;
	return 0;
}

static int read_link(struct reader *r, char **tok, int nt, const char *desc)
{
	hflink_t *l;
	unsigned pa, pb;

	if (nt != 5 || desc)
		return SYNTAX(r, "a link is 'link GUID PORT GUID PORT'");
	if (hdor_grow(&r->lk, r->nlk, &r->clk, sizeof(*r->lk)))
		return hdor_decline(r->ctx, "out of memory");
	l = &r->lk[r->nlk];
	if (parse_u64(tok[1], &l->a) || parse_uint(tok[2], 254, &pa) || !pa ||
	    parse_u64(tok[3], &l->b) || parse_uint(tok[4], 254, &pb) || !pb)
		return SYNTAX(
			r,
			"a link is 'link GUID PORT GUID PORT' (GUIDs 0x..., ports 1-254)");
	l->pa = (uint8_t)pa;
	l->pb = (uint8_t)pb;
	l->line = r->lineno;
	r->nlk++;
	return 0;
}

/* lids=PORT:LID[/LMC],... */
static int read_lids(struct reader *r, hfnode_t *x, char *t)
{
	char *s2 = NULL, *e;

	for (e = strtok_r(t, ",", &s2); e; e = strtok_r(NULL, ",", &s2)) {
		unsigned pn, lid, lmc = 0;
		char *c = strchr(e, ':'), *sl = strchr(e, '/');

		if (!c || x->nlid >= 8)
			return SYNTAX(
				r,
				"lids= takes PORT:LID[/LMC],... (at most 8)");
		*c = '\0';
		if (sl)
			*sl = '\0';
		if (parse_uint(e, 254, &pn) ||
		    parse_uint(c + 1, 0xbfff, &lid) || !lid ||
		    (sl && parse_uint(sl + 1, 7, &lmc)))
			return SYNTAX(
				r,
				"lids= takes PORT:LID[/LMC],... (LIDs 1-49151, LMC 0-7)");
		x->lport[x->nlid] = (uint8_t)pn;
		x->lid[x->nlid] = (uint16_t)lid;
		x->lmc[x->nlid++] = (uint8_t)lmc;
	}
	return 0;
}

/* one field of a node line */
static int read_field(struct reader *r, hfnode_t *x, char *t)
{
	unsigned v;

	if (!strncmp(t, "ports=", 6)) {
		if (parse_uint(t + 6, 254, &v) || !v)
			return SYNTAX(r, "ports= takes 1-254");
		x->np = (uint8_t)(v + 1);
	} else if (!strncmp(t, "dim=", 4)) {
		if (parse_uint(t + 4, HDOR_MAX_N - 1, &v))
			return SYNTAX(r, "bad dim=");
		x->dim = (int)v;
	} else if (!strncmp(t, "was=", 4)) {
		if (parse_u64(t + 4, &x->guid))
			return SYNTAX(r, "was= takes a GUID (0x...)");
	} else if (!strcmp(t, "phantom")) {
		x->phantom = 1;
	} else if (t[0] == '[') {
		if (parse_coords(t, x->coord, &x->ncoord))
			return SYNTAX(r, "bad coordinates '%s'", t);
	} else if (!strncmp(t, "lids=", 5)) {
		return read_lids(r, x, t + 5);
	} else {
		return SYNTAX(r, "unknown field '%s'", t);
	}
	return 0;
}

/* a node line's fields agree with its role and the header */
static int check_node(struct reader *r, const hfnode_t *x, const char *what)
{
	unsigned n = r->n;
	int j;

	if (!x->np)
		return SYNTAX(r, "ports= is missing");
	if (x->role == R_SWITCH ?
		    (x->dim < 0 || x->dim >= (int)n || x->ncoord != n - 1) :
	    x->role == R_ROUTER ? x->ncoord != n :
				  (x->ncoord && x->ncoord != n))
		return SYNTAX(
			r, "a %s needs %s", what,
			x->role == R_SWITCH ?
				"dim=D (D < n) and its line's n-1 coordinates" :
				"n coordinates");
	for (j = 0; j < x->ncoord; j++)
		if (x->coord[j] >= r->k)
			return SYNTAX(r, "coordinate %u is not below k = %u",
				      x->coord[j], r->k);
	for (j = 0; j < x->nlid; j++)
		if (x->lport[j] >= x->np ||
		    (x->type == N_SWITCH && x->lport[j]))
			return SYNTAX(
				r,
				"lids= names port %u (a switch has its LID on port 0)",
				x->lport[j]);
	return 0;
}

static int read_node(struct reader *r, char **tok, int nt, const char *desc)
{
	hfnode_t *x;
	int j;

	if (strcmp(tok[0], "router") && strcmp(tok[0], "switch") &&
	    strcmp(tok[0], "hca"))
		return SYNTAX(r, "'%s' is not router, switch, hca or link",
			      tok[0]);
	if (hdor_grow(&r->nd, r->nnd, &r->cnd, sizeof(*r->nd)))
		return hdor_decline(r->ctx, "out of memory");
	x = &r->nd[r->nnd];
	memset(x, 0, sizeof(*x));
	x->dim = -1;
	x->line = r->lineno;
	x->role = tok[0][0] == 'r' ? R_ROUTER :
		  tok[0][0] == 's' ? R_SWITCH :
				     R_HCA;
	x->type = x->role == R_HCA ? N_CA : N_SWITCH;
	if (nt < 2 || parse_u64(tok[1], &x->ident))
		return SYNTAX(r, "a %s line starts with its GUID (0x...)",
			      tok[0]);
	x->guid = x->ident;
	for (j = 2; j < nt; j++)
		if (read_field(r, x, tok[j]))
			return -1;
	if (check_node(r, x, tok[0]))
		return -1;
	x->desc = strdup(desc ? desc : "");
	if (!x->desc)
		return hdor_decline(r->ctx, "out of memory");
	r->nnd++;
	return 0;
}

/* one line: the node description to the last quote, the tokens before a # */
static int read_line(struct reader *r, char *line)
{
	char *tok[24], *save = NULL, *q, *desc = NULL, *t;
	int nt = 0;

	q = strchr(line, '"');
	if (q) {
		char *e = strrchr(line, '"');

		if (e == q)
			return SYNTAX(
				r, "a description without its closing quote");
		*e = '\0';
		desc = q + 1;
		*q = '\0';
	}
	for (t = strtok_r(line, " \t", &save); t && nt < 24;
	     t = strtok_r(NULL, " \t", &save)) {
		if (*t == '#')
			break;
		tok[nt++] = t;
	}
	if (!nt)
		return 0;
	if (!r->have_header)
		return read_header(r, tok, nt);
	if (!strcmp(tok[0], "link"))
		return read_link(r, tok, nt, desc);
	return read_node(r, tok, nt, desc);
}

/* the file's nodes into a KNS, ordered by the GUID that places them: a
 * device that replaced another takes its place */
static hdor_kns_t *reader_nodes(struct reader *r, int origin)
{
	uint32_t i, nnd = r->nnd;
	unsigned n = r->n, e;
	hfnode_t *byg;
	hdor_kns_t *K;

	byg = hdor_calloc(nnd, sizeof(*byg));
	K = hdor_kns_alloc(nnd, r->k, n, r->s, origin);
	if (!byg || !K) {
		free(byg);
		hdor_kns_free(K);
		hdor_decline(r->ctx, "out of memory");
		return NULL;
	}
	memcpy(byg, r->nd, nnd * sizeof(*r->nd));
	qsort(byg, nnd, sizeof(*byg), cmp_fnode_guid);
	for (i = 1; i < nnd; i++)
		if (byg[i].guid == byg[i - 1].guid) {
			hdor_declinec(
				r->ctx, HD_CONF_SYNTAX,
				"%s line %d: two devices have the place of 0x%016" PRIx64,
				r->path, byg[i].line, byg[i].guid);
			free(byg);
			hdor_kns_free(K);
			return NULL;
		}
	for (i = 0; i < nnd; i++) {
		hfnode_t *x = &byg[i];

		K->guid[i] = x->guid;
		K->ident[i] = x->ident;
		K->type[i] = x->type;
		K->role[i] = x->role;
		K->np[i] = x->np;
		K->desc[i] = x->desc; /* (now K's: r->nd forgets them below) */
		K->dim[i] = x->role == R_SWITCH ? x->dim : -1;
		K->poff[i + 1] = K->poff[i] + x->np;
		/* written most significant first; kept by dimension (a switch:
		 * without its own) */
		for (e = 0; e < n && x->ncoord; e++) {
			if (x->role != R_SWITCH) {
				K->coord[(size_t)i * n + e] =
					x->coord[n - 1 - e];
			} else if ((int)e != x->dim) {
				unsigned pos = (unsigned)(e < (unsigned)x->dim ?
								  e :
								  e - 1);

				K->coord[(size_t)i * n + e] =
					x->coord[n - 2 - pos];
			}
		}
	}
	for (i = 0; i < nnd; i++)
		r->nd[i].desc = NULL;
	free(byg);
	return K;
}

/* the remembered LIDs and the cables */
static int reader_links(struct reader *r, hdor_kns_t *K)
{
	uint32_t i, sa, sb;
	int j;

	for (i = 0; i < r->nnd; i++) {
		int b = hdor_kns_find(K, r->nd[i].ident);

		for (j = 0; j < r->nd[i].nlid; j++) {
			K->plid[K->poff[b] + r->nd[i].lport[j]] =
				r->nd[i].lid[j];
			K->plmc[K->poff[b] + r->nd[i].lport[j]] =
				r->nd[i].lmc[j];
		}
	}
	for (i = 0; i < r->nlk; i++) {
		const hflink_t *l = &r->lk[i];
		int a = hdor_kns_find(K, l->a), b = hdor_kns_find(K, l->b);

		r->lineno = l->line;
		if (a < 0 || b < 0)
			return SYNTAX(r,
				      "GUID 0x%016" PRIx64
				      " is not a node of the file",
				      a < 0 ? l->a : l->b);
		if (l->pa >= K->np[a] || l->pb >= K->np[b])
			return SYNTAX(r,
				      "port %u of 0x%016" PRIx64
				      " is beyond its ports=",
				      l->pa >= K->np[a] ? l->pa : l->pb,
				      l->pa >= K->np[a] ? l->a : l->b);
		sa = K->poff[a] + l->pa;
		sb = K->poff[b] + l->pb;
		if (K->peer[sa] >= 0 || K->peer[sb] >= 0 || sa == sb)
			return SYNTAX(r,
				      "port %u of 0x%016" PRIx64
				      " is cabled twice",
				      K->peer[sa] >= 0 ? l->pa : l->pb,
				      K->peer[sa] >= 0 ? l->a : l->b);
		K->peer[sa] = b;
		K->pport[sa] = l->pb;
		K->peer[sb] = a;
		K->pport[sb] = l->pa;
	}
	return 0;
}

/* the nodes in order (of their GUID, or the one they replaced), then the
 * KNS */
static hdor_kns_t *reader_kns(struct reader *r, int origin)
{
	hdor_kns_t *K;
	uint32_t i;

	if (!r->have_header) {
		hdor_declinec(r->ctx, HD_CONF_SYNTAX,
			      "%s: empty (no \"hdor-kns 1 k=.. n=..\" line)",
			      r->path);
		return NULL;
	}
	if (!r->nnd) {
		hdor_declinec(r->ctx, HD_CONF_SYNTAX, "%s: no nodes", r->path);
		return NULL;
	}
	qsort(r->nd, r->nnd, sizeof(*r->nd), cmp_fnode_ident);
	for (i = 1; i < r->nnd; i++)
		if (r->nd[i].ident == r->nd[i - 1].ident) {
			hdor_declinec(r->ctx, HD_CONF_SYNTAX,
				      "%s line %d: GUID 0x%016" PRIx64
				      " is listed twice (line %d)",
				      r->path, r->nd[i].line, r->nd[i].ident,
				      r->nd[i - 1].line);
			return NULL;
		}
	K = reader_nodes(r, origin);
	if (!K)
		return NULL;
	if (hdor_kns_alloc_slots(K)) {
		hdor_decline(r->ctx, "out of memory");
		hdor_kns_free(K);
		return NULL;
	}
	if (reader_links(r, K)) {
		hdor_kns_free(K);
		return NULL;
	}
	return K;
}

/* read a KNS file into *out (structure, coordinates, remembered LIDs; no
 * tables): 0, 1 when the file does not exist, -1 (ctx->reason, ctx->code
 * HD_CONF_READ / HD_CONF_SYNTAX) */
int hdor_kns_read(hdor_engine_t *ctx, const char *path, int origin,
		  hdor_kns_t **out)
{
	struct reader r = { .ctx = ctx, .path = path, .s = 1 };
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint32_t i;
	int ret = -1;

	*out = NULL;
	if (!f) {
		if (errno == ENOENT)
			return 1;
		return hdor_declinec(ctx, HD_CONF_READ, "cannot read %s: %s",
				     path, strerror(errno));
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		r.lineno++;
		while (len > 0 &&
		       (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (read_line(&r, line))
			goto out;
	}
	*out = reader_kns(&r, origin);
	ret = *out ? 0 : -1;
out:
	for (i = 0; i < r.nnd; i++)
		free(r.nd[i].desc);
	free(r.nd);
	free(r.lk);
	free(line);
	fclose(f);
	return ret;
}
#undef SYNTAX

static int cmp_slot_ident(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] != y[0] ? hdor_cmp_u64(x[0], y[0]) :
			      hdor_cmp_u64(x[1], y[1]);
}

/* write K in the file format to path, atomically (a temporary file beside it,
 * then rename) */
int hdor_kns_write(const hdor_kns_t *K, const char *path, const char *comment)
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
	links = hdor_calloc((size_t)nl / 2 + 1, 2 * sizeof(uint64_t));
	if (!links)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		free(links);
		return -1;
	}
	fprintf(f,
		"# %s\n# format: docs/plugin.md \"hdor.conf\"; node lines by role and GUID, then one line per cable\n",
		comment);
	fprintf(f,
		"hdor-kns 1 k=%u n=%u s=%u routers=%u switches=%u hcas=%u links=%u\n",
		K->k, n, K->s, nr, ns, nh, nl / 2);
	for (role = R_ROUTER; role <= R_HCA; role++)
		for (i = 0; i < K->nn; i++) {
			uint32_t b = K->isort[i];
			unsigned p, first = 1;
			if (K->role[b] != role)
				continue;
			fprintf(f, "%s 0x%016" PRIx64,
				role == R_ROUTER ? "router" :
				role == R_SWITCH ? "switch" :
						   "hca",
				K->ident[b]);
			if (K->ident[b] != K->guid[b])
				fprintf(f, " was=0x%016" PRIx64, K->guid[b]);
			fprintf(f, " ports=%u", K->np[b] - 1u);
			if (role == R_SWITCH)
				fprintf(f, " dim=%d", K->dim[b]);
			fputc(' ', f);
			hdor_put_coords(f, K->coord + (size_t)b * n, n,
					role == R_SWITCH ? K->dim[b] : -1);
			for (p = 0; p < K->np[b]; p++)
				if (K->plid[K->poff[b] + p]) {
					fprintf(f,
						first ? " lids=%u:%u" :
							",%u:%u",
						p, K->plid[K->poff[b] + p]);
					if (K->plmc[K->poff[b] + p])
						fprintf(f, "/%u",
							K->plmc[K->poff[b] + p]);
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
			if (y < 0 || K->ident[y] < K->ident[i] ||
			    (K->ident[y] == K->ident[i] && q < p))
				continue;
			links[2 * nlinks] = K->ident[i];
			links[2 * nlinks + 1] = (uint64_t)p << 56 |
						(uint64_t)(unsigned)y << 8 | q;
			nlinks++;
		}
	}
	qsort(links, nlinks, 2 * sizeof(uint64_t), cmp_slot_ident);
	for (i = 0; i < nlinks; i++) {
		uint64_t x = links[2 * i + 1];
		fprintf(f, "link 0x%016" PRIx64 " %u 0x%016" PRIx64 " %u\n",
			links[2 * i], (unsigned)(x >> 56),
			K->ident[(x >> 8) & 0xffffffffffULL],
			(unsigned)(x & 0xff));
	}
	free(links);
	if (fflush(f) == 0 && !ferror(f) && (fd = fileno(f)) >= 0 &&
	    fsync(fd) == 0)
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
