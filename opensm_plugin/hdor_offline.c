// SPDX-License-Identifier: MIT
/*
 * hdor_offline.c -- the offline front end: the hdor core on a discovered
 * fabric, without OpenSM (hdor_offline.h).  It fills the core's model as
 * OpenSM's adapter does -- nodes in the order of OpenSM's node table (by the
 * network-order GUID), LID ports in its port table's, every switch's table
 * prepared with "no route" before a pass, its top the highest LID seen -- so a
 * pass computes what the plugin would program inside OpenSM.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "osm_hdor.h"
#include "hdor_offline.h"

#define EXPORT __attribute__((visibility("default")))

struct hdor_off {
	hdor_engine_t e;
	struct hdor_fabric fab;
	uint32_t nn; /* nodes, in the caller's order */
	uint32_t *m; /* caller's node -> model node */
	struct hdor_port *ports;
	char *descs;
	uint8_t *lft; /* a row per switch, in the caller's order */
	uint32_t stride, top_seen, nsw;
	uint32_t *paths;
	uint8_t *node_flags, *port_flags; /* saved by hdor_off_fail */
	/* hdor_off_changed's */
	uint32_t *chg_node, *chg_lid, capchg_node, capchg_lid;
	uint32_t nports;
	int failed;
	char *log;
	size_t loglen, logcap;
	char err[256];
};

static void off_log(void *arg, int level, const char *msg)
{
	struct hdor_off *h = arg;
	size_t len = strlen(msg);
	char *nb;

	(void)level;
	if (h->loglen + len + 2 > h->logcap) {
		size_t cap = h->logcap ? 2 * h->logcap : 4096;

		while (cap < h->loglen + len + 2)
			cap *= 2;
		nb = realloc(h->log, cap);
		if (!nb)
			return;
		h->log = nb;
		h->logcap = cap;
	}
	memcpy(h->log + h->loglen, msg, len);
	h->loglen += len;
	h->log[h->loglen++] = '\n';
	h->log[h->loglen] = '\0';
}

static int fail(struct hdor_off *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->err, sizeof(h->err), fmt, ap);
	va_end(ap);
	return -2;
}

EXPORT hdor_off_t *hdor_off_new(unsigned vls)
{
	struct hdor_off *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	hdor_engine_init(&h->e, off_log, h);
	h->e.opts.vls_limit = vls;
	h->e.opts.qos = 1;
	/* the tables stay from pass to pass: a degraded pass writes what
	 * changes */
	h->e.opts.tables_kept = 1;
	return h;
}

static void fabric_free(struct hdor_off *h)
{
	hdor_tables_forget(&h->e);
	void *all[] = { h->fab.nodes,  h->fab.lports, h->fab.by_guid, h->m,
			h->ports,      h->descs,      h->lft,	      h->paths,
			h->node_flags, h->port_flags };

	hdor_free_all(all, sizeof(all) / sizeof(all[0]));
	memset(&h->fab, 0, sizeof(h->fab));
	h->m = NULL;
	h->ports = NULL;
	h->descs = NULL;
	h->lft = NULL;
	h->paths = NULL;
	h->node_flags = h->port_flags = NULL;
	h->failed = 0;
}

EXPORT void hdor_off_free(hdor_off_t *h)
{
	if (!h)
		return;
	hdor_engine_release(&h->e);
	fabric_free(h);
	free(h->chg_node);
	free(h->chg_lid);
	free(h->log);
	free(h);
}

/* OpenSM's tables are ordered by the GUID in network byte order */
static const uint64_t *sort_key;

static int cmp_net(const void *a, const void *b)
{
	return hdor_cmp_u64(htobe64(sort_key[*(const uint32_t *)a]),
			    htobe64(sort_key[*(const uint32_t *)b]));
}

static int copy_descs(struct hdor_off *h, uint32_t nn, const char *const *desc)
{
	size_t len = 0, at = 0;
	uint32_t i;

	for (i = 0; i < nn; i++)
		len += strlen(desc[i] ? desc[i] : "") + 1;
	h->descs = malloc(len + 1);
	if (!h->descs)
		return -1;
	for (i = 0; i < nn; i++) {
		const char *d = desc[i] ? desc[i] : "";

		h->fab.nodes[h->m[i]].desc = h->descs + at;
		strcpy(h->descs + at, d);
		at += strlen(d) + 1;
	}
	return 0;
}

EXPORT int hdor_off_fabric(hdor_off_t *h, uint32_t nn, const uint8_t *type,
			   const uint8_t *nports, const uint64_t *guid,
			   const char *const *desc)
{
	uint32_t *ord, i, np = 0;

	fabric_free(h);
	h->nn = nn;
	h->fab.nn = nn;
	h->fab.nodes = calloc(nn + 1, sizeof(*h->fab.nodes));
	h->m = calloc(nn + 1, sizeof(*h->m));
	ord = calloc(nn + 1, sizeof(*ord));
	if (!h->fab.nodes || !h->m || !ord) {
		free(ord);
		return fail(h, "out of memory");
	}
	for (i = 0; i < nn; i++) {
		if (type[i] < 1 || type[i] > 3) {
			free(ord);
			return fail(
				h,
				"node %u: type %u is not an HCA (1), a switch (2) or a router (3)",
				i, type[i]);
		}
		ord[i] = i;
		np += nports[i] + 1u;
	}
	sort_key = guid;
	qsort(ord, nn, sizeof(*ord), cmp_net);
	h->ports = calloc(np + 1, sizeof(*h->ports));
	h->nports = np;
	if (!h->ports) {
		free(ord);
		return fail(h, "out of memory");
	}
	for (i = 0, np = 0; i < nn; i++) {
		struct hdor_node *x = &h->fab.nodes[i];
		uint32_t u = ord[i];

		h->m[u] = i;
		x->guid = guid[u];
		/* InfiniBand's NodeType: 1 CA, 2 switch, 3 router (which hdor
		 * does not route) */
		x->type = type[u] == 2 ? HDOR_NODE_SWITCH :
			  type[u] == 1 ? HDOR_NODE_CA :
					 0;
		x->np = (uint8_t)(nports[u] + 1);
		x->ports = h->ports + np;
		np += x->np;
		x->priv = (void *)(uintptr_t)u;
	}
	free(ord);
	if (copy_descs(h, nn, desc) || hdor_fabric_index(&h->fab))
		return fail(h, "out of memory");
	return 0;
}

EXPORT int hdor_off_links(hdor_off_t *h, uint32_t nl, const uint32_t *a,
			  const uint8_t *pa, const uint32_t *b,
			  const uint8_t *pb)
{
	uint32_t i;

	for (i = 0; i < nl; i++) {
		struct hdor_node *x, *y;

		if (a[i] >= h->nn || b[i] >= h->nn)
			return fail(h, "link %u: node beyond the fabric", i);
		x = &h->fab.nodes[h->m[a[i]]];
		y = &h->fab.nodes[h->m[b[i]]];
		if (!pa[i] || pa[i] >= x->np || !pb[i] || pb[i] >= y->np)
			return fail(h, "link %u: port beyond its node's", i);
		x->ports[pa[i]] = (struct hdor_port){
			y, pb[i], HDOR_PORT_LINKED | HDOR_PORT_HEALTHY, 5
		};
		y->ports[pb[i]] = (struct hdor_port){
			x, pa[i], HDOR_PORT_LINKED | HDOR_PORT_HEALTHY, 5
		};
	}
	return 0;
}

/* every switch's table: a row of the highest LID seen + 1, in the caller's
 * order of its switches */
static int tables(struct hdor_off *h)
{
	uint32_t u, r = 0;

	h->stride = h->top_seen + 1;
	h->nsw = 0;
	for (u = 0; u < h->nn; u++)
		h->nsw += h->fab.nodes[h->m[u]].type == HDOR_NODE_SWITCH;
	h->lft = malloc((size_t)h->nsw * h->stride + 1);
	h->paths = calloc((size_t)h->nsw * 256 + 1, sizeof(*h->paths));
	hdor_tables_forget(&h->e);
	if (!h->lft || !h->paths)
		return -1;
	memset(h->lft, HDOR_NO_PATH, (size_t)h->nsw * h->stride);
	for (u = 0; u < h->nn; u++) {
		struct hdor_node *x = &h->fab.nodes[h->m[u]];

		if (x->type != HDOR_NODE_SWITCH)
			continue;
		x->lft = h->lft + (size_t)r * h->stride;
		x->paths = h->paths + (size_t)r * 256;
		x->top = h->top_seen;
		r++;
	}
	return 0;
}

EXPORT int hdor_off_lids(hdor_off_t *h, uint32_t np, const uint32_t *node,
			 const uint8_t *port, const uint16_t *lid,
			 const uint8_t *lmc, const uint64_t *port_guid)
{
	uint32_t *ord, i;

	free(h->fab.lports);
	h->fab.lports = calloc(np + 1, sizeof(*h->fab.lports));
	ord = calloc(np + 1, sizeof(*ord));
	if (!h->fab.lports || !ord) {
		free(ord);
		return fail(h, "out of memory");
	}
	for (i = 0; i < np; i++) {
		uint32_t top = lid[i] + (1u << lmc[i]) - 1;

		if (node[i] >= h->nn ||
		    port[i] >= h->fab.nodes[h->m[node[i]]].np || lmc[i] > 7)
			return free(ord),
			       fail(h, "LID %u: node or port beyond the fabric",
				    lid[i]);
		if (lid[i] && top > h->top_seen)
			h->top_seen = top;
		ord[i] = i;
	}
	sort_key = port_guid;
	qsort(ord, np, sizeof(*ord), cmp_net);
	for (i = 0; i < np; i++) {
		struct hdor_lport *lp = &h->fab.lports[i];
		uint32_t j = ord[i];

		lp->node = &h->fab.nodes[h->m[node[j]]];
		lp->port = port[j];
		lp->lid = lid[j];
		lp->lmc = lmc[j];
		lp->guid = port_guid[j];
		if (lp->node->type == HDOR_NODE_SWITCH && port[j] == 0)
			lp->node->base_lid = lid[j];
	}
	h->fab.nlp = np;
	free(ord);
	free(h->lft);
	free(h->paths);
	h->lft = NULL;
	h->paths = NULL;
	return tables(h) ? fail(h, "out of memory") : 0;
}

EXPORT void hdor_off_incremental(hdor_off_t *h, int on)
{
	h->e.opts.degraded_full = !on;
}

EXPORT int hdor_off_description(hdor_off_t *h, const char *path)
{
	snprintf(h->e.opts.conf_path, sizeof(h->e.opts.conf_path), "%s",
		 path ? path : "");
	h->e.loaded = 0;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Failures: masked on the loaded fabric, repaired by restoring the flags   */

EXPORT void hdor_off_repair(hdor_off_t *h)
{
	uint32_t i;

	if (!h->failed)
		return;
	for (i = 0; i < h->fab.nn; i++)
		h->fab.nodes[i].flags = h->node_flags[i];
	for (i = 0; i < h->nports; i++)
		h->ports[i].flags = h->port_flags[i];
	h->failed = 0;
}

/* what the SM's node no longer reaches over working links goes too */
static int cut_off(struct hdor_off *h, uint32_t sm)
{
	struct hdor_fabric *fab = &h->fab;
	uint32_t *q = calloc(fab->nn + 1, sizeof(*q)), qh = 0, qt = 0, i;
	uint8_t *seen = calloc(fab->nn + 1, 1);
	unsigned p;

	if (!q || !seen) {
		free(q);
		free(seen);
		return -1;
	}
	if (hdor_node_here(&fab->nodes[sm])) {
		seen[sm] = 1;
		q[qt++] = sm;
	}
	while (qh < qt) {
		struct hdor_node *x = &fab->nodes[q[qh++]];

		for (p = 1; p < x->np; p++) {
			struct hdor_node *y = hdor_link(x, p);

			if (y && !seen[y - fab->nodes]) {
				seen[y - fab->nodes] = 1;
				q[qt++] = (uint32_t)(y - fab->nodes);
			}
		}
	}
	for (i = 0; i < fab->nn; i++)
		if (!seen[i])
			fab->nodes[i].flags |= HDOR_NODE_ABSENT;
	free(q);
	free(seen);
	return 0;
}

EXPORT int hdor_off_fail(hdor_off_t *h, uint32_t sm, uint32_t nn,
			 const uint32_t *nodes, uint32_t nl,
			 const uint32_t *node, const uint8_t *port)
{
	uint32_t i;

	hdor_off_repair(h);
	if (!h->node_flags) {
		h->node_flags = malloc(h->fab.nn + 1);
		h->port_flags = malloc(h->nports + 1);
		if (!h->node_flags || !h->port_flags)
			return fail(h, "out of memory");
	}
	for (i = 0; i < h->fab.nn; i++)
		h->node_flags[i] = h->fab.nodes[i].flags;
	for (i = 0; i < h->nports; i++)
		h->port_flags[i] = h->ports[i].flags;
	h->failed = 1;
	for (i = 0; i < nn; i++) {
		if (nodes[i] >= h->nn)
			return fail(h, "failed node %u beyond the fabric",
				    nodes[i]);
		h->fab.nodes[h->m[nodes[i]]].flags |= HDOR_NODE_ABSENT;
	}
	for (i = 0; i < nl; i++) {
		struct hdor_node *x;
		struct hdor_port *xp;

		if (node[i] >= h->nn ||
		    port[i] >= h->fab.nodes[h->m[node[i]]].np)
			return fail(h, "failed cable %u beyond the fabric", i);
		x = &h->fab.nodes[h->m[node[i]]];
		xp = &x->ports[port[i]];
		if (xp->peer)
			xp->peer->ports[xp->peer_port].flags &= (uint8_t) ~(
				HDOR_PORT_LINKED | HDOR_PORT_HEALTHY);
		xp->flags &= (uint8_t) ~(HDOR_PORT_LINKED | HDOR_PORT_HEALTHY);
	}
	if (sm != UINT32_MAX) {
		if (sm >= h->nn)
			return fail(h, "the SM's node %u is beyond the fabric",
				    sm);
		if (cut_off(h, h->m[sm]))
			return fail(h, "out of memory");
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* A pass                                                                   */

EXPORT int hdor_off_route(hdor_off_t *h, const char *dump_path)
{
	int rc;

	if (!h->fab.nodes || !h->lft)
		return fail(
			h,
			"no fabric loaded (hdor_off_fabric, hdor_off_links, hdor_off_lids)");
	h->err[0] = '\0';
	h->loglen = 0;
	if (h->log)
		h->log[0] = '\0';
	snprintf(h->e.opts.dump_path, sizeof(h->e.opts.dump_path), "%s",
		 dump_path ? dump_path : "");
	/* (the tables are not prepared here: opts.tables_kept) */
	rc = hdor_prepare(&h->e, &h->fab);
	if (rc < 0)
		return h->e.code == HD_NOMEM ? -2 : -1;
	hdor_hop_matrices(&h->e, HOPS_NONE, NULL);
	hdor_tables(&h->e);
	return 0;
}

EXPORT const char *hdor_off_reason(const hdor_off_t *h, int *code)
{
	if (h->err[0]) {
		if (code)
			*code = 0;
		return h->err;
	}
	if (code)
		*code = h->e.code;
	return h->e.reason;
}

EXPORT const char *hdor_off_log(const hdor_off_t *h)
{
	return h->log ? h->log : "";
}

EXPORT int hdor_off_summary(const hdor_off_t *h, uint32_t out[13], double *mean)
{
	const hdor_engine_t *e = &h->e;
	uint32_t v[13] = { (uint32_t)e->last_kind,
			   e->last_k,
			   e->last_n,
			   e->last_s,
			   e->last_switches,
			   e->last_lids,
			   e->last_vls,
			   e->last_vlcap,
			   e->last_dead_links,
			   e->last_dead_nodes,
			   e->last_detoured,
			   e->last_extra_max,
			   e->last_maxsl };

	memcpy(out, v, sizeof(v));
	*mean = e->last_extra_mean;
	return 0;
}

EXPORT const uint8_t *hdor_off_lft(const hdor_off_t *h, uint32_t *stride)
{
	*stride = h->stride;
	return h->lft;
}

/* the highest LID a port there now owns */
static uint32_t top_now(const struct hdor_off *h)
{
	uint32_t i, top = 0;

	for (i = 0; i < h->fab.nlp; i++) {
		const struct hdor_lport *lp = &h->fab.lports[i];
		uint32_t hi = lp->lid + (1u << lp->lmc) - 1;

		if (lp->lid && hdor_node_here(lp->node) && hi > top)
			top = hi;
	}
	return top;
}

/* a buffered writer of a file descriptor */
/*
 * The tables as OpenSM's file engine reads them: 1.7 GB of text on KNS 16^3,
 * so a regular file is written by a few threads at once, each its share of
 * the switches at the offset their blocks start at (pwrite); a pipe by one.
 */
struct out {
	int fd, err;
	off_t pos; /* the next pwrite's offset; -1: write() */
	size_t len;
	char buf[1 << 16];
};

static void out_flush(struct out *o)
{
	size_t at = 0;

	while (!o->err && at < o->len) {
		ssize_t n = o->pos < 0 ?
				    write(o->fd, o->buf + at, o->len - at) :
				    pwrite(o->fd, o->buf + at, o->len - at,
					   o->pos + (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			o->err = n < 0 ? errno : EIO;
		else
			at += (size_t)n;
	}
	if (o->pos >= 0)
		o->pos += (off_t)at;
	o->len = 0;
}

static void out_put(struct out *o, const char *s, size_t n)
{
	if (o->len + n > sizeof(o->buf))
		out_flush(o);
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static const struct hdor_off *lft_h;

static int cmp_switch_guid(const void *a, const void *b)
{
	return hdor_cmp_u64(lft_h->fab.nodes[*(const uint32_t *)a].guid,
			    lft_h->fab.nodes[*(const uint32_t *)b].guid);
}

/*
 * every LID's line with the port left blank, "0x0001 ___ portguid 0x...\n"
 * (the port at column 7, 3 digits): a line of the tables is a copy and three
 * digits (43 M lines on KNS 16^3)
 */
struct lines {
	char *text;
	uint32_t *off;
	uint8_t *len;
};

static int lft_lines(struct lines *L, uint32_t top, const uint64_t *lid_guid,
		     uint32_t nlid)
{
	uint32_t lid, at = 0;
	char line[64];

	L->text = malloc((size_t)(top + 1) * 40);
	L->off = calloc(top + 2, sizeof(*L->off));
	L->len = calloc(top + 2, 1);
	if (!L->text || !L->off || !L->len)
		return -1;
	for (lid = 1; lid <= top; lid++) {
		int n;

		if (lid < nlid && lid_guid[lid])
			n = snprintf(line, sizeof(line),
				     "%#06x ___ portguid 0x%016" PRIx64 "\n",
				     lid, lid_guid[lid]);
		else
			n = snprintf(line, sizeof(line), "%#06x ___\n", lid);
		memcpy(L->text + at, line, (size_t)n);
		L->off[lid] = at;
		L->len[lid] = (uint8_t)n;
		at += (uint32_t)n;
	}
	return 0;
}

static int lft_header(char *line, size_t size, const struct hdor_node *x,
		      uint32_t top)
{
	return snprintf(
		line, size,
		"Unicast lids [0x0-%#x] of switch Lid 0 guid 0x%016" PRIx64
		" ('",
		top, x->guid);
}

/* the bytes of one switch's block (its header and the LIDs with a route) */
static size_t lft_size(const struct hdor_node *x, uint32_t top,
		       const struct lines *L)
{
	char line[96];
	size_t n = (size_t)lft_header(line, sizeof(line), x, top) +
		   strlen(x->desc) + 4;
	uint32_t lid;

	for (lid = 1; lid <= top && lid <= x->top; lid++)
		if (x->lft[lid] != HDOR_NO_PATH)
			n += L->len[lid];
	return n;
}

/* one switch's header and lines, the LIDs with a route */
static void lft_switch(struct out *o, const struct hdor_node *x, uint32_t top,
		       const struct lines *L)
{
	char line[96];
	uint32_t lid;
	int n;

	n = lft_header(line, sizeof(line), x, top);
	out_put(o, line, (size_t)n);
	out_put(o, x->desc, strlen(x->desc));
	out_put(o, "'):\n", 4);
	for (lid = 1; lid <= top && lid <= x->top; lid++) {
		uint8_t p = x->lft[lid];
		char *d;

		if (p == HDOR_NO_PATH)
			continue;
		if (o->len + L->len[lid] > sizeof(o->buf))
			out_flush(o);
		d = o->buf + o->len;
		memcpy(d, L->text + L->off[lid], L->len[lid]);
		d[7] = (char)('0' + p / 100);
		d[8] = (char)('0' + p / 10 % 10);
		d[9] = (char)('0' + p % 10);
		o->len += L->len[lid];
	}
}

#define LFT_THREADS 4

/* one writer's share: switches sw[from..to) from offset pos (-1: write()) */
struct lft_part {
	const struct hdor_off *h;
	const uint32_t *sw;
	uint32_t from, to, top;
	const struct lines *L;
	int fd, err, started;
	off_t pos;
	pthread_t tid;
};

static void *lft_part_write(void *arg)
{
	struct lft_part *w = arg;
	struct out *o = malloc(sizeof(*o));
	uint32_t i;

	if (!o) {
		w->err = ENOMEM;
		return NULL;
	}
	o->fd = w->fd;
	o->err = 0;
	o->pos = w->pos;
	o->len = 0;
	for (i = w->from; i < w->to && !o->err; i++)
		lft_switch(o, &w->h->fab.nodes[w->sw[i]], w->top, w->L);
	out_flush(o);
	w->err = o->err;
	free(o);
	return NULL;
}

/*
 * the writers' shares of w[0]'s switches, even in bytes, each from its first
 * switch's offset; returns how many (1, by write(), unless fd is a regular
 * file at offset base >= 0); *end: the offset after the last block
 */
static int lft_split(struct lft_part *w, uint32_t n, off_t base, off_t *end)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int k = cpus > LFT_THREADS ? LFT_THREADS : cpus < 1 ? 1 : (int)cpus;
	size_t total = 0, done = 0, *size = NULL;
	struct stat st;
	uint32_t i;
	int j = 0;

	if (k > 1 && base >= 0 && fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode))
		size = malloc((n + 1) * sizeof(*size));
	for (i = 0; size && i < n; i++) {
		size[i] = lft_size(&w->h->fab.nodes[w->sw[i]], w->top, w->L);
		total += size[i];
	}
	w[0].from = 0;
	w[0].pos = size ? base : -1;
	for (i = 0; size && i < n && j < k - 1; i++) {
		done += size[i];
		if (done * (size_t)k >= total * (size_t)(j + 1)) {
			w[j].to = i + 1;
			w[j + 1] = w[j];
			w[++j].from = i + 1;
			w[j].pos = base + (off_t)done;
		}
	}
	w[j].to = n;
	*end = base + (off_t)total;
	free(size);
	return j + 1;
}

EXPORT int hdor_off_write_lft(const hdor_off_t *h, int fd,
			      const uint64_t *lid_guid, uint32_t nlid)
{
	uint32_t *sw = calloc(h->fab.nn + 1, sizeof(*sw)), n = 0, i;
	struct lft_part w[LFT_THREADS] = { { 0 } };
	struct lines L = { NULL, NULL, NULL };
	off_t base = lseek(fd, 0, SEEK_CUR), end = -1;
	int err = 0, k = 0, j;

	if (!sw || lft_lines(&L, top_now(h), lid_guid, nlid))
		err = ENOMEM;
	for (i = 0; !err && i < h->fab.nn; i++)
		if (h->fab.nodes[i].type == HDOR_NODE_SWITCH &&
		    h->fab.nodes[i].lft && hdor_node_here(&h->fab.nodes[i]))
			sw[n++] = i;
	if (!err) {
		lft_h = h;
		qsort(sw, n, sizeof(*sw), cmp_switch_guid);
		w[0] = (struct lft_part){
			.h = h, .sw = sw, .top = top_now(h), .L = &L, .fd = fd
		};
		k = lft_split(w, n, base, &end);
	}
	/* (a thread that cannot start: its share written here) */
	for (j = 1; j < k; j++) {
		w[j].started =
			!pthread_create(&w[j].tid, NULL, lft_part_write, &w[j]);
		if (!w[j].started)
			lft_part_write(&w[j]);
	}
	if (k)
		lft_part_write(&w[0]);
	for (j = 1; j < k; j++)
		if (w[j].started)
			pthread_join(w[j].tid, NULL);
	for (j = 0; j < k && !err; j++)
		err = w[j].err;
	free(sw);
	free(L.text);
	free(L.off);
	free(L.len);
	if (!err && w[0].pos >= 0)
		lseek(fd, end, SEEK_SET); /* past the last block, as write() */
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

EXPORT const uint32_t *hdor_off_paths(const hdor_off_t *h)
{
	return h->paths;
}

EXPORT int hdor_off_here(const hdor_off_t *h, uint8_t *out)
{
	uint32_t u;

	for (u = 0; u < h->nn; u++)
		out[u] = (uint8_t)hdor_node_here(&h->fab.nodes[h->m[u]]);
	return 0;
}

EXPORT uint32_t hdor_off_path_sls(const hdor_off_t *h, const uint64_t **key,
				  const uint8_t **sl, const uint64_t **lost,
				  uint32_t *nlost)
{
	const hdor_qos_t *Q = h->e.qos;

	*key = Q ? Q->pkey : NULL;
	*sl = Q ? Q->psl : NULL;
	*lost = Q ? Q->lost : NULL;
	*nlost = Q ? Q->nlost : 0;
	return Q ? Q->npath : 0;
}

EXPORT uint32_t hdor_off_sl2vl(const hdor_off_t *h, const uint64_t **guid,
			       const uint64_t **io, const uint8_t **vl)
{
	const hdor_qos_t *Q = h->e.qos;

	*guid = Q ? Q->rguid : NULL;
	*io = Q ? Q->rkey : NULL;
	*vl = Q ? &Q->rvl[0][0] : NULL;
	return Q ? Q->nrow : 0;
}

EXPORT uint32_t hdor_off_changed(hdor_off_t *h, const uint32_t **node,
				 const uint32_t **lid)
{
	const struct hdor_written *W = &h->e.written;
	uint32_t a, j, n = 0;

	*node = *lid = NULL;
	if (h->e.last_kind != HDOR_PASS_DEGRADED || !W->serial ||
	    hdor_reserve(&h->chg_node, W->nab, &h->capchg_node,
			 sizeof(uint32_t)) ||
	    hdor_reserve(&h->chg_lid, W->nab, &h->capchg_lid, sizeof(uint32_t)))
		return 0;
	for (a = 0; a < W->nalid; a++)
		for (j = W->aoff[a]; j < W->aoff[a + 1]; j++) {
			const struct hdor_node *x = W->mnode[W->ab[j]];

			if (!x)
				continue;
			h->chg_node[n] = (uint32_t)(uintptr_t)x->priv;
			h->chg_lid[n++] = W->alid[a];
		}
	*node = h->chg_node;
	*lid = h->chg_lid;
	return n;
}
