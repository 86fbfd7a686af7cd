// SPDX-License-Identifier: MIT
/*
 * osm_hdor_slvl.c -- a degraded KNS's path SLs and SL2VL rows (docs/hdor.md
 * section 6): every CA-to-CA pair whose route changed walked, its hops' VLs
 * (the dimension-order violations so far), the lowest SL that agrees with the
 * SL2VL entries set so far; the degraded pass's dump and tables; what the SA
 * hooks read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "osm_hdor.h"

/*
 * open-addressing map (switch, in, out) -> the VL of each SL set so far: the
 * SLs of one hop share a slot, and a slot holds its key (32 bytes), so a hop's
 * SLs cost one probe, one cache line
 */
typedef struct {
	uint64_t key; /* 0 = empty */
	uint16_t set; /* bit sl: vl[sl] is set */
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
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
		_mm_loadu_si128((const __m128i *)vl), _mm_set1_epi8((char)v)));
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
	/* two slots a cache line */
	n.slot = aligned_alloc(64, (size_t)n.cap * sizeof(hvl_t));
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

/* vl: set by hop_vls */
typedef struct {
	int x;
	uint8_t pin, pout, vl;
} hhop_t;

/*
 * the walk from CA base node c's port to dlid over the new tables (tab) or the
 * fault-free ones: the hops (switch, in, out) and the links; -1 when the packet
 * is lost
 */
static int walk(const hdor_deg_t *D, int c, unsigned port, uint32_t dlid,
		int tab, hhop_t *hops, int *nh)
{
	const hdor_kns_t *K = D->K;
	int x = kpeer(K, c, port), links = 1, i;
	unsigned pin = K->pport[K->poff[c] + port];
	*nh = 0;
	for (i = 0; i < HDOR_MAX_HOPS; i++) {
		uint8_t out = tab ? (dlid < D->nl ? DTAB(D, K->row[x], dlid) :
						    HDOR_NO_PATH) :
				    t0(K, x, dlid);
		int nx;
		if (out == HDOR_NO_PATH || out == 0)
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

/*
 * each hop's VL (the violations so far, at that router included: docs/hdor.md
 * section 6); returns the route's violations
 */
static int hop_vls(const hdor_kns_t *K, hhop_t *hops, int nh)
{
	int h, v = 0;
	for (h = 0; h < nh; h++) {
		int x = hops[h].x;
		if (K->role[x] == R_ROUTER) {
			int a = kpeer(K, x, hops[h].pin),
			    b = kpeer(K, x, hops[h].pout);
			if (a >= 0 && b >= 0 && K->dim[a] >= 0 &&
			    K->dim[b] >= 0 && K->dim[b] <= K->dim[a])
				v++;
		}
		hops[h].vl = (uint8_t)v;
	}
	return v;
}

typedef struct {
	uint64_t guid;
	uint16_t io;
	uint8_t vl[16];
} hrow_t;

static int cmp_row(const void *a, const void *b)
{
	const hrow_t *x = a, *y = b;
	int c = hdor_cmp_u64(x->guid, y->guid);
	return c ? c : (x->io > y->io) - (x->io < y->io);
}

/*
 * path SLs of every CA-to-CA pair, SL2VL entries, VLs used, extra links of
 * detoured pairs
 */
/* what deg_sls keeps while it walks the pairs */
struct sls {
	hmap_t map;
	uint32_t *src, *srow, nsrc, cap;
	/* the sources at each switch row (CSR), a LID's candidates */
	uint32_t *roff, *rsrc, *cand;
	hhop_t hops[HDOR_MAX_HOPS], hops0[HDOR_MAX_HOPS];
	int most;
	double sum;
};

/* each LID's base LID; the sources: the base LIDs of linked CA ports,
 * ascending */
static void sls_sources(hdor_deg_t *D, struct sls *S)
{
	const hdor_kns_t *K = D->K;
	hdor_qos_t *Q = D->qos;
	uint32_t dlid, i;

	for (dlid = 1; dlid < D->nl; dlid++)
		Q->base[dlid] =
			(uint16_t)(D->onode[dlid] >= 0 &&
						   D->onode[dlid - 1] ==
							   D->onode[dlid] &&
						   D->oport[dlid - 1] ==
							   D->oport[dlid] ?
					   Q->base[dlid - 1] :
					   dlid);
	for (dlid = 1; dlid < D->nl; dlid++) {
		int c = D->onode[dlid], x;

		if (c < 0 || K->type[c] != N_CA ||
		    !works(D, c, D->oport[dlid]) ||
		    (dlid != 1 && D->onode[dlid - 1] == c &&
		     D->oport[dlid - 1] == D->oport[dlid]))
			continue;
		/* (a KNS cables every CA port to a router) */
		x = kpeer(K, c, D->oport[dlid]);
		if (K->type[x] != N_SWITCH)
			continue;
		S->srow[S->nsrc] = (uint32_t)K->row[x];
		S->src[S->nsrc++] = dlid;
	}
	for (i = 0; i < S->nsrc; i++)
		S->roff[S->srow[i] + 1]++;
	for (i = 0; i < (uint32_t)K->nrow; i++)
		S->roff[i + 1] += S->roff[i];
	for (i = 0; i < S->nsrc; i++)
		S->rsrc[S->roff[S->srow[i]]++] = i;
	for (i = (uint32_t)K->nrow; i > 0; i--)
		S->roff[i] = S->roff[i - 1];
	S->roff[0] = 0;
}

/*
 * the pair's SL: the lowest SL >= 1 whose entries set so far agree with every
 * hop's VL: each hop's slot is probed once, its 16 SLs compared at a time (a
 * bit per SL); 0, or -1 (declined)
 */
static int sls_assign(hdor_engine_t *ctx, hdor_deg_t *D, struct sls *S,
		      uint32_t slid, uint32_t dlid, int nh)
{
	hdor_qos_t *Q = D->qos;
	uint32_t slot[HDOR_MAX_HOPS];
	unsigned ok = 0xfffe & ((1u << HDOR_MAX_SLS) - 1), sl;
	int h;

	if (hmap_reserve(&S->map, (uint32_t)nh))
		return hdor_decline(ctx, "out of memory");
	for (h = 0; h < nh; h++) {
		const hhop_t *x = &S->hops[h];
		const hvl_t *e;

		slot[h] = hmap_claim(&S->map, hkey(x->x, x->pin, x->pout));
		e = &S->map.slot[slot[h]];
		ok &= vl_agree(e->vl, x->vl) | (uint16_t)~e->set;
	}
	if (!ok)
		return hdor_declinec(
			ctx, HD_SLS,
			"the failures need more than %d SLs (pair LID %u -> %u)",
			HDOR_MAX_SLS, slid, dlid);
	sl = (unsigned)__builtin_ctz(ok);
	for (h = 0; h < nh; h++) {
		S->map.slot[slot[h]].vl[sl] = S->hops[h].vl;
		S->map.slot[slot[h]].set |= (uint16_t)(1u << sl);
	}
	if (Q->npath == S->cap) {
		uint32_t nc = S->cap ? 2 * S->cap : 1024;
		uint64_t *nk = realloc(Q->pkey, nc * sizeof(uint64_t));
		uint8_t *ns;

		if (!nk)
			return hdor_decline(ctx, "out of memory");
		Q->pkey = nk;
		ns = realloc(Q->psl, nc);
		if (!ns)
			return hdor_decline(ctx, "out of memory");
		Q->psl = ns;
		S->cap = nc;
	}
	if (sl > Q->maxsl)
		Q->maxsl = sl;
	Q->pkey[Q->npath] = (uint64_t)dlid << 16 | slid;
	Q->psl[Q->npath++] = (uint8_t)sl;
	return 0;
}

/* a pair not delivered, for a front end that lists the pairs with an SL */
static int sls_lost(hdor_engine_t *ctx, hdor_qos_t *Q, uint32_t dlid,
		    uint32_t slid)
{
	if (hdor_grow(&Q->lost, Q->nlost, &Q->caplost, sizeof(*Q->lost)))
		return hdor_decline(ctx, "out of memory");
	Q->lost[Q->nlost++] = (uint64_t)dlid << 16 | slid;
	return 0;
}

/* the pair (source i, dlid) whose route may have changed: walked, its SL, its
 * detour's extra links; 0, or -1 (declined) */
static int sls_pair(hdor_engine_t *ctx, hdor_deg_t *D, struct sls *S,
		    uint32_t i, uint32_t dlid)
{
	const hdor_kns_t *K = D->K;
	uint32_t slid = S->src[i];
	int c = D->onode[slid], nh, nh0, ln, ln0, h, v, same;
	unsigned p = D->oport[slid];

	if (c == D->onode[dlid] && p == D->oport[dlid])
		return 0;
	if (!hdor_affected(D, kpeer(K, c, p), dlid, 0))
		return 0;
	ln = walk(D, c, p, dlid, 1, S->hops, &nh);
	if (ln < 0)
		/* not delivered: no path SL (the verifier reports it) */
		return sls_lost(ctx, D->qos, dlid, slid);
	v = hop_vls(K, S->hops, nh);
	if (v > S->most)
		S->most = v;
	if (v && sls_assign(ctx, D, S, slid, dlid, nh))
		return -1;
	/*
	 * the route is the fault-free one when every hop leaves as the
	 * fault-free table says (then that walk takes the same hops); else it
	 * is walked for its length
	 */
	same = 1;
	for (h = 0; h < nh && same; h++)
		same = S->hops[h].pout == t0(K, S->hops[h].x, dlid);
	if (!same) {
		int extra;

		ln0 = walk(D, c, p, dlid, 0, S->hops0, &nh0);
		extra = ln - ln0;
		if (!D->detoured || extra > (int)D->extra_max)
			D->extra_max = (uint32_t)extra;
		D->detoured++;
		S->sum += extra;
	}
	return 0;
}

/* the pairs of dlid whose route changed, found by a look at every source: one
 * byte of dlid's row of D->aff each */
static int sls_lid_all(hdor_engine_t *ctx, hdor_deg_t *D, struct sls *S,
		       uint32_t dlid)
{
	const uint8_t *arow = &D->aff[(size_t)dlid * D->K->nrow];
	uint32_t i;

	for (i = 0; i < S->nsrc; i++)
		if (arow[S->srow[i]] != 1 && sls_pair(ctx, D, S, i, dlid))
			return -1;
	return 0;
}

/* the same pairs found by a look at every pair (opts.degraded_full): a scan
 * of the 16.7 M pairs of KNS 16^3 */
static int sls_all_pairs(hdor_engine_t *ctx, hdor_deg_t *D, struct sls *S)
{
	const hdor_kns_t *K = D->K;
	uint32_t dlid;

	for (dlid = 1; dlid < D->nl; dlid++) {
		int dc = D->onode[dlid];

		if (dc < 0 || K->type[dc] != N_CA ||
		    !works(D, dc, D->oport[dlid]))
			continue;
		if (sls_lid_all(ctx, D, S, dlid))
			return -1;
	}
	return 0;
}

/*
 * Only the pairs whose route changed are walked: a pair is one when its
 * source's switch has an affected entry for dlid -- one of the entries the
 * affected entries phase noted, LID by LID (K->kept): the sources at those
 * switches, ascending.  Every other pair keeps its fault-free route and SL 0.
 * 0, or -1 (declined)
 */
static int sls_affected_pairs(hdor_engine_t *ctx, hdor_deg_t *D, struct sls *S)
{
	const hdor_kns_t *K = D->K;
	const hdor_kept_t *k = K->kept;
	uint32_t a, i, j, dlid;

	for (a = 0; a < k->nalid; a++) {
		int dc = D->onode[dlid = k->alid[a]];
		uint32_t nc = 0;

		if (dc < 0 || K->type[dc] != N_CA ||
		    !works(D, dc, D->oport[dlid]))
			continue;
		if ((k->aoff[a + 1] - k->aoff[a]) * 8 > S->nsrc) {
			/* many: a look at every source is cheaper than a sort */
			if (sls_lid_all(ctx, D, S, dlid))
				return -1;
			continue;
		}
		for (j = k->aoff[a]; j < k->aoff[a + 1]; j++) {
			uint32_t r = (uint32_t)K->row[k->ab[j]];

			for (i = S->roff[r]; i < S->roff[r + 1]; i++)
				S->cand[nc++] = S->rsrc[i];
		}
		if (nc > 1)
			qsort(S->cand, nc, sizeof(uint32_t), hdor_cmp_u32);
		for (j = 0; j < nc; j++)
			if (sls_pair(ctx, D, S, S->cand[j], dlid))
				return -1;
	}
	return 0;
}

/* SL2VL rows: (switch, in, out) -> VL per SL; entries never set are VL 0 */
static int sls_rows(hdor_deg_t *D, struct sls *S)
{
	const hdor_kns_t *K = D->K;
	hdor_qos_t *Q = D->qos;
	hrow_t *rows = hdor_calloc(S->map.n + 1, sizeof(*rows));
	uint32_t nr = 0, i, j;
	unsigned s;

	if (!rows)
		return -1;
	for (i = 0; i < S->map.cap; i++) {
		uint64_t k = S->map.slot[i].key;
		unsigned any = 0;

		if (!k)
			continue;
		for (s = 0; s < 16; s++) {
			rows[nr].vl[s] = S->map.slot[i].set >> s & 1 ?
						 S->map.slot[i].vl[s] :
						 0;
			any |= rows[nr].vl[s];
		}
		if (!any)
			continue; /* VL 0 for every SL: as never set */
		rows[nr].guid = K->ident[(k >> 16) & 0xffffffffULL];
		rows[nr].io = (uint16_t)(k & 0xffff);
		nr++;
	}
	qsort(rows, nr, sizeof(*rows), cmp_row);
	for (i = 0, j = 0; i < nr; i++) {
		if (j && rows[j - 1].guid == rows[i].guid &&
		    rows[j - 1].io == rows[i].io) {
			for (s = 0; s < 16; s++)
				rows[j - 1].vl[s] |= rows[i].vl[s];
		} else {
			rows[j++] = rows[i];
		}
	}
	Q->nrow = j;
	Q->rguid = hdor_calloc(j + 1, sizeof(uint64_t));
	Q->rvl = hdor_calloc(j + 1, 16);
	/* rkey holds the in/out pair of each row */
	Q->rkey = hdor_calloc(j + 1, sizeof(uint64_t));
	if (!Q->rguid || !Q->rvl || !Q->rkey) {
		free(rows);
		return -1;
	}
	for (i = 0; i < j; i++) {
		Q->rguid[i] = rows[i].guid;
		memcpy(Q->rvl[i], rows[i].vl, 16);
		Q->rkey[i] = rows[i].io;
	}
	free(rows);
	return 0;
}

/* path SLs of every CA-to-CA pair, SL2VL entries, VLs used, extra links of
 * detoured pairs */
int hdor_deg_sls(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	hdor_qos_t *Q = hdor_calloc(1, sizeof(*Q));
	struct sls *S = hdor_calloc(1, sizeof(*S));
	int ret = -1;

	D->qos = Q;
	if (!Q || !S)
		goto oom;
	S->src = hdor_calloc(D->nl, sizeof(uint32_t));
	S->srow = hdor_calloc(D->nl, sizeof(uint32_t));
	S->roff = hdor_calloc((size_t)K->nrow + 1, sizeof(uint32_t));
	S->rsrc = hdor_calloc(D->nl, sizeof(uint32_t));
	S->cand = hdor_calloc(D->nl, sizeof(uint32_t));
	Q->nl = D->nl;
	Q->base = hdor_calloc(D->nl, sizeof(uint16_t));
	if (!S->src || !S->srow || !S->roff || !S->rsrc || !S->cand || !Q->base)
		goto oom;
	sls_sources(D, S);
	if (D->full ? sls_all_pairs(ctx, D, S) : sls_affected_pairs(ctx, D, S))
		goto out;
	D->extra_mean = D->detoured ? S->sum / D->detoured : 0.0;
	D->vls = (unsigned)S->most + 1;
	if (sls_rows(D, S))
		goto oom;
	Q->vls = D->vls;
	ret = 0;
	goto out;
oom:
	hdor_decline(ctx, "out of memory");
out:
	if (S) {
		void *all[] = { S->src,	 S->srow, S->roff,
				S->rsrc, S->cand, S->map.slot };

		hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	}
	free(S);
	return ret;
}

/* the VLs the switch ports offer: the smallest PortInfo VLCap of a surviving
 * switch's working ports, capped by OpenSM's max_op_vls (VL0 .. VL0-14 -> 1,
 * 2, 4, 8, 15), and by the front end's limit */
unsigned hdor_ports_vlcap(hdor_engine_t *ctx, const hdor_deg_t *D)
{
	static const unsigned by_cap[] = { 0, 1, 2, 4, 8, 15 };
	unsigned maxop = ctx->opts.max_op_vls, best = 15, any = 0;
	const hdor_kns_t *K = D->K;
	uint32_t i;
	unsigned p;

	for (i = 0; i < K->nn; i++) {
		if (!D->cur[i] || K->type[i] != N_SWITCH)
			continue;
		for (p = 1; p < K->np[i]; p++) {
			unsigned cap;

			if (!works(D, (int)i, p) || p >= D->cur[i]->np)
				continue;
			cap = D->cur[i]->ports[p].vl_cap;
			/* OpenSM sets OperVLs to at most max_op_vls, and masks
			 * SL2VL entries with it */
			if (maxop >= 1 && maxop < cap)
				cap = maxop;
			if (cap < 1 || cap > 5)
				continue;
			any = 1;
			if (by_cap[cap] < best)
				best = by_cap[cap];
		}
	}
	best = any ? best : 1;
	if (ctx->opts.vls_limit && ctx->opts.vls_limit < best)
		best = ctx->opts.vls_limit;
	return best;
}

/* ------------------------------------------------------------------------ */
/* The degraded pass's dump and tables                                      */

/* the port counts of the routers with a spread line (two working links or
 * more into one dimension), per (node, port) slot: counted a LID's row of
 * DTAB at a time (a router's column is one entry per row: a miss each) */
static uint32_t *spread_counts(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t *hist = hdor_calloc(K->poff[K->nn] + 1, sizeof(uint32_t));
	int *rtr = hdor_calloc(K->nrow + 1, sizeof(int));
	uint32_t i, j, lid, nr = 0;
	unsigned p, q;

	if (!hist || !rtr) {
		free(hist);
		free(rtr);
		return NULL;
	}
	for (i = 0; i < K->nn; i++) {
		unsigned spread = 0;

		if (!D->cur[i] || K->role[i] != R_ROUTER)
			continue;
		for (p = 1; p < K->np[i] && !spread; p++)
			for (q = p + 1; q < K->np[i] && !spread; q++) {
				int y = K->peer[K->poff[i] + p];
				int z = K->peer[K->poff[i] + q];

				spread = y >= 0 && z >= 0 && K->dim[y] >= 0 &&
					 K->dim[y] == K->dim[z] &&
					 works(D, (int)i, p) &&
					 works(D, (int)i, q);
			}
		if (spread)
			rtr[nr++] = (int)i;
	}
	for (lid = 0; lid < D->nl; lid++) {
		const uint8_t *trow = &DTAB(D, 0, lid);

		for (j = 0; j < nr; j++) {
			uint8_t port = trow[K->row[rtr[j]]];

			if (port < K->np[rtr[j]])
				hist[K->poff[rtr[j]] + port]++;
		}
	}
	free(rtr);
	return hist;
}

/* router i's spread lines: its working ports into each dimension with two or
 * more */
static void dump_spread(FILE *f, hdor_deg_t *D, uint32_t i,
			const uint32_t *hist)
{
	const hdor_kns_t *K = D->K;
	unsigned e, p;

	for (e = 0; e < K->n; e++) {
		unsigned np = 0, first = 1;

		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];

			if (y >= 0 && works(D, (int)i, p) &&
			    K->dim[y] == (int)e)
				np++;
		}
		if (np < 2)
			continue;
		fprintf(f, "spread 0x%016" PRIx64 " dim=%u ports=", K->ident[i],
			e);
		for (p = 1; p < K->np[i]; p++) {
			int y = K->peer[K->poff[i] + p];

			if (y >= 0 && works(D, (int)i, p) &&
			    K->dim[y] == (int)e) {
				fprintf(f, first ? "%u:%u" : ",%u:%u", p,
					hist[K->poff[i] + p]);
				first = 0;
			}
		}
		fputc('\n', f);
	}
}

int hdor_write_dump_degraded(hdor_engine_t *ctx, hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	char tmp[4200];
	FILE *f;
	uint32_t i, j, *hist;
	unsigned n = K->n;
	int role, ret;

	hist = spread_counts(D);
	if (!hist) {
		errno = ENOMEM;
		return -1;
	}
	f = hdor_dump_open(ctx, tmp, sizeof(tmp));
	if (!f) {
		free(hist);
		return -1;
	}
	fprintf(f, "# hdor k=%u n=%u routers=%u switches=%u hcas=%u lids=%u",
		K->k, n, D->nrouters, D->nswitches, D->nhcas, D->nowned);
	/* (a complete KNS: the header of docs section 5) */
	if (D->dead_nodes || D->dead_links)
		fprintf(f, " vls=%u detoured=%u extra_max=%u extra_mean=%.3f",
			D->vls, D->detoured, D->extra_max, D->extra_mean);
	fputc('\n', f);
	for (role = R_ROUTER; role <= R_HCA; role++)
		for (j = 0; j < K->nn; j++) {
			i = K->isort[j]; /* by the GUID of the device there */
			if (!D->cur[i] || K->role[i] != role)
				continue;
			if (role == R_ROUTER)
				fprintf(f, "router 0x%016" PRIx64 " ",
					K->ident[i]);
			else if (role == R_SWITCH)
				fprintf(f, "switch 0x%016" PRIx64 " dim=%d ",
					K->ident[i], K->dim[i]);
			else
				fprintf(f, "hca    0x%016" PRIx64 " ",
					K->ident[i]);
			hdor_put_coords(f, K->coord + (size_t)i * n, n,
					role == R_SWITCH ? K->dim[i] : -1);
			fprintf(f, " \"%s\"\n", hdor_desc(D->cur[i]));
		}
	for (j = 0; j < K->nn; j++) {
		i = K->isort[j];
		if (D->cur[i] && K->role[i] == R_ROUTER)
			dump_spread(f, D, i, hist);
	}
	ret = hdor_dump_close(f, tmp, ctx->opts.dump_path);
	free(hist);
	return ret;
}

/* out of memory: the tables entry by entry */
static void deg_write_slowly(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t i, lid;

	for (i = 0; i < K->nn; i++) {
		const struct hdor_node *s = D->cur[i];

		if (!s || K->type[i] != N_SWITCH || !s->lft)
			continue;
		for (lid = 1; lid <= s->top && lid < D->nl; lid++) {
			uint8_t port = DTAB(D, K->row[i], lid);

			s->lft[lid] = port;
			if (port != HDOR_NO_PATH && port < s->np)
				s->paths[port]++;
		}
	}
}

/* the tables of a degraded pass into the model's switches */
void hdor_deg_write_tables(hdor_deg_t *D)
{
	const hdor_kns_t *K = D->K;
	uint32_t i, lid, l0, r0, r, nrow = (uint32_t)K->nrow;
	uint32_t counts[4 * 256] = { 0 }, *top;
	const struct hdor_node **sw; /* by DTAB row */
	unsigned p;

	sw = calloc(K->nrow + 1, sizeof(*sw));
	top = calloc(K->nrow + 1, sizeof(uint32_t));
	if (!sw || !top) {
		free(sw);
		free(top);
		deg_write_slowly(D);
		return;
	}
	for (i = 0; i < K->nn; i++) {
		if (!D->cur[i] || K->type[i] != N_SWITCH || !D->cur[i]->lft ||
		    K->row[i] < 0)
			continue;
		r = (uint32_t)K->row[i];
		sw[r] = D->cur[i];
		top[r] = sw[r]->top;
		if (top[r] >= D->nl)
			top[r] = D->nl ? D->nl - 1 : 0;
	}
	/*
	 * a transpose (LID-major DTAB -> switch-major tables) by tiles of 64
	 * rows x 64 LIDs: a tile is 64 lines read and 64 written, in the L1
	 * cache (entry by entry, or a column of all rows at a time, it is a
	 * miss per entry)
	 */
	for (r0 = 0; r0 < nrow; r0 += 64)
		for (l0 = 1; l0 < D->nl; l0 += 64)
			for (r = r0; r < r0 + 64 && r < nrow; r++) {
				uint32_t end = l0 + 64 <= top[r] + 1 ?
						       l0 + 64 :
						       top[r] + 1;
				const uint8_t *src = &DTAB(D, r, 0);

				if (!sw[r])
					continue;
				for (lid = l0; lid < end; lid++)
					sw[r]->lft[lid] =
						src[(size_t)lid * nrow];
			}
	for (r = 0; r < nrow; r++) {
		if (!sw[r])
			continue;
		/* the paths per port (four histograms) */
		for (lid = 1; lid <= top[r]; lid++)
			counts[(lid & 3) << 8 | sw[r]->lft[lid]]++;
		for (p = 0; p < sw[r]->np && p < HDOR_NO_PATH; p++)
			sw[r]->paths[p] += counts[p] + counts[256 + p] +
					   counts[512 + p] + counts[768 + p];
		memset(counts, 0, sizeof(counts));
	}
	free(sw);
	free(top);
}

/* ------------------------------------------------------------------------ */
/* Tables the front end keeps (opts.tables_kept): written by difference     */

/* every switch's table without a route and no LID through a port, as OpenSM
 * prepares them before a pass */
void hdor_prepare_tables(const struct hdor_fabric *fab)
{
	uint32_t i;

	for (i = 0; i < fab->nn; i++) {
		const struct hdor_node *x = &fab->nodes[i];

		if (x->type != HDOR_NODE_SWITCH || !x->lft)
			continue;
		memset(x->lft, HDOR_NO_PATH, (size_t)x->top + 1);
		if (x->paths)
			memset(x->paths, 0, x->np * sizeof(*x->paths));
	}
}

void hdor_written_free(struct hdor_written *W)
{
	void *all[] = { W->mnode, W->alid, W->aoff, W->ab, W->gone, W->dead };

	hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	memset(W, 0, sizeof(*W));
}

/* entry lid of switch x becomes v, its LIDs per port with it */
static inline void put(const struct hdor_node *x, uint32_t lid, uint8_t v)
{
	uint8_t old = x->lft[lid];

	if (old == v || lid > x->top)
		return;
	if (old < x->np)
		x->paths[old]--;
	if (v < x->np)
		x->paths[v]++;
	x->lft[lid] = v;
}

/* what a pass with nothing failed writes at (b, lid) */
static inline uint8_t base_entry(const hdor_kns_t *K, int b, uint32_t lid)
{
	return lid && lid < K->nlid ? KLFT(K, K->row[b], lid) : HDOR_NO_PATH;
}

/* the last degraded pass's changes undone: the tables of K as a pass with
 * nothing failed writes them */
static void written_undo(const struct hdor_written *W, const hdor_kns_t *K,
			 const int *sw, uint32_t nsw)
{
	const struct hdor_node *const *mn = W->mnode;
	uint32_t a, j, lid;

	for (a = 0; a < W->nalid; a++)
		for (j = W->aoff[a]; j < W->aoff[a + 1]; j++)
			if (mn[W->ab[j]])
				put(mn[W->ab[j]], W->alid[a],
				    base_entry(K, W->ab[j], W->alid[a]));
	for (a = 0; a < W->ngone; a++)
		for (j = 0; j < nsw; j++)
			if (mn[sw[j]] && W->gone[a])
				put(mn[sw[j]], W->gone[a],
				    base_entry(K, sw[j], W->gone[a]));
	for (a = 0; a < W->ndead; a++)
		for (lid = 1; lid <= mn[W->dead[a]]->top; lid++)
			put(mn[W->dead[a]], lid,
			    base_entry(K, W->dead[a], lid));
}

/* this pass's changes written: its affected entries, its LIDs without an
 * owner, its dead switches */
static void written_apply(const hdor_deg_t *D, const struct hdor_node **mn,
			  const int *sw, uint32_t nsw)
{
	const hdor_kns_t *K = D->K;
	const hdor_kept_t *k = K->kept;
	uint32_t a, j, lid;

	for (a = 0; a < k->nalid; a++)
		for (j = k->aoff[a]; j < k->aoff[a + 1]; j++)
			if (D->cur[k->ab[j]] && mn[k->ab[j]])
				put(mn[k->ab[j]], k->alid[a],
				    DTAB(D, K->row[k->ab[j]], k->alid[a]));
	for (a = 0; a < k->ngone; a++)
		for (j = 0; j < nsw; j++)
			if (D->cur[sw[j]] && mn[sw[j]] && k->gone[a])
				put(mn[sw[j]], k->gone[a], HDOR_NO_PATH);
	for (j = 0; j < nsw; j++)
		if (!D->cur[sw[j]] && mn[sw[j]])
			for (lid = 1; lid <= mn[sw[j]]->top; lid++)
				put(mn[sw[j]], lid, HDOR_NO_PATH);
}

/* what the model's switches hold now: K's tables but at this pass's changes
 * (copied from K->kept); 0, or -1 out of memory (then unknown) */
static int written_note(struct hdor_written *W, const hdor_deg_t *D,
			const struct hdor_node **mn, const int *sw,
			uint32_t nsw)
{
	const hdor_kept_t *k = D->K->kept;
	uint32_t j;

	free(W->mnode);
	W->mnode = mn;
	W->nmnode = D->K->nn;
	W->nalid = W->nab = W->ngone = W->ndead = 0;
	W->serial = 0;
	if (hdor_reserve(&W->alid, k->nalid, &W->capalid, sizeof(uint32_t)) ||
	    hdor_reserve(&W->aoff, k->nalid + 1, &W->capaoff,
			 sizeof(uint32_t)) ||
	    hdor_reserve(&W->ab, k->nab, &W->capab, sizeof(int)) ||
	    hdor_reserve(&W->gone, k->ngone, &W->capgone, sizeof(uint32_t)))
		return -1;
	memcpy(W->alid, k->alid, k->nalid * sizeof(uint32_t));
	memcpy(W->aoff, k->aoff, (k->nalid + 1) * sizeof(uint32_t));
	memcpy(W->ab, k->ab, k->nab * sizeof(int));
	memcpy(W->gone, k->gone, k->ngone * sizeof(uint32_t));
	W->nalid = k->nalid;
	W->nab = k->nab;
	W->ngone = k->ngone;
	for (j = 0; j < nsw; j++) {
		if (D->cur[sw[j]] || !mn[sw[j]])
			continue;
		if (hdor_grow(&W->dead, W->ndead, &W->capdead, sizeof(int)))
			return -1;
		W->dead[W->ndead++] = sw[j];
	}
	W->serial = D->K->serial;
	return 0;
}

/* the entries undoing the last pass and writing this one touch (beyond an
 * eighth of them all a whole write is cheaper) */
static uint64_t written_work(const struct hdor_written *W, const hdor_deg_t *D,
			     uint32_t nsw)
{
	const hdor_kept_t *k = D->K->kept;
	uint64_t n = (uint64_t)W->nab + k->nab +
		     (uint64_t)(W->ngone + k->ngone) * nsw;
	uint32_t j, dead = W->ndead;

	for (j = 0; j < D->K->nn; j++)
		dead += D->K->type[j] == N_SWITCH && D->K->row[j] >= 0 &&
			!D->cur[j];
	return n + (uint64_t)dead * D->nl;
}

/*
 * The tables of a degraded pass into switches the front end keeps: when they
 * hold K's tables but at the last degraded pass's changes, those are undone
 * and this pass's written -- the entries a failure touches, not every entry
 * of every switch; else they are prepared and written whole.  The same tables
 * and LIDs per port as hdor_deg_write_tables into prepared ones.  0, or -1 out
 * of memory (then written whole).
 */
int hdor_deg_write_kept(hdor_engine_t *ctx, hdor_deg_t *D)
{
	struct hdor_written *W = &ctx->written;
	const hdor_kns_t *K = D->K;
	const struct hdor_node **mn = hdor_calloc(K->nn, sizeof(*mn));
	int *sw = hdor_calloc(K->nn, sizeof(int)), ret = 0;
	uint32_t i, nsw = 0;

	if (!mn || !sw) {
		free(mn);
		free(sw);
		W->serial = 0;
		hdor_prepare_tables(ctx->fab);
		hdor_deg_write_tables(D);
		return -1;
	}
	for (i = 0; i < K->nn; i++) {
		const struct hdor_node *x;

		if (K->type[i] != N_SWITCH || K->row[i] < 0)
			continue;
		x = D->cur[i] ? D->cur[i] :
				hdor_fabric_node(ctx->fab, K->ident[i]);
		mn[i] = x && x->lft && x->type == HDOR_NODE_SWITCH ? x : NULL;
		sw[nsw++] = (int)i;
	}
	if (!D->full && W->serial == K->serial && W->nmnode == K->nn &&
	    !memcmp(W->mnode, mn, K->nn * sizeof(*mn)) &&
	    written_work(W, D, nsw) < (uint64_t)nsw * D->nl / 8) {
		written_undo(W, K, sw, nsw);
		written_apply(D, mn, sw, nsw);
	} else {
		hdor_prepare_tables(ctx->fab);
		hdor_deg_write_tables(D);
	}
	if (written_note(W, D, mn, sw, nsw))
		ret = -1;
	free(sw);
	return ret;
}

/* ------------------------------------------------------------------------ */
/* What the SA hooks read                                                   */

/* make Q (NULL on a complete KNS) what the hooks read; the SA threads may
 * still read the previous table, so it is freed one pass later */
void hdor_qos_publish(hdor_engine_t *ctx, hdor_qos_t *Q)
{
	hdor_qos_t *old = ctx->qos;

	hdor_qos_free(ctx->qos_old);
	ctx->qos_old = old;
	__atomic_store_n(&ctx->qos, Q, __ATOMIC_RELEASE);
}

/* the SL of a (source, destination) pair on a degraded KNS; hint (OpenSM's
 * own SL) otherwise */
uint8_t hdor_path_sl(hdor_engine_t *ctx, uint8_t hint, uint16_t slid,
		     uint16_t dlid)
{
	const hdor_qos_t *Q;
	uint64_t key;
	int i;

	Q = ctx ? __atomic_load_n(&ctx->qos, __ATOMIC_ACQUIRE) : NULL;
	if (!Q)
		return hint;
	key = slid;
	/* every LID of the source port's LMC range: the same route */
	if (key < Q->nl)
		key = Q->base[key];
	key |= (uint64_t)dlid << 16;
	i = hdor_find_u64(Q->pkey, Q->npath, key);
	return i >= 0 ? Q->psl[i] : 0;
}

/* whether hdor's SL2VL tables are the ones to program (a degraded KNS) */
int hdor_sl2vl_on(hdor_engine_t *ctx)
{
	return ctx && __atomic_load_n(&ctx->qos, __ATOMIC_ACQUIRE) != NULL;
}

/* the VL of each SL on switch guid from in_port to out_port (VL 0 for a row
 * hdor did not set); 0, or -1 when hdor's tables are not in use */
int hdor_sl2vl_row(hdor_engine_t *ctx, uint64_t guid, uint8_t in_port,
		   uint8_t out_port, uint8_t vl[16])
{
	const hdor_qos_t *Q;
	uint16_t io = (uint16_t)(in_port << 8 | out_port);
	uint32_t lo = 0, hi;

	Q = ctx ? __atomic_load_n(&ctx->qos, __ATOMIC_ACQUIRE) : NULL;
	if (!Q)
		return -1;
	memset(vl, 0, 16);
	hi = Q->nrow;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (Q->rguid[mid] < guid ||
		    (Q->rguid[mid] == guid && Q->rkey[mid] < io))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < Q->nrow && Q->rguid[lo] == guid && Q->rkey[lo] == io)
		memcpy(vl, Q->rvl[lo], 16);
	return 0;
}
